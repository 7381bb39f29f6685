"""The policy's C entry point, shared by the float and int8 headers: every action is
clamped to the limits, and a non-finite observation gives the limits' midpoint. A
recurrent policy's header also says how its state is kept."""

LAYOUT_ARGS = "nm_policy_layout + 1, nm_policy_layout + 2 + NM_POLICY_N_LAYERS, NM_POLICY_N_LAYERS"
EXAMPLE_STEPS = 3  # a recurrent policy's example action is this step's from the initial state


META_VALUE_CHARS = 60


def meta_comment(meta: dict) -> str:
    """The policy's meta for the header's comment, on one line: each value cut to
    META_VALUE_CHARS (a distillation's drones are a long list), and no "*/" that would end
    the comment early (meta holds whatever a run's config held)."""
    def cut(v) -> str:
        text = " ".join(str(v).split())
        return text if len(text) <= META_VALUE_CHARS else text[:META_VALUE_CHARS - 3] + "..."
    return (", ".join(f"{k}={cut(v)}" for k, v in sorted(meta.items())) or "none").replace("*/", "* /")


def recurrent_use(recurrent: bool) -> str:
    """The header comment's paragraph on a recurrent policy's state ("" for an MLP)."""
    if not recurrent:
        return ""
    return """
 * The policy is recurrent: each call is one step of its GRU layers, whose state
 * (nm_policy_state) carries over to the next call; call nm_policy_reset() at every
 * episode's start. A call with a NaN or inf observation leaves the state as it was.
 * nm_policy_example_action is the action of step NM_POLICY_EXAMPLE_STEPS from the
 * initial state, every step fed nm_policy_example_obs."""


def clamped_forward_c(scratch: str, mlp: str) -> str:
    """nm_policy_forward for a policy with action limits: `scratch` declares the buffer
    the `mlp` call (float or int8 kernels) works in."""
    return f"""/* Every action ends within nm_policy_clamp, whatever the network computed.
 * Returns 0, or -1 when an observation is NaN or inf: the action is then the
 * midpoint of the limits (the actuators' neutral command). */
static inline int nm_policy_forward(float *action, const float *obs) {{
    {scratch}
    int status = 0;
    if (nm_first_nonfinite(obs, NM_POLICY_OBS_DIM) == NM_POLICY_OBS_DIM) {{
        {mlp}
    }} else {{
        for (int i = 0; i < NM_POLICY_ACT_DIM; i++) {{
            action[i] = 0.5f * nm_policy_clamp[i] + 0.5f * nm_policy_clamp[NM_POLICY_ACT_DIM + i];
        }}
        status = -1;
    }}
    nm_clamp(action, nm_policy_clamp, NM_POLICY_ACT_DIM);
    return status;
}}"""
