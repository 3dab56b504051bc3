/* C++ names in reports (reports/demangle.h, through tg_report_symbolize):
 * native frames and CUDA kernel names demangled with the process's own
 * __cxa_demangle, found where a library loaded libstdc++ with RTLD_LOCAL
 * (as torch's extension modules are loaded); the mangled name kept in the
 * JSON; left as it is where the process has no libstdc++.  Each test runs in
 * a process of its own (Criterion), so one that loads libstdc++ does not
 * leave it to the next. */
#include <dlfcn.h>

#include "jsonl_check.h"
#include "reports/demangle.h"

#define GATHER "_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_illllb"
#define GATHER_CXX "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, long, long, bool)"

static char path[64];

/* A race whose entering thread's innermost native frame returns into
 * std::thread::hardware_concurrency() of libstdc++ (h, RTLD_LOCAL), last
 * CUDA call a launch of an ATen kernel; symbolized as the sink does. */
static void cxx_report(struct tg_report *r, void *h)
{
    fx_race_high(r);
    void *f = dlsym(h, "_ZNSt6thread20hardware_concurrencyEv");
    cr_assert_not_null(f);
    r->entering.nnative = 1;
    r->entering.native[0] = (char *)f + 1;
    snprintf(r->entering.cuda_kernel, sizeof r->entering.cuda_kernel, "%s", GATHER);
    tg_report_set_symbolize(1);
    tg_report_symbolize(r);
}

static char *write_both(const struct tg_report *r, char **json)
{
    int rc;
    char *text = fx_capture(tg_report_write_text, r, &rc);
    cr_assert_eq(rc, 0);
    snprintf(path, sizeof path, "/tmp/tg_dm_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(tg_report_write_jsonl(fd, r), 0);
    close(fd);
    *json = fx_read_file(path);
    return text;
}

Test(demangle, names_demangled_mangled_kept_in_json)
{
    void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    static struct tg_report r;
    cxx_report(&r, h);
    char *json;
    char *text = write_both(&r, &json);
    cr_assert(strstr(text, "#0 std::thread::hardware_concurrency()+0x1 (libstdc++.so.6+0x"), "%s", text);
    cr_assert(strstr(text, "kernel '" GATHER_CXX "'"), "%s", text);
    cr_assert(!strstr(text, "_ZN"), "%s", text);
    cr_assert(strstr(json, "\"symbol\":\"std::thread::hardware_concurrency()+0x1 (libstdc++.so.6+0x"), "%s", json);
    cr_assert(strstr(json, "\"mangled\":\"_ZNSt6thread20hardware_concurrencyEv\""), "%s", json);
    cr_assert(strstr(json, "\"kernel\":\"" GATHER_CXX "\",\"kernel_mangled\":\"" GATHER "\""), "%s", json);
    const char *expects[] = {"1:entering.native.0.mangled=\"_ZNSt6thread20hardware_concurrencyEv\"",
                             "1:inside.native.0.mangled=null", NULL};
    cr_assert_eq(run_jsonl_checker(path, 1, expects), 0, "the schema has the new keys");
    unlink(path);
    free(text);
    free(json);
}

/* No libstdc++ in the process: nothing is loaded for it, names stay as the
 * binary has them, and the JSON says none was demangled. */
Test(demangle, without_libstdcxx_names_stay)
{
    cr_assert_null(dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD), "the test process has libstdc++ already");
    static struct tg_report r;
    fx_race_high(&r);
    snprintf(r.entering.cuda_kernel, sizeof r.entering.cuda_kernel, "%s", GATHER);
    tg_report_symbolize(&r);
    char out[256];
    (void)dlerror();
    cr_assert_eq(tg_demangle(GATHER, sizeof GATHER, out, sizeof out), 0);
    cr_assert_null(dlerror(), "the failed look-ups left the program a dlerror() message");
    cr_assert_null(dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD), "looking did not load it");
    char *json;
    char *text = write_both(&r, &json);
    cr_assert(strstr(text, "kernel '" GATHER "'"), "%s", text);
    cr_assert(strstr(json, "\"kernel\":\"" GATHER "\",\"kernel_mangled\":null"), "%s", json);
    unlink(path);
    free(text);
    free(json);
}

/* A name that is not C++ (a Triton kernel, a C function) or that the
 * demangler refuses stays as it is. */
Test(demangle, other_names_untouched)
{
    void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h);
    char out[128] = "unchanged";
    cr_assert_eq(tg_demangle("matmul_kernel", 14, out, sizeof out), 0);
    cr_assert_eq(tg_demangle("_Znot a name", 13, out, sizeof out), 0);
    cr_assert_str_eq(out, "unchanged");
    cr_assert_eq(tg_demangle_frame("_ZNSt6thread20hardware_concurrencyEv+0x1 (libstdc++.so.6+0xd9a31)", 160, out,
                                   sizeof out), 1);
    cr_assert_str_eq(out, "std::thread::hardware_concurrency()+0x1 (libstdc++.so.6+0xd9a31)");
    cr_assert_eq(tg_demangle_frame("?? (libc.so.6+0x9cb84)", 160, out, sizeof out), 0);
    /* too long for out: the name cut, the offset and module whole */
    cr_assert_eq(tg_demangle_frame(GATHER "+0x1c (libtorch_cuda.so+0x1a2b3c)", 160, out, 80), 1);
    cr_assert_str_eq(out, "void at::native::vectorized_gather_kernel<1...+0x1c (libtorch_cuda.so+0x1a2b3c)");
}

/* An ATen kernel launched by another thread during a benchmark: its mangled
 * name (96 bytes) is kept whole by the interference record and demangled in
 * the text (a cut name cannot be demangled: the GPU run's report showed it
 * mangled and cut when the record held 96 bytes). */
#define FILL "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIiEESt5arrayIPcLm1EEEEviT0_T1_"
#define FILL_CXX "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>, " \
                 "std::array<char*, 1ul> >(int, at::native::FillFunctor<int>, std::array<char*, 1ul>)"

Test(demangle, long_foreign_kernel_name_whole_and_demangled)
{
    void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h);
    static struct tg_report r;
    fx_race_high(&r);
    r.kind = TG_REPORT_INTERFERENCE;
    r.itf.foreign = 3;
    r.itf.nfrom = 1;
    r.itf.from[0].tid = 4243;
    snprintf(r.itf.from[0].kernel, sizeof r.itf.from[0].kernel, "%s", FILL);
    cr_assert_str_eq(r.itf.from[0].kernel, FILL, "the record keeps the whole name");
    tg_report_symbolize(&r);
    char *json;
    char *text = write_both(&r, &json);
    cr_assert(strstr(text, "'" FILL_CXX "'"), "%s", text);
    cr_assert(strstr(json, FILL), "the mangled name kept in JSON: %s", json);
    unlink(path);
    free(text);
    free(json);
}
