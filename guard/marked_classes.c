/* The classes whose tuning methods are marked (guarded as markers: a call
 * of one counts its thread as tuning): noted as tuning_marks.c marks them,
 * asked by a guard at its first call and at its install whether its class
 * derives from one (tg__guard_has_markers).
 *
 * Everything here: an attached thread; the table under the install lock
 * (tg__install_lock). */
#include "guard/install_internal.h"
#include "core/log.h"
#include "core/py_attr.h"

/* Classes whose tuning methods are guarded as markers, each by a weak
 * reference (strong where the class takes none): the target classes, and
 * a subclass that marked an override without deriving from one of them.
 * A slot whose class was freed is taken again.  Under the install lock. */
static struct marker_base {
    PyObject *ref;
    int weak;
} marker_bases[16];
static int nmarker_bases;

/* The class of slot b (a new reference); NULL once it was freed. */
static PyObject *marker_base_cls(const struct marker_base *b)
{
    return tg__class_of_ref(b->ref, b->weak);
}

/* Note cls as a class with marked tuning methods, unless it derives from
 * one noted already (that entry answers for it: subclasses made by the
 * thousand take no room).  PyType_IsSubtype runs no Python code and sets
 * no error.  declared: a targets= tuner's step (tuning=), whose class
 * unnoted makes every overlap in its entry point a race.  The install lock
 * held. */
void tg__marked_class_add(PyObject *cls, int declared)
{
    int free_slot = -1;
    for (int i = 0; i < nmarker_bases; i++) {
        PyObject *c = marker_base_cls(&marker_bases[i]);
        if (!c && free_slot < 0)
            free_slot = i;
        int sub = c && tg_py.PyType_IsSubtype(cls, c);
        tg__class_drop(c);
        if (sub)
            return;
    }
    if (free_slot < 0 && nmarker_bases == (int)(sizeof marker_bases / sizeof marker_bases[0])) {
        static unsigned said;
        char qual[96], mod[96];
        tg_py_attr_str(cls, "__qualname__", qual, sizeof qual);
        tg_py_attr_str(cls, "__module__", mod, sizeof mod);
        if (declared)
            tg__say_capped(&said, 1, 0,
                           "tuning=: %s.%s is past the %d tuner classes with tuning steps tunerguard follows: every "
                           "overlap in its entry point is reported as a race, in its step or not", mod, qual,
                           nmarker_bases);
        else
            tg__info(1, "%s.%s is past the %d tuner classes with tuning methods tunerguard follows: its overlaps "
                        "are looked at one by one", mod, qual, nmarker_bases);
        return;
    }
    struct marker_base *b = &marker_bases[free_slot >= 0 ? free_slot : nmarker_bases++];
    if (b->ref) /* a dead weak reference */
        tg_py.Py_DecRef(b->ref);
    b->ref = tg__class_ref(cls, &b->weak);
}

int tg__guard_has_markers(struct tg_guard *g)
{
    int has = __atomic_load_n(&g->has_markers, __ATOMIC_RELAXED);
    if (has == 0) { /* once per guard: its first call, or its install */
        has = -1;
        tg__install_lock(); /* marker_bases */
        PyObject *cls = g->family ? tg__class_of_ref(g->family, g->family_weak) : tg__guard_cls(g);
        for (int i = 0; cls && i < nmarker_bases && has < 0; i++) {
            PyObject *c = marker_base_cls(&marker_bases[i]);
            if (c && tg_py.PyType_IsSubtype(cls, c))
                has = 1;
            tg__class_drop(c);
        }
        tg__class_drop(cls);
        tg__install_unlock();
        __atomic_store_n(&g->has_markers, has, __ATOMIC_RELAXED); /* the same answer from any thread */
    }
    return has > 0;
}
