/* JSON helpers over jansson (see cli_json.h). */
#include "cli_json.h"
#include "core/utf8.h"

#include <stdlib.h>
#include <string.h>

long long cli_jint(const json_t *v, long long def)
{
    return json_is_integer(v) ? (long long)json_integer_value(v) : def;
}

const char *cli_jws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

json_t *cli_jparse_one(const char *p, const char *end, const char **stop)
{
    json_error_t err;
    if (p >= end)
        return NULL;
    /* DISABLE_EOF_CHECK: stop after the value; err.position is then the
     * number of bytes it took (jansson puts back the look-ahead byte of a
     * number). */
    json_t *v = json_loadb(p, (size_t)(end - p), JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK | JSON_ALLOW_NUL, &err);
    if (v && stop)
        *stop = p + err.position;
    return v;
}

const char *cli_jskip(const char *p, const char *end)
{
    const char *stop = NULL;
    json_t *v = cli_jparse_one(p, end, &stop);
    if (!v)
        return NULL;
    json_decref(v);
    return stop;
}

void cli_jput_str(struct cli_buf *b, const char *s)
{
    if (!s) {
        cli_buf_puts(b, "null");
        return;
    }
    /* jansson refuses strings that are not UTF-8 (json_stringn), so bad
     * bytes are replaced first; its encoder then does the escaping. */
    struct cli_buf clean = {0};
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t k = tg_utf8_len((const unsigned char *)s + i, n - i);
        if (k) {
            cli_buf_add(&clean, s + i, k);
            i += k;
        } else {
            cli_buf_add(&clean, "\xef\xbf\xbd", 3);
            i++;
        }
    }
    json_t *str = json_stringn(clean.s ? clean.s : "", clean.len);
    char *text = str ? json_dumps(str, JSON_ENCODE_ANY) : NULL;
    if (text)
        cli_buf_puts(b, text);
    else
        cli_buf_puts(b, "null"); /* out of memory */
    free(text);
    json_decref(str);
    cli_buf_free(&clean);
}
