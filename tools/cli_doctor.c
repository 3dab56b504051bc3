/* tunerguard doctor: what would happen if a program were run here.
 *
 * Contract: prints one line per check, starting with "OK  ", "WARN" or
 * "FAIL", saying what was found and, unless OK, what to do.  Checks: the
 * library; each interpreter (python3 on PATH, $PYTHON, --python): CPython
 * 3.9-3.15, or free-threaded 3.13t/3.14t (and whether its GIL is on), Triton
 * and torch versions, and whether the
 * library's hooks arm in a child (a probe module in a temp dir, preloaded with
 * verbosity=2 and targets=<probe>:Probe.method, must print "guarding
 * Probe.method"); libcuda.so.1, cuDriverGetVersion and the device count
 * (cuInit, cuDeviceGetCount; dlopen here: the doctor is not preloaded);
 * TUNERGUARD_OPTIONS as the library parses it (a preloaded
 * /bin/true: exit 2 is a rejection).  Exit 0 when no line is FAIL, else 1. */
#include "cli.h"
#include "core/py_api.h"
#include "tg_build_id.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unistd.h>

static int nfail, nwarn;

static void line(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(const char *level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%-4s  ", level);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
    nfail += !strcmp(level, "FAIL");
    nwarn += !strcmp(level, "WARN");
}

/* The last non-empty line of S (modified in place). */
static const char *last_line(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
        s[--n] = '\0';
    char *nl = strrchr(s, '\n');
    return nl ? nl + 1 : s;
}

static int find_on_path(const char *name, char *out, size_t n)
{
    if (strchr(name, '/')) {
        snprintf(out, n, "%s", name);
        return access(name, X_OK) == 0 ? 0 : -1;
    }
    const char *path = getenv("PATH");
    if (!path)
        return -1;
    char *copy = strdup(path), *save = NULL;
    int rc = -1;
    for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        snprintf(out, n, "%s/%s", *dir ? dir : ".", name);
        if (access(out, X_OK) == 0) {
            rc = 0;
            break;
        }
    }
    free(copy);
    return rc;
}

/* Compare the build id held in the library file LIB (core/build_id.c) with
 * this command's: a library from another build may lack options or hooks
 * this command's help describes. */
static void check_build_id(const char *lib)
{
    size_t len = 0;
    char *data = cli_read_file(lib, &len);
    if (!data) {
        line("WARN", "cannot read %s to compare its build id", lib);
        return;
    }
    const size_t ml = sizeof TG_BUILD_ID_MARKER - 1;
    const char *m = memmem(data, len, TG_BUILD_ID_MARKER, ml);
    const char *id = m ? m + ml : NULL;
    if (id && !memchr(id, '\0', len - (size_t)(id - data)))
        id = NULL;
    if (!id)
        line("WARN", "the library holds no build id (a build older than this command): it may lack what this "
             "command expects; use the library of this build or set TUNERGUARD_LIB to it");
    else if (strcmp(id, TG_BUILD_ID) != 0)
        line("WARN", "the library is build %s, this command is build %s: reinstall both from one build, or set "
             "TUNERGUARD_LIB to the library of this build", id, TG_BUILD_ID);
    else
        line("OK", "library and command are the same build (%s)", TG_BUILD_ID);
    free(data);
}

static const char probe_py[] = "class Probe:\n    def method(self):\n        return 42\n";

/* The probe's stderr: the line an inert copy says at verbosity>=1
 * (loader/init.c) names the copy that serves and the one that stays inert. */
static void report_copies(const char *py, const char *err)
{
    const char *at = strstr(err, " stays inert");
    if (!at)
        return;
    const char *start = at;
    while (start > err && start[-1] != '\n')
        start--;
    if (strncmp(start, "tunerguard: ", 12) == 0)
        start += 12;
    line("WARN", "%s: two copies of libtunerguard.so are preloaded: %.*s (remove one from LD_PRELOAD to be "
         "sure which build runs)", py, (int)(at + 12 - start), start);
}

static void check_hooks(const char *py, const char *lib)
{
    char dir[] = "/tmp/tunerguard-doctor-XXXXXX";
    if (!mkdtemp(dir)) {
        line("WARN", "%s: cannot create a temp dir for the hook probe", py);
        return;
    }
    char mod[PATH_MAX];
    snprintf(mod, sizeof mod, "%s/tg_doctor_probe.py", dir);
    FILE *f = fopen(mod, "w");
    if (!f || fputs(probe_py, f) < 0 || fclose(f) != 0) {
        line("WARN", "%s: cannot write %s", py, mod);
        rmdir(dir);
        return;
    }
    char code[PATH_MAX + 200];
    snprintf(code, sizeof code,
             "import sys; sys.path.insert(0, %s%s%s); import tg_doctor_probe; "
             "assert tg_doctor_probe.Probe().method() == 42; print('probe ran')",
             "'", dir, "'");
    char *argv[] = {(char *)py, "-c", code, NULL};
    /* LD_PRELOAD as `tunerguard run` sets it: the library, then what the
     * environment already preloads (maybe another copy of the library) */
    struct cli_buf pre = {0};
    cli_buf_puts(&pre, lib);
    const char *old_pre = getenv("LD_PRELOAD");
    if (old_pre && *old_pre)
        cli_buf_printf(&pre, ":%s", old_pre);
    struct cli_env env[] = {{"LD_PRELOAD", pre.s},
                            {"TUNERGUARD_OPTIONS", "verbosity=2:log_path=stderr:targets=tg_doctor_probe:Probe.method"},
                            {"PYTHONDONTWRITEBYTECODE", "1"}};
    struct cli_capture cap;
    if (cli_capture_run(argv, env, 3, dir, 60, &cap) < 0) {
        line("FAIL", "%s: cannot start the hook probe", py);
    } else {
        int rc = cli_exit_status(cap.status);
        report_copies(py, cap.err);
        if (strstr(cap.err, "guarding Probe.method") && strstr(cap.out, "probe ran") && rc == 0)
            line("OK", "%s: hooks arm (a preloaded child guarded Probe.method of a test module)", py);
        else
            line("FAIL", "%s: hooks did not arm in a preloaded child (exit %d: %s); run it with "
                 "TUNERGUARD_OPTIONS=verbosity=2 to see why, and report it",
                 py, rc, *cap.err ? last_line(cap.err) : "no output");
        cli_capture_free(&cap);
    }
    cli_buf_free(&pre);
    unlink(mod);
    rmdir(dir);
}

static void check_modules(const char *py)
{
    char *argv[] = {(char *)py, "-c",
                    "import importlib\n"
                    "for m in ('triton', 'torch'):\n"
                    "    try:\n"
                    "        v = importlib.import_module(m).__version__\n"
                    "        print(m, 'ok', v)\n"
                    "    except Exception as e:\n"
                    "        print(m, 'no', type(e).__name__ + ': ' + str(e).splitlines()[0] if str(e) else '')\n",
                    NULL};
    struct cli_capture cap;
    if (cli_capture_run(argv, NULL, 0, NULL, 180, &cap) < 0)
        return;
    for (char *l = strtok(cap.out, "\n"); l; l = strtok(NULL, "\n")) {
        char name[32], status[8];
        int off = 0;
        if (sscanf(l, "%31s %7s %n", name, status, &off) < 2)
            continue;
        if (!strcmp(status, "ok"))
            line("OK", "%s: %s %s", py, name, l + off);
        else if (!strcmp(name, "triton"))
            line("WARN", "%s: Triton is not importable (%s): nothing to guard; pip install triton", py, l + off);
        else
            line("WARN", "%s: torch is not importable (%s); the GPU reproducers (repro --gpu) need it", py, l + off);
    }
    if (cap.timed_out)
        line("WARN", "%s: importing triton/torch took over 180 s", py);
    cli_capture_free(&cap);
}

/* Returns 1 when the interpreter is supported. */
static int check_python(const char *label, const char *py, const char *lib)
{
    char path[PATH_MAX];
    if (find_on_path(py, path, sizeof path) < 0) {
        line("WARN", "%s: %s not found", label, py);
        return 0;
    }
    char *argv[] = {path, "-c",
                    "import sys, sysconfig; print(sys.implementation.name, sys.version_info[0], sys.version_info[1], "
                    "int(bool(sysconfig.get_config_var('Py_GIL_DISABLED'))), sys.version.split()[0], "
                    "int(getattr(sys, '_is_gil_enabled', lambda: True)()))",
                    NULL};
    struct cli_capture cap;
    if (cli_capture_run(argv, NULL, 0, NULL, 60, &cap) < 0 || cli_exit_status(cap.status) != 0) {
        const char *why = cap.err ? last_line(cap.err) : "";
        if (why && *why)
            line("WARN", "%s: %s does not run (%s)", label, path, why);
        else
            line("WARN", "%s: %s does not run as a Python (exit status %d, nothing on stderr)", label, path,
                 cli_exit_status(cap.status));
        cli_capture_free(&cap);
        return 0;
    }
    char impl[32] = "", ver[32] = "";
    int major = 0, minor = 0, ft = 0, gil = 1;
    sscanf(cap.out, "%31s %d %d %d %31s %d", impl, &major, &minor, &ft, ver, &gil);
    cli_capture_free(&cap);
    int ok = 0;
    if (!impl[0] || !ver[0])
        line("WARN", "%s: %s did not say what it is (not a Python 3?); tunerguard stays inert there", label, path);
    else if (strcmp(impl, "cpython"))
        line("WARN", "%s: %s is %s %s: only CPython is supported; tunerguard stays inert there", label, path, impl,
             ver);
    else if (ft && (major != 3 || minor < TG_PY_FT_MINOR_FIRST || minor > TG_PY_FT_MINOR_LAST))
        line("WARN", "%s: %s is a free-threaded build (%st): supported free-threaded are 3.%dt and 3.%dt; tunerguard "
             "stays inert there (one line when a target is imported)", label, path, ver, TG_PY_FT_MINOR_FIRST,
             TG_PY_FT_MINOR_LAST);
    else if (major != 3 || minor < TG_PY_MINOR_FIRST || minor > TG_PY_MINOR_LAST)
        line("WARN", "%s: %s is CPython %s: supported are 3.%d to 3.%d; tunerguard stays inert there", label, path,
             ver, TG_PY_MINOR_FIRST, TG_PY_MINOR_LAST);
    else if (ft)
        ok = 1, line("OK", "%s: %s is CPython %st (free-threaded), supported; the GIL is %s here%s", label, path, ver,
                     gil ? "on" : "off", gil ? "" : " (an extension module without Py_mod_gil turns it on as it "
                     "is imported, unless PYTHON_GIL=0)");
    else
        ok = 1, line("OK", "%s: %s is CPython %s, supported", label, path, ver);
    if (ok) {
        check_modules(path);
        if (lib)
            check_hooks(path, lib);
    }
    return ok;
}

/* How many GPUs, and what that means for the autotuner race.  cuInit here,
 * in the doctor's own process (it is not preloaded into anything). */
static void check_devices(void *h)
{
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
    int (*count)(int *) = (int (*)(int *))dlsym(h, "cuDeviceGetCount");
    int n = 0, rc = init ? init(0) : -1;
    if (rc != 0 || !count || count(&n) != 0) {
        line("WARN", "cuInit/cuDeviceGetCount %s (cuInit returned %d): no usable GPU here; the CUDA hooks will see "
             "no launches", !init || !count ? "missing" : "failed", rc);
        return;
    }
    if (n == 0)
        line("WARN", "no CUDA device visible (check CUDA_VISIBLE_DEVICES); the CUDA hooks will see no launches");
    else if (n == 1)
        line("OK", "1 CUDA device: threads on separate streams of it still share one Autotuner per kernel");
    else
        line("OK", "%d CUDA devices: threads that drive different devices still share one Autotuner per kernel "
             "(the seeds' crash); mode=detect reports it, mode=serialize makes the second thread wait", n);
}

static void check_cuda(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        line("WARN", "libcuda.so.1 does not load (%s): no NVIDIA driver here; the CUDA hooks stay idle and races "
             "are still found through the Python hooks", dlerror());
        return;
    }
    int (*get)(int *) = (int (*)(int *))dlsym(h, "cuDriverGetVersion");
    int v = 0;
    Dl_info info = {0};
    if (get)
        dladdr((void *)get, &info);
    if (get && get(&v) == 0)
        line("OK", "libcuda.so.1 loads (%s), cuDriverGetVersion: %d (CUDA %d.%d)",
             info.dli_fname ? info.dli_fname : "?", v, v / 1000, (v % 1000) / 10);
    else
        line("WARN", "libcuda.so.1 loads but cuDriverGetVersion %s; check the driver installation",
             get ? "failed" : "is missing");
    check_devices(h);
    /* not dlclose'd: after cuInit the driver has threads and state of its own */
}

/* log_path=: reports go to PREFIX.<pid>.txt; a directory that is missing
 * or not writable sends them to stderr (the library says so then, once). */
static void check_log_path(const char *opts)
{
    char lp[4096];
    cli_option_value(opts, "log_path", lp, sizeof lp);
    if (!lp[0] || !strcmp(lp, "stderr"))
        return;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", lp);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        line("WARN", "log_path=%s: %s is not a directory here; reports would go to stderr (create it, or use "
             "`tunerguard run --report-dir DIR`, which does)", lp, dir);
    else if (access(dir, W_OK | X_OK) != 0)
        line("WARN", "log_path=%s: %s is not writable by this user; reports would go to stderr", lp, dir);
    else
        line("OK", "log_path=%s: reports go to %s/", lp, dir);
}

/* suppressions=: read by every Python process (a bad file stops it with
 * status 2 before the program runs), so try it in one. */
static void check_suppressions(const char *opts, const char *py, const char *lib)
{
    char file[4096];
    cli_option_value(opts, "suppressions", file, sizeof file);
    if (!file[0] || !py)
        return;
    char *argv[] = {(char *)py, "-c", "pass", NULL};
    struct cli_env env[] = {{"LD_PRELOAD", lib}};
    struct cli_capture cap;
    if (cli_capture_run(argv, env, 1, NULL, 60, &cap) < 0)
        return;
    int rc = cli_exit_status(cap.status);
    const char *said = last_line(cap.err);
    if (rc == 2)
        line("FAIL", "suppressions=%s: a Python process stops: %s", file, said);
    else if (rc == 0 && strstr(cap.err, "suppressions"))
        line("WARN", "suppressions=%s: %s", file, said);
    else if (rc == 0)
        line("OK", "suppressions=%s reads and parses", file);
    else
        line("WARN", "suppressions=%s: a preloaded %s -c pass exited %d: %s", file, py, rc, said);
    cli_capture_free(&cap);
}

static void check_options(const char *lib, const char *py)
{
    const char *opts = getenv("TUNERGUARD_OPTIONS");
    if (!opts || !*opts) {
        line("OK", "TUNERGUARD_OPTIONS not set: defaults (mode=detect, reports ./tunerguard.<pid>.txt and .jsonl)");
        return;
    }
    char *argv[] = {"/bin/true", NULL};
    struct cli_env env[] = {{"LD_PRELOAD", lib}};
    struct cli_capture cap;
    if (cli_capture_run(argv, env, 1, NULL, 30, &cap) < 0)
        return;
    int rc = cli_exit_status(cap.status);
    if (rc == 2)
        line("FAIL", "TUNERGUARD_OPTIONS=%s is rejected: %s; fix it (TUNERGUARD_OPTIONS=help=1 lists the options)",
             opts, last_line(cap.err));
    else if (rc == 0)
        line("OK", "TUNERGUARD_OPTIONS=%s is accepted", opts);
    else
        line("WARN", "TUNERGUARD_OPTIONS=%s: a preloaded /bin/true exited %d: %s", opts, rc, last_line(cap.err));
    cli_capture_free(&cap);
    if (rc == 2)
        return;
    check_log_path(opts);
    check_suppressions(opts, py, lib);
}

int cli_doctor(int argc, char **argv)
{
    const char *extra = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a))
            return cli_help("doctor");
        if (!strcmp(a, "--python") || !strncmp(a, "--python=", 9)) {
            extra = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!extra || !*extra)
                return cli_usage("doctor", "--python needs an interpreter");
        } else {
            return cli_usage("doctor", "unexpected argument '%s'", a);
        }
    }
    char libbuf[4096];
    const char *lib = NULL;
    if (cli_find_lib(libbuf, sizeof libbuf) == 0) {
        lib = libbuf;
        line("OK", "library: %s", lib);
        check_build_id(lib);
    } else {
        line("FAIL", "libtunerguard.so not found (looked at %s); build it, or set TUNERGUARD_LIB", libbuf);
    }
    const char *pre = getenv("LD_PRELOAD");
    if (pre && *pre)
        line("WARN", "LD_PRELOAD is already set (%s): `tunerguard run` keeps it, after the library", pre);
    int supported = check_python("python3 on PATH", "python3", lib);
    const char *env_py = getenv("PYTHON");
    if (env_py && *env_py)
        supported += check_python("$PYTHON", env_py, lib);
    if (extra)
        supported += check_python("--python", extra, lib);
    if (!supported)
        line("FAIL", "no supported Python interpreter found: install CPython 3.9 to 3.15, or a free-threaded 3.13t");
    check_cuda();
    if (lib)
        check_options(lib, supported ? "python3" : NULL);
    printf("%d FAIL, %d WARN\n", nfail, nwarn);
    return nfail ? 1 : 0;
}
