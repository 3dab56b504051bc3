/* Source file:line through libdw loaded on demand (reports/dwarf_lines.c),
 * and its place in symbolized reports.  This binary is built with debug info
 * (RelWithDebInfo), so its own return addresses have lines; libc's usually
 * do not (no debug package), and a missing libdw must change nothing but
 * the absence of file:line. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/dwarf_lines.h"
#include "reports/native_stack.h"
#include "reports/report.h"
#include "report_fixture.h"

static __attribute__((noinline)) void *ret_addr(void)
{
    void *p = __builtin_return_address(0);
    __asm__ volatile("" ::: "memory");
    return p;
}

static int have_libdw(void)
{
    void *h = dlopen("libdw.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
        dlclose(h);
        return 1;
    }
    h = dlopen("libdw.so.1", RTLD_LAZY);
    if (h)
        dlclose(h);
    return h != NULL;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

Test(dwarf_lines, own_return_address_has_file_and_line)
{
    if (!have_libdw())
        cr_skip_test("libdw.so.1 not installed");
    int want = __LINE__ + 1;
    void *pc = ret_addr();
    char file[TG_SRC_LEN];
    int line = -1;
    cr_assert_eq(tg_dwarf_line(pc, file, sizeof file, &line), 1);
    cr_assert(ends_with(file, "test_dwarf_lines.c"), "file %s", file);
    cr_assert_eq(line, want, "line %d, want %d", line, want);
    cr_assert(tg_dwarf_available());
    /* the second lookup is answered from the cache, the same */
    char file2[TG_SRC_LEN];
    int line2 = 0;
    cr_assert_eq(tg_dwarf_line(pc, file2, sizeof file2, &line2), 1);
    cr_assert_str_eq(file2, file);
    cr_assert_eq(line2, line);
}

Test(dwarf_lines, long_path_keeps_its_end)
{
    if (!have_libdw())
        cr_skip_test("libdw.so.1 not installed");
    void *pc = ret_addr();
    char file[20];
    int line = 0;
    cr_assert_eq(tg_dwarf_line(pc, file, sizeof file, &line), 1);
    cr_assert_eq(strlen(file), sizeof file - 1);
    cr_assert(!strncmp(file, "...", 3), "file %s", file);
    cr_assert(ends_with(file, "st_dwarf_lines.c"), "file %s", file);   /* the last 16 bytes */
}

Test(dwarf_lines, unknown_addresses_answer_nothing)
{
    char file[TG_SRC_LEN] = "junk";
    int line = 7;
    cr_assert_eq(tg_dwarf_line((void *)0x10, file, sizeof file, &line), 0);
    cr_assert_str_eq(file, "");
    cr_assert_eq(line, 0);
    cr_assert_eq(tg_dwarf_line(NULL, file, sizeof file, &line), 0);
    cr_assert_eq(tg_dwarf_line((void *)0x10, NULL, 0, &line), 0);   /* no crash */
}

Test(dwarf_lines, without_libdw_falls_back_silently)
{
    tg_dwarf_reset_for_tests("libdw-not-installed.so.1");
    cr_assert_eq(tg_dwarf_available(), 0);
    char file[TG_SRC_LEN];
    int line = 5;
    cr_assert_eq(tg_dwarf_line(ret_addr(), file, sizeof file, &line), 0);
    cr_assert_str_eq(file, "");
    cr_assert_eq(line, 0);

    /* a symbolized report: symbols as always, no file:line, nothing printed */
    static struct tg_report r;
    memset(&r, 0, sizeof r);
    r.kind = TG_REPORT_RACE;
    r.entering.nnative = 1;
    r.entering.native[0] = ret_addr();
    tg_report_symbolize(&r);
    cr_assert_eq(r.entering.nsym, 1);
    cr_assert(strncmp(r.entering.native_sym[0], "0x", 2) != 0, "sym %s", r.entering.native_sym[0]);
    cr_assert_str_eq(r.entering.native_file[0], "");
    cr_assert_eq(r.entering.native_line[0], 0);
    tg_dwarf_reset_for_tests(NULL);
}

/* tg_report_symbolize fills native_file/line; the writers show them. */
Test(dwarf_lines, symbolized_report_shows_file_line)
{
    if (!have_libdw())
        cr_skip_test("libdw.so.1 not installed");
    static struct tg_report r;
    memset(&r, 0, sizeof r);
    r.kind = TG_REPORT_RACE;
    r.pid = 1;
    r.rank = -1;
    struct tg_thread_view *e = &r.entering;
    int want = __LINE__ + 1;
    e->native[0] = ret_addr();
    e->native[1] = (void *)((char *)(uintptr_t)&strlen + 4);   /* libc: usually no debug info */
    e->nnative = 2;
    snprintf(e->native_where, sizeof e->native_where, "at entry");
    tg_report_symbolize(&r);
    cr_assert_eq(e->nsym, 2);
    cr_assert(ends_with(e->native_file[0], "test_dwarf_lines.c"), "file %s", e->native_file[0]);
    cr_assert_eq(e->native_line[0], want);

    int rc;
    char *txt = fx_capture(tg_report_write_text, &r, &rc);
    cr_assert_eq(rc, 0);
    char needle[64];
    snprintf(needle, sizeof needle, "test_dwarf_lines.c:%d (test_dwarf_lines+0x", want);
    cr_assert(strstr(txt, needle), "no '%s' in:\n%s", needle, txt);
    free(txt);

    char *js = fx_capture(tg_report_write_jsonl, &r, &rc);
    cr_assert_eq(rc, 0);
    snprintf(needle, sizeof needle, "test_dwarf_lines.c\",\"line\":%d}", want);
    cr_assert(strstr(js, needle), "no '%s' in:\n%s", needle, js);
    free(js);
}
