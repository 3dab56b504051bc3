/* Native stacks: capture (libunwind on demand) and symbolization (dladdr,
 * then the ELF .symtab for static functions: this test binary is not linked
 * with -rdynamic, so its static functions below exercise that path). */
#include <dlfcn.h>
#include <pthread.h>

#include "report_fixture.h"
#include "reports/native_stack.h"

#define NOTAIL() __asm__ volatile("" ::: "memory")   /* keep the call a call */

static void *frames[TG_MAX_NATIVE_FRAMES];
static int nframes;
static int skip_arg;

__attribute__((noinline, noclone)) static void level1(void)
{
    nframes = tg_native_capture(frames, TG_MAX_NATIVE_FRAMES, skip_arg);
    NOTAIL();
}
__attribute__((noinline, noclone)) static void level2(void)
{
    level1();
    NOTAIL();
}
__attribute__((noinline, noclone)) static void level3(void)
{
    level2();
    NOTAIL();
}

static const char *sym(int i)
{
    static char buf[4][TG_SYM_LEN];
    return tg_native_symbolize(frames[i], buf[i & 3], TG_SYM_LEN);
}

Test(native_stack, capture_before_init_gives_nothing)
{
    void *f[4];
    cr_assert_eq(tg_native_capture(f, 4, 0), 0);
}

Test(native_stack, capture_innermost_first_and_symbolized)
{
    tg_native_init();
    tg_native_init();              /* idempotent */
    skip_arg = 0;
    level3();
    cr_assert_geq(nframes, 4, "only %d frames", nframes);
    cr_assert(!strncmp(sym(0), "level1+0x", 9), "frame 0 is %s", sym(0));
    cr_assert(!strncmp(sym(1), "level2+0x", 9), "frame 1 is %s", sym(1));
    cr_assert(!strncmp(sym(2), "level3+0x", 9), "frame 2 is %s", sym(2));
    cr_assert(strstr(sym(0), " (test_native_stack+0x"), "module missing in %s", sym(0));
}

Test(native_stack, skip_drops_callers_frames)
{
    tg_native_init();
    skip_arg = 1;
    level3();
    cr_assert_geq(nframes, 3);
    cr_assert(!strncmp(sym(0), "level2+0x", 9), "frame 0 is %s", sym(0));
}

Test(native_stack, capture_is_bounded)
{
    tg_native_init();
    void *f[2] = {0, 0};
    cr_assert_eq(tg_native_capture(f, 1, 0), 1);
    cr_assert_neq(f[0], NULL);
    cr_assert_null(f[1]);
    cr_assert_eq(tg_native_capture(f, 0, 0), 0);
    cr_assert_eq(tg_native_capture(NULL, 4, 0), 0);
}

static void *thread_main(void *arg)
{
    (void)arg;
    skip_arg = 0;
    level3();
    return NULL;
}

Test(native_stack, capture_on_another_thread)
{
    tg_native_init();
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, thread_main, NULL), 0);
    pthread_join(t, NULL);
    cr_assert_geq(nframes, 4);
    cr_assert(!strncmp(sym(3), "thread_main+0x", 14), "frame 3 is %s", sym(3));
}

Test(native_stack, symbolize_shared_library_function)
{
    char buf[TG_SYM_LEN];
    tg_native_symbolize((void *)((char *)(uintptr_t)&pthread_create + 4), buf, sizeof buf);
    cr_assert(strstr(buf, "pthread_create") && strstr(buf, "+0x4 (libc.so.6+0x"), "got %s", buf);
}

Test(native_stack, symbolize_unknown_address_is_raw)
{
    char buf[TG_SYM_LEN];
    cr_assert_str_eq(tg_native_symbolize((void *)0x10, buf, sizeof buf), "0x10");
    cr_assert_str_eq(tg_native_symbolize(NULL, buf, sizeof buf), "0x0");
    char small[8];
    tg_native_symbolize((void *)((char *)(uintptr_t)&level1 + 1), small, sizeof small);
    cr_assert_eq(strlen(small), 7, "truncated, still terminated");
}

Test(native_stack, report_symbolize_fills_both_views)
{
    tg_native_init();
    static struct tg_report r;
    fx_race_high(&r);
    r.entering.nsym = 0;
    skip_arg = 0;
    level3();
    memcpy(r.entering.native, frames, sizeof frames);
    r.entering.nnative = nframes;
    /* the thread inside: no entry stack, only the one at its CUDA call */
    r.inside.nnative = 0;
    r.inside.cuda.nframes = 2;
    r.inside.cuda.frames[0] = frames[1];
    r.inside.cuda.frames[1] = (void *)0x10;
    tg_report_symbolize(&r);
    cr_assert_eq(r.entering.nsym, nframes);
    cr_assert(!strncmp(r.entering.native_sym[0], "level1+0x", 9));
    cr_assert_eq(r.inside.nsym, 2);
    cr_assert(!strncmp(r.inside.native_sym[0], "level2+0x", 9));
    cr_assert_str_eq(r.inside.native_sym[1], "0x10");

    int rc;
    char *text = fx_capture(tg_report_write_text, &r, &rc);
    cr_assert(strstr(text, "    Native (in cuCtxSynchronize_v2):\n      #0 level2+0x"), "%s", text);
    free(text);
}

/* symbolize= option: 1 names without file:line, 0 module+offset only. */
Test(native_stack, symbolize_levels)
{
    char buf[TG_SYM_LEN];
    void *pc = (void *)((char *)(uintptr_t)&pthread_create + 4);
    tg_report_set_symbolize(0);
    tg_native_symbolize(pc, buf, sizeof buf);
    cr_assert(!strncmp(buf, "?? (libc.so.6+0x", 16), "level 0 names no function: %s", buf);
    tg_report_set_symbolize(1);
    tg_native_symbolize(pc, buf, sizeof buf);
    cr_assert(strstr(buf, "pthread_create+0x4 (libc.so.6+0x"), "level 1 names it: %s", buf);

    tg_native_init();
    static struct tg_report r;
    fx_race_high(&r);
    skip_arg = 0;
    level3();
    memcpy(r.entering.native, frames, sizeof frames);
    r.entering.nnative = nframes;
    /* With libdw (and this test's debug info) level 2 finds lines, so the
     * check of level 1 below is not empty by accident. */
    void *dw = dlopen("libdw.so.1", RTLD_LAZY);
    if (dw) {
        static struct tg_report r2;
        memcpy(&r2, &r, sizeof r2);
        tg_report_set_symbolize(2);
        tg_report_symbolize(&r2);
        int lines = 0;
        for (int i = 0; i < r2.entering.nsym; i++)
            lines += r2.entering.native_line[i] > 0;
        cr_assert_gt(lines, 0, "level 2 with libdw finds file:line");
        tg_report_set_symbolize(1);
    }
    tg_report_symbolize(&r);
    for (int i = 0; i < r.entering.nsym; i++)
        cr_assert(r.entering.native_file[i][0] == '\0' && r.entering.native_line[i] == 0,
                  "level 1 reads no line tables (frame %d: %s:%d)", i, r.entering.native_file[i],
                  r.entering.native_line[i]);
    tg_report_set_symbolize(2);
}
