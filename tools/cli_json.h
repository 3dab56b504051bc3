/* JSON for the tunerguard command: reading goes through jansson (Debian's
 * libjansson-dev, linked by the command only; the preloaded library has no
 * such dependency).  This header adds the few helpers the subcommands share.
 *
 * Contract: none of these keep a reference to their arguments; NULL values
 * are accepted everywhere a json_t is taken (jansson's getters are NULL-safe
 * too: json_object_get(NULL, k) is NULL, json_string_value(NULL) is NULL). */
#ifndef TG_CLI_JSON_H
#define TG_CLI_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "cli.h"

/* The integer V holds, or DEF when V is not a JSON integer. */
long long cli_jint(const json_t *v, long long def);

/* Parse exactly one JSON value from [p, end) (no leading whitespace skip):
 * the value, or NULL when the text there is not one complete value.  *stop,
 * when the value parsed, is just past it.  Heap tree: json_decref it. */
json_t *cli_jparse_one(const char *p, const char *end, const char **stop);

/* Pointer past the one complete JSON value at P, or NULL when it is
 * malformed or cut by END. */
const char *cli_jskip(const char *p, const char *end);
/* P after JSON whitespace. */
const char *cli_jws(const char *p, const char *end);

/* Append S as a JSON string literal; NULL -> null.  Bytes that are not
 * UTF-8 become U+FFFD, so the output always parses. */
void cli_jput_str(struct cli_buf *b, const char *s);

#endif
