/* Internal to the guard's files that install guards (arming, its
 * subclasses, the tuning methods, the shapes of an entry point, the
 * replacements): the calls between them, none of them on a guarded call's
 * path.  The file list is guard/guard_internal.h's.
 *
 * Everything here: attached (the GIL held, where there is one); the
 * install-time records under the install lock (below). */
#ifndef TG_GUARD_INSTALL_INTERNAL_H
#define TG_GUARD_INSTALL_INTERNAL_H

#include "guard/guard_internal.h"
#include "core/py_ref.h"

#include <string.h>

/* ---- guard_install.c ------------------------------------------------------ */

/* A class attribute assignment `cls.<name> = value` has just been made
 * (value not NULL): when name is a guarded method's and cls is, or derives
 * from, the class it was guarded on, value is guarded as its replacement
 * before anything can call it.  Attached; takes the install lock past its
 * first checks. */
void tg__guard_class_setattr(PyObject *cls, PyObject *name, PyObject *value);

/* Where a guard goes, past cls's own attribute (tg__guard_install_at). */
struct tg_guard_at {
    PyObject *value;  /* the function to guard (borrowed); NULL: cls's own attribute */
    PyObject *holder; /* a partialmethod of cls's whose func value is: a descriptor
                         guard (3.11) is put there, as its func; NULL: on cls */
    PyObject *family; /* serve instances of this class only (borrowed); NULL: all */
    int vc_only;      /* in the function's vectorcall slot or not at all (a function
                         reached from an instance, not from any class) */
    int replacement;  /* guard_replacement's: the new guard's replacement, chains, */
    int chains;       /* where, set before it is published */
    const char *where;
};

/* The install lock (guard/install_lock.c, core/py_lock.h): held by every guard
 * install, and by what reads or changes the records installs keep (the
 * guarded base classes, the run shapes' said-once lines, the tuning-marker
 * bases).  Re-entrant on its holder; a waiter detaches.  Rare: arming,
 * classes made from a guarded one, replacements. */
void tg__install_lock(void);
void tg__install_unlock(void);
/* In a fork child: the lock free again unless this thread holds it. */
void tg__install_atfork_child(void);

/* tg_guard_install with `at` (guard/run_shapes.c): 1 guarded, 0 nothing to
 * do or refused (a line said where one is due), -1 failed with one line.
 * Attached; takes the install lock. */
int tg__guard_install_at(PyObject *cls, const char *name, const char *why, int declared, const struct tg_guard_at *at);
/* tg_guard_install of a tuning method (a marker: its calls only count the
 * thread as tuning; guard/tuning_marks.c, and a tuning method replaced):
 * as tg_guard_install.  GIL held. */
int tg__guard_install_marker(PyObject *cls, const char *name, const char *why, int declared);

/* The class of a reference made by tg__class_ref (a new reference: a weak
 * one's class may go in another thread meanwhile, core/py_ref.h), NULL once
 * it is gone. */
static inline PyObject *tg__class_of_ref(PyObject *ref, int weak)
{
    if (!weak) {
        tg_py.Py_IncRef(ref);
        return ref;
    }
    return tg_py_weakref_get(ref);
}

/* Drop a class tg__class_of_ref gave; NULL: nothing. */
static inline void tg__class_drop(PyObject *cls)
{
    if (cls)
        tg_py_decref(cls);
}

/* g's class (a new reference), NULL once it is gone. */
static inline PyObject *tg__guard_cls(const struct tg_guard *g)
{
    return tg__class_of_ref(g->cls, g->cls_weak);
}

/* ---- vc_slot.c ------------------------------------------------------------- */

/* value's vectorcall slot when value is a plain function (its type learnt
 * by tg__vc_usable), else NULL.  Any thread. */
void **tg__vc_slot_of(PyObject *value);
/* Can value (a plain function) be guarded in its vectorcall slot?  Not on
 * 3.11 (the interpreter never looks at the slot for calls from Python
 * code), nor where the slot is empty.  Learns the function type. */
int tg__vc_usable(PyObject *value);
/* Put trampoline in func's vectorcall slot, its value before stored whole
 * in *orig_vc first (a guard's, which tg_guard_is_ours reads without the
 * lock). */
void tg__vc_install(void **orig_vc, PyObject *func, void *trampoline);

/* ---- class_lookup.c -------------------------------------------------------- */

/* A reference to class cls: a weak one (*weak = 1), else a strong one. */
PyObject *tg__class_ref(PyObject *cls, int *weak);
/* The built-in tuner family (core/builtin_tuners.inc) cls is or derives
 * from, -1 for none. */
int tg__builtin_family(PyObject *cls);
/* Does cls derive from a class whose tuning step tuning= names? */
int tg__names_tuning_step(PyObject *cls);
/* cls's own attribute key (a new reference, or NULL with no error set);
 * tname its type's name. */
PyObject *tg__own_attr(PyObject *cls, PyObject *key, char tname[64]);
/* value's type's name into tname (64 bytes; "" when there is none). */
void tg__type_name(PyObject *value, char tname[64]);
/* What fn is when its body does not run in its call (a coroutine function,
 * ...), else NULL. */
const char *tg__deferred_body(PyObject *fn);
/* Is fn marked abstract (@abc.abstractmethod)? */
int tg__is_abstract(PyObject *fn);
/* A method descriptor guard's ml_doc for fn (malloc'd), NULL when out of
 * memory. */
char *tg__descr_doc(const char *name, PyObject *fn);
/* Was an unguarded entry point of cls said already?  Notes it if not. */
int tg__said_for_class(PyObject *cls);
/* Was fn's refusal (its body deferred) said already?  Notes it if not. */
int tg__said_deferred(PyObject *fn);

/* A type's name that a guard takes: a plain function's. */
static inline int tg__is_plain_function(const char *tname)
{
    return strcmp(tname, "function") == 0 || strcmp(tname, "cython_function_or_method") == 0;
}

/* ---- marked_classes.c ------------------------------------------------------ */

/* Note cls as a class with marked tuning methods (declared: a targets=
 * tuner's step).  GIL held. */
void tg__marked_class_add(PyObject *cls, int declared);

/* ---- run_shapes.c ---------------------------------------------------------- */

/* cls, a subclass of the guarded class base, may reach its entry point
 * `name` some other way than a plain function of its own (a mixin's, a
 * partialmethod, a property or another descriptor): what its calls run is
 * guarded, or one line, once per class, says it runs unguarded and why.
 * declared: a targets= entry's.  The install lock held; the thread busy. */
void tg__guard_run_shape(PyObject *cls, PyObject *base, const char *name, int declared);

/* ---- guard_setattr.c ------------------------------------------------------ */

/* From the first guard on: class attribute assignments reach
 * tg__guard_class_setattr (type's tp_setattro, hooked; passing straight
 * through once the interpreter finalizes).
 * Once; GIL held. */
void tg__guard_watch_setattr(void);
/* cls.<name> = value as type.__setattr__ makes it, past any metaclass's
 * own __setattr__: a guard put on the class is tunerguard's assignment,
 * not the program's, and a metaclass that wraps what it is given would
 * wrap the guard (and see an assignment the program never made).  0, or
 * -1 with an error set.  GIL held. */
int tg__type_setattr(PyObject *cls, PyObject *name, PyObject *value);

/* ---- type_slots.c ---------------------------------------------------------- */

typedef void (*tg__any_fn)(void);

/* A type object's slots, as pointer-sized fields after its object header
 * (core/py_api.h tg_py_field): tp_setattro at 152 with a GIL, 168
 * free-threaded; tp_new at 312, 328. */
#define TG_SLOT_SETATTRO 17
#define TG_SLOT_NEW 37

/* The slot at pointer-sized field `index` after a type object's header. */
static inline tg__any_fn *tg__type_slot(PyObject *type, int index)
{
    return (tg__any_fn *)tg_py_field(type, (size_t)index);
}

extern PyObject *tg__type_type;          /* &PyType_Type (tg__type_learn), else NULL */
extern PyObject *tg__type_subclasses_of; /* type.__subclasses__, unbound (strong), else NULL */
extern int tg__type_finalizing;          /* the interpreter finalizes: the hooks pass straight through */
extern void *tg__type_main_interp;       /* the main interpreter, where the hooks went in */

/* Is the calling thread's interpreter the main one (the hooks' business)? */
static inline int tg__type_in_main(void)
{
    return !tg_py.PyInterpreterState_Get || tg_py.PyInterpreterState_Get() == tg__type_main_interp;
}

/* Learn type (tg__type_type) and the main interpreter; type, or NULL when
 * it is not found.  Once, by the first watch. */
PyObject *tg__type_learn(void);
/* Learn type.__subclasses__ (tg__type_subclasses_of; no error left set). */
void tg__type_learn_subclasses(void);
/* 3.12+: does an interpreter other than the main one exist?  Unknown
 * counts as yes.  Yes says so in one line at verbosity 1: "<what> through
 * type's slots: ...". */
int tg__type_others_exist(const char *what);
/* Slot `index` of type and of every metaclass under it (made from it,
 * directly or not) that holds `from` gets `to`. */
void tg__type_retarget(int index, tg__any_fn from, tg__any_fn to);
/* The interpreter finalizes: from now on the tp_setattro and tp_new hooks
 * only call the originals (no Python code runs here).  GIL held;
 * idempotent. */
void tg__guard_unwatch_setattr(void);

/* ---- subclasses.c ---------------------------------------------------------- */

/* Guard, on cls, every target method whose target class is base (first, on
 * a declared tuner's subclass, its overrides of the steps tuning= names).
 * GIL held; the thread busy. */
void tg__guard_family_methods(PyObject *cls, PyObject *base, const char *why);
/* Guard the overrides in every subclass of cls that exists now. */
void tg__guard_existing_subclasses(PyObject *cls, PyObject *base, int depth);
/* Watch base's subclasses made from now on.  GIL held. */
void tg__guard_hook_subclasses(PyObject *base);
/* A class was just made (type.__new__ with three arguments, any
 * metaclass): the overrides of a guarded family it derives from are
 * guarded.  Attached, any thread: the guarded bases read without the
 * install lock, taken for a class that derives from one. */
void tg__guard_class_made(PyObject *cls);

#endif
