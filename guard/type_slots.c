/* type's slots, as the watches hook them (guard/guard_setattr.c hooks
 * tp_setattro, guard/subclasses.c tp_new): where a slot is, the metaclasses
 * that copied it, switching it in all of them at once, and the two states
 * the hooks look at before they do anything of their own (the interpreter
 * finalizing; the calling thread in another interpreter).
 *
 * A subclass of type copies type's slots when it is made (ABCMeta, EnumType,
 * ...): a hook put on type alone would leave those with the original, and
 * type.__setattr__'s check that a slot function is not applied past another
 * C-level one (typeobject.c, hackcheck) would then see two functions.  So a
 * slot is switched on type and on every metaclass under it that holds the
 * same function (retarget); those made later copy the hook.
 *
 * Other interpreters.  From 3.12 on, type is shared by all interpreters but
 * each has its own type.__dict__ (its own wrappers, made when it started,
 * holding the slot function of that moment) and its own type.__subclasses__()
 * (its own metaclasses).  An interpreter that already runs when the slots are
 * switched keeps the original in both, out of reach from here, and its
 * hackcheck then refuses every type.__setattr__ / __delattr__ (Enum's
 * super().__setattr__ among them: "can't apply this __setattr__ to type
 * object") and tp_new_wrapper every type.__new__ of a metaclass it made
 * ("type.__new__(M2) is not safe").  So on 3.12+ a hook goes in only while
 * the main interpreter is the only one (tg__type_others_exist); otherwise
 * that watch is off, with one line.  An interpreter started after the switch
 * makes its wrappers and metaclasses from the hooks, which pass straight
 * through there: guards belong to the main interpreter.
 *
 * The layout read: a type object's tp_setattro and tp_new, at fixed fields
 * after its object header (TG_SLOT_SETATTRO, TG_SLOT_NEW,
 * guard/install_internal.h).
 *
 * Everything here: GIL held. */
#include "guard/install_internal.h"
#include "core/log.h"
#include "core/real_sym.h"

#include <dlfcn.h>

PyObject *tg__type_type;
PyObject *tg__type_subclasses_of;
int tg__type_finalizing;
void *tg__type_main_interp;

PyObject *tg__type_learn(void)
{
    tg__type_type = tg_real_sym(RTLD_DEFAULT, "PyType_Type");
    if (!tg__type_type) {
        (void)dlerror();
        return NULL;
    }
    tg__type_main_interp = tg_py.PyInterpreterState_Get ? tg_py.PyInterpreterState_Get() : NULL;
    return tg__type_type;
}

void tg__type_learn_subclasses(void)
{
    tg__type_subclasses_of = tg_py.PyObject_GetAttrString(tg__type_type, "__subclasses__");
    tg_py.PyErr_Clear();
}

/* 3.12+: interpreters are listed newest first, the main one last: one load
 * of the list's head, nothing of another interpreter is read. */
int tg__type_others_exist(const char *what)
{
    if (tg_py.minor < 12)
        return 0; /* one type.__dict__ and one __subclasses__() for all */
    if (tg_py.PyInterpreterState_Head && tg_py.PyInterpreterState_Main &&
        tg_py.PyInterpreterState_Head() == tg_py.PyInterpreterState_Main())
        return 0;
    tg__info(1, "%s through type's slots: other interpreters exist, each with its own view of them "
                "(changing them would break type.__setattr__ and type.__new__ there)", what);
    return 1;
}

/* type.__subclasses__(t): the metaclasses made from t, directly. */
static void retarget(PyObject *t, int index, tg__any_fn from, tg__any_fn to, int depth)
{
    if (*tg__type_slot(t, index) == from)
        *tg__type_slot(t, index) = to;
    if (depth > 32)
        return;
    PyObject *subs = tg_py.PyObject_CallFunctionObjArgs(tg__type_subclasses_of, t, NULL);
    if (!subs) {
        tg_py.PyErr_Clear();
        return;
    }
    for (Py_ssize_t i = 0, n = tg_py.PyList_Size(subs); i < n; i++)
        retarget(tg_py.PyList_GetItem(subs, i), index, from, to, depth + 1);
    tg_py.Py_DecRef(subs);
}

void tg__type_retarget(int index, tg__any_fn from, tg__any_fn to)
{
    retarget(tg__type_type, index, from, to, 0);
}

void tg__guard_unwatch_setattr(void)
{
    /* Nothing is put back: that walks every metaclass through
     * type.__subclasses__(), Python code, and Python code run this late
     * (after the modules are cleared) corrupts 3.13's dict free list: the
     * interpreter crashes at exit (a program with an audit hook of its own
     * and a file left open).  The hooks stay in place, one function
     * everywhere as hackcheck wants, and only call the originals. */
    tg__type_finalizing = 1;
}
