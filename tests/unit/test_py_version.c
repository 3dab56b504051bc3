/* Which interpreters tunerguard serves (core/py_api.c tg_py_version_parse),
 * from Py_GetVersion() strings as each kind of build prints them: 3.9 to
 * 3.15 with a GIL and the free-threaded 3.13t and 3.14t are served; 3.8 and
 * older, 3.16 and newer, a free-threaded 3.15t or later and whatever is not
 * a 3.x are not (loader/py_arm.c then says one line when a target module is
 * imported).  No interpreter is loaded: the strings are
 * the ones those builds print. */
#include <criterion/criterion.h>

#include "core/py_api.h"

static int served(const char *v, int *minor, int *ft)
{
    return tg_py_version_parse(v, minor, ft) == 0;
}

Test(py_version, served_versions)
{
    static const struct { const char *v; int minor; } ok[] = {
        {"3.9.18 (main, Nov 28 2026, 10:00:00) \n[GCC 12.2.0]", 9},
        {"3.10.13 (main, Nov 28 2026, 10:00:00) [GCC 12.2.0]", 10},
        {"3.11.2 (main, Mar 13 2023, 12:18:29) [GCC 12.2.0]", 11},
        {"3.12.1 (main, Nov 28 2026, 10:00:00) [GCC 12.2.0]", 12},
        {"3.13.0 (main, Nov 28 2026, 10:00:00) [GCC 12.2.0]", 13},
        {"3.14.0a1+ (heads/main:1234567, Oct 1 2024) [GCC 14.1.0]", 14},
        {"3.14.10 (main, Oct 26 2026, 15:12:11) [GCC 16.2.0]", 14}, /* Debian sid's python3.14 */
        {"3.15.2 (main, Oct 26 2026, 15:10:10) [GCC 16.2.0]", 15},  /* Debian sid's python3.15 */
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int minor = -2, ft = -2;
        cr_expect(served(ok[i].v, &minor, &ft), "%s", ok[i].v);
        cr_expect_eq(minor, ok[i].minor, "%s: minor %d", ok[i].v, minor);
        cr_expect_eq(ft, 0, "%s", ok[i].v);
    }
}

Test(py_version, older_than_3_9)
{
    static const struct { const char *v; int minor; } old[] = {
        {"3.8.18 (default, Nov 28 2026, 10:00:00) \n[GCC 12.2.0]", 8},
        {"3.7.16 (default, Nov 28 2026, 10:00:00) [GCC 12.2.0]", 7},
        {"3.0.1 (r301:69556, Feb 13 2009)", 0},
    };
    for (size_t i = 0; i < sizeof old / sizeof old[0]; i++) {
        int minor = -2, ft = -2;
        cr_expect(!served(old[i].v, &minor, &ft), "%s", old[i].v);
        cr_expect_eq(minor, old[i].minor, "%s: minor %d", old[i].v, minor);
        cr_expect_eq(ft, 0);
    }
}

Test(py_version, newer_than_3_15)
{
    /* Layouts not checked against their headers: inert there. */
    static const struct { const char *v; int minor; } newer[] = {
        {"3.16.0a1+ (heads/main:1234567, Oct 1 2026) [GCC 16.2.0]", 16},
        {"3.16.0 (main, Oct 7 2027, 10:00:00) [GCC 16.2.0]", 16},
        {"3.20.1 (main, Oct 7 2031, 10:00:00) [GCC 20.1.0]", 20},
    };
    for (size_t i = 0; i < sizeof newer / sizeof newer[0]; i++) {
        int minor = -2, ft = -2;
        cr_expect(!served(newer[i].v, &minor, &ft), "%s", newer[i].v);
        cr_expect_eq(minor, newer[i].minor, "%s: minor %d", newer[i].v, minor);
        cr_expect_eq(ft, 0, "%s", newer[i].v);
    }
}

Test(py_version, free_threaded)
{
    /* 3.13t says "experimental"; 3.14t (PEP 779: supported) no longer does.
     * Served: their layouts were checked against their headers. */
    static const struct { const char *v; int minor; } ft_builds[] = {
        {"3.13.0 experimental free-threading build (main, Oct 7 2024, 10:00:00) [GCC 12.2.0]", 13},
        {"3.13.5 experimental free-threading build (main, Dec 5 2026, 21:33:40) [GCC 12.2.0]", 13}, /* tools/dev py313t */
        {"3.14.0 free-threading build (main, Oct 7 2025, 10:00:00) [GCC 14.2.0]", 14},
    };
    for (size_t i = 0; i < sizeof ft_builds / sizeof ft_builds[0]; i++) {
        int minor = -2, ft = -2;
        cr_expect(served(ft_builds[i].v, &minor, &ft), "%s", ft_builds[i].v);
        cr_expect_eq(minor, ft_builds[i].minor, "%s", ft_builds[i].v);
        cr_expect_eq(ft, 1, "%s", ft_builds[i].v);
    }
}

Test(py_version, free_threaded_unknown)
{
    /* A free-threaded 3.15 or later: its layouts were not checked (3.15 with a
     * GIL is served, its free-threaded build is not). */
    static const struct { const char *v; int minor; } ft_builds[] = {
        {"3.15.2 free-threading build (main, Oct 26 2026, 15:10:10) [GCC 16.2.0]", 15},
        {"3.16.0 free-threading build (main, Oct 7 2027, 10:00:00) [GCC 16.2.0]", 16},
        {"3.12.0 experimental free-threading build (main, Oct 7 2023) [GCC 12.2.0]", 12},
    };
    for (size_t i = 0; i < sizeof ft_builds / sizeof ft_builds[0]; i++) {
        int minor = -2, ft = -2;
        cr_expect(!served(ft_builds[i].v, &minor, &ft), "%s", ft_builds[i].v);
        cr_expect_eq(minor, ft_builds[i].minor, "%s", ft_builds[i].v);
        cr_expect_eq(ft, 1, "%s", ft_builds[i].v);
    }
}

Test(py_version, not_a_python3)
{
    static const char *const bad[] = {"2.7.18 (default, Apr 20 2020)", "", "3.", "3.x", "PyPy 7.3", "30.1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int minor = 5, ft = -2;
        cr_expect(!served(bad[i], &minor, &ft), "'%s'", bad[i]);
        cr_expect_eq(minor, -1, "'%s': minor %d", bad[i], minor);
    }
    int minor = 5, ft = 5;
    cr_expect(!served(NULL, &minor, &ft));
    cr_expect_eq(minor, -1);
    cr_expect_eq(ft, 0);
}
