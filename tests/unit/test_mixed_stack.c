/* The mixed view (reports/mixed_stack.c): py-spy --native's merge over
 * synthetic symbolized frames, and how the writers print it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/mixed_stack.h"
#include "report_fixture.h"

#define PY "libpython3.11.so.1.0"

/* Build a view from symbol strings (innermost first) and n Python frames
 * named py0, py1, ... */
static void view(struct tg_thread_view *v, const char *const *syms, int nsyms, int npy)
{
    memset(v, 0, sizeof *v);
    for (int i = 0; i < nsyms; i++) {
        v->native[i] = (void *)(uintptr_t)(0x1000 + 16 * i);
        snprintf(v->native_sym[i], TG_SYM_LEN, "%s", syms[i]);
    }
    v->nnative = v->nsym = nsyms;
    for (int i = 0; i < npy; i++) {
        char f[16];
        snprintf(f, sizeof f, "py%d", i);
        fx_py(v, f, "m.py", 10 + i);
    }
}

/* The merged list as a compact string: "N2 P0 P1 N5 ..." */
static const char *merged(const struct tg_thread_view *v)
{
    static char out[1024];
    struct tg_mixed_frame m[TG_MAX_MIXED_FRAMES];
    int n = tg_mixed_view(v, m, TG_MAX_MIXED_FRAMES);
    out[0] = '\0';
    for (int i = 0; i < n; i++)
        snprintf(out + strlen(out), sizeof out - strlen(out), "%s%c%d", i ? " " : "",
                 m[i].kind == TG_MIXED_NATIVE ? 'N' : 'P', m[i].index);
    return out;
}

Test(mixed, classify)
{
    cr_assert_eq(tg_mixed_classify("_PyEval_EvalFrameDefault+0x12 (" PY "+0x1)", TG_SYM_LEN), TG_NATIVE_EVAL);
    cr_assert_eq(tg_mixed_classify("_PyEval_EvalFrameDefault.cold.2962+0x3 (" PY "+0x1)", TG_SYM_LEN), TG_NATIVE_EVAL);
    cr_assert_eq(tg_mixed_classify("PyEval_EvalFrameEx+0x3 (libpython2.7.so+0x1)", TG_SYM_LEN), TG_NATIVE_EVAL);
    cr_assert_eq(tg_mixed_classify("_PyEval_EvalFrameDefault+0x3 (python3.12+0x1)", TG_SYM_LEN), TG_NATIVE_EVAL);
    /* other interpreter plumbing: dropped */
    cr_assert_eq(tg_mixed_classify("_PyObject_MakeTpCall+0x90 (" PY "+0x1b2c40)", TG_SYM_LEN), TG_NATIVE_DROP);
    cr_assert_eq(tg_mixed_classify("PyEval_EvalCode+0x9 (" PY "+0x1)", TG_SYM_LEN), TG_NATIVE_DROP);
    cr_assert_eq(tg_mixed_classify("Py_RunMain+0x9 (python3.11+0x1)", TG_SYM_LEN), TG_NATIVE_DROP);
    /* the allow-list: time.sleep, lock waits, GIL state stay visible */
    cr_assert_eq(tg_mixed_classify("time_sleep+0x9 (" PY "+0x1)", TG_SYM_LEN), TG_NATIVE_KEEP);
    cr_assert_eq(tg_mixed_classify("lock_PyThread_acquire_lock+0x9 (" PY "+0x1)", TG_SYM_LEN), TG_NATIVE_KEEP);
    cr_assert_eq(tg_mixed_classify("PyThread_acquire_lock_timed+0x9 (" PY "+0x1)", TG_SYM_LEN), TG_NATIVE_KEEP);
    cr_assert_eq(tg_mixed_classify("PyGILState_Ensure+0x9 (" PY "+0x1)", TG_SYM_LEN), TG_NATIVE_KEEP);
    cr_assert_eq(tg_mixed_classify("_PyThread_x+0x9 (" PY "+0x1)", TG_SYM_LEN), TG_NATIVE_KEEP);
    cr_assert_eq(tg_mixed_classify("os_waitpid_impl+0x9 (" PY "+0x1)", TG_SYM_LEN), TG_NATIVE_KEEP);
    cr_assert_eq(tg_mixed_classify("timeout_helper+0x9 (" PY "+0x1)", TG_SYM_LEN), TG_NATIVE_DROP);
    /* thread and process start: dropped wherever they are */
    cr_assert_eq(tg_mixed_classify("start_thread+0x9 (libc.so.6+0x1)", TG_SYM_LEN), TG_NATIVE_DROP);
    cr_assert_eq(tg_mixed_classify("__clone3+0x9 (libc.so.6+0x1)", TG_SYM_LEN), TG_NATIVE_DROP);
    cr_assert_eq(tg_mixed_classify("__clone+0x9 (libc.so.6+0x1)", TG_SYM_LEN), TG_NATIVE_DROP);
    cr_assert_eq(tg_mixed_classify("__libc_start_main+0x9 (libc.so.6+0x1)", TG_SYM_LEN), TG_NATIVE_DROP);
    cr_assert_eq(tg_mixed_classify("__libc_start_call_main+0x9 (libc.so.6+0x1)", TG_SYM_LEN), TG_NATIVE_DROP);
    /* everything else: kept, including names that only look like Python's */
    cr_assert_eq(tg_mixed_classify("cuCtxSynchronize_v2+0x30 (libcuda.so.1+0x31000)", TG_SYM_LEN), TG_NATIVE_KEEP);
    cr_assert_eq(tg_mixed_classify("_PyObject_MakeTpCall+0x90 (libfoo.so+0x1)", TG_SYM_LEN), TG_NATIVE_KEEP);
    cr_assert_eq(tg_mixed_classify("?? (" PY "+0x1)", TG_SYM_LEN), TG_NATIVE_KEEP);
    cr_assert_eq(tg_mixed_classify("0x7f0012", TG_SYM_LEN), TG_NATIVE_KEEP);
    cr_assert_eq(tg_mixed_classify("", TG_SYM_LEN), TG_NATIVE_KEEP);
    cr_assert_eq(tg_mixed_classify(NULL, TG_SYM_LEN), TG_NATIVE_KEEP);
    /* C++ names with parentheses: the module is the last " (" */
    cr_assert_eq(tg_mixed_classify("at::foo(int) const+0x9 (libtorch_cpu.so+0x1)", TG_SYM_LEN), TG_NATIVE_KEEP);
    /* not NUL-terminated within max: bounded */
    char raw[8];
    memcpy(raw, "start_th", 8);
    cr_assert_eq(tg_mixed_classify(raw, sizeof raw), TG_NATIVE_KEEP);
}

/* Python <= 3.10 shape: one eval frame per Python frame. */
Test(mixed, one_eval_frame_per_python_frame)
{
    static const char *const s[] = {
        "cuCtxSynchronize_v2+0x30 (libcuda.so.1+0x31000)",          /* 0 */
        "tg__cuda_w_cuCtxSynchronize_v2+0x40 (libtunerguard.so+0x1)", /* 1 */
        "_PyObject_MakeTpCall+0x90 (" PY "+0x2)",                    /* 2 dropped */
        "_PyEval_EvalFrameDefault+0x10 (" PY "+0x3)",                /* 3 -> py0 */
        "_PyFunction_Vectorcall+0x10 (" PY "+0x4)",                  /* 4 dropped */
        "_PyEval_EvalFrameDefault+0x20 (" PY "+0x3)",                /* 5 -> py1 */
        "_PyEval_EvalFrameDefault.cold+0x8 (" PY "+0x5)",            /* 6 -> py2 */
        "Py_RunMain+0x1 (" PY "+0x6)",                               /* 7 dropped */
        "main+0x1 (python3.11+0x7)",                                 /* 8 dropped */
        "__libc_start_call_main+0x1 (libc.so.6+0x8)",                /* 9 dropped */
    };
    static struct tg_thread_view v;
    view(&v, s, 10, 3);
    cr_assert_str_eq(merged(&v), "N0 N1 P0 P1 P2");
}

/* 3.11+: one C eval call runs several Python frames; without entry marks
 * the outermost eval frame takes what remains. */
Test(mixed, more_python_frames_than_eval_frames)
{
    static const char *const s[] = {
        "time_sleep+0x5 (" PY "+0x1)",                               /* 0 kept */
        "cfunction_vectorcall_O+0x5 (" PY "+0x2)",                   /* 1 dropped */
        "_PyEval_EvalFrameDefault+0x10 (" PY "+0x3)",                /* 2 -> py0 */
        "at::native::foo(int)+0x10 (libtorch_cpu.so+0x9)",           /* 3 kept */
        "_PyEval_EvalFrameDefault+0x20 (" PY "+0x3)",                /* 4 -> py1..py4 */
        "start_thread+0x1 (libc.so.6+0x8)",                          /* 5 dropped */
        "__clone3+0x1 (libc.so.6+0x9)",                              /* 6 dropped */
    };
    static struct tg_thread_view v;
    view(&v, s, 7, 5);
    cr_assert_str_eq(merged(&v), "N0 P0 N3 P1 P2 P3 P4");
}

Test(mixed, fewer_python_frames_than_eval_frames)
{
    static const char *const s[] = {
        "_PyEval_EvalFrameDefault+0x10 (" PY "+0x3)",
        "foo+0x1 (libfoo.so+0x1)",
        "_PyEval_EvalFrameDefault+0x10 (" PY "+0x3)",
        "_PyEval_EvalFrameDefault+0x10 (" PY "+0x3)",
    };
    static struct tg_thread_view v;
    view(&v, s, 4, 1);
    cr_assert_str_eq(merged(&v), "P0 N1");
}

Test(mixed, no_eval_frame_appends_python_after_native)
{
    static const char *const s[] = {
        "tg_guard_call+0x1a (libtunerguard.so+0x3a1c)",
        "_PyObject_MakeTpCall+0x90 (" PY "+0x1b2c40)",
        "0x7f0000001234",
    };
    static struct tg_thread_view v;
    view(&v, s, 3, 2);
    cr_assert_str_eq(merged(&v), "N0 N2 P0 P1");
}

Test(mixed, nothing_without_both_stacks)
{
    static const char *const s[] = {"foo+0x1 (libfoo.so+0x1)"};
    static struct tg_thread_view v;
    view(&v, s, 1, 0);
    cr_assert_str_eq(merged(&v), "");         /* no Python frame */
    view(&v, s, 1, 2);
    v.nsym = 0;
    cr_assert_str_eq(merged(&v), "");         /* not symbolized (fatal-signal path) */
    view(&v, s, 0, 2);
    cr_assert_str_eq(merged(&v), "");         /* no native frame */
}

Test(mixed, bounded_output)
{
    static const char *const s[] = {"a+0x1 (liba.so+0x1)", "b+0x1 (liba.so+0x1)",
                                    "c+0x1 (liba.so+0x1)"};
    static struct tg_thread_view v;
    view(&v, s, 3, 4);
    struct tg_mixed_frame m[4];
    cr_assert_eq(tg_mixed_view(&v, m, 4), 4);
    cr_assert_eq(m[3].kind, TG_MIXED_PYTHON);
    cr_assert_eq(m[3].index, 0);
    cr_assert_eq(tg_mixed_view(&v, m, 0), 0);
}

/* Both thread stacks also take the native frames from the CUDA call. */
Test(mixed, native_from_cuda_call)
{
    static struct tg_thread_view v;
    memset(&v, 0, sizeof v);
    v.has_cuda = 1;
    v.cuda.nframes = 2;
    v.cuda.frames[0] = (void *)0x10;
    v.cuda.frames[1] = (void *)0x20;
    v.nsym = 2;
    snprintf(v.native_sym[0], TG_SYM_LEN, "cuCtxSynchronize_v2+0x30 (libcuda.so.1+0x31000)");
    snprintf(v.native_sym[1], TG_SYM_LEN, "_PyEval_EvalFrameDefault+0x1 (" PY "+0x1)");
    fx_py(&v, "_bench", "autotuner.py", 143);
    cr_assert_str_eq(merged(&v), "N0 P0");
}

/* The writers: the native view folded in the text (shown only where it adds
 * a frame), "mixed" in JSON, with file:line. */
Test(mixed, writers_print_the_mixed_view)
{
    static struct tg_report r;
    fx_race_high(&r);
    struct tg_thread_view *e = &r.entering;
    e->nnative = e->nsym = 4;
    e->native[2] = (void *)0x7f3a201b0000;
    e->native[3] = (void *)0x7f3a201b1000;
    snprintf(e->native_sym[1], TG_SYM_LEN, "_PyEval_EvalFrameDefault+0x52 (" PY "+0x1b0052)");
    snprintf(e->native_sym[2], TG_SYM_LEN, "_PyFunction_Vectorcall+0x10 (" PY "+0x1b0010)");
    snprintf(e->native_sym[3], TG_SYM_LEN, "_PyEval_EvalFrameDefault.cold+0x5 (" PY "+0x1b1000)");
    snprintf(e->native_file[0], TG_SRC_LEN, "guard/session.c");
    e->native_line[0] = 412;
    int rc;
    char *txt = fx_capture(tg_report_write_text, &r, &rc);
    cr_assert_eq(rc, 0);
    /* interpreter and guard frames only: one line, no mixed view */
    const char *want = "    Native (at entry): 4 frames, the interpreter's and the guard's: nothing beyond the Python stack\n"
                       "\n  Previous call";
    cr_assert(strstr(txt, want), "text report lacks:\n%s\n---- got:\n%s", want, txt);
    cr_assert(!strstr(txt, "Mixed"), "%s", txt);
    free(txt);
    char *js = fx_capture(tg_report_write_jsonl, &r, &rc);
    cr_assert_eq(rc, 0);
    const char *wantj =
        "\"mixed\":[{\"kind\":\"native\",\"index\":0,\"pc\":\"0x7f3a10003a1c\","
        "\"symbol\":\"tg_guard_call+0x1a (libtunerguard.so+0x3a1c)\",\"mangled\":null,\"file\":\"guard/session.c\",\"line\":412},"
        "{\"kind\":\"python\",\"index\":0,\"func\":\"run\",";
    cr_assert(strstr(js, wantj), "jsonl lacks:\n%s\n---- got:\n%s", wantj, js);
    cr_assert(strstr(js, "{\"kind\":\"python\",\"index\":3,\"func\":\"run\",\"file\":\"/usr/lib/python3.11/threading.py\",\"line\":975}]"));
    /* the inside thread's stack is raw (not symbolized): no mixed view */
    cr_assert(strstr(js, "\"mixed\":[],\"cuda\":{"), "%s", js);

    /* and the line passes the schema checker */
    char path[] = "/tmp/tg_mixed_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq((size_t)write(fd, js, strlen(js)), strlen(js));
    close(fd);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "python3 %s/check_jsonl.py %s --count 1 "
             "--expect '1:entering.mixed.1.func=\"run\"' --expect '1:entering.native.0.line=412'",
             fx_srcdir(), path);
    int st = system(cmd);
    unlink(path);
    cr_assert_eq(st, 0, "check_jsonl.py failed");
    free(js);

    /* a driver frame the Python stack lacks: shown, interpreter runs folded */
    snprintf(e->native_sym[0], TG_SYM_LEN, "cuLaunchKernelEx+0x30 (libcuda.so.1+0x31000)");
    e->native_line[0] = 0;
    txt = fx_capture(tg_report_write_text, &r, &rc);
    want = "    Native (at entry):\n"
           "      #0 cuLaunchKernelEx+0x30 (libcuda.so.1+0x31000)\n"
           "      [3 interpreter frames]\n"
           "\n  Previous call";
    cr_assert(strstr(txt, want), "text report lacks:\n%s\n---- got:\n%s", want, txt);
    free(txt);
}
