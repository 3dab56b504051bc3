/* Source file:line of native return addresses, from DWARF line tables.
 *
 * elfutils' libdw is loaded on demand (dlopen "libdw.so.1"), never linked and
 * never required: without it, or without debug info for an address, lookups
 * answer "unknown" and reports keep function+offset (module+offset).
 *
 * Contract: report-writing time only (tg_report_symbolize): never on hot
 * paths, never in a signal handler.  Allocates (dlopen, libdw's own caches),
 * takes one mutex, reads /proc/self/maps and ELF/debug files.  The Dwfl
 * session is built once per process on first use and kept; modules loaded
 * later are picked up by re-reading the maps (at most once a second) when an
 * address falls in no known module.  Results are cached per address.
 *
 * Debug files are found by libdw's standard search (the file itself,
 * .gnu_debuglink, /usr/lib/debug/.build-id).  Note: libdw consults debuginfod
 * servers only when the user's environment sets DEBUGINFOD_URLS. */
#ifndef TG_DWARF_LINES_H
#define TG_DWARF_LINES_H

#include <stddef.h>

/* The source line of return address pc (looked up at pc-1, the call).
 * Returns 1 and fills file (NUL-terminated; a path under the compilation
 * directory is given relative to it; a path too long for filelen keeps its
 * end, prefixed "...") and *line (> 0); returns 0, file "" and *line 0 when
 * unknown. */
int tg_dwarf_line(void *pc, char *file, size_t filelen, int *line);

/* 1 when libdw could be loaded and a session built for this process. */
int tg_dwarf_available(void);

/* Tests: load `soname` instead of "libdw.so.1" (NULL: back to the default),
 * dropping the current session and the cache. */
void tg_dwarf_reset_for_tests(const char *soname);

#endif
