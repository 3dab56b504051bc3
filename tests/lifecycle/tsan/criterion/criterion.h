/* A stand-in for the subset of Criterion that tunerguard's unit tests use, for
 * the ThreadSanitizer build only (cmake/tsan.cmake).  Criterion itself cannot
 * run under TSan: its runner maps an "inheritable arena" at a fixed address
 * inside TSan's shadow range and aborts ("Could not initialize inheritable
 * arena: Resource temporarily unavailable", Snaipe/Criterion#274).
 *
 * Same contract as Criterion where the tests depend on it: every test runs in
 * its own forked child of a single-threaded runner (fresh globals), with the
 * suite's .init, an optional .timeout, and a failed assertion ending that test
 * only.  Supported: Test(suite, name, .init/.fini/.timeout), TestSuite(suite,
 * .init/.fini/.timeout), cr_assert, cr_assert_not, cr_assert_eq/neq/geq/lt,
 * cr_assert_null/not_null, cr_assert_str_eq, cr_log_info. */
#ifndef TG_CRT_CRITERION_H
#define TG_CRT_CRITERION_H

#include <stdio.h>
#include <string.h>

struct tg_crt_opts {
    void (*init)(void);
    void (*fini)(void);
    double timeout;
    const char *description;
};

struct tg_crt_test {
    const char *suite;
    const char *name;
    void (*fn)(void);
    struct tg_crt_opts opts;
};

struct tg_crt_suite {
    const char *name;
    struct tg_crt_opts opts;
};

#define TG_CRT_CAT_(a, b) a##b
#define TG_CRT_CAT(a, b) TG_CRT_CAT_(a, b)

#define Test(suite, name, ...)                                                                            \
    static void suite##__##name##__impl(void);                                                            \
    static const struct tg_crt_test suite##__##name##__desc = {#suite, #name, suite##__##name##__impl,     \
                                                               {__VA_ARGS__}};                            \
    static const struct tg_crt_test *const suite##__##name##__ptr                                         \
        __attribute__((used, section("tg_crt_tests"))) = &suite##__##name##__desc;                        \
    static void suite##__##name##__impl(void)

#define TestSuite(suite, ...)                                                                             \
    static const struct tg_crt_suite suite##__suite_desc = {#suite, {__VA_ARGS__}};                         \
    static const struct tg_crt_suite *const suite##__suite_ptr                                            \
        __attribute__((used, section("tg_crt_suites"))) = &suite##__suite_desc

void tg_crt_fail(const char *file, int line, const char *expr, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));
void tg_crt_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define TG_CRT_CHECK(ok, expr, ...)                                                                       \
    do {                                                                                                  \
        if (!(ok))                                                                                        \
            tg_crt_fail(__FILE__, __LINE__, expr, " " __VA_ARGS__);                                       \
    } while (0)

#define cr_assert(cond, ...) TG_CRT_CHECK((cond), #cond, __VA_ARGS__)
#define cr_assert_not(cond, ...) TG_CRT_CHECK(!(cond), "!(" #cond ")", __VA_ARGS__)
#define cr_assert_eq(a, b, ...) TG_CRT_CHECK((a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...) TG_CRT_CHECK((a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...) TG_CRT_CHECK((a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...) TG_CRT_CHECK((a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...) TG_CRT_CHECK((a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...) TG_CRT_CHECK((a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_assert_null(p, ...) TG_CRT_CHECK((p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...) TG_CRT_CHECK((p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) TG_CRT_CHECK(strcmp((a), (b)) == 0, #a " eq " #b, __VA_ARGS__)
#define cr_log_info(...) tg_crt_log(__VA_ARGS__)

#endif
