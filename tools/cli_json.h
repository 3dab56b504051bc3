/* A small JSON reader and string writer for the tunerguard command.
 *
 * Contract: json_parse reads exactly one value from [p, end) (leading
 * whitespace skipped) into a heap tree, or returns NULL on any syntax error or
 * truncation, never reading past END; nesting deeper than 64 is an error.
 * Strings are decoded (\uXXXX and surrogate pairs to UTF-8; a lone surrogate
 * becomes U+FFFD).  Numbers keep a double and, when the text is an integer
 * that fits, an exact long long. */
#ifndef TG_CLI_JSON_H
#define TG_CLI_JSON_H

#include <stddef.h>

#include "cli.h"

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUM, JSON_STR, JSON_ARR, JSON_OBJ };

struct json {
    enum json_type type;
    int boolean;
    int is_int;
    long long i;
    double num;
    char *str;           /* JSON_STR */
    size_t n;            /* items in an array / members in an object */
    struct json **items; /* array items, or object member values */
    char **keys;         /* object member keys */
};

struct json *json_parse(const char *p, const char *end, const char **stop);
void json_free(struct json *v);

/* Object member KEY (first match) or NULL; NULL-safe on V. */
const struct json *json_get(const struct json *v, const char *key);
/* Convenience: the string (NULL unless JSON_STR), the integer (DEF unless an
 * integer number). */
const char *json_str(const struct json *v);
long long json_int(const struct json *v, long long def);

/* Pointer past one complete JSON value starting at P (after whitespace), or
 * NULL when it is malformed or cut by END. */
const char *json_skip(const char *p, const char *end);
const char *json_ws(const char *p, const char *end);

/* Append S as a JSON string literal (quoted, escaped). NULL -> null. */
void json_put_str(struct cli_buf *b, const char *s);

#endif
