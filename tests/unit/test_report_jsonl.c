/* The JSON Lines report: every line parsed by Python's json module and
 * checked against the schema (check_jsonl.py), plus the values that matter. */
#include <errno.h>

#include "jsonl_check.h"

static char path[64];

static int open_tmp(void)
{
    snprintf(path, sizeof path, "/tmp/tg_jsonl_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    return fd;
}

Test(report_jsonl, three_reports_parse_and_match_schema)
{
    static struct tg_report a, b, c;
    fx_race_high(&a);
    fx_race_low(&b);
    fx_replaced(&c);
    int fd = open_tmp();
    cr_assert_eq(tg_report_write_jsonl(fd, &a), 0);
    cr_assert_eq(tg_report_write_jsonl(fd, &b), 0);
    cr_assert_eq(tg_report_write_jsonl(fd, &c), 0);
    close(fd);
    const char *expects[] = {
        "1:schema=2", "1:kind=\"race\"", "1:seq=1", "1:pid=41230", "1:rank=null",
        "1:mode=\"detect\"", "1:severity=\"high\"", "1:serialized=false",
        "1:tuner.class=\"triton.runtime.autotuner.Autotuner\"", "1:tuner.method=\"Autotuner.run\"",
        "1:tuner.kernel=\"matmul_kernel\"", "1:tuner.instance=\"0x7f3a1c2b4d10\"",
        "1:location={\"func\":\"forward\",\"file\":\"model.py\",\"line\":88}",
        "1:entering.tid=41277", "1:entering.name=\"Thread-3\"", "1:entering.python.2.line=88",
        "1:entering.native.0.pc=\"0x7f3a10003a1c\"",
        "1:entering.native.0.symbol=\"tg_guard_call+0x1a (libtunerguard.so+0x3a1c)\"",
        "1:entering.native_where=\"at entry\"", "1:entering.cuda.fn=\"cuLaunchKernelEx\"", "1:entering.cuda.device=1",
        "1:entering.cuda.stream=\"0x55d0c0de0100\"", "1:entering.cuda.inside=false",
        "1:inside.name=\"MainThread\"", "1:inside.entered_ago_ns=3200000",
        "1:inside.benchmarking=true", "1:inside.launches=12", "1:inside.syncs=3",
        "1:inside.native_where=\"in cuCtxSynchronize_v2\"", "1:inside.native.2.pc=\"0x7f3a00003000\"",
        "1:inside.native.2.symbol=null", "1:inside.cuda.fn=\"cuCtxSynchronize_v2\"",
        "1:inside.cuda.kind=\"sync\"", "1:inside.cuda.inside=true", "1:inside.cuda.device=0",
        "1:inside.cuda.stream=\"0x0\"", "1:inside.cuda.kernel=\"matmul_kernel\"",
        "1:inside.cuda.t_exit_ns=null",
        "2:rank=3", "2:mode=\"serialize\"", "2:severity=\"low\"", "2:serialized=true",
        "2:entering.name=null", "2:entering.python_truncated=true",
        "2:location.file=\"/site/fla/modules/l2norm.py\"", "2:inside.cuda=null",
        "2:entering.cuda=null", "2:entering.device_at_entry=3", "2:inside.device_at_entry=null",
        "2:inside.native=[]", "2:inside.entered_ago_ns=850",
        "3:kind=\"method_replaced\"", "3:replacement.qualname=\"locked_run\"", "3:replacement.file=\"patch.py\"",
        "3:replacement.line=12",
        "3:tuner.kernel=null", "3:entering.python.0.file=\"patch.py\"",
        NULL,
    };
    int st = run_jsonl_checker(path, 3, expects);
    unlink(path);
    cr_assert_neq(st, -1, "python3 did not run");
    cr_assert_eq(st, 0, "check_jsonl.py found problems (listed above)");
}

/* Quotes, backslashes, control bytes, invalid and cut UTF-8, and a field
 * with no NUL: still one valid JSON line, values as expected. */
Test(report_jsonl, hostile_strings_are_escaped)
{
    static struct tg_report r;
    fx_race_low(&r);
    snprintf(r.entering.name, sizeof r.entering.name, "a\"b\\c\nd\te\x01\x7f");
    snprintf(r.kernel, sizeof r.kernel, "k\xff\xfe\xc3\xa9\xe2\x82");   /* bad, é, cut € */
    memset(r.inside.name, 'n', sizeof r.inside.name);                   /* no NUL */
    snprintf(r.entering.py[0].func, sizeof r.entering.py[0].func, "\xe2\x82\xac\xf0\x9f\x98\x80");
    int fd = open_tmp();
    cr_assert_eq(tg_report_write_jsonl(fd, &r), 0);
    close(fd);
    char name64[100];
    snprintf(name64, sizeof name64, "1:inside.name=\"%.*s\"", 64,
             "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn");
    const char *expects[] = {
        "1:entering.name=\"a\\\"b\\\\c\\nd\\te\\u0001\\u007f\"",
        "1:tuner.kernel=\"k\\\\xff\\\\xfe\\u00e9\\\\xe2\\\\x82\"",
        "1:entering.python.0.func=\"\\u20ac\\ud83d\\ude00\"",
        name64,
        NULL,
    };
    int st = run_jsonl_checker(path, 1, expects);
    unlink(path);
    cr_assert_eq(st, 0);
}

/* The writer's 4 KiB buffer is flushed in pieces; the line stays whole. */
Test(report_jsonl, long_line_is_complete)
{
    static struct tg_report r;
    fx_race_high(&r);
    r.entering.npy = r.inside.npy = 0;
    for (int i = 0; i < TG_MAX_PY_FRAMES; i++) {
        fx_py(&r.entering, "deep_function_name", "/a/rather/long/path/to/some/module.py", i + 1);
        fx_py(&r.inside, "other_function", "/another/long/path/to/a/module.py", i + 1);
    }
    int fd = open_tmp();
    cr_assert_eq(tg_report_write_jsonl(fd, &r), 0);
    off_t size = lseek(fd, 0, SEEK_END);
    close(fd);
    cr_assert(size > 2 * 4096);
    const char *expects[] = {"1:entering.python.47.line=48", "1:inside.python.47.func=\"other_function\"", NULL};
    int st = run_jsonl_checker(path, 1, expects);
    unlink(path);
    cr_assert_eq(st, 0);
}

/* The checker itself fails on a broken line (so the tests above mean something). */
Test(report_jsonl, checker_rejects_bad_lines)
{
    static struct tg_report r;
    fx_race_high(&r);
    int fd = open_tmp();
    cr_assert_eq(tg_report_write_jsonl(fd, &r), 0);
    cr_assert(write(fd, "{\"schema\":1,\"kind\":\"race\"\n", 26) == 26);
    close(fd);
    int st = run_jsonl_checker(path, 2, NULL);
    unlink(path);
    cr_assert_eq(st, 1);
}

Test(report_jsonl, write_error_returns_minus_one)
{
    static struct tg_report r;
    fx_race_high(&r);
    int fd = open("/dev/full", O_WRONLY);
    cr_assert(fd >= 0);
    cr_assert_eq(tg_report_write_jsonl(fd, &r), -1);
    cr_assert_eq(errno, ENOSPC);
    close(fd);
}

/* A race seen at exit: the entering thread's stack was read deep inside the
 * tuner (compiling, in the stdlib): the location is the caller of the
 * outermost tuner frame, not the innermost non-Triton frame. */
Test(report_jsonl, race_at_exit_location_is_the_tuner_caller)
{
    static struct tg_report r;
    fx_race_high(&r);
    r.seen_at_exit = 1;
    struct tg_thread_view *e = &r.entering;
    e->npy = 0;
    snprintf(e->native_where, sizeof e->native_where, "in cuCtxSynchronize_v2"); /* read from another thread */
    fx_py(e, "exists", "<frozen genericpath>", 19);
    fx_py(e, "makedirs", "<frozen os>", 225);
    fx_py(e, "compile", "/site/triton/compiler/compiler.py", 300);
    fx_py(e, "JITFunction.run", "/site/triton/runtime/jit.py", 700);
    fx_py(e, "Autotuner._bench", "/site/triton/runtime/autotuner.py", 164);
    fx_py(e, "Autotuner.run", "/site/triton/runtime/autotuner.py", 240);
    fx_py(e, "<lambda>", "/site/triton/runtime/jit.py", 370);
    fx_py(e, "call", "user.py", 469);
    int fd = open_tmp();
    cr_assert_eq(tg_report_write_jsonl(fd, &r), 0);
    close(fd);
    const char *expects[] = {"1:seen_at=\"exit\"", "1:severity=\"high\"",
                             "1:location={\"func\":\"call\",\"file\":\"user.py\",\"line\":469}", NULL};
    int st = run_jsonl_checker(path, 1, expects);
    unlink(path);
    cr_assert_eq(st, 0, "check_jsonl.py found problems (listed above)");
}

/* A race without the GIL (a free-threaded build with it off) on a tuned key:
 * "gil": "off", and only there; a record with the GIL has no such key. */
Test(report_jsonl, gil_off_only_without_the_gil)
{
    static struct tg_report a, b;
    fx_race_high(&a);
    a.inside.benchmarking = 0;
    a.inside.launches = 1;
    a.inside.syncs = 0;
    a.without_gil = 1;
    fx_race_high(&b);
    int fd = open_tmp();
    cr_assert_eq(tg_report_write_jsonl(fd, &a), 0);
    cr_assert_eq(tg_report_write_jsonl(fd, &b), 0);
    close(fd);
    const char *expects[] = {"1:gil=\"off\"", "1:severity=\"high\"", "1:inside.benchmarking=false", NULL};
    int st = run_jsonl_checker(path, 2, expects);
    char *text = fx_read_file(path);
    unlink(path);
    cr_assert_eq(st, 0, "check_jsonl.py found problems (listed above)");
    cr_assert(text);
    char *second = strchr(text, '\n');
    cr_assert(second && strstr(text, "\"gil\":\"off\"") < second && !strstr(second, "\"gil\""),
              "the key on the first record only: %s", text);
    free(text);
}
