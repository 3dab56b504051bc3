/* Between the loader's arming files: the audit hook and arming
 * (loader/py_arm.c), the targets' names (loader/py_arm_targets.c) and the
 * finder (loader/py_arm_finder.c).  Not for the core: none of these is
 * exported (loader/tunerguard.map).  Every call with the GIL held; none
 * leaves an exception set; all in the loader's start-up text (TG_STARTUP,
 * core/startup.h). */
#ifndef TG_PY_ARM_LOADER_H
#define TG_PY_ARM_LOADER_H

#include "core/py_api.h"
#include "core/startup.h"

/* Text that arming, the audit hook and the finder's negative answer read
 * in every Python process, target or not: in RELRO, not .rodata
 * (TG_STARTUP_RODATA, core/startup.h). */
#define TG_STARTUP_TEXT(var, text) static const char var[] TG_STARTUP_RODATA = text

/* ---- py_arm_targets.c ---- */

/* The targets, once: the built-in entry points, then targets= (say: warn
 * about targets that can never be guarded). */
void tg__arm_parse_targets(int say);
/* Is name a target's module?  A target's module, or a package above one? */
int tg__arm_is_target_module(const char *name);
int tg__arm_names_target_or_package(const char *name);
/* Is the top-level package of some target in sys.modules (being imported
 * or imported)?  0 while the interpreter finalizes. */
int tg__arm_target_package_present(void);
/* Was a target given with targets= (not built in)? */
int tg__arm_user_target(void);
/* `python -m MODULE` (the "cpython.run_module" event's args): one line for
 * each targets= target of that module, which runs as __main__. */
void tg__arm_say_run_as_main(PyObject *args);

/* ---- py_arm_finder.c ---- */

/* Put tunerguard's finder first in sys.meta_path (one line where it
 * cannot be). */
void tg__arm_install_finder(void);

#endif
