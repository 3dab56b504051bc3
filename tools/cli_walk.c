/* The folder walk and the pair set of tunerguard report (see cli_walk.h). */
#include "cli_walk.h"

#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- pair set: open addressing, linear probing, kept at most half full -- */

static size_t pair_hash(uint64_t a, uint64_t b, size_t cap)
{
    uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull + (a << 6) + (a >> 2));
    h ^= h >> 31;
    return (size_t)(h & (cap - 1));
}

static size_t pair_find(const struct cli_pairset *s, uint64_t a, uint64_t b)
{
    size_t i = pair_hash(a, b, s->cap);
    while (s->used[i] && !(s->slot[i][0] == a && s->slot[i][1] == b))
        i = (i + 1) & (s->cap - 1);
    return i;
}

int cli_pairset_has(const struct cli_pairset *s, uint64_t a, uint64_t b)
{
    return s->cap && s->used[pair_find(s, a, b)];
}

int cli_pairset_add(struct cli_pairset *s, uint64_t a, uint64_t b)
{
    if (cli_pairset_has(s, a, b))
        return 0;
    if (2 * (s->n + 1) > s->cap) {
        struct cli_pairset g = {.cap = s->cap ? 2 * s->cap : 64};
        g.slot = malloc(g.cap * sizeof *g.slot);
        g.used = calloc(g.cap, 1);
        if (!g.slot || !g.used) {
            fputs("tunerguard: out of memory\n", stderr);
            exit(1);
        }
        for (size_t i = 0; i < s->cap; i++)
            if (s->used[i]) {
                size_t j = pair_find(&g, s->slot[i][0], s->slot[i][1]);
                g.used[j] = 1;
                g.slot[j][0] = s->slot[i][0];
                g.slot[j][1] = s->slot[i][1];
            }
        g.n = s->n;
        cli_pairset_free(s);
        *s = g;
    }
    size_t i = pair_find(s, a, b);
    s->used[i] = 1;
    s->slot[i][0] = a;
    s->slot[i][1] = b;
    s->n++;
    return 1;
}

void cli_pairset_free(struct cli_pairset *s)
{
    free(s->slot);
    free(s->used);
    memset(s, 0, sizeof *s);
}

/* ---- the walk ---------------------------------------------------------- */

struct frame {
    char **names;
    size_t n, i;
    dev_t dev;
    ino_t ino;
    size_t pathlen; /* the folder's path is path.s[0, pathlen) */
};

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(struct frame *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->names[i]);
    free(f->names);
    f->names = NULL;
    f->n = f->i = 0;
}

/* The names in the folder FD (sorted), in *F.  Returns 0, or -1 when it
 * could not be listed in full (named; what was listed is kept). */
static int list(int fd, const char *path, struct frame *f)
{
    int d2 = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
    if (!d) {
        cli_errf("%s: cannot read the folder: %s; skipped", path, strerror(errno));
        if (d2 >= 0)
            close(d2);
        return -1;
    }
    size_t cap = 0;
    struct dirent *e;
    int rc = 0;
    for (;;) {
        errno = 0;
        if (!(e = readdir(d))) {
            if (errno) {
                cli_errf("%s: cannot read the folder in full: %s", path, strerror(errno));
                rc = -1;
            }
            break;
        }
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (f->n == cap) {
            cap = cap ? 2 * cap : 32;
            f->names = realloc(f->names, cap * sizeof *f->names);
            if (!f->names) {
                fputs("tunerguard: out of memory\n", stderr);
                exit(1);
            }
        }
        f->names[f->n++] = strdup(e->d_name);
    }
    closedir(d);
    if (f->n)
        qsort(f->names, f->n, sizeof *f->names, cmp_name);
    return rc;
}

static void push(struct frame **st, size_t *n, size_t *cap, struct frame f)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        *st = realloc(*st, *cap * sizeof **st);
        if (!*st) {
            fputs("tunerguard: out of memory\n", stderr);
            exit(1);
        }
    }
    (*st)[(*n)++] = f;
}

size_t cli_walk(const char *top, struct cli_pairset *seen, cli_walk_fn fn, void *ctx)
{
    size_t problems = 0;
    int fd = open(top, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        cli_errf("%s: cannot open the folder: %s; skipped", top, strerror(errno));
        if (fd >= 0)
            close(fd);
        return 1;
    }
    if (!cli_pairset_add(seen, (uint64_t)st.st_dev, (uint64_t)st.st_ino)) {
        close(fd);
        return 0; /* given twice, or inside a folder given before */
    }
    struct cli_buf path = {0};
    size_t tl = strlen(top);
    while (tl > 1 && top[tl - 1] == '/')
        tl--;
    cli_buf_add(&path, top, tl);
    struct frame *frames = NULL;
    size_t nframes = 0, cap = 0;
    struct frame f0 = {.dev = st.st_dev, .ino = st.st_ino, .pathlen = path.len};
    problems += list(fd, path.s, &f0) < 0;
    push(&frames, &nframes, &cap, f0);
    while (nframes) {
        struct frame *f = &frames[nframes - 1];
        path.len = f->pathlen;
        path.s[path.len] = '\0';
        if (f->i == f->n) {
            free_names(f);
            if (--nframes == 0)
                break;
            /* Back up through "..": no descriptor per level is kept, so any
             * depth works; the folder reached must be the one we left. */
            struct frame *up = &frames[nframes - 1];
            int ufd = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
            close(fd);
            fd = ufd;
            struct stat us;
            path.len = up->pathlen;
            path.s[path.len] = '\0';
            if (fd < 0 || fstat(fd, &us) < 0 || us.st_dev != up->dev || us.st_ino != up->ino) {
                cli_errf("%s: moved while being read; the rest of it is skipped", path.s);
                problems++;
                while (nframes)
                    free_names(&frames[--nframes]);
                break;
            }
            continue;
        }
        const char *name = f->names[f->i++];
        if (path.len && path.s[path.len - 1] != '/')
            cli_buf_puts(&path, "/");
        cli_buf_puts(&path, name);
        struct stat es;
        if (fstatat(fd, name, &es, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno != ENOENT) { /* ENOENT: removed since it was listed */
                cli_errf("%s: cannot examine: %s; skipped", path.s, strerror(errno));
                problems++;
            }
            continue;
        }
        if (!S_ISDIR(es.st_mode)) {
            fn(ctx, fd, name, path.s, &es);
            continue;
        }
        if (cli_pairset_has(seen, (uint64_t)es.st_dev, (uint64_t)es.st_ino))
            continue; /* a folder already walked (bind mount, hard-linked path) */
        int cfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat cs;
        if (cfd < 0) {
            cli_errf("%s: cannot open the folder: %s; skipped", path.s, strerror(errno));
            problems++;
            continue;
        }
        if (fstat(cfd, &cs) < 0 || cs.st_dev != es.st_dev || cs.st_ino != es.st_ino) {
            cli_errf("%s: replaced while being read; skipped", path.s);
            problems++;
            close(cfd);
            continue;
        }
        cli_pairset_add(seen, (uint64_t)cs.st_dev, (uint64_t)cs.st_ino);
        struct frame c = {.dev = cs.st_dev, .ino = cs.st_ino, .pathlen = path.len};
        problems += list(cfd, path.s, &c) < 0;
        push(&frames, &nframes, &cap, c);
        close(fd);
        fd = cfd;
    }
    if (fd >= 0)
        close(fd);
    free(frames);
    cli_buf_free(&path);
    return problems;
}
