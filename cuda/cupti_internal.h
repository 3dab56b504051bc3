/* The CUPTI backend's parts (cupti=1), between its three files:
 * cuda/cupti_backend.c (the backend: start, callbacks, the kernel store,
 * verdicts, release), cuda/cupti_find.c (finding libcupti) and
 * cuda/cupti_handover.c (letting go when the program subscribes). */
#ifndef TG_CUPTI_INTERNAL_H
#define TG_CUPTI_INTERNAL_H

#include <stddef.h>

/* ---- cupti_find.c ---- */

/* The libcupti to use, dlopen'ed (a copy already loaded: a handle on it),
 * or NULL; libpath gets where it came from ("<path>", "<soname> (already
 * loaded)").  Reads tg_opts.cupti_path.  Once, at the backend's start. */
void *tg__cupti_find(char *libpath, size_t size);

/* What a path that names no regular file is ("a FIFO", ...), else NULL
 * (also for a missing file, and for a name without '/', a soname). */
const char *tg__cupti_not_regular(const char *path);

/* ---- cupti_backend.c, for cupti_handover.c ---- */

/* While the backend holds CUPTI: stop collecting and give it back (the
 * backend is released for good), 1; else 0.  Any thread; once. */
int tg__cupti_let_go(void);

/* name from the libcupti the backend opened (never our exports), NULL where
 * it opened none. */
void *tg__cupti_own_sym(const char *name);

#endif
