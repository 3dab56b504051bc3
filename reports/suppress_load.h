/* suppressions=FILE: loading the file (constructor) and the per-process set
 * the race path consults.  The matcher itself is detectors/suppress.c. */
#ifndef TG_SUPPRESS_LOAD_H
#define TG_SUPPRESS_LOAD_H

#include <stddef.h>

struct tg_report;

/* Read and parse the file (constructor, before threads).  Returns 0, or -1
 * with one line in err naming the file and the problem (the caller prints it
 * and stops the process), e.g.
 *   suppressions file 'x' line 3: unknown type 'foo' (valid: race, interference)
 *   suppressions file '/x': cannot read (No such file or directory)
 * or 1 when a relative path does not resolve from this process's directory
 * (ENOENT, ENOTDIR: typically a child started in another directory): the
 * warning, in err, has already been printed and the process runs with no
 * suppressions.
 * Allocates a temporary buffer (freed); the set itself is static. */
int tg_supp_load(const char *path, char *err, size_t errlen);

/* 1 when race report r is suppressed (counted per pattern), else 0.  GIL
 * held (or otherwise serialized); no allocation, no I/O. */
int tg_supp_check(const struct tg_report *r);

/* As tg_supp_check, returning the matching suppression's index + 1 (0: none). */
int tg_supp_check_ref(const struct tg_report *r);

/* A race seen again that suppression ref (tg_supp_check_ref's answer)
 * matched before: counted as tg_supp_check counts it.  GIL held. */
void tg_supp_count_again(int ref);

/* At exit with verbosity >= 1: the matched suppressions and their counts on
 * stderr, ThreadSanitizer style.  Nothing when none matched. */
void tg_supp_exit_report(int verbosity);

/* How many races were suppressed in total. */
unsigned long long tg_supp_total(void);

#endif
