/* TG_STARTUP: where the code every process runs is placed.
 *
 * The preload enters every process of a job (shells, compilers, Python
 * programs that never import a target), and what it costs there is mostly
 * pages: the kernel maps a file's pages in 64 KiB windows around each one
 * touched (fault-around), so every page of a mapping smaller than that is
 * mapped at the first touch (docs/benchmarks.md, "Start-up cost").  That is
 * why the preload is two libraries (loader/core_api.h): the loader, whose
 * .text is one window, holds only what every process may run (the
 * constructor's path, the audit hook, arming in a process that imports no
 * target, the finder's negative answer, the dlsym interposer's pass-through,
 * the exported forwarders and the exit path of a process that did nothing);
 * the core is loaded where something is to be done.  These markers are for
 * the loader's sources only.  A function marked TG_STARTUP goes into
 * .text.startup.tg, which GNU ld's default script puts at the front of
 * .text, next to the constructor and the PLT.  Placement only: the
 * generated code is the same. */
#ifndef TG_STARTUP_H
#define TG_STARTUP_H

#define TG_STARTUP __attribute__((section(".text.startup.tg")))

/* TG_STARTUP_RODATA: read-only data the constructor's path reads in every
 * process (the option table's names and defaults, the few names it looks
 * up).  Left to the compiler, their text would go to .rodata, whose segment
 * is one fault-around window of its own (64 KiB: .rodata, .eh_frame) that
 * a program such as /bin/true would map for those few bytes alone.  This
 * section is merged into .data.rel.ro, the RELRO pages ld.so writes while
 * relocating us in every process anyway, and is read-only once relocation
 * is done.  At most one object per translation unit may carry it (GCC
 * refuses one section for data with relocations and data without). */
#define TG_STARTUP_RODATA __attribute__((section(".data.rel.ro.startup.tg")))

/* TG_STARTUP_DATA: a variable, zero or not, that the constructor or arming
 * writes in every process (or every Python process).  In .bss it would be
 * a page of its own wherever it happens to fall (.bss is 15 MiB, and each
 * written page is a page of RSS); in .data it shares the one page that
 * ld.so's relocation of .got.plt writes anyway.  Small variables only: the
 * section is file space. */
#define TG_STARTUP_DATA __attribute__((section(".data.startup.tg")))

#endif
