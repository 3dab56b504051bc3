/* The built-in tuner families (core/builtin_tuners.inc) as the core library
 * reads them: by number, with the questions the guard and the reports ask.
 * The loader expands the table itself (its targets are startup data,
 * loader/py_arm_targets.c).  Pure lookups in constant tables: no Python, no
 * allocation, any thread. */
#ifndef TG_BUILTIN_TUNERS_H
#define TG_BUILTIN_TUNERS_H

#include <stddef.h>

enum tg_tuner_family {
#define TG_TUNER(id, module, cls, clears_args) TG_TUNER_##id,
#include "core/builtin_tuners.inc"
    TG_TUNER_NFAMILIES
};

/* The entry points of all families: the loader's built-in targets. */
enum {
    TG_TUNER_NENTRIES = 0
#define TG_TUNER_ENTRY(id, method, tuning) + 1
#include "core/builtin_tuners.inc"
};

/* The loader's startup table holds the names in fields of these sizes,
 * NUL included (every row is checked: core/builtin_tuners.c). */
#define TG_TUNER_MODULE_SIZE 48
#define TG_TUNER_CLASS_SIZE 24
#define TG_TUNER_ENTRY_SIZE 15

struct tg_tuner_family_def {
    const char *module;   /* "triton.runtime.autotuner" */
    const char *cls;      /* "Autotuner" (its qualname) */
    int clears_args;      /* run() clears the arguments it keeps on the tuner */
};

/* Family f's row (0 <= f < TG_TUNER_NFAMILIES). */
const struct tg_tuner_family_def *tg_tuner_family(int f);

/* The i-th tuning method of all families, in the table's order (the order
 * they are marked in); NULL past the last. */
const char *tg_tuner_step(int i);

/* Is `method` an entry point of family f that is tuning from its start
 * (Autotuner.warmup)? */
int tg_tuner_entry_tunes(int f, const char *method);

/* Is `method` a tuning method of family f that reads the arguments its
 * run() keeps at once (Autotuner._bench)? */
int tg_tuner_step_reads_args(int f, const char *method);

/* Is `name` (a Python function's name, co_name) one whose frame shows its
 * thread tuning: a family's tuning method, tuning entry point or measuring
 * function? */
int tg_tuning_frame(const char *name);

/* Is file (len bytes, a frame's file name) in a family's library code, its
 * measuring included (triton/runtime/, triton/testing.py, torch/cuda/)?
 * Reads only its arguments: no allocation, any thread. */
int tg_tuner_library_file(const char *file, size_t len);

#endif
