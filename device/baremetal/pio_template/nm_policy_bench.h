/* Timing a policy exported as a C header on a real board (the PlatformIO project
 * `neuromotor export --format platformio` writes). Portable C: the board glue
 * (src/main.cpp) supplies the cycle counter, the clock and a line printer. */
#ifndef NM_POLICY_BENCH_H
#define NM_POLICY_BENCH_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint32_t (*nm_cycles_fn)(void);
typedef void (*nm_emit_fn)(const char *line);

/* Times `n` (1..NM_BENCH_MAX_N) single calls of nm_policy_forward with the cycle
 * counter and emits one NMB/1 line: @nm - bench {json} ~cksum. Returns 0, or -1 when
 * the board's result for the header's example observation disagrees with the host's
 * (the line then carries "error"). */
int nm_bench_report(nm_cycles_fn cycles, nm_emit_fn emit, uint32_t clock_hz, const char *board, int n);

#define NM_BENCH_MAX_N 1000

#ifdef __cplusplus
}
#endif
#endif
