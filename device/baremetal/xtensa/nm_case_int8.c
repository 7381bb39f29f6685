/* The int8 policy as `neuromotor export --format c-header --quantize int8` writes it
 * (nm_policy_int8.h, generated into the case folder), behind nm_policy_run.h. */
#include "nm_int8.h"
#include "nm_policy_int8.h"
#include "nm_policy_run.h"

#define SIZES (nm_policy_layout + 1)
#define ACTS (nm_policy_layout + 2 + NM_POLICY_N_LAYERS)

static uint32_t scratch[NM_POLICY_SCRATCH_WORDS];

int nm_case_int8_forward(float *action, const float *obs) {
    return nm_policy_forward(action, obs);
}

void nm_case_int8_kernel(float *out, const float *obs) {
    nm_q8_mlp(out, obs, nm_policy_qnet, SIZES, ACTS, NM_POLICY_N_LAYERS, scratch);
}

int nm_case_int8_check(void) {
    nm_q8_fault_t fault;
    if (sizeof(scratch) < nm_q8_scratch_bytes(SIZES, NM_POLICY_N_LAYERS)) {
        return -1;
    }
    return nm_q8_check(nm_policy_qnet, SIZES, ACTS, NM_POLICY_N_LAYERS, &fault);
}
