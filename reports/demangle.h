/* C++ names for people: a mangled name ("_ZN2at6native...") demangled with
 * the C++ runtime's own __cxa_demangle, found in the process at write time.
 * tunerguard does not link libstdc++ and never loads it: where the process
 * has none (a C-only program), names stay as the binary has them.
 *
 * Contract: for writers, at write time only (never a hook's path, never a
 * signal handler).  Takes a mutex; allocates (__cxa_demangle's buffer, kept
 * and grown, one for the process). */
#ifndef TG_DEMANGLE_H
#define TG_DEMANGLE_H

#include <stddef.h>

/* name (at most max bytes, NUL-terminated or not) demangled into out (len
 * bytes, NUL-terminated, cut to fit): 1.  0, out untouched, when name is no
 * mangled C++ name ("_Z..."), when the process has no __cxa_demangle, or
 * when it refuses the name. */
int tg_demangle(const char *name, size_t max, char *out, size_t len);

/* A symbolized native frame ("NAME+0xOFF (module+0xOFF)", reports/report.h)
 * with NAME demangled (tg_demangle), the rest as it is, into out: 1; 0 and
 * out untouched when NAME is not demangled.  A name too long for out is cut,
 * ending in "...": the offset and module stay whole. */
int tg_demangle_frame(const char *sym, size_t max, char *out, size_t len);

#endif
