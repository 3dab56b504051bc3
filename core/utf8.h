/* The one UTF-8 check: strict, as Python's decoder and jansson are (no
 * overlong forms, no surrogates, nothing past U+10FFFF).  Pure: no
 * allocation, signal-safe. */
#ifndef TG_UTF8_H
#define TG_UTF8_H

#include <stddef.h>

/* Bytes of the well-formed UTF-8 sequence at s (at most n bytes, n >= 1):
 * 1 for an ASCII byte, 2 to 4 for a multi-byte character, 0 when the bytes
 * there are not one (a stray continuation byte, a sequence cut short,
 * overlong, a surrogate, past U+10FFFF). */
static inline size_t tg_utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    unsigned cp = c & (0x3fu >> (len - 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

#endif
