/* Arming, split in two: what the loader keeps (loader/py_arm.c: the audit
 * hook, pending modules; loader/py_arm_targets.c: the targets' names;
 * loader/py_arm_finder.c: the finder and its negative answer) and what runs
 * only once a target module is there, in the core library
 * (guard/py_arm_guard.c: finding the classes, guarding them, the finder's
 * positive answer; guard/subclasses.c: their subclasses;
 * guard/exit_summary.c: the exit summary).
 *
 * The state below is the loader's (defined in those three files, exported
 * to the core through the loader's tg__* names, loader/tunerguard.map).
 * Every access is on an attached thread, under tg__arm_lock, but for the
 * reads loader/py_arm.c lists (the targets' names up to tg__arm_ntargets,
 * loaded with acquire; the pending flags). */
#ifndef TG_PY_ARM_INTERNAL_H
#define TG_PY_ARM_INTERNAL_H

#include "core/builtin_tuners.h"
#include "core/options.h"
#include "core/py_api.h"
#include "core/py_lock.h"

#define TG_MAX_TARGETS (TG_TUNER_NENTRIES + TG_TARGETS_MAX) /* the built-in ones, then targets= */
struct tg__arm_target {
    char module[TG_TARGET_MODULE_MAX + 1];
    char cls[TG_TARGET_CLASS_MAX + 1];   /* qualname inside the module, may be dotted */
    char method[TG_TARGET_METHOD_MAX + 1];
    PyObject *base;    /* the class once found (strong reference) */
    int user;          /* from targets= (not built in): a target that guards
                          nothing is the user's mistake, said once */
    int said;
};
extern struct tg__arm_target tg__arm_targets[TG_MAX_TARGETS];
extern int tg__arm_ntargets; /* written under tg__arm_lock with a release store, the entry filled first */
/* The arming lock: arming, the target table, the finder, pending modules, and
 * the core's guard installs (guard/guard_internal.h tg__install_lock). */
extern struct tg_py_lock tg__arm_lock;
/* An "import" event named a target module (or a loader could not be
 * annotated): guard at the next chance (tg_arm_pending is set with it). */
extern int tg__arm_module_pending;
/* Our finder in sys.meta_path, for identity only (no reference held). */
extern PyObject *tg__arm_finder_self;

/* ---- the core's part (guard/py_arm_guard.c, guard/exit_summary.c), reached through the core's
 * table (loader/core_api.h) ---- */

/* Guard every target of module `name`, which is in sys.modules (mod,
 * borrowed).  Returns the number of its targets whose class is not found
 * yet.  executed: the module ran to its end (else its import spec says).
 * Loads libunwind with the first class found. */
int tg__arm_guard_module(const char *name, PyObject *mod, int executed);

/* The finder's answer for a target module: the spec the finders after ours
 * give, its loader's exec_module wrapped to guard right after it ran; None
 * (a new reference) when no other finder knows the name.  Borrowed
 * arguments; new reference returned; no exception left set. */
PyObject *tg__arm_find_target_spec(PyObject *fullname, PyObject *path, PyObject *target);

/* The exit summary proper (tg_arm_exit_summary, py_arm.h, calls it when the
 * core is loaded: without it nothing was reported or serialized). */
void tg__arm_exit_summary_core(void);
/* The interpreter finalizes (its audit hooks are being cleared; objects
 * still alive, GIL held): what tunerguard changed in it goes back, then the
 * exit summary. */
void tg__arm_finalizing_core(void);

#endif
