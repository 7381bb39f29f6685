"""The policy's C entry point, shared by the float and int8 headers: every action is
clamped to the limits, and a non-finite observation gives the limits' midpoint."""


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
