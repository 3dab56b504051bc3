/* A tiny buffered fd writer for the report writers.
 *
 * Contract: no allocation, no stdio, no locks; only write(2).  Every function
 * here is async-signal-safe.  errno is preserved, except that a failing
 * tg_w_flush leaves write(2)'s error in it (EIO for a 0-byte write), for the
 * caller's diagnostic; a signal handler saves errno anyway.  Errors are sticky: after a failed
 * write(2) the writer drops everything and tg_w_flush() returns -1. */
#ifndef TG_WRITER_H
#define TG_WRITER_H

#include <stddef.h>
#include <stdint.h>

#define TG_W_BUFSZ 4096

struct tg_w {
    int fd;
    int failed;            /* a write(2) failed: nothing more is written */
    size_t len;
    char buf[TG_W_BUFSZ];
};

void tg_w_init(struct tg_w *w, int fd);
/* Write out what is buffered; handles EINTR and short writes.  Returns 0, or
 * -1 if any write since tg_w_init failed. */
int tg_w_flush(struct tg_w *w);

void tg_w_char(struct tg_w *w, char c);
void tg_w_str(struct tg_w *w, const char *s);            /* NULL writes "(null)" */
void tg_w_strn(struct tg_w *w, const char *s, size_t max); /* stops at NUL or max */
/* A string from the program (a name, a path) for the text report: control
 * bytes as \n, \t, \r or \xNN and a backslash as \\, so no name can start
 * a line of its own (a forged SUMMARY line); bytes that are not UTF-8 (a
 * folder named in another encoding) as \xNN.  Reads at most max bytes of s
 * (stops at NUL). */
void tg_w_text(struct tg_w *w, const char *s, size_t max);
void tg_w_u64(struct tg_w *w, uint64_t v);               /* decimal */
void tg_w_i64(struct tg_w *w, int64_t v);                /* decimal, signed */
void tg_w_hex(struct tg_w *w, uint64_t v);               /* "0x" + lowercase hex */
/* ns as a decimal with one fraction digit in the best unit: "850 ns",
 * "3.2 us", "3.2 ms", "1.2 s". */
void tg_w_duration(struct tg_w *w, uint64_t ns);
/* A JSON string literal with quotes: escapes '"', '\\' and control bytes;
 * a byte that is not UTF-8 (a file name's, a buffer cut mid-character)
 * becomes the four characters \xNN, as tg_w_text writes it.  Reads at
 * most max bytes of s (stops at NUL).  NULL writes null. */
void tg_w_json_str(struct tg_w *w, const char *s, size_t max);

#endif
