/* The text report, line by line against the files in tests/unit/expected/, with
 * pid=, tid= and 0x addresses normalised.  The test never writes the expected
 * files: `tools/dev expected` regenerates them (it runs this binary with
 * TG_ACTUAL_DIR set, where each output is written before it is compared, and
 * copies those files over; review the diff before committing). */
#include <ctype.h>
#include <errno.h>

#include "report_fixture.h"

/* pid=123 -> pid=<pid>, tid=123 -> tid=<tid>, 0x7f.. -> 0x<addr>.  Other
 * numbers (line numbers, counts, durations) stay: they are deterministic. */
static char *normalise(const char *in)
{
    size_t n = strlen(in);
    char *out = malloc(n * 2 + 16), *o = out;
    for (size_t i = 0; i < n;) {
        if ((!strncmp(in + i, "pid=", 4) || !strncmp(in + i, "tid=", 4)) && isdigit((unsigned char)in[i + 4])) {
            o += sprintf(o, "%.3s=<%.3s>", in + i, in + i);
            i += 4;
            while (isdigit((unsigned char)in[i]))
                i++;
        } else if (in[i] == '0' && in[i + 1] == 'x' && isxdigit((unsigned char)in[i + 2])) {
            o += sprintf(o, "0x<addr>");
            i += 2;
            while (isxdigit((unsigned char)in[i]))
                i++;
        } else {
            *o++ = in[i++];
        }
    }
    *o = '\0';
    return out;
}

static void check_against(const char *name, const char *got_raw)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/expected/%s", fx_srcdir(), name);
    char *got = normalise(got_raw);
    const char *actual_dir = getenv("TG_ACTUAL_DIR"); /* tools/dev expected: a temporary folder */
    if (actual_dir && actual_dir[0]) {
        char apath[1200];
        snprintf(apath, sizeof apath, "%s/%s", actual_dir, name);
        FILE *f = fopen(apath, "w");
        cr_assert(f, "cannot write %s", apath);
        fputs(got, f);
        fclose(f);
    }
    char *want = fx_read_file(path);
    cr_assert(want, "missing expected file %s", path);
    /* line by line, so a failure names the first differing line */
    char *gs, *ws;
    char *g = strtok_r(got, "\n", &gs), *w = strtok_r(want, "\n", &ws);
    int line = 1;
    for (; g && w; line++, g = strtok_r(NULL, "\n", &gs), w = strtok_r(NULL, "\n", &ws))
        cr_assert_str_eq(g, w, "%s line %d differs:\n got: %s\nwant: %s", name, line, g, w);
    cr_assert(!g && !w, "%s: %s has extra lines from line %d: %s", name, g ? "output" : "expected file",
              line, g ? g : w);
    free(want);
    free(got);
}

Test(report_text, race_high_severity_with_cuda)
{
    static struct tg_report r;
    fx_race_high(&r);
    int rc;
    char *out = fx_capture(tg_report_write_text, &r, &rc);
    cr_assert_eq(rc, 0);
    check_against("race_high.txt", out);
    free(out);
}

Test(report_text, race_low_severity_serialized_truncated)
{
    static struct tg_report r;
    fx_race_low(&r);
    int rc;
    char *out = fx_capture(tg_report_write_text, &r, &rc);
    cr_assert_eq(rc, 0);
    check_against("race_low.txt", out);
    free(out);
}

Test(report_text, method_replaced)
{
    static struct tg_report r;
    fx_replaced(&r);
    int rc;
    char *out = fx_capture(tg_report_write_text, &r, &rc);
    cr_assert_eq(rc, 0);
    check_against("method_replaced.txt", out);
    free(out);
}

/* Facts that must hold whatever the wording: raw pids/tids and the fence. */
Test(report_text, raw_facts)
{
    static struct tg_report r;
    fx_race_high(&r);
    int rc;
    char *out = fx_capture(tg_report_write_text, &r, &rc);
    cr_assert(!strncmp(out, "==================\nWARNING: tunerguard: ", 40));
    cr_assert(strstr(out, "(pid=41230)"));
    cr_assert(strstr(out, "'Thread-3' (tid=41277)"));
    cr_assert(strstr(out, "'MainThread' (tid=41230)"));
    cr_assert(strstr(out, " at 0x7f3a1c2b4d10)"));
    cr_assert(strstr(out, "entered 3.2 ms earlier"));
    cr_assert(strstr(out, "\nSUMMARY: tunerguard: tuner race on 'matmul_kernel' in Autotuner.run model.py:88 in forward\n==================\n"));
    free(out);
}

/* Unterminated fixed-size strings (capture filled them to the brim) stay
 * within their buffers. */
Test(report_text, unterminated_fields_are_bounded)
{
    static struct tg_report r;
    fx_race_low(&r);
    memset(r.kernel, 'k', sizeof r.kernel);
    memset(r.entering.name, 'n', sizeof r.entering.name);
    memset(r.entering.py[0].func, 'f', sizeof r.entering.py[0].func);
    int rc;
    char *out = fx_capture(tg_report_write_text, &r, &rc);
    char want[sizeof r.kernel + 3];
    memset(want + 1, 'k', sizeof r.kernel);
    want[0] = '\'';
    want[sizeof r.kernel + 1] = '\'';
    want[sizeof r.kernel + 2] = '\0';
    cr_assert(strstr(out, want), "kernel name not bounded to its buffer");
    free(out);
}

/* A report longer than the writer's 4 KiB buffer is written whole. */
Test(report_text, long_report_is_complete)
{
    static struct tg_report r;
    fx_race_high(&r);
    r.entering.npy = 0;
    for (int i = 0; i < TG_MAX_PY_FRAMES; i++)
        fx_py(&r.entering, "deep_function_name", "/a/rather/long/path/to/some/module.py", i + 1);
    r.entering.py_truncated = 1;
    int rc;
    char *out = fx_capture(tg_report_write_text, &r, &rc);
    cr_assert_eq(rc, 0);
    cr_assert(strlen(out) > 4096);
    cr_assert(strstr(out, "      #255 deep_function_name  /a/rather/long/path/to/some/module.py:256\n      <truncated>\n"));
    size_t n = strlen(out);
    cr_assert(n > 19 && !strcmp(out + n - 19, "==================\n"));
    free(out);
}

Test(report_text, write_error_returns_minus_one)
{
    static struct tg_report r;
    fx_race_high(&r);
    int fd = open("/dev/full", O_WRONLY);
    cr_assert(fd >= 0);
    cr_assert_eq(tg_report_write_text(fd, &r), -1);
    cr_assert_eq(errno, ENOSPC);
    close(fd);
    cr_assert_eq(tg_report_write_text(-1, &r), -1);
}

/* Benchmarking known without counts (seen from its Python frames): no
 * "(0 launches, 0 synchronizations)". */
Test(report_text, benchmarking_without_counts)
{
    static struct tg_report r;
    fx_race_high(&r);
    r.inside.launches = r.inside.syncs = 0;
    int rc;
    char *out = fx_capture(tg_report_write_text, &r, &rc);
    cr_assert(strstr(out, "entered 3.2 ms earlier, benchmarking:\n"), "%s", out);
    free(out);
}

/* A race without the GIL on a tuned key (nobody benchmarking): the severity
 * and what it does say why it is one; what to do is serialize or a lock, not
 * a first call made alone.  The same report with the GIL keeps the
 * benchmarking sentences. */
Test(report_text, race_without_gil_sentences)
{
    static struct tg_report r;
    fx_race_high(&r);
    r.inside.benchmarking = 0;
    r.inside.launches = 1;
    r.inside.syncs = 0;
    r.without_gil = 1;
    int rc;
    char *out = fx_capture(tg_report_write_text, &r, &rc);
    cr_assert_eq(rc, 0);
    cr_assert(strstr(out, "  Severity: high: the GIL was off, so the two calls ran at once; the tuner writes its"
                          " call's arguments on itself on every call, tuned key or not, and the other call clears"
                          " them (TypeError) or replaces them under this one.\n"), "%s", out);
    cr_assert(strstr(out, "  What it does: both calls ran at once (the GIL was off)"), "%s", out);
    cr_assert(strstr(out, "  What to do: run with TUNERGUARD_OPTIONS=mode=serialize (without the GIL it holds the"
                          " tuner's lock on every call); or hold one lock around model.py:88 (a first call"),
              "%s", out);
    cr_assert(!strstr(out, "once from one thread"), "%s", out);
    free(out);
    r.without_gil = 0;
    out = fx_capture(tg_report_write_text, &r, &rc);
    cr_assert(!strstr(out, "GIL was off") && strstr(out, "once from one thread before starting the others"),
              "%s", out);
    free(out);
}

/* Names, paths and messages from the program are escaped: a kernel name
 * holding a newline and "SUMMARY:" cannot forge a second SUMMARY line, nor a
 * thread name an escape sequence; the JSON keeps them as they are. */
Test(report_text, program_strings_are_escaped)
{
    static struct tg_report r;
    fx_race_high(&r);
    snprintf(r.kernel, sizeof r.kernel, "k\nSUMMARY: tunerguard: forged");
    snprintf(r.entering.name, sizeof r.entering.name, "T\x1b[2J\r\t\\");
    snprintf(r.entering.py[2].file, sizeof r.entering.py[2].file, "mo\ndel.py");
    int rc;
    char *out = fx_capture(tg_report_write_text, &r, &rc);
    cr_assert_eq(rc, 0);
    int summaries = 0, warnings = 0;
    for (const char *p = out; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        summaries += !strncmp(p, "SUMMARY:", 8);
        warnings += !strncmp(p, "WARNING:", 8);
    }
    cr_assert_eq(summaries, 1, "%s", out);
    cr_assert_eq(warnings, 1, "%s", out);
    cr_assert(strstr(out, "'k\\nSUMMARY: tunerguard: forged'"), "%s", out);
    cr_assert(strstr(out, "thread 'T\\x1b[2J\\r\\t\\\\'"), "%s", out);
    cr_assert(strstr(out, "mo\\ndel.py:88"), "%s", out);
    cr_assert(!strchr(out, '\x1b') && !strchr(out, '\r') && !strchr(out, '\t'), "%s", out);
    free(out);
}

/* A long stack is folded: a recursion as CPython's traceback does, a run of
 * import machinery as one line, and the frames of the program, the tuner
 * and the thread's start kept. */
Test(report_text, long_stack_is_folded)
{
    static struct tg_report r;
    fx_race_high(&r);
    struct tg_thread_view *v = &r.inside;
    v->npy = 0;
    fx_py(v, "_bench", "/usr/lib/python3/site-packages/triton/runtime/autotuner.py", 143);
    fx_py(v, "<module>", "/usr/lib/python3/site-packages/dep/m1.py", 1);
    for (int i = 0; i < 30; i++)
        fx_py(v, i % 3 ? "_find_and_load" : "<module>",
              i % 3 ? "<frozen importlib._bootstrap>" : "/usr/lib/python3/site-packages/dep/m.py", 1);
    fx_py(v, "run", "/usr/lib/python3/site-packages/triton/runtime/autotuner.py", 171);
    fx_py(v, "step", "train.py", 12);
    for (int i = 0; i < 40; i++)
        fx_py(v, "layer", "train.py", 30);
    fx_py(v, "main", "train.py", 40);
    fx_py(v, "run", "/usr/lib/python3.11/threading.py", 975);
    int rc;
    char *out = fx_capture(tg_report_write_text, &r, &rc);
    cr_assert_eq(rc, 0);
    const char *want =
        "      #0 _bench  /usr/lib/python3/site-packages/triton/runtime/autotuner.py:143\n"
        "      #1 <module>  /usr/lib/python3/site-packages/dep/m1.py:1\n"
        "      #2-#31 [30 frames of import machinery, importing m.py ... m.py]\n"
        "      #32 run  /usr/lib/python3/site-packages/triton/runtime/autotuner.py:171\n"
        "      #33 step  train.py:12\n"
        "      #34 layer  train.py:30\n"
        "      #35 layer  train.py:30\n"
        "      #36 layer  train.py:30\n"
        "      [previous line repeated 37 more times]\n"
        "      #74 main  train.py:40\n"
        "      #75 run  /usr/lib/python3.11/threading.py:975\n";
    cr_assert(strstr(out, want), "want:\n%s\ngot:\n%s", want, out);
    /* the summary names the thread inside's call site in the program */
    cr_assert(strstr(out, "while thread 'MainThread', called at train.py:12 in step"), "%s", out);
    free(out);
}

/* In a long stack a run of library frames that are neither the program's
 * nor the tuner's (dataclasses, filelock) is one line; in a short one each
 * frame stays. */
Test(report_text, library_run_folded_in_long_stack_only)
{
    static struct tg_report r;
    fx_race_high(&r);
    struct tg_thread_view *v = &r.inside;
    v->npy = 0;
    fx_py(v, "_bench", "/usr/lib/python3/site-packages/triton/runtime/autotuner.py", 143);
    fx_py(v, "hook", "train.py", 5);
    fx_py(v, "acquire", "/usr/lib/python3/site-packages/filelock/_api.py", 300);
    fx_py(v, "__enter__", "/usr/lib/python3/site-packages/filelock/_api.py", 350);
    fx_py(v, "__init__", "<string>", 3);
    fx_py(v, "_process_class", "/usr/lib/python3.11/dataclasses.py", 1000);
    fx_py(v, "run", "/usr/lib/python3/site-packages/triton/runtime/autotuner.py", 171);
    for (int i = 0; i < 20; i++)
        fx_py(v, "layer", "train.py", 30 + i);
    fx_py(v, "run", "/usr/lib/python3.11/threading.py", 975);
    int rc;
    char *out = fx_capture(tg_report_write_text, &r, &rc);
    cr_assert_eq(rc, 0);
    const char *want = "      #1 hook  train.py:5\n"
                       "      #2-#5 [4 library frames: _api.py ... dataclasses.py]\n"
                       "      #6 run  /usr/lib/python3/site-packages/triton/runtime/autotuner.py:171\n";
    cr_assert(strstr(out, want), "want:\n%s\ngot:\n%s", want, out);
    free(out);
    v->npy = 8; /* short: nothing folded */
    fx_py(v, "run", "/usr/lib/python3.11/threading.py", 975);
    out = fx_capture(tg_report_write_text, &r, &rc);
    cr_assert(strstr(out, "      #3 __enter__  /usr/lib/python3/site-packages/filelock/_api.py:350\n"), "%s", out);
    free(out);
}

/* A CUDA call or a benchmark whose device is not known says so in words,
 * never "device ?" nor "device -1". */
Test(report_text, unknown_device_in_words)
{
    static struct tg_report r;
    fx_race_high(&r);
    r.entering.cuda.device = -1;
    int rc;
    char *out = fx_capture(tg_report_write_text, &r, &rc);
    cr_assert_eq(rc, 0);
    cr_assert(strstr(out, "Last CUDA call: cuLaunchKernelEx on an unknown device stream "), "%s", out);
    cr_assert(!strstr(out, "device ?"), "%s", out);
    free(out);
    fx_race_high(&r);
    r.kind = TG_REPORT_INTERFERENCE;
    r.itf.device = -1;
    r.itf.foreign = 3;
    out = fx_capture(tg_report_write_text, &r, &rc);
    cr_assert_eq(rc, 0);
    cr_assert(strstr(out, ": timings on an unknown device were taken under load"), "%s", out);
    cr_assert(!strstr(out, "device -1"), "%s", out);
    free(out);
}

/* A file under a folder named in another encoding: its bytes that are not
 * UTF-8 read \xNN wherever the file is named (the frames, the summary, "What
 * to do"); UTF-8 characters stay as they are. */
Test(report_text, bytes_not_utf8_as_hex)
{
    static struct tg_report r;
    fx_race_high(&r);
    snprintf(r.entering.py[2].file, sizeof r.entering.py[2].file, "/srv/caf\xe9-\xc3\xa9/model.py");
    int rc;
    char *out = fx_capture(tg_report_write_text, &r, &rc);
    cr_assert_eq(rc, 0);
    cr_assert(strstr(out, "  What to do: run with TUNERGUARD_OPTIONS=mode=serialize; or call "
                          "/srv/caf\\xe9-\xc3\xa9/model.py:88 once"), "%s", out);
    cr_assert(!strstr(out, "caf\xe9"), "%s", out);
    free(out);
}

/* The sentences of serialize's reports and of the exception report are made
 * by the writer from the record's fields: each reads as the one capture
 * formatted before (the snprintf formats below are those it used). */
static void sentence_is(const struct tg_report *r, const char *want)
{
    int rc;
    char *out = fx_capture(tg_report_write_text, r, &rc);
    char line[600];
    snprintf(line, sizeof line, "\n  %s\n", want);
    cr_assert(strstr(out, line), "want the line '%s' in:\n%s", want, out);
    free(out);
}

static void fx_serialize_head(struct tg_report *r, enum tg_report_kind kind)
{
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->pid = 300;
    r->rank = -1;
    r->mode = "serialize";
    snprintf(r->method, sizeof r->method, "Autotuner.run");
    snprintf(r->kernel, sizeof r->kernel, "kernel_a");
    r->entering.tid = 301;
    r->inside.tid = 302;
    snprintf(r->inside.name, sizeof r->inside.name, "T2");
}

Test(report_text, deadlock_sentence_from_the_cycle)
{
    static struct tg_report r;
    char want[256];
    fx_serialize_head(&r, TG_REPORT_DEADLOCK);
    r.deadlock.n = 2;
    r.deadlock.cycle[0].holder = 302;
    snprintf(r.deadlock.cycle[0].kernel, sizeof r.deadlock.cycle[0].kernel, "kernel_a");
    r.deadlock.cycle[1].holder = 301;
    snprintf(r.deadlock.cycle[1].kernel, sizeof r.deadlock.cycle[1].kernel, "kernel_b");
    snprintf(want, sizeof want, "this thread (tid=%d) waits for '%s'; tid=%d holds '%s' and waits for '%s'; "
             "this thread holds '%s'; %s", 301, "kernel_a", 302, "kernel_a", "kernel_b", "kernel_b",
             "deadlock=proceed: this thread proceeds unserialized");
    sentence_is(&r, want);
    r.deadlock.abort = 1;
    r.deadlock.cycle[1].holder = 303; /* the cycle closes through a third thread */
    snprintf(want, sizeof want, "this thread (tid=%d) waits for '%s'; tid=%d holds '%s' and waits for '%s'; "
             "tid=%d holds '%s' and waits for '%s'; %s", 301, "kernel_a", 302, "kernel_a", "kernel_b", 303,
             "kernel_b", "a tuner this thread holds", "deadlock=abort: the process stops");
    sentence_is(&r, want);
}

Test(report_text, wait_timeout_sentence_from_the_times)
{
    static struct tg_report r;
    char want[400];
    fx_serialize_head(&r, TG_REPORT_WAIT_TIMEOUT);
    r.wait.waited_ns = 1234000000;
    r.wait.stalled_ns = 987000000;
    r.wait.timeout_s = 1;
    r.wait.on_timeout_proceed = 1;
    snprintf(want, sizeof want,
             "this thread proceeds unserialized after %.1f s waiting for '%s' (wait_timeout=%d s, "
             "on_wait_timeout=proceed): the holder, below, is blocked outside tunerguard (no CPU time, no CUDA "
             "call for %.1f s; a lock of the program's?)",
             1.234, "kernel_a", 1, 0.987);
    sentence_is(&r, want);
    r.wait.stalled_ns = 0;
    r.wait.waited_ns = 600049000000ull;
    snprintf(want, sizeof want,
             "this thread has waited %.1f s for '%s' (wait_timeout=%d s); the holder is shown below; the wait "
             "goes on%s", 600.049, "kernel_a", 1,
             " while the holder runs (it proceeds if the holder blocks outside tunerguard)");
    sentence_is(&r, want);
    r.wait.on_timeout_proceed = 0;
    snprintf(want, sizeof want,
             "this thread has waited %.1f s for '%s' (wait_timeout=%d s); the holder is shown below; the wait "
             "goes on%s", 600.049, "kernel_a", 1, " (on_wait_timeout=wait)");
    sentence_is(&r, want);
}

Test(report_text, holder_died_and_exception_sentences)
{
    static struct tg_report r;
    char want[400];
    fx_serialize_head(&r, TG_REPORT_HOLDER_DIED);
    snprintf(want, sizeof want,
             "thread tid=%d left %s%s without returning (it died inside: pthread_exit or a thread "
             "destroyed under Python); its hold was released", 302, "Autotuner.run", " of kernel 'kernel_a'");
    sentence_is(&r, want);
    fx_serialize_head(&r, TG_REPORT_EXCEPTION);
    snprintf(r.exc_type, sizeof r.exc_type, "TypeError");
    snprintf(want, sizeof want, "this %s was raised in a call that raced with thread %s%s%s(tid=%d) on %s%s",
             "TypeError", "'", "T2", "' ", 302, "Autotuner.run", " of kernel 'kernel_a'");
    sentence_is(&r, want);
    r.inside.name[0] = '\0';
    snprintf(r.kernel, sizeof r.kernel, "?"); /* a tuner that names no kernel */
    snprintf(want, sizeof want, "this %s was raised in a call that raced with thread %s%s%s(tid=%d) on %s%s",
             "TypeError", "", "", "", 302, "Autotuner.run", "");
    sentence_is(&r, want);
    r.inside.tid = 0; /* the other call is not known */
    snprintf(want, sizeof want, "this %s was raised in a call whose arguments another call on %s%s "
             "cleared before it began tuning", "TypeError", "Autotuner.run", "");
    sentence_is(&r, want);
    char note[512];
    tg_report_exception_note(&r, "/tmp/tg.300.txt", note, sizeof note);
    cr_assert_str_eq(note, "tunerguard: this TypeError was raised in a call whose arguments another call on "
                           "Autotuner.run cleared before it began tuning; see /tmp/tg.300.txt");
}
