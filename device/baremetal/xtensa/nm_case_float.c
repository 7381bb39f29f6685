/* The float policy as `neuromotor export --format c-header` writes it (nm_policy_float.h,
 * generated into the case folder), behind nm_policy_run.h. */
#include "nm_kernels.h"
#include "nm_policy_float.h"
#include "nm_policy_run.h"

_Static_assert(NM_POLICY_CLAMPED, "the case's policy has action limits");

int nm_case_float_forward(float *action, const float *obs) {
    return nm_policy_forward(action, obs);
}

void nm_case_float_kernel(float *out, const float *obs) {
    static float scratch[NM_POLICY_SCRATCH_FLOATS];
    nm_mlp(out, obs, nm_policy_net, nm_policy_layout + 1, nm_policy_layout + 2 + NM_POLICY_N_LAYERS,
        NM_POLICY_N_LAYERS, scratch, NULL);
}

const uint16_t *nm_case_layout(void) {
    return nm_policy_layout;
}
