/* Minimal JSON reader (see cli_json.h for the contract). */
#include "cli_json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

const char *json_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

static int hex4(const char *p, const char *end, unsigned *out)
{
    if (end - p < 4)
        return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

static void put_utf8(struct cli_buf *b, unsigned cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp, n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xc0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | (cp >> 12)), u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
    } else {
        u[0] = (char)(0xf0 | (cp >> 18)), u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), u[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
    }
    cli_buf_add(b, u, n);
}

/* P at the opening quote; returns past the closing quote or NULL.  OUT may be
 * NULL (skip only). */
static const char *parse_string(const char *p, const char *end, struct cli_buf *out)
{
    p++;
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            return p + 1;
        if (c < 0x20)
            return NULL;
        if (c != '\\') {
            if (out)
                cli_buf_add(out, p, 1);
            p++;
            continue;
        }
        if (++p >= end)
            return NULL;
        char e = *p++;
        const char *map = strchr("\"\\/bfnrt", e);
        if (e && map) {
            static const char repl[] = "\"\\/\b\f\n\r\t";
            if (out)
                cli_buf_add(out, &repl[map - "\"\\/bfnrt"], 1);
            continue;
        }
        if (e != 'u')
            return NULL;
        unsigned cp;
        if (hex4(p, end, &cp) < 0)
            return NULL;
        p += 4;
        if (cp >= 0xd800 && cp < 0xdc00) {
            unsigned lo;
            if (end - p >= 6 && p[0] == '\\' && p[1] == 'u' && hex4(p + 2, end, &lo) == 0 && lo >= 0xdc00 &&
                lo < 0xe000) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                p += 6;
            } else {
                cp = 0xfffd;
            }
        } else if (cp >= 0xdc00 && cp < 0xe000) {
            cp = 0xfffd;
        }
        if (out)
            put_utf8(out, cp);
    }
    return NULL;
}

static const char *number_end(const char *p, const char *end, int *is_int)
{
    const char *s = p;
    *is_int = 1;
    if (p < end && *p == '-')
        p++;
    if (p >= end || *p < '0' || *p > '9')
        return NULL;
    while (p < end && *p >= '0' && *p <= '9')
        p++;
    if (p < end && *p == '.') {
        *is_int = 0;
        p++;
        if (p >= end || *p < '0' || *p > '9')
            return NULL;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *is_int = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || *p < '0' || *p > '9')
            return NULL;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    /* a number cut by END may be incomplete: accept only when something follows */
    return p == s ? NULL : p;
}

static const char *parse_value(const char *p, const char *end, struct json **out, int depth);

static int add_member(struct json *v, char *key, struct json *item)
{
    struct json **items = realloc(v->items, (v->n + 1) * sizeof *items);
    if (!items)
        return -1;
    v->items = items;
    if (v->type == JSON_OBJ) {
        char **keys = realloc(v->keys, (v->n + 1) * sizeof *keys);
        if (!keys)
            return -1;
        v->keys = keys;
        keys[v->n] = key;
    }
    items[v->n++] = item;
    return 0;
}

static const char *parse_container(const char *p, const char *end, struct json *v, int depth)
{
    char close = v->type == JSON_ARR ? ']' : '}';
    p = json_ws(p + 1, end);
    if (p < end && *p == close)
        return p + 1;
    for (;;) {
        char *key = NULL;
        if (v->type == JSON_OBJ) {
            if (p >= end || *p != '"')
                return NULL;
            struct cli_buf kb = {0};
            cli_buf_add(&kb, "", 0);
            p = parse_string(p, end, &kb);
            key = kb.s;
            if (!p) {
                free(key);
                return NULL;
            }
            p = json_ws(p, end);
            if (p >= end || *p != ':') {
                free(key);
                return NULL;
            }
            p = json_ws(p + 1, end);
        }
        struct json *item = NULL;
        p = parse_value(p, end, &item, depth + 1);
        if (!p || add_member(v, key, item) < 0) {
            free(key);
            json_free(item);
            return NULL;
        }
        p = json_ws(p, end);
        if (p < end && *p == ',') {
            p = json_ws(p + 1, end);
            continue;
        }
        if (p < end && *p == close)
            return p + 1;
        return NULL;
    }
}

static const char *parse_value(const char *p, const char *end, struct json **out, int depth)
{
    *out = NULL;
    p = json_ws(p, end);
    if (p >= end || depth > MAX_DEPTH)
        return NULL;
    struct json *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    *out = v;
    switch (*p) {
    case '{':
        v->type = JSON_OBJ;
        return parse_container(p, end, v, depth);
    case '[':
        v->type = JSON_ARR;
        return parse_container(p, end, v, depth);
    case '"': {
        struct cli_buf sb = {0};
        cli_buf_add(&sb, "", 0);
        v->type = JSON_STR;
        p = parse_string(p, end, &sb);
        v->str = sb.s;
        return p;
    }
    case 't':
        v->type = JSON_BOOL, v->boolean = 1;
        return end - p >= 4 && !memcmp(p, "true", 4) ? p + 4 : NULL;
    case 'f':
        v->type = JSON_BOOL;
        return end - p >= 5 && !memcmp(p, "false", 5) ? p + 5 : NULL;
    case 'n':
        v->type = JSON_NULL;
        return end - p >= 4 && !memcmp(p, "null", 4) ? p + 4 : NULL;
    default: {
        int is_int;
        const char *q = number_end(p, end, &is_int);
        if (!q)
            return NULL;
        char tmp[64];
        size_t len = (size_t)(q - p);
        if (len >= sizeof tmp)
            return NULL;
        memcpy(tmp, p, len);
        tmp[len] = '\0';
        v->type = JSON_NUM;
        v->num = strtod(tmp, NULL);
        if (is_int) {
            char *e;
            errno = 0;
            v->i = strtoll(tmp, &e, 10);
            v->is_int = *e == '\0' && errno == 0;
        }
        return q;
    }
    }
}

struct json *json_parse(const char *p, const char *end, const char **stop)
{
    struct json *v = NULL;
    const char *q = parse_value(p, end, &v, 0);
    if (!q) {
        json_free(v);
        return NULL;
    }
    if (stop)
        *stop = q;
    return v;
}

void json_free(struct json *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n; i++) {
        json_free(v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

const struct json *json_get(const struct json *v, const char *key)
{
    if (!v || v->type != JSON_OBJ)
        return NULL;
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->keys[i], key) == 0)
            return v->items[i];
    return NULL;
}

const char *json_str(const struct json *v)
{
    return v && v->type == JSON_STR ? v->str : NULL;
}

long long json_int(const struct json *v, long long def)
{
    return v && v->type == JSON_NUM && v->is_int ? v->i : def;
}

static const char *skip_value(const char *p, const char *end, int depth)
{
    p = json_ws(p, end);
    if (p >= end || depth > MAX_DEPTH)
        return NULL;
    if (*p == '"')
        return parse_string(p, end, NULL);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        int obj = *p == '{';
        p = json_ws(p + 1, end);
        if (p < end && *p == close)
            return p + 1;
        for (;;) {
            if (obj) {
                if (p >= end || *p != '"' || !(p = parse_string(p, end, NULL)))
                    return NULL;
                p = json_ws(p, end);
                if (p >= end || *p != ':')
                    return NULL;
                p++;
            }
            if (!(p = skip_value(p, end, depth + 1)))
                return NULL;
            p = json_ws(p, end);
            if (p < end && *p == ',') {
                p = json_ws(p + 1, end);
                continue;
            }
            return p < end && *p == close ? p + 1 : NULL;
        }
    }
    if (end - p >= 4 && (!memcmp(p, "true", 4) || !memcmp(p, "null", 4)))
        return p + 4;
    if (end - p >= 5 && !memcmp(p, "false", 5))
        return p + 5;
    int is_int;
    const char *q = number_end(p, end, &is_int);
    /* a number at END may have been cut: not complete */
    return q && q < end ? q : NULL;
}

const char *json_skip(const char *p, const char *end)
{
    return skip_value(p, end, 0);
}

void json_put_str(struct cli_buf *b, const char *s)
{
    if (!s) {
        cli_buf_puts(b, "null");
        return;
    }
    cli_buf_add(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            cli_buf_add(b, e, 2);
        } else if (c < 0x20) {
            cli_buf_printf(b, "\\u%04x", c);
        } else {
            cli_buf_add(b, s, 1);
        }
    }
    cli_buf_add(b, "\"", 1);
}
