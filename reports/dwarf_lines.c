/* Source file:line through elfutils' libdw, loaded on demand (dwarf_lines.h).
 *
 * One Dwfl session per process: dwfl_begin with libdw's own
 * dwfl_linux_proc_find_elf / dwfl_standard_find_debuginfo callbacks,
 * dwfl_linux_proc_report(getpid()), dwfl_report_end; then per address
 * dwfl_addrmodule, dwfl_module_getsrc, dwfl_lineinfo.  libdw's headers are
 * not needed: its types are opaque here and the few functions are declared
 * by hand with the ABI of elfutils' libdwfl.h (stable since 0.1xx). */
#include "reports/dwarf_lines.h"
#include "core/real_sym.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct Dwfl Dwfl;
typedef struct Dwfl_Module Dwfl_Module;
typedef struct Dwfl_Line Dwfl_Line;
typedef uint64_t Dwarf_Addr;
typedef uint64_t Dwarf_Word;

/* libdwfl.h's Dwfl_Callbacks: four pointers (three callbacks and the
 * debuginfo search path).  libdw keeps a pointer to it: static storage. */
typedef struct {
    void *find_elf;
    void *find_debuginfo;
    void *section_address;
    char **debuginfo_path;
} tg__dwfl_callbacks;

static struct {
    int tried;                     /* dlopen attempted in this process */
    pid_t pid;                     /* process the session was built for */
    void *lib;
    Dwfl *dwfl;
    struct timespec refreshed;     /* last dwfl_linux_proc_report */
    Dwfl *(*begin)(const tg__dwfl_callbacks *);
    void (*end)(Dwfl *);
    int (*report_begin)(Dwfl *);
    int (*report_end)(Dwfl *, void *, void *);
    int (*proc_report)(Dwfl *, pid_t);
    Dwfl_Module *(*addrmodule)(Dwfl *, Dwarf_Addr);
    Dwfl_Line *(*getsrc)(Dwfl_Module *, Dwarf_Addr);
    const char *(*lineinfo)(Dwfl_Line *, Dwarf_Addr *, int *, int *, Dwarf_Word *, Dwarf_Word *);
    const char *(*comp_dir)(Dwfl_Line *);
} tg__dw;

static tg__dwfl_callbacks tg__dw_callbacks;
static const char *tg__dw_soname = "libdw.so.1";
static pthread_mutex_t tg__dw_lock = PTHREAD_MUTEX_INITIALIZER;

/* Per-address results: direct-mapped, so repeated reports cost nothing. */
#define TG_DW_CACHE 256
#define TG_DW_FILE 160
static struct {
    uintptr_t pc;                  /* 0: empty slot */
    int line;                      /* 0: looked up, unknown */
    char file[TG_DW_FILE];
} tg__dw_cache[TG_DW_CACHE];

static void drop_session_locked(void)
{
    if (tg__dw.dwfl && tg__dw.end && tg__dw.pid == getpid())
        tg__dw.end(tg__dw.dwfl);
    tg__dw.dwfl = NULL;
    memset(tg__dw_cache, 0, sizeof tg__dw_cache);
}

static int report_locked(void)
{
    if (tg__dw.report_begin(tg__dw.dwfl) != 0)
        return 0;
    int rc = tg__dw.proc_report(tg__dw.dwfl, getpid());
    if (tg__dw.report_end(tg__dw.dwfl, NULL, NULL) != 0)
        return 0;
    clock_gettime(CLOCK_MONOTONIC, &tg__dw.refreshed);
    return rc == 0;
}

/* Load libdw and build the session; 1 when usable. */
static int ensure_locked(void)
{
    pid_t pid = getpid();
    if (tg__dw.dwfl && tg__dw.pid != pid) {
        /* forked: the maps are the parent's copy, but libdw's state belongs
         * to the parent; start over (leaking the old session's memory). */
        tg__dw.dwfl = NULL;
        memset(tg__dw_cache, 0, sizeof tg__dw_cache);
    }
    if (tg__dw.dwfl)
        return 1;
    if (!tg__dw.tried) {
        tg__dw.tried = 1;
        tg__dw.lib = dlopen(tg__dw_soname, RTLD_LAZY | RTLD_LOCAL);
        if (!tg__dw.lib)
            return 0;
        void *l = tg__dw.lib;
#define TG__DW_SYM(field, name) *(void **)&tg__dw.field = tg_real_sym(l, name)
        TG__DW_SYM(begin, "dwfl_begin");
        TG__DW_SYM(end, "dwfl_end");
        TG__DW_SYM(report_begin, "dwfl_report_begin");
        TG__DW_SYM(report_end, "dwfl_report_end");
        TG__DW_SYM(proc_report, "dwfl_linux_proc_report");
        TG__DW_SYM(addrmodule, "dwfl_addrmodule");
        TG__DW_SYM(getsrc, "dwfl_module_getsrc");
        TG__DW_SYM(lineinfo, "dwfl_lineinfo");
        TG__DW_SYM(comp_dir, "dwfl_line_comp_dir");   /* optional */
#undef TG__DW_SYM
        tg__dw_callbacks.find_elf = tg_real_sym(l, "dwfl_linux_proc_find_elf");
        tg__dw_callbacks.find_debuginfo = tg_real_sym(l, "dwfl_standard_find_debuginfo");
        tg__dw_callbacks.section_address = tg_real_sym(l, "dwfl_offline_section_address");
        if (!tg__dw.begin || !tg__dw.end || !tg__dw.report_begin || !tg__dw.report_end ||
            !tg__dw.proc_report || !tg__dw.addrmodule || !tg__dw.getsrc || !tg__dw.lineinfo ||
            !tg__dw_callbacks.find_elf || !tg__dw_callbacks.find_debuginfo) {
            tg__dw.begin = NULL;   /* an elfutils without these: never usable */
            return 0;
        }
    }
    if (!tg__dw.begin)
        return 0;
    tg__dw.dwfl = tg__dw.begin(&tg__dw_callbacks);
    if (!tg__dw.dwfl)
        return 0;
    tg__dw.pid = pid;
    if (!report_locked()) {
        tg__dw.end(tg__dw.dwfl);
        tg__dw.dwfl = NULL;
        return 0;
    }
    return 1;
}

/* A module loaded after the session was built: read the maps again, at most
 * once a second (a pc in no module at all must not re-read them each time). */
static Dwfl_Module *module_of_locked(Dwarf_Addr a)
{
    Dwfl_Module *m = tg__dw.addrmodule(tg__dw.dwfl, a);
    if (m)
        return m;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - tg__dw.refreshed.tv_sec < 1)
        return NULL;
    if (!report_locked())
        return NULL;
    return tg__dw.addrmodule(tg__dw.dwfl, a);
}

static void copy_path(char *dst, size_t dlen, const char *src, const char *comp_dir)
{
    if (comp_dir && comp_dir[0]) {
        size_t cl = strlen(comp_dir);
        while (cl > 1 && comp_dir[cl - 1] == '/')
            cl--;
        if (strncmp(src, comp_dir, cl) == 0 && src[cl] == '/' && src[cl + 1])
            src += cl + 1;
    }
    size_t n = strlen(src);
    if (n < dlen) {
        memcpy(dst, src, n + 1);
    } else if (dlen > 4) {         /* keep the end: the file name matters most */
        memcpy(dst, "...", 3);
        memcpy(dst + 3, src + n - (dlen - 4), dlen - 4);
        dst[dlen - 1] = '\0';
    } else if (dlen) {
        dst[0] = '\0';
    }
}

int tg_dwarf_line(void *pc, char *file, size_t filelen, int *line)
{
    if (file && filelen)
        file[0] = '\0';
    if (line)
        *line = 0;
    uintptr_t p = (uintptr_t)pc;
    if (!file || filelen == 0 || !line || p < 2)
        return 0;
    pthread_mutex_lock(&tg__dw_lock);
    int ok = 0;
    size_t slot = (p >> 2) % TG_DW_CACHE;
    if (tg__dw_cache[slot].pc == p && tg__dw.pid == getpid()) {
        ok = tg__dw_cache[slot].line > 0;
        if (ok) {
            copy_path(file, filelen, tg__dw_cache[slot].file, NULL);
            *line = tg__dw_cache[slot].line;
        }
        pthread_mutex_unlock(&tg__dw_lock);
        return ok;
    }
    if (ensure_locked()) {
        Dwarf_Addr a = (Dwarf_Addr)(p - 1); /* the call, not the return point */
        Dwfl_Module *m = module_of_locked(a);
        Dwfl_Line *l = m ? tg__dw.getsrc(m, a) : NULL;
        int ln = 0;
        const char *src = l ? tg__dw.lineinfo(l, NULL, &ln, NULL, NULL, NULL) : NULL;
        tg__dw_cache[slot].pc = p;
        tg__dw_cache[slot].line = 0;
        tg__dw_cache[slot].file[0] = '\0';
        if (src && src[0] && ln > 0) {
            const char *cd = tg__dw.comp_dir ? tg__dw.comp_dir(l) : NULL;
            copy_path(tg__dw_cache[slot].file, TG_DW_FILE, src, cd);
            tg__dw_cache[slot].line = ln;
            copy_path(file, filelen, tg__dw_cache[slot].file, NULL);
            *line = ln;
            ok = 1;
        }
    }
    pthread_mutex_unlock(&tg__dw_lock);
    return ok;
}

int tg_dwarf_available(void)
{
    pthread_mutex_lock(&tg__dw_lock);
    int ok = ensure_locked();
    pthread_mutex_unlock(&tg__dw_lock);
    return ok;
}

void tg_dwarf_reset_for_tests(const char *soname)
{
    pthread_mutex_lock(&tg__dw_lock);
    drop_session_locked();
    if (tg__dw.lib)
        dlclose(tg__dw.lib);
    memset(&tg__dw, 0, sizeof tg__dw);
    tg__dw_soname = soname ? soname : "libdw.so.1";
    pthread_mutex_unlock(&tg__dw_lock);
}
