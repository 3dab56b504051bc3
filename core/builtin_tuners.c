/* The built-in tuner families: core/builtin_tuners.inc expanded into the
 * lookups core/builtin_tuners.h declares. */
#include "core/builtin_tuners.h"

#include <stddef.h>
#include <string.h>

static const struct tg_tuner_family_def families[TG_TUNER_NFAMILIES] = {
#define TG_TUNER(id, module, cls, clears_args) [TG_TUNER_##id] = {module, cls, clears_args},
#include "core/builtin_tuners.inc"
};

/* A method or function name of one family, with its row's flag:
 * an entry's tuning, a step's reads_args. */
struct named {
    int family;
    const char *name;
    int flag;
};

static const struct named entries[] = {
#define TG_TUNER_ENTRY(id, method, tuning) {TG_TUNER_##id, method, tuning},
#include "core/builtin_tuners.inc"
};

static const struct named steps[] = {
#define TG_TUNER_STEP(id, method, frame, reads_args) {TG_TUNER_##id, method, reads_args},
#include "core/builtin_tuners.inc"
};

/* The names whose frames show tuning: the steps with frame 1, the tuning
 * entry points, the measuring functions. */
static const char *const frames[] = {
#define TG_TUNER_ENTRY(id, method, tuning) tuning ? method : NULL,
#define TG_TUNER_STEP(id, method, frame, reads_args) frame ? method : NULL,
#define TG_TUNER_FRAME(id, name) name,
#include "core/builtin_tuners.inc"
};

static const char *const library_files[] = {
#define TG_TUNER_FILE(id, path) path,
#include "core/builtin_tuners.inc"
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
_Static_assert(COUNT(entries) == TG_TUNER_NENTRIES, "the entry count the loader's table is sized by");
/* A row kind misspelled where it is defined expands to nothing (the table
 * defaults the kinds a reader leaves undefined): each list has rows. */
_Static_assert(COUNT(families) > 0 && COUNT(steps) > 0 && COUNT(frames) > 0 && COUNT(library_files) > 0,
               "core/builtin_tuners.inc: every list it fills has rows");

/* A name as long as its field in the loader's table would lose its NUL
 * without a word there (loader/py_arm_targets.c, builtin_targets). */
#define TG_TUNER(id, mod, qual, clears_args)                                                          \
    _Static_assert(sizeof mod <= TG_TUNER_MODULE_SIZE && sizeof qual <= TG_TUNER_CLASS_SIZE,        \
                   "core/builtin_tuners.inc: " #id "'s names fit the loader's table");
#define TG_TUNER_ENTRY(id, name, tuning) \
    _Static_assert(sizeof name <= TG_TUNER_ENTRY_SIZE, "core/builtin_tuners.inc: " #id "." name " fits");
#include "core/builtin_tuners.inc"

const struct tg_tuner_family_def *tg_tuner_family(int f)
{
    return f >= 0 && f < TG_TUNER_NFAMILIES ? &families[f] : NULL;
}

const char *tg_tuner_step(int i)
{
    return i >= 0 && (size_t)i < COUNT(steps) ? steps[i].name : NULL;
}

/* The flag of (f, name) in rows, 0 where it has no row. */
static int flag_of(const struct named *rows, size_t n, int f, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i].family == f && strcmp(rows[i].name, name) == 0)
            return rows[i].flag;
    return 0;
}

int tg_tuner_entry_tunes(int f, const char *method)
{
    return flag_of(entries, COUNT(entries), f, method);
}

int tg_tuner_step_reads_args(int f, const char *method)
{
    return flag_of(steps, COUNT(steps), f, method);
}

int tg_tuning_frame(const char *name)
{
    for (size_t i = 0; name && i < COUNT(frames); i++)
        if (frames[i] && strcmp(frames[i], name) == 0)
            return 1;
    return 0;
}

int tg_tuner_library_file(const char *file, size_t len)
{
    for (size_t i = 0; i < COUNT(library_files); i++)
        if (memmem(file, len, library_files[i], strlen(library_files[i])))
            return 1;
    return 0;
}
