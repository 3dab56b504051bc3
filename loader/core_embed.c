/* A copy of libtunerguard_core.so inside the preloaded libtunerguard.so, so
 * that the one file is the whole tool (a user who copies only the file they
 * preload gets everything).  The copy is the section .tg_core, which has no
 * SHF_ALLOC flag: no segment maps it, so no process pays a page for it; the
 * loader reads it from its own file only where the core is needed and no
 * libtunerguard_core.so is beside it (loader/interpose_core.c, embedded_core).
 * Preload library only (not in the link-time stand-in, build/link/, nor in
 * the static archive).  TG_CORE_EMBED_PATH: the core built just before. */
#ifndef TG_CORE_EMBED_PATH
#error "TG_CORE_EMBED_PATH: the path of the built libtunerguard_core.so"
#endif

__asm__(".pushsection .tg_core, \"\", @progbits\n"
        ".incbin \"" TG_CORE_EMBED_PATH "\"\n"
        ".popsection\n");
