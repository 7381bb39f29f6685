/*
 * nm_crc.h - CRC-32 of policy files.
 */
#ifndef NM_CRC_H
#define NM_CRC_H

#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------------------
 * CRC-32 (IEEE 802.3, reflected, as zlib.crc32), bitwise: no table in RAM.
 */
static inline uint32_t nm_crc32(uint32_t crc, const uint8_t *p, size_t n) {
    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
        }
    }
    return ~crc;
}

#endif // NM_CRC_H
