/* Arming on the Python side: the audit hook, finding target classes when
 * their modules execute, guarding subclasses and replaced methods, and the
 * exit summary. */
#ifndef TG_PY_ARM_H
#define TG_PY_ARM_H

/* Called by the constructor: resolves the CPython API and registers the
 * audit hook.  Does nothing in processes that are not CPython.  No Python
 * API other than PySys_AddAuditHook is called (the interpreter may not be
 * initialised yet). */
void tg_arm_init(int argc, char **argv);

/* Set when a target module or a replaced method waits to be (re)guarded;
 * guarded calls check it (a relaxed load) and call tg_arm_process_pending()
 * (attached; it takes the arming lock if free, else leaves it to the thread
 * that holds it). */
extern int tg_arm_pending; /* relaxed atomic loads; set and taken in loader/py_arm.c */
void tg_arm_process_pending(void);

/* Print the one-line exit summary once, if anything was reported or
 * serialized.  Safe to call more than once. */
void tg_arm_exit_summary(void);
/* In a fork child: the child prints its own summary. */
void tg_arm_atfork_child(void);

#endif
