/* The one hash of tunerguard's tables: 64-bit FNV-1a (interned kernel
 * names, the report dedupe, the stack folder's file verdicts).  Start from
 * TG_HASH_SEED, fold bytes, strings and words in; the callers' tables keep
 * 0 for a free slot and set a bit of their own to avoid it.  Pure: no
 * allocation, signal-safe. */
#ifndef TG_HASH_H
#define TG_HASH_H

#include <stddef.h>
#include <stdint.h>

#define TG_HASH_SEED 1469598103934665603ull  /* FNV-1a's 64-bit offset basis */
#define TG_HASH_PRIME 1099511628211ull       /* and its prime */

/* h with the word v folded in (one FNV-1a step over the whole word). */
static inline uint64_t tg_hash_u64(uint64_t h, uint64_t v)
{
    return (h ^ v) * TG_HASH_PRIME;
}

/* h with n bytes at p folded in. */
static inline uint64_t tg_hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * TG_HASH_PRIME;
    return h;
}

/* h with the bytes of the NUL-terminated string s folded in. */
static inline uint64_t tg_hash_str(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * TG_HASH_PRIME;
    return h;
}

#endif
