/* crc32 as zlib computes it (polynomial 0xEDB88320, reflected), for the extensions that
 * hash text (_flatten.c: attribute hashes; _features.c: block text keys) without zlib's
 * headers, which a fresh machine need not have. Call crc_init() once (module init).
 *
 * Eight bytes a step where the machine is little-endian ("slicing by 8": table k maps a byte
 * to its crc k bytes further on), a byte a step elsewhere and for the last bytes; the values
 * are the same either way. */
#ifndef SITESTRIP_CRC32_H
#define SITESTRIP_CRC32_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static uint32_t crc_tables[8][256];
#define crc_table (crc_tables[0])

static void crc_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_tables[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int k = 1; k < 8; k++)
            crc_tables[k][n] = (crc_tables[k - 1][n] >> 8) ^ crc_tables[0][crc_tables[k - 1][n] & 0xFF];
}

/* Running crc: start with crc_begin(), feed bytes, finish with crc_end(). */
static inline uint32_t crc_begin(void) { return 0xFFFFFFFFu; }
static inline uint32_t crc_byte(uint32_t c, unsigned char byte) {
    return crc_table[(c ^ byte) & 0xFF] ^ (c >> 8);
}
static inline uint32_t crc_feed(uint32_t c, const unsigned char *s, size_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; n >= 8; s += 8, n -= 8) {
        uint32_t lo, hi;
        memcpy(&lo, s, 4);
        memcpy(&hi, s + 4, 4);
        lo ^= c;
        c = crc_tables[7][lo & 0xFF] ^ crc_tables[6][(lo >> 8) & 0xFF] ^ crc_tables[5][(lo >> 16) & 0xFF] ^
            crc_tables[4][lo >> 24] ^ crc_tables[3][hi & 0xFF] ^ crc_tables[2][(hi >> 8) & 0xFF] ^
            crc_tables[1][(hi >> 16) & 0xFF] ^ crc_tables[0][hi >> 24];
    }
#endif
    for (size_t k = 0; k < n; k++) c = crc_byte(c, s[k]);
    return c;
}
static inline uint32_t crc_end(uint32_t c) { return c ^ 0xFFFFFFFFu; }

#endif
