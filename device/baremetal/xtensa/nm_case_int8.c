/* The int8 policy as `neuromotor export --format c-header --quantize int8` writes it
 * (nm_policy_int8.h, generated into the case folder), behind nm_policy_run.h. On the
 * ESP32's core with the layers in assembly (NM_Q8_MAC16, nm_int8_xtensa.h) the weights
 * are widened once by nm_case_int8_check, and the header's nm_q8_mlp call (in
 * nm_policy_forward) is nm_q8_mlp_wide on them. */
#include "nm_int8_xtensa.h"

#if NM_Q8_MAC16
static const int16_t *nm_case_wide(void);
#define nm_q8_mlp(out, x, qnet, sizes, acts, n_layers, scratch, state) \
    nm_q8_mlp_wide(out, x, qnet, nm_case_wide(), sizes, acts, n_layers, scratch)
#endif

#include "nm_policy_int8.h"
#include "nm_policy_run.h"

#if NM_Q8_MAC16
// Two bytes per int8 weight, and the weights are less than the qnet's bytes.
static int16_t wide[4 * NM_POLICY_QNET_WORDS];

static const int16_t *nm_case_wide(void) {
    return wide;
}
#endif

#define SIZES (nm_policy_layout + 1)
#define ACTS (nm_policy_layout + 2 + NM_POLICY_N_LAYERS)

static uint32_t scratch[NM_POLICY_SCRATCH_WORDS];

int nm_case_int8_forward(float *action, const float *obs) {
    return nm_policy_forward(action, obs);
}

void nm_case_int8_kernel(float *out, const float *obs) {
    nm_q8_mlp(out, obs, nm_policy_qnet, SIZES, ACTS, NM_POLICY_N_LAYERS, scratch, NULL);
}

int nm_case_int8_check(void) {
    nm_q8_fault_t fault;
    if (sizeof(scratch) < nm_q8_scratch_bytes(SIZES, ACTS, NM_POLICY_N_LAYERS)) {
        return -1;
    }
    #if NM_Q8_MAC16
    size_t wide_bytes;
    if (!nm_q8_wide_bytes(SIZES, NM_POLICY_N_LAYERS, &wide_bytes) || wide_bytes > sizeof(wide)) {
        return -1;
    }
    nm_q8_widen(wide, nm_policy_qnet, SIZES, NM_POLICY_N_LAYERS);
    #endif
    return nm_q8_check(nm_policy_qnet, SIZES, ACTS, NM_POLICY_N_LAYERS, &fault);
}
