/* The hashes of the cluster signatures and menu keys (clusters.py, sitemenus.py), for the
 * extensions that compute them (_features.c: node labels, path hashes; _site.c: signatures,
 * menu keys): clusters.mix64, splitmix64's finalizer, and the constants of its callers, in
 * wrapping uint64 arithmetic, so every value is the reference's exactly. */
#ifndef SITESTRIP_KEYS_H
#define SITESTRIP_KEYS_H

#include <stdint.h>

static inline uint64_t key_mix(uint64_t x) {           /* clusters.mix64 */
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

#define KEY_BASE 0x9E3779B97F4A7C15ULL         /* clusters._BASE, sitemenus._KEY_BASE */
#define KEY_CLASS_SALT 0x2545F4914F6CDD1DULL   /* sitemenus._CLASS_SALT */
#define KEY_ID_SALT 0xD6E8FEB86659FD93ULL      /* clusters._ID_SALT */

#endif
