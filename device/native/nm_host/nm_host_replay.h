/*
 * nm_host_replay.h - minibatches from the host's replay rows for TD3's and SAC's
 * updates: a row per transition, [act (na), obs (o), 1, reward, not_done,
 * next_obs (o), 1], and B raw uniform draws per minibatch, each taken modulo the
 * replay's fill.
 */
#ifndef NM_HOST_REPLAY_H
#define NM_HOST_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#define NMH_CACHED_FLOATS ((size_t)1 << 18) // 1 MiB: a replay this small stays in a core's L2

static inline const float *nmh_replay_row(const float *replay, const uint32_t *draws, size_t size, size_t width,
    size_t b) {
    return replay + (draws[b] % size) * width;
}

// dst[i * ld + b] = entry from + i of the minibatch's sample b (i < count, b < B): feature-major
// from sample-major rows, 8 samples at a time, so that the stores fill one line of dst after
// another instead of touching count lines per sample. A replay beyond the caches is read at
// random from memory, so there the next 8 samples' entries are fetched while these 8 are copied.
static void nmh_replay_gather(const float *replay, const uint32_t *draws, size_t size, size_t width, size_t B,
    size_t from, size_t count, float *dst, size_t ld) {
    const size_t ahead = size * width > NMH_CACHED_FLOATS && count ? 8 : 0;
    for (size_t b0 = 0; b0 < B; b0 += 8) {
        const size_t nb = B - b0 < 8 ? B - b0 : 8;
        const float *rows[8];
        for (size_t j = 0; j < nb; j++) {
            rows[j] = nmh_replay_row(replay, draws, size, width, b0 + j) + from;
        }
        for (size_t j = b0 + 8; j < b0 + 8 + ahead && j < B; j++) {
            const float *next = nmh_replay_row(replay, draws, size, width, j) + from;
            for (size_t i = 0; i < count; i += 16) { // a 64-byte line per 16 floats
                __builtin_prefetch(next + i);
            }
            __builtin_prefetch(next + count - 1);
        }
        for (size_t i = 0; i < count; i++) {
            float *d = dst + i * ld + b0;
            for (size_t j = 0; j < nb; j++) {
                d[j] = rows[j][i];
            }
        }
    }
}

#endif // NM_HOST_REPLAY_H
