/* Finding libcupti for cupti=1 (cuda/cupti_backend.h says where it looks,
 * docs/cupti.md why): cupti_path, else a copy already in the process, else
 * beside the loaded NVIDIA pip libraries, else $CUDA_HOME and
 * /usr/local/cuda.  Runs once, at the backend's start (any thread; the
 * backend's once keeps it to one caller).  Not signal-safe: dlopen,
 * dl_iterate_phdr, stat; allocates nothing of its own. */
#include "cuda/cupti_internal.h"
#include "core/options.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where the copy found came from (the backend's lines name it). */
static char *found_path;
static size_t found_size;

static void *try_open(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h)
        snprintf(found_path, found_size, "%s", path);
    return h;
}

struct nv_search {
    void *h;
};

/* A loaded library under .../nvidia/<pkg>/lib/: look beside it, and in
 * nvidia/cuda_cupti/lib (CUDA 12 wheels) or nvidia/cu13/lib (CUDA 13). */
static int phdr_cb(struct dl_phdr_info *info, size_t sz, void *arg)
{
    (void)sz;
    struct nv_search *s = arg;
    const char *p = info->dlpi_name;
    const char *nv = p ? strstr(p, "/nvidia/") : NULL;
    if (!nv || s->h)
        return s->h != NULL;
    const char *slash = strrchr(p, '/');
    char buf[512];
    static const char *const rel[] = {"%.*s/libcupti.so.13", "%.*s/libcupti.so.12", "%.*s/libcupti.so"};
    for (int i = 0; i < 3 && !s->h; i++) {
        snprintf(buf, sizeof buf, rel[i], (int)(slash - p), p);
        if (access(buf, R_OK) == 0)
            s->h = try_open(buf);
    }
    static const char *const sib[] = {"%.*s/nvidia/cuda_cupti/lib/libcupti.so.12", "%.*s/nvidia/cu13/lib/libcupti.so.13"};
    for (int i = 0; i < 2 && !s->h; i++) {
        snprintf(buf, sizeof buf, sib[i], (int)(nv - p), p);
        if (access(buf, R_OK) == 0)
            s->h = try_open(buf);
    }
    return s->h != NULL;
}

/* What a cupti_path that names no regular file is ("a FIFO", ...), else
 * NULL.  Checked before dlopen: its open() of a FIFO blocks until a writer
 * comes, maybe forever.  A name without '/' is a soname, searched by
 * dlopen in the library directories. */
const char *tg__cupti_not_regular(const char *path)
{
    struct stat sb;
    if (!strchr(path, '/') || stat(path, &sb) != 0 || S_ISREG(sb.st_mode))
        return NULL; /* a missing file: dlopen says so */
    return S_ISFIFO(sb.st_mode) ? "a FIFO" : S_ISDIR(sb.st_mode) ? "a directory"
           : S_ISCHR(sb.st_mode) ? "a character device" : S_ISBLK(sb.st_mode) ? "a block device"
           : S_ISSOCK(sb.st_mode) ? "a socket" : "not a regular file";
}

void *tg__cupti_find(char *libpath, size_t size)
{
    found_path = libpath;
    found_size = size;
    if (tg_opts.cupti_path[0])
        return tg__cupti_not_regular(tg_opts.cupti_path) ? NULL : try_open(tg_opts.cupti_path);
    /* a copy already in the process (torch's Kineto links one): use it, two
     * copies of CUPTI in one process would fight over the driver */
    static const char *const sonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
    for (int i = 0; i < 3; i++) {
        void *h = dlopen(sonames[i], RTLD_NOW | RTLD_NOLOAD);
        if (h) {
            snprintf(libpath, size, "%s (already loaded)", sonames[i]);
            return h;
        }
    }
    struct nv_search s = {NULL};
    dl_iterate_phdr(phdr_cb, &s);
    if (s.h)
        return s.h;
    char buf[512];
    const char *home = getenv("CUDA_HOME");
    if (home && home[0]) {
        snprintf(buf, sizeof buf, "%s/extras/CUPTI/lib64/libcupti.so", home);
        if (access(buf, R_OK) == 0 && (s.h = try_open(buf)))
            return s.h;
        snprintf(buf, sizeof buf, "%s/lib64/libcupti.so", home);
        if (access(buf, R_OK) == 0 && (s.h = try_open(buf)))
            return s.h;
    }
    static const char *const fixed[] = {"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
                                        "/usr/local/cuda/lib64/libcupti.so", "libcupti.so"};
    for (int i = 0; i < 3; i++)
        if ((fixed[i][0] != '/' || access(fixed[i], R_OK) == 0) && (s.h = try_open(fixed[i])))
            return s.h;
    return NULL;
}
