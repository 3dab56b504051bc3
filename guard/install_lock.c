/* The install lock: the arming lock (tg__arm_lock, loader/py_arm_internal.h,
 * core/py_lock.h), one lock for arming and guard installs, which call each
 * other.  Re-entrant on its holder; a waiter detaches (PyEval_SaveThread)
 * while it waits.  Held by every install and by what reads or changes the
 * records installs keep (guard/install_internal.h).
 *
 * Any attached thread; the fork child's reset runs on the one thread left. */
#include "guard/install_internal.h"
#include "loader/py_arm_internal.h"
#include "core/py_lock.h"

void tg__install_lock(void)
{
    tg_py_lock(&tg__arm_lock);
}

void tg__install_unlock(void)
{
    tg_py_unlock(&tg__arm_lock);
}

void tg__install_atfork_child(void)
{
    tg_py_lock_atfork_child(&tg__arm_lock);
}
