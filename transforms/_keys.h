/* The hashes of the cluster signatures and menu keys (clusters.py, sitemenus.py), for the
 * extensions that compute them (_features.c: node labels, path hashes; _site.c: signatures,
 * menu keys): clusters.mix64, splitmix64's finalizer, the constants of its callers, a node's
 * cluster and menu labels and the path sums' powers, in wrapping uint64 arithmetic, so every
 * value is the reference's exactly. */
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

/* clusters.node_labels of one node: mix64(tag + 1), xor mix64(id ^ salt) where the node has an
 * id that counts (`ids_mode` 0 all, 1 stable: not a node flagged `volatile_flag`, 2 none). */
static inline uint64_t key_cluster_label(int32_t tag, uint32_t id, uint16_t flags, int volatile_flag,
                                         int ids_mode) {
    uint64_t counted = ids_mode == 2 || (ids_mode == 1 && (flags & volatile_flag)) ? 0 : id;
    return key_mix((uint64_t)(int64_t)tag + 1) ^ (counted != 0 ? key_mix(counted ^ KEY_ID_SALT) : 0);
}

/* sitemenus' label of one node: mix64(tag + 1) xor mix64(id ^ class salt), xor mix64(class +
 * class salt) over its class tokens cls[from:to]. */
static inline uint64_t key_menu_label(int32_t tag, uint32_t id, const uint32_t *cls, int32_t from, int32_t to) {
    uint64_t label = key_mix((uint64_t)(int64_t)tag + 1) ^ key_mix((uint64_t)id ^ KEY_CLASS_SALT);
    for (int32_t k = from; k < to; k++) label ^= key_mix((uint64_t)cls[k] + KEY_CLASS_SALT);
    return label;
}

/* powers[d] = KEY_BASE^(d+1) for d in 0..max_depth: the path sums' place values. */
static inline void key_powers(uint64_t *powers, int64_t max_depth) {
    uint64_t p = KEY_BASE;
    for (int64_t d = 0; d <= max_depth; d++) { powers[d] = p; p *= KEY_BASE; }
}

#endif
