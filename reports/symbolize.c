/* Symbolization of native return addresses, at report time only.
 *
 * Order: dladdr (dynamic symbols: cheap), then the module's own ELF .symtab
 * (static and hidden functions, when the file is not stripped), read through
 * a read-only mmap that stays cached for the life of the process.  Names
 * are kept as the binary has them (the JSON keeps the mangled C++ name); the
 * writers demangle (reports/demangle.h).  Source file:line comes from
 * reports/dwarf_lines.c (libdw on demand), in tg_report_symbolize().
 *
 * Contract: not signal-safe; allocates (mmap); serialized by one mutex.
 * Never fails: an unknown address prints as "0x...". */
#include "reports/demangle.h"
#include "reports/dwarf_lines.h"
#include "reports/native_stack.h"
#include "reports/report.h"
#include "reports/report_internal.h"
#include "core/real_sym.h"
#include "core/process.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct elf_syms {
    char path[512];
    int ok;                        /* has a usable .symtab */
    const unsigned char *map;
    size_t size;
    const Elf64_Sym *syms;
    size_t nsyms;
    const char *strs;
    size_t strsz;
};

#define TG_ELF_CACHE 32
static struct elf_syms tg__elf_cache[TG_ELF_CACHE];
static int tg__elf_next;           /* round-robin slot to reuse when full */
static pthread_mutex_t tg__sym_lock = PTHREAD_MUTEX_INITIALIZER;

static int elf_load(struct elf_syms *e, const char *path)
{
    memset(e, 0, sizeof *e);
    snprintf(e->path, sizeof e->path, "%s", path);
    const char *kind;
    int fd = tg_proc_open_read(path, &kind); /* regular files only, never blocks */
    if (fd < 0)
        return 0;
    struct stat st;
    void *m = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(Elf64_Ehdr))
        m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return 0;
    size_t size = (size_t)st.st_size;
    const unsigned char *b = m;
    const Elf64_Ehdr *eh = m;
    if (memcmp(b, ELFMAG, SELFMAG) != 0 || b[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff == 0 ||
        eh->e_shoff > size || eh->e_shnum > (size - eh->e_shoff) / sizeof(Elf64_Shdr))
        goto fail;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(b + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum)
            continue;
        const Elf64_Shdr *st_sh = &sh[sh[i].sh_link];
        if (sh[i].sh_offset > size || sh[i].sh_size > size - sh[i].sh_offset ||
            st_sh->sh_offset > size || st_sh->sh_size > size - st_sh->sh_offset)
            goto fail;
        e->syms = (const Elf64_Sym *)(b + sh[i].sh_offset);
        e->nsyms = sh[i].sh_size / sizeof(Elf64_Sym);
        e->strs = (const char *)(b + st_sh->sh_offset);
        e->strsz = st_sh->sh_size;
        e->map = b;
        e->size = size;
        e->ok = 1;
        return 1;
    }
fail:
    munmap(m, size);
    return 0;
}

static struct elf_syms *elf_get_locked(const char *path)
{
    for (int i = 0; i < TG_ELF_CACHE; i++)
        if (tg__elf_cache[i].path[0] && strcmp(tg__elf_cache[i].path, path) == 0)
            return &tg__elf_cache[i];
    struct elf_syms *e = &tg__elf_cache[tg__elf_next];
    tg__elf_next = (tg__elf_next + 1) % TG_ELF_CACHE;
    if (e->map)
        munmap((void *)e->map, e->size);
    elf_load(e, path);
    return e;
}

/* The function containing link-time address key, or NULL. */
static const char *elf_lookup(const struct elf_syms *e, uint64_t key, uint64_t *start)
{
    const Elf64_Sym *best = NULL;
    for (size_t i = 0; i < e->nsyms; i++) {
        const Elf64_Sym *s = &e->syms[i];
        if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF ||
            s->st_value > key || s->st_name >= e->strsz)
            continue;
        if (key - s->st_value < s->st_size) {
            best = s;
            break;
        }
    }
    if (!best)
        return NULL;
    *start = best->st_value;
    const char *name = e->strs + best->st_name;
    return memchr(name, 0, e->strsz - best->st_name) && name[0] ? name : NULL;
}

/* symbolize= option: 2 names and file:line, 1 names, 0 module+offset.  Set
 * once at start-up (before any report), read at report time. */
static int tg__sym_level = 2;

void tg_report_set_symbolize(int level)
{
    tg__sym_level = level;
}

char *tg_native_symbolize(void *addr, char *buf, size_t len)
{
    if (!buf || len == 0)
        return buf;
    uintptr_t pc = (uintptr_t)addr;
    snprintf(buf, len, "0x%lx", (unsigned long)pc);
    if (pc == 0)
        return buf;

    /* Look up pc-1: a return address can point past the end of a function
     * that ends in a call to a noreturn function.  Offsets printed are those
     * of the return address itself, as gdb and backtrace_symbols show them. */
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1((void *)(pc - 1), &info, (void **)&lm, RTLD_DL_LINKMAP) || !info.dli_fbase)
        return buf;

    /* The main program's link_map has an empty name and dladdr reports
     * argv[0] for it, which may be anything: use /proc/self/exe instead. */
    char exe[512];
    const char *path = info.dli_fname ? info.dli_fname : "";
    const char *mod;
    if ((lm && lm->l_name[0] == '\0') || !path[0]) {
        path = "/proc/self/exe";
        ssize_t n = readlink(path, exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        mod = n > 0 ? exe : "exe";
    } else {
        mod = path;
    }
    if (strrchr(mod, '/'))
        mod = strrchr(mod, '/') + 1;
    uintptr_t modoff = pc - (uintptr_t)info.dli_fbase;

    const char *name = NULL;
    uintptr_t symoff = 0;
    pthread_mutex_lock(&tg__sym_lock);
    if (tg__sym_level < 1) {
        /* module+offset only: nothing read, nothing cached */
    } else if (info.dli_sname && info.dli_saddr) {
        name = info.dli_sname;
        symoff = pc - (uintptr_t)info.dli_saddr;
    } else if (lm) {
        struct elf_syms *e = elf_get_locked(path);
        uint64_t start;
        if (e->ok && (name = elf_lookup(e, pc - 1 - lm->l_addr, &start)))
            symoff = pc - (lm->l_addr + start);
    }

    if (name)
        snprintf(buf, len, "%s+0x%lx (%s+0x%lx)", name, (unsigned long)symoff, mod,
                 (unsigned long)modoff);
    else
        snprintf(buf, len, "?? (%s+0x%lx)", mod, (unsigned long)modoff);
    pthread_mutex_unlock(&tg__sym_lock);  /* name may point into the cache */
    return buf;
}

/* name (a field of len bytes) demangled in place, the name as it was into
 * mangled (as long): where it is a C++ name and the process can demangle
 * (reports/demangle.h); both left as they are otherwise (mangled "" from
 * capture, or the name kept by an earlier call). */
static void demangle_field(char *name, char *mangled, size_t len)
{
    char out[512];
    if (!tg_demangle(name, len, out, sizeof out))
        return;
    memcpy(mangled, name, len);
    mangled[len - 1] = '\0';
    snprintf(name, len, "%s", out);
}

/* The names of v's CUDA call and native frames demangled (demangle_field);
 * the mangled function name of a frame kept apart. */
static void demangle_view(struct tg_thread_view *v)
{
    demangle_field(v->cuda_kernel, v->cuda_kernel_mangled, sizeof v->cuda_kernel);
    for (int i = 0; i < v->nsym; i++) {
        char out[TG_SYM_LEN];
        const char *s = v->native_sym[i];
        v->native_mangled[i][0] = '\0';
        if (!tg_demangle_frame(s, sizeof v->native_sym[i], out, sizeof out))
            continue;
        size_t n = strcspn(s, "+ "); /* the name, before "+0xOFF (module+0xOFF)" */
        if (n >= sizeof v->native_mangled[i])
            n = sizeof v->native_mangled[i] - 1;
        memcpy(v->native_mangled[i], s, n);
        v->native_mangled[i][n] = '\0';
        memcpy(v->native_sym[i], out, sizeof out);
    }
}

static void symbolize_view(struct tg_thread_view *v)
{
    const char *where;
    int n;
    void *const *frames = tg__view_native(v, &n, &where);
    for (int i = 0; i < n; i++) {
        tg_native_symbolize(frames[i], v->native_sym[i], TG_SYM_LEN);
        /* file:line where debug info exists (libdw on demand, else "") */
        if (tg__sym_level >= 2)
            tg_dwarf_line(frames[i], v->native_file[i], TG_SRC_LEN, &v->native_line[i]);
    }
    v->nsym = n;
}

void tg_report_symbolize(struct tg_report *r)
{
    symbolize_view(&r->entering);
    if (r->kind == TG_REPORT_RACE)
        symbolize_view(&r->inside);
    demangle_view(&r->entering);
    demangle_view(&r->inside);
    if (r->kind == TG_REPORT_INTERFERENCE) {
        struct tg_itf_report *f = &r->itf;
        demangle_field(f->cuda_kernel, f->cuda_kernel_mangled, sizeof f->cuda_kernel);
        for (int i = 0; i < f->nfrom && i < TG_ITF_REPORT_FROM; i++)
            demangle_field(f->from[i].kernel, f->from[i].kernel_mangled, sizeof f->from[i].kernel);
        for (int i = 0; i < f->ngpu && i < TG_ITF_REPORT_FROM; i++)
            demangle_field(f->gpu_by[i].kernel, f->gpu_by[i].kernel_mangled, sizeof f->gpu_by[i].kernel);
    }
}
