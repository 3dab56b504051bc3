/* tunerguard repro: run the race reproducers under none / detect / serialize
 * and print scenario x mode -> outcome.
 *
 * Contract: without --gpu, tests/repro/run_repro.py (from the source tree)
 * runs the CPU reproducers with the build tree's stand-in libcuda and its
 * verdict per run is kept (ok = as expected).  With --gpu,
 * tests/gpu/triton_races.py runs per scenario, mode and run in a fresh
 * temporary directory and TRITON_CACHE_DIR; when torch/triton cannot be
 * imported or no GPU is visible, one "skipped:" line and exit 0.  Outcomes:
 * failed (non-zero exit), reported (a report file was written; detect),
 * passed (exit 0).  Expected: none -> failed, detect -> reported,
 * serialize -> passed.  Exit 0 when all as expected, 1 when not, 2 for usage
 * errors and missing pieces. */
#include "cli.h"
#include "cli_json.h"

#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const all_scenarios[] = {"seeds004", "cached_subclass", "hammer", "reset_to_zero"};
static const char *const modes[] = {"none", "detect", "serialize"};
static const char *const expected[] = {"failed", "reported", "passed"};
#define NSCEN 4
#define NMODES 3

struct rec {
    int scenario, mode;
    char outcome[16];
    int ok;
    double seconds;
    char *detail;
};

struct recs {
    struct rec *r;
    size_t n;
};

static void add_rec(struct recs *rs, struct rec r)
{
    rs->r = realloc(rs->r, (rs->n + 1) * sizeof *rs->r);
    if (!rs->r)
        abort();
    rs->r[rs->n++] = r;
}

static int scen_index(const char *s)
{
    for (int i = 0; i < NSCEN; i++)
        if (!strcmp(all_scenarios[i], s))
            return i;
    return -1;
}

static int mode_index(const char *s)
{
    for (int i = 0; i < NMODES; i++)
        if (!strcmp(modes[i], s))
            return i;
    return -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Print the table (or JSON); returns 1 when every record is ok. */
static int print_results(const struct recs *rs, const int *scen, int nscen, int runs, int gpu, int as_json)
{
    int all_ok = 1;
    struct cli_buf b = {0};
    if (as_json)
        cli_buf_printf(&b, "{\"gpu\":%s,\"runs\":%d,\"results\":[", gpu ? "true" : "false", runs);
    else
        cli_buf_printf(&b, "%-16s %-9s  %-9s %-9s %-11s %4s %8s\n", "scenario", "mode", "outcome", "expected",
                       "as expected", "runs", "median s");
    int first = 1;
    for (int s = 0; s < nscen; s++) {
        for (int m = 0; m < NMODES; m++) {
            double secs[1024];
            size_t n = 0, nok = 0;
            const struct rec *bad = NULL, *any = NULL;
            int counts[3] = {0};
            for (size_t i = 0; i < rs->n; i++) {
                const struct rec *r = &rs->r[i];
                if (r->scenario != scen[s] || r->mode != m)
                    continue;
                any = any ? any : r;
                if (n < 1024)
                    secs[n] = r->seconds;
                n++;
                nok += r->ok;
                if (!r->ok && !bad)
                    bad = r;
                for (int k = 0; k < 3; k++)
                    counts[k] += !strcmp(r->outcome, expected[k]);
            }
            if (!n)
                continue;
            size_t ns = n < 1024 ? n : 1024;
            qsort(secs, ns, sizeof *secs, cmp_double);
            double med = ns % 2 ? secs[ns / 2] : (secs[ns / 2 - 1] + secs[ns / 2]) / 2;
            /* the cell's outcome: the most frequent one */
            int top = 0;
            for (int k = 1; k < 3; k++)
                if (counts[k] > counts[top])
                    top = k;
            const char *outcome = counts[top] ? expected[top] : (bad ? bad->outcome : any->outcome);
            if (nok != n)
                all_ok = 0;
            if (as_json) {
                cli_buf_printf(&b, "%s{\"scenario\":\"%s\",\"mode\":\"%s\",\"outcome\":\"%s\",\"expected\":\"%s\","
                               "\"as_expected\":%zu,\"runs\":%zu,\"median_s\":%.3f,\"detail\":",
                               first ? "" : ",", all_scenarios[scen[s]], modes[m], outcome, expected[m], nok, n, med);
                cli_jput_str(&b, bad ? bad->detail : any->detail);
                cli_buf_puts(&b, "}");
                first = 0;
            } else {
                char frac[32];
                snprintf(frac, sizeof frac, "%zu/%zu", nok, n);
                cli_buf_printf(&b, "%-16s %-9s  %-9s %-9s %-11s %4zu %8.2f%s\n", all_scenarios[scen[s]], modes[m],
                               outcome, expected[m], frac, n, med, nok == n ? "" : "   <-- differs");
                if (bad && bad->detail && *bad->detail)
                    cli_buf_printf(&b, "    %s\n", bad->detail);
            }
        }
    }
    if (as_json)
        cli_buf_printf(&b, "],\"ok\":%s}\n", all_ok ? "true" : "false");
    else
        cli_buf_puts(&b, all_ok ? "all outcomes as expected\n" : "SOME OUTCOMES DIFFER FROM THE EXPECTED\n");
    fputs(b.s, stdout);
    cli_buf_free(&b);
    return all_ok;
}

/* ---- CPU reproducers ---------------------------------------------------- */

static int run_cpu(const char *src, const char *lib, const char *py, int runs, const int *scen, int nscen,
                   struct recs *rs)
{
    const char *fake = cli_fakecuda_dir();
    if (!fake) {
        fprintf(stderr, "tunerguard: no stand-in libcuda.so.1 (build/tests/fakecuda): build the tests first\n");
        return -1;
    }
    char runner[PATH_MAX], runs_s[16];
    snprintf(runner, sizeof runner, "%s/tests/repro/run_repro.py", src);
    snprintf(runs_s, sizeof runs_s, "%d", runs);
    char *argv[32] = {"python3", runner, "--lib", (char *)lib, "--fakecuda", (char *)fake, "--python", (char *)py,
                      "--runs", runs_s, "--json"};
    int argc = 11;
    for (int i = 0; i < nscen; i++) {
        argv[argc++] = "--scenario";
        argv[argc++] = (char *)all_scenarios[scen[i]];
    }
    argv[argc] = NULL;
    struct cli_capture cap;
    if (cli_capture_run(argv, NULL, 0, NULL, 0, &cap) < 0) {
        perror("tunerguard: cannot start python3");
        return -1;
    }
    json_error_t jerr;
    json_t *doc = json_loads(cap.out, JSON_DISABLE_EOF_CHECK, &jerr); /* what follows the document is ignored */
    const json_t *results = json_object_get(doc, "results");
    if (!json_is_array(results)) {
        fprintf(stderr, "tunerguard: %s gave no results (exit %d):\n%s%s", runner, cli_exit_status(cap.status),
                cap.out, cap.err);
        json_decref(doc);
        cli_capture_free(&cap);
        return -1;
    }
    for (size_t i = 0; i < json_array_size(results); i++) {
        const json_t *r = json_array_get(results, i);
        int s = scen_index(json_string_value(json_object_get(r, "scenario")) ?: "");
        int m = mode_index(json_string_value(json_object_get(r, "mode")) ?: "");
        if (s < 0 || m < 0)
            continue;
        const json_t *files = json_object_get(r, "report_files"), *sec = json_object_get(r, "seconds");
        long long rc = cli_jint(json_object_get(r, "rc"), -1);
        struct rec rec = {.scenario = s, .mode = m, .ok = json_is_true(json_object_get(r, "ok")),
                          .seconds = json_is_number(sec) ? json_number_value(sec) : 0};
        int reported = 0;
        for (size_t k = 0; k < json_array_size(files); k++) {
            const char *f = json_string_value(json_array_get(files, k));
            size_t l = f ? strlen(f) : 0;
            reported |= l > 4 && !strcmp(f + l - 4, ".txt");
        }
        snprintf(rec.outcome, sizeof rec.outcome, "%s",
                 m == 1 && reported ? "reported" : rc == 0 ? "passed" : "failed");
        rec.detail = strdup(json_string_value(json_object_get(r, "outcome")) ?: "");
        add_rec(rs, rec);
    }
    json_decref(doc);
    cli_capture_free(&cap);
    return 0;
}

/* ---- GPU scenarios -------------------------------------------------------- */

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static int has_report(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)))
        found |= !strncmp(e->d_name, "tg.", 3) && strstr(e->d_name, ".txt") != NULL;
    closedir(d);
    return found;
}

/* 0 ready; 1 skipped (line printed); -1 error. */
static int gpu_ready(const char *py)
{
    char *argv[] = {(char *)py, "-c",
                    "import torch, triton; print('cuda', torch.cuda.is_available(), torch.__version__, "
                    "triton.__version__)",
                    NULL};
    struct cli_capture cap;
    if (cli_capture_run(argv, NULL, 0, NULL, 120, &cap) < 0)
        return -1;
    int rc = 0;
    if (cli_exit_status(cap.status) != 0) {
        char *last = strrchr(cap.err, '\n');
        while (last && last > cap.err && last[1] == '\0') {
            *last = '\0';
            last = strrchr(cap.err, '\n');
        }
        printf("skipped: no Triton (%s cannot import torch and triton: %s)\n", py, last ? last + 1 : cap.err);
        rc = 1;
    } else if (!strstr(cap.out, "cuda True")) {
        printf("skipped: no GPU (torch.cuda.is_available() is False)\n");
        rc = 1;
    }
    cli_capture_free(&cap);
    return rc;
}

/* devs: "" (both threads' scenarios on device 0), or "A,B" from --devices:
 * the scenario's first thread on device A, the second on B. */
static int run_gpu(const char *src, const char *lib, const char *py, int runs, const int *scen, int nscen,
                   const int devs[2], struct recs *rs)
{
    char dev_a[16], dev_b[16];
    snprintf(dev_a, sizeof dev_a, "%d", devs[0]);
    snprintf(dev_b, sizeof dev_b, "%d", devs[1]);
    char script[PATH_MAX];
    snprintf(script, sizeof script, "%s/tests/gpu/triton_races.py", src);
    for (int s = 0; s < nscen; s++) {
        for (int m = 0; m < NMODES; m++) {
            for (int run = 0; run < runs; run++) {
                char work[] = "/tmp/tunerguard-gpu-XXXXXX";
                if (!mkdtemp(work))
                    return -1;
                char cache[PATH_MAX], opts[PATH_MAX + 64];
                snprintf(cache, sizeof cache, "%s/cache", work);
                snprintf(opts, sizeof opts, "mode=%s:log_path=%s/tg", modes[m], work);
                struct cli_env env[] = {{"TRITON_CACHE_DIR", cache},
                                        {"PYTHONUNBUFFERED", "1"},
                                        {"LD_PRELOAD", m ? lib : NULL},
                                        {"TUNERGUARD_OPTIONS", m ? opts : NULL}};
                char *argv[] = {(char *)py, script, (char *)all_scenarios[scen[s]], "--device", dev_a,
                                "--device2", dev_b, NULL};
                struct cli_capture cap;
                if (cli_capture_run(argv, env, 4, work, 300, &cap) < 0)
                    return -1;
                int rc = cli_exit_status(cap.status);
                struct rec rec = {.scenario = scen[s], .mode = m, .seconds = cap.seconds};
                int reported = has_report(work);
                snprintf(rec.outcome, sizeof rec.outcome, "%s",
                         cap.timed_out ? "timeout" : rc == 2 ? "setup" : m == 1 && reported ? "reported"
                                                     : rc == 0 ? "passed" : "failed");
                rec.ok = !strcmp(rec.outcome, expected[m]);
                /* the last line of the scenario's or tunerguard's stderr says why */
                struct cli_buf why = {0};
                cli_buf_printf(&why, "exit %d%s", rc, cap.timed_out ? " (timed out after 300 s)" : "");
                for (char *line = strtok(cap.err, "\n"); line; line = strtok(NULL, "\n"))
                    if (!strncmp(line, "triton_races", 12) || !strncmp(line, "tunerguard:", 11) ||
                        strstr(line, "Error"))
                        rec.detail = (free(rec.detail), strdup(line));
                if (rec.detail)
                    cli_buf_printf(&why, ": %s", rec.detail);
                free(rec.detail);
                rec.detail = why.s;
                add_rec(rs, rec);
                cli_capture_free(&cap);
                nftw(work, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
            }
        }
    }
    return 0;
}

int cli_repro(int argc, char **argv)
{
    int gpu = 0, runs = 1, as_json = 0, nscen = 0, devs[2] = {0, 0}, have_devs = 0;
    int scen[NSCEN];
    const char *py = getenv("PYTHON");
    if (!py || !*py)
        py = "python3";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a))
            return cli_help("repro");
        if (!strcmp(a, "--gpu")) {
            gpu = 1;
        } else if (!strcmp(a, "--devices") || !strncmp(a, "--devices=", 10)) {
            const char *v = a[9] == '=' ? a + 10 : (i + 1 < argc ? argv[++i] : NULL);
            char *e1 = NULL, *e2 = NULL;
            long d0 = v ? strtol(v, &e1, 10) : -1, d1 = -1;
            if (v && e1 != v && *e1 == ',')
                d1 = strtol(e1 + 1, &e2, 10);
            if (!v || d0 < 0 || d0 > 1023 || d1 < 0 || d1 > 1023 || !e2 || e2 == e1 + 1 || *e2)
                return cli_usage("repro", "--devices needs two device ordinals, A,B (for example 0,1)");
            devs[0] = (int)d0;
            devs[1] = (int)d1;
            have_devs = 1;
        } else if (!strcmp(a, "--json")) {
            as_json = 1;
        } else if (!strcmp(a, "--runs") || !strncmp(a, "--runs=", 7)) {
            const char *v = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : NULL);
            char *e;
            long n = v ? strtol(v, &e, 10) : 0;
            if (!v || *e || n < 1 || n > 1000)
                return cli_usage("repro", "--runs needs a number from 1 to 1000");
            runs = (int)n;
        } else if (!strcmp(a, "--python") || !strncmp(a, "--python=", 9)) {
            py = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!py || !*py)
                return cli_usage("repro", "--python needs an interpreter");
        } else if (a[0] == '-') {
            return cli_usage("repro", "unknown flag '%s'", a);
        } else {
            int k = scen_index(a);
            if (k < 0)
                return cli_usage("repro", "unknown scenario '%s' (valid: seeds004, cached_subclass, hammer, reset_to_zero)",
                                 a);
            int dup = 0;
            for (int j = 0; j < nscen; j++)
                dup |= scen[j] == k;
            if (!dup)
                scen[nscen++] = k;
        }
    }
    if (!nscen)
        for (nscen = 0; nscen < NSCEN; nscen++)
            scen[nscen] = nscen;
    const char *src = cli_source_dir();
    if (!src) {
        fprintf(stderr, "tunerguard: repro needs the source tree (tests/repro, tests/gpu); set TUNERGUARD_SOURCE_DIR\n");
        return 2;
    }
    char lib[4096];
    if (cli_find_lib(lib, sizeof lib) < 0) {
        fprintf(stderr, "tunerguard: cannot find libtunerguard.so (looked at %s); set TUNERGUARD_LIB\n", lib);
        return 2;
    }
    struct recs rs = {0};
    int r;
    if (have_devs && !gpu)
        return cli_usage("repro", "--devices needs --gpu (the CPU reproducers choose their stand-in devices)");
    if (gpu) {
        int ready = gpu_ready(py);
        if (ready != 0)
            return ready > 0 ? 0 : 2;
        r = run_gpu(src, lib, py, runs, scen, nscen, devs, &rs);
    } else {
        r = run_cpu(src, lib, py, runs, scen, nscen, &rs);
    }
    if (r < 0)
        return 2;
    if (!as_json)
        printf("%s reproducers, python: %s, runs per cell: %d\n", gpu ? "GPU (real Triton)" : "CPU", py, runs);
    int ok = print_results(&rs, scen, nscen, runs, gpu, as_json);
    for (size_t i = 0; i < rs.n; i++)
        free(rs.r[i].detail);
    free(rs.r);
    return ok ? 0 : 1;
}
