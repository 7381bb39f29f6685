/* What nm_policy_run.c calls: the two exported policy headers of one policy, each in
 * its own translation unit (both define nm_policy_forward and the nm_policy_* arrays).
 *   nm_case_float.c: nm_policy_float.h, `neuromotor export --format c-header`
 *   nm_case_int8.c:  nm_policy_int8.h,  `neuromotor export --format c-header --quantize int8`
 */
#ifndef NM_POLICY_RUN_H
#define NM_POLICY_RUN_H
#include <stddef.h>
#include <stdint.h>

// nm_policy_forward of each header: the clamped action; 0, or -1 for a NaN/inf observation.
int nm_case_float_forward(float *action, const float *obs);
int nm_case_int8_forward(float *action, const float *obs);

// The kernel alone (nm_mlp, nm_q8_mlp), for timing.
void nm_case_float_kernel(float *out, const float *obs);
void nm_case_int8_kernel(float *out, const float *obs);

// nm_q8_check of the int8 header's qnet: 0 when deployable.
int nm_case_int8_check(void);

// The float header's shape descriptor (L, sizes, activation codes).
const uint16_t *nm_case_layout(void);
#endif
