/* crc32 as zlib computes it (polynomial 0xEDB88320, reflected), for the extensions that
 * hash text (_flatten.c: attribute hashes; _features.c: block text keys) without zlib's
 * headers, which a fresh machine need not have. Call crc_init() once (module init). */
#ifndef SITESTRIP_CRC32_H
#define SITESTRIP_CRC32_H

#include <stddef.h>
#include <stdint.h>

static uint32_t crc_table[256];

static void crc_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

/* Running crc: start with crc_begin(), feed bytes, finish with crc_end(). */
static inline uint32_t crc_begin(void) { return 0xFFFFFFFFu; }
static inline uint32_t crc_byte(uint32_t c, unsigned char byte) {
    return crc_table[(c ^ byte) & 0xFF] ^ (c >> 8);
}
static inline uint32_t crc_feed(uint32_t c, const unsigned char *s, size_t n) {
    for (size_t k = 0; k < n; k++) c = crc_byte(c, s[k]);
    return c;
}
static inline uint32_t crc_end(uint32_t c) { return c ^ 0xFFFFFFFFu; }

#endif
