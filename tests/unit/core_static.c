/* The static archive's binding to the core (loader/core_api.h): the unit
 * tests link the loader's and the core's objects into one program, so the
 * table is there from the start.  Not in either shared library. */
#include "loader/core_api.h"
#include "tg_build_id.h"

const struct tg_core_api *tg__core_bind(char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    return tg_core_entry(TG_BUILD_ID);
}

void tg__core_ready(const struct tg_core_api *t)
{
    (void)t;
}

void tg__core_note_dir(void)
{
}

/* Bound from the start, as in a process where the core was loaded (a unit
 * test calls the loader's calls into the core directly). */
__attribute__((constructor)) static void bind_at_start(void)
{
    (void)tg_core_load();
}

void tg__core_bind_atfork_child(void)
{
    /* the static archive binds nothing: no fd held */
}

int tg__copy_inert(void **serving)
{
    (void)serving;
    return 0; /* linked into a test program: the only copy */
}
