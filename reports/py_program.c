/* The program's own files.  See py_program.h. */
#include "reports/py_program.h"
#include "core/process.h"
#include "core/py_api.h"
#include "core/py_attr.h"
#include "core/py_lock.h"
#include "core/py_ref.h"
#include "reports/stack_fold.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TG_PP_PATH 512  /* a longer folder is left out of the facts */
#define TG_PP_PROG 2    /* the program's folder as named and resolved */
#define TG_PP_LIBS 64   /* distributions' folders below the program's */
#define TG_PP_NAMES 16  /* an editable distribution's top-level names */
#define TG_PP_FILE 8192 /* RECORD, .pth, direct_url.json: read up to this */

/* Read once, at the first verdict asked, by one thread under facts_lock
 * (core/py_lock.h: waits detached; Python code runs under it), and
 * published by the release store of state = 1; read without a lock after
 * an acquire load of 1 (captures reach here from more than one thread at
 * once).  state -1 while being read: a verdict asked meanwhile (that
 * thread's own, re-entered, or another's) is not given, and asked again at
 * a later capture. */
static struct tg_py_lock facts_lock = TG_PY_LOCK_INIT;
static struct {
    int state; /* 0 not read, 1 read, -1 unknown: no verdicts */
    int nprog, nlib;
    char prog[TG_PP_PROG][TG_PP_PATH];
    char lib[TG_PP_LIBS][TG_PP_PATH];
} facts;

void tg_py_program_atfork_child(void)
{
    /* Another thread of the parent may have been reading the facts at the
     * fork: the lock is free again in the child and the facts read anew. */
    tg_py_lock_atfork_child(&facts_lock);
    if (__atomic_load_n(&facts.state, __ATOMIC_RELAXED) < 0)
        __atomic_store_n(&facts.state, 0, __ATOMIC_RELAXED);
}
static char filebuf[TG_PP_FILE]; /* under the report lock: one reader at a time */

/* ---- paths ----------------------------------------------------------------- */

/* Collapse "//", "/./", "/x/../" and a trailing "/" of an absolute path. */
static void normalize(char *p)
{
    char *out = p;
    const char *s = p;
    while (*s) {
        while (*s == '/')
            s++;
        const char *e = s;
        while (*e && *e != '/')
            e++;
        size_t n = (size_t)(e - s);
        if (n == 0 || (n == 1 && s[0] == '.')) {
        } else if (n == 2 && s[0] == '.' && s[1] == '.') {
            while (out > p && *--out != '/')
                ;
        } else {
            *out++ = '/';
            memmove(out, s, n);
            out += n;
        }
        s = e;
    }
    if (out == p)
        *out++ = '/';
    *out = '\0';
}

/* `path` made absolute (against the working folder) and normalized into
 * buf; 0 when it does not fit. */
static int absolute(const char *path, char *buf, size_t len)
{
    size_t used = 0;
    if (path[0] != '/') {
        if (!getcwd(buf, len))
            return 0;
        used = strlen(buf);
        if (used + 1 >= len)
            return 0;
        buf[used++] = '/';
    }
    size_t n = strlen(path);
    if (used + n >= len)
        return 0;
    memcpy(buf + used, path, n + 1);
    normalize(buf);
    return 1;
}

/* f is dir or lies below it. */
static int under(const char *f, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return f[0] == '/';
    return strncmp(f, dir, n) == 0 && (f[n] == '/' || f[n] == '\0');
}

static int under_program(const char *f)
{
    for (int i = 0; i < facts.nprog; i++)
        if (under(f, facts.prog[i]))
            return 1;
    return 0;
}

static void add_prog(const char *dir)
{
    char real[PATH_MAX];
    if (facts.nprog < TG_PP_PROG && strlen(dir) < TG_PP_PATH)
        strcpy(facts.prog[facts.nprog++], dir);
    if (realpath(dir, real) && strcmp(real, dir) != 0 && facts.nprog < TG_PP_PROG && strlen(real) < TG_PP_PATH)
        strcpy(facts.prog[facts.nprog++], real);
}

/* A distribution's folder or file: kept when it lies strictly below the
 * program's folder (elsewhere a file is not the program's anyway), never
 * when it is that folder or above it (a flat project installed editable
 * around the script: only its named packages count). */
static void add_lib_one(const char *path)
{
    if (facts.nlib >= TG_PP_LIBS || strlen(path) >= TG_PP_PATH)
        return;
    for (int i = 0; i < facts.nprog; i++)
        if (under(facts.prog[i], path))
            return;
    if (!under_program(path))
        return;
    for (int i = 0; i < facts.nlib; i++)
        if (strcmp(facts.lib[i], path) == 0)
            return;
    strcpy(facts.lib[facts.nlib++], path);
}

static void add_lib(const char *path)
{
    char buf[TG_PP_PATH], real[PATH_MAX];
    if (!absolute(path, buf, sizeof buf))
        return;
    add_lib_one(buf);
    if (realpath(buf, real) && strcmp(real, buf) != 0)
        add_lib_one(real);
}

/* dir + "/" + name (name up to nlen bytes) + suffix into buf; 0 if too long. */
static int join(char *buf, size_t len, const char *dir, const char *name, size_t nlen, const char *suffix)
{
    int n = snprintf(buf, len, "%s/%.*s%s", dir, (int)nlen, name, suffix);
    return n > 0 && (size_t)n < len;
}

/* ---- files ----------------------------------------------------------------- */

/* dir/name read whole (up to TG_PP_FILE - 1 bytes) into filebuf; its
 * length, or -1. */
static long read_small(const char *dir, const char *name)
{
    char path[TG_PP_PATH * 2];
    if (!join(path, sizeof path, dir, name, strlen(name), ""))
        return -1;
    const char *kind;
    int fd = tg_proc_open_read(path, &kind);
    if (fd < 0)
        return -1;
    long n = 0;
    for (;;) {
        ssize_t k = read(fd, filebuf + n, sizeof filebuf - 1 - (size_t)n);
        if (k <= 0)
            break;
        n += k;
    }
    close(fd);
    filebuf[n] = '\0';
    return n;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* direct_url.json (in filebuf): 1 with the folder of its "file://" url in
 * dir when it says "editable": true. */
static int editable_url(char *dir, size_t len)
{
    const char *e = strstr(filebuf, "\"editable\"");
    if (!e)
        return 0;
    e += 10;
    while (*e == ' ' || *e == ':' || *e == '\t' || *e == '\n' || *e == '\r')
        e++;
    if (strncmp(e, "true", 4) != 0)
        return 0;
    dir[0] = '\0';
    const char *u = strstr(filebuf, "\"url\"");
    if (!u)
        return 1;
    u = strchr(u + 5, '"');
    if (!u || strncmp(u + 1, "file://", 7) != 0)
        return 1;
    u += 8;
    size_t o = 0;
    for (; *u && *u != '"' && o + 1 < len; u++) {
        if (*u == '\\' && u[1])
            u++;
        if (*u == '%' && hexval(u[1]) >= 0 && hexval(u[2]) >= 0) {
            dir[o++] = (char)(hexval(u[1]) * 16 + hexval(u[2]));
            u += 2;
        } else {
            dir[o++] = *u;
        }
    }
    dir[o] = '\0';
    return 1;
}

/* ---- distributions ----------------------------------------------------------- */

struct names {
    int n;
    char s[TG_PP_NAMES][128];
};

static void add_name(struct names *nm, const char *s, size_t len)
{
    if (len == 0 || len >= sizeof nm->s[0] || nm->n >= TG_PP_NAMES)
        return;
    memcpy(nm->s[nm->n], s, len);
    nm->s[nm->n++][len] = '\0';
}

/* A module's namespace (a new reference, or NULL): read through it, a
 * missing name runs no module __getattr__. */
static PyObject *module_dict(PyObject *mod)
{
    PyObject *ns = mod ? tg_py.PyObject_GetAttrString(mod, "__dict__") : NULL;
    PyObject *type = ns ? tg_py.PyObject_Type(ns) : NULL;
    PyObject *dict_type = type ? tg_py.PyObject_Type(tg_py.PyImport_GetModuleDict()) : NULL;
    int is_dict = type && type == dict_type;
    if (type)
        tg_py.Py_DecRef(type);
    if (dict_type)
        tg_py.Py_DecRef(dict_type);
    if (ns && !is_dict) {
        tg_py.Py_DecRef(ns);
        ns = NULL;
    }
    return ns;
}

/* The values of a finder module's MAPPING (setuptools' editable finder:
 * top-level name -> its source folder or file): C look-ups only, an exact
 * dict only. */
static void add_finder_mapping(const char *module, size_t len)
{
    char name[128];
    if (len == 0 || len >= sizeof name)
        return;
    memcpy(name, module, len);
    name[len] = '\0';
    PyObject *mods = tg_py.PyImport_GetModuleDict(); /* borrowed */
    PyObject *mod = tg_py_dict_get_str(mods, name);
    PyObject *ns = module_dict(mod);
    PyObject *map = tg_py_dict_get_str(ns, "MAPPING");
    PyObject *type = map ? tg_py.PyObject_Type(map) : NULL, *dict_type = type ? tg_py.PyObject_Type(mods) : NULL;
    PyObject *it = type && type == dict_type ? tg_py.PyObject_GetIter(map) : NULL;
    for (PyObject *key; it && (key = tg_py.PyIter_Next(it));) {
        PyObject *val = tg_py_dict_get(map, key);
        const char *path = val ? tg_py.PyUnicode_AsUTF8(val) : NULL;
        if (path)
            add_lib(path);
        if (val)
            tg_py.Py_DecRef(val);
        tg_py.Py_DecRef(key);
    }
    if (it)
        tg_py.Py_DecRef(it);
    if (type)
        tg_py.Py_DecRef(type);
    if (dict_type)
        tg_py.Py_DecRef(dict_type);
    if (map)
        tg_py.Py_DecRef(map);
    if (ns)
        tg_py.Py_DecRef(ns);
    if (mod)
        tg_py.Py_DecRef(mod);
    tg_py_drop_error();
}

/* A source root an editable install puts on sys.path: the packages and
 * modules there of the distribution's top-level names. */
static void add_root(const char *root, const struct names *nm)
{
    char path[TG_PP_PATH];
    for (int i = 0; i < nm->n; i++) {
        if (join(path, sizeof path, root, nm->s[i], strlen(nm->s[i]), ""))
            add_lib(path);
        if (join(path, sizeof path, root, nm->s[i], strlen(nm->s[i]), ".py"))
            add_lib(path);
    }
}

/* The .pth files an editable distribution's RECORD lists (relative to the
 * site folder `site`): their path lines are source roots, their import
 * lines name finder modules. */
static void add_editable_pths(const char *site, const char *distinfo, const struct names *nm)
{
    char record[TG_PP_FILE], line[TG_PP_PATH * 2];
    if (read_small(distinfo, "RECORD") < 0)
        return;
    memcpy(record, filebuf, sizeof record);
    for (char *l = record, *next; l && *l; l = next) {
        next = strchr(l, '\n');
        if (next)
            *next++ = '\0';
        char *comma = strchr(l, ',');
        if (comma)
            *comma = '\0';
        size_t n = strlen(l);
        if (n < 5 || strcmp(l + n - 4, ".pth") != 0 || strchr(l, '/'))
            continue;
        if (read_small(site, l) < 0)
            continue;
        for (char *p = filebuf, *pn; p && *p; p = pn) {
            pn = strchr(p, '\n');
            size_t pl = pn ? (size_t)(pn - p) : strlen(p);
            pn = pn ? pn + 1 : NULL;
            while (pl && (p[pl - 1] == '\r' || p[pl - 1] == ' '))
                pl--;
            if (pl == 0 || p[0] == '#' || pl >= sizeof line)
                continue;
            if (pl > 7 && strncmp(p, "import", 6) == 0 && (p[6] == ' ' || p[6] == '\t')) {
                const char *m = p + 7;
                while (*m == ' ' || *m == '\t')
                    m++;
                size_t ml = strcspn(m, " \t;,\r\n");
                add_finder_mapping(m, ml);
                continue;
            }
            if (p[0] == '/') {
                memcpy(line, p, pl);
                line[pl] = '\0';
            } else if (!join(line, sizeof line, site, p, pl, "")) {
                continue;
            }
            add_root(line, nm);
        }
    }
}

/* The top-level entries of a distribution's RECORD (packages and modules
 * installed into `site`, a folder below the program's). */
static void add_record_tops(const char *site)
{
    char path[TG_PP_PATH];
    for (char *l = filebuf, *next; l && *l; l = next) {
        next = strchr(l, '\n');
        if (next)
            *next++ = '\0';
        size_t n = strcspn(l, "/,");
        int folder = l[n] == '/';
        if (n == 0 || (n > 10 && strncmp(l + n - 10, ".dist-info", 10) == 0))
            continue;
        if (folder && ((n == 2 && strncmp(l, "..", 2) == 0) || (n == 11 && strncmp(l, "__pycache__", 11) == 0)))
            continue; /* outside the folder (scripts), or compiled files */
        if (!folder && !(n > 3 && strncmp(l + n - 3, ".py", 3) == 0))
            continue; /* a file at the top that is no module */
        if (join(path, sizeof path, site, l, n, ""))
            add_lib(path);
    }
}

static void scan_distribution(const char *site, const char *entry)
{
    char distinfo[TG_PP_PATH], url[TG_PP_PATH];
    size_t elen = strlen(entry);
    if (!join(distinfo, sizeof distinfo, site, entry, elen, ""))
        return;
    if (read_small(distinfo, "direct_url.json") >= 0 && editable_url(url, sizeof url)) {
        struct names nm = {0};
        if (read_small(distinfo, "top_level.txt") >= 0)
            for (char *l = filebuf, *next; l && *l; l = next) {
                next = strchr(l, '\n');
                add_name(&nm, l, strcspn(l, "\r\n"));
                if (next)
                    next++;
            }
        if (nm.n == 0) /* its own name: "kern_lib-0.1.dist-info" -> "kern_lib" */
            add_name(&nm, entry, strcspn(entry, "-"));
        add_editable_pths(site, distinfo, &nm);
        if (url[0]) { /* the project's folder: its packages at the top or under src/ */
            char src[TG_PP_PATH];
            add_root(url, &nm);
            if (join(src, sizeof src, url, "src", 3, ""))
                add_root(src, &nm);
        }
        return;
    }
    /* a site-packages below the program's folder (a venv in the project)
     * is a library's by its path already: its RECORDs are not read */
    if (under_program(site) && !strstr(site, "/site-packages") && !strstr(site, "/dist-packages") &&
        read_small(distinfo, "RECORD") >= 0)
        add_record_tops(site);
}

/* Every distribution in the folders on sys.path. */
static void scan_sys_path(void)
{
    PyObject *mods = tg_py.PyImport_GetModuleDict(); /* borrowed */
    PyObject *sys = tg_py_dict_get_str(mods, "sys");
    PyObject *path = sys ? tg_py.PyObject_GetAttrString(sys, "path") : NULL;
    if (sys)
        tg_py.Py_DecRef(sys);
    Py_ssize_t n = path ? tg_py.PyList_Size(path) : 0;
    for (Py_ssize_t i = 0; i < n && i < 256; i++) {
        PyObject *item = tg_py_list_get(path, i); /* the program may change sys.path meanwhile */
        const char *s = item ? tg_py.PyUnicode_AsUTF8(item) : NULL;
        char site[TG_PP_PATH];
        int ok = s && absolute(s[0] ? s : ".", site, sizeof site);
        if (item)
            tg_py.Py_DecRef(item);
        if (!ok)
            continue;
        DIR *d = opendir(site);
        for (struct dirent *de; d && (de = readdir(d));) {
            size_t l = strlen(de->d_name);
            if (l > 10 && strcmp(de->d_name + l - 10, ".dist-info") == 0)
                scan_distribution(site, de->d_name);
        }
        if (d)
            closedir(d);
    }
    if (path)
        tg_py.Py_DecRef(path);
    tg_py_drop_error();
}

/* The program's folder: the main script's (__spec__ None; "__main__" for
 * a folder or a zip file run as a script: its __main__.py), else (-m, -c,
 * the prompt) the working folder. */
static void find_program(void)
{
    PyObject *mods = tg_py.PyImport_GetModuleDict(); /* borrowed */
    PyObject *main = tg_py_dict_get_str(mods, "__main__");
    PyObject *ns = module_dict(main);
    PyObject *spec = tg_py_dict_get_str(ns, "__spec__");
    PyObject *path = tg_py_dict_get_str(ns, "__file__");
    const char *f = path ? tg_py.PyUnicode_AsUTF8(path) : NULL;
    char file[TG_PP_PATH], spec_name[16], dir[TG_PP_PATH];
    file[0] = '\0';
    if (f && strlen(f) < sizeof file)
        strcpy(file, f);
    tg_py_attr_str(spec && spec != tg_py.none ? spec : NULL, "name", spec_name, sizeof spec_name);
    PyObject *refs[] = {path, spec, ns, main};
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++)
        if (refs[i])
            tg_py.Py_DecRef(refs[i]);
    tg_py_drop_error();
    int script = !spec_name[0] || strcmp(spec_name, "__main__") == 0;
    if (file[0] && script && absolute(file, dir, sizeof dir)) {
        char *slash = strrchr(dir, '/');
        if (slash == dir)
            slash[1] = '\0';
        else if (slash)
            *slash = '\0';
        add_prog(dir);
    } else if (absolute(".", dir, sizeof dir)) {
        add_prog(dir);
    }
}

/* facts_lock held. */
static void read_facts(void)
{
    __atomic_store_n(&facts.state, -1, __ATOMIC_RELAXED);
    find_program();
    if (facts.nprog == 0)
        return;
    scan_sys_path();
    __atomic_store_n(&facts.state, 1, __ATOMIC_RELEASE);
}

/* ---- verdicts ---------------------------------------------------------------- */

static int in_distribution(const char *f)
{
    for (int i = 0; i < facts.nlib; i++)
        if (under(f, facts.lib[i]))
            return 1;
    return 0;
}

void tg_py_program_note(const char *full, const char *stored)
{
    if (!full || !stored || tg_stack_file_program(stored) >= 0 || !tg_stack_maybe_program(stored))
        return;
    if (__atomic_load_n(&facts.state, __ATOMIC_ACQUIRE) == 0) {
        if (tg_py_finalizing())
            return; /* sys.modules may be gone: PyImport_GetModuleDict would end the process */
        tg_py_lock(&facts_lock);
        if (__atomic_load_n(&facts.state, __ATOMIC_RELAXED) == 0)
            read_facts();
        tg_py_unlock(&facts_lock);
    }
    if (__atomic_load_n(&facts.state, __ATOMIC_ACQUIRE) <= 0)
        return;
    char abs[PATH_MAX], real[PATH_MAX];
    int program = 0;
    if (absolute(full, abs, sizeof abs)) {
        if (!realpath(abs, real))
            strcpy(real, abs);
        program = (under_program(abs) || under_program(real)) && !in_distribution(abs) && !in_distribution(real);
    }
    tg_stack_set_file_program(stored, program);
}
