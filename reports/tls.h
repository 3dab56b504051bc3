/* The trace's thread-locals, defined in reports/tls.c (in the loader,
 * libtunerguard.so: the core library, dlopen'd late, has no static TLS block
 * of its own, loader/core_api.h).  Each is read and written by its own
 * thread only; zero until the trace writes it. */
#ifndef TG_REPORTS_TLS_H
#define TG_REPORTS_TLS_H

#include <stdint.h>

struct tg__trace_ring;

/* reports/trace_rec.c: the thread's event ring (NULL: none claimed yet), and
 * 1 once no ring was left for it (its events are counted as dropped). */
extern __thread struct tg__trace_ring *tg__my_ring;
extern __thread int tg__no_ring;
/* reports/trace.c: which open sessions had their begin written (LIFO bits),
 * how many are open, and whether the thread's name was written. */
extern __thread uint64_t tg__sess_bits;
extern __thread int tg__sess_depth;
extern __thread int tg__self_named;

#endif
