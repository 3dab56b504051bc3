/* A program that embeds CPython, as pybind11 hosts and servers with an
 * embedded interpreter do: Py_Initialize, then the program's Python code
 * through PyRun_SimpleString or PyRun_SimpleFile, never Python's own main
 * (so no cpython.run_* audit event).
 *
 *   embed_host string|file SCRIPT [ARG...]
 *
 * string: the script's text run with PyRun_SimpleString; file: the script
 * run with PyRun_SimpleFile.  The ARGs are sys.argv[1:] (sys.argv[0] is
 * SCRIPT).  Exit status: 0 when the code ran without an uncaught exception
 * (and the interpreter finalized cleanly), 1 otherwise, 2 on bad usage. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            char *more = realloc(buf, cap * 2);
            if (!more) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = more;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

/* sys.argv = [SCRIPT, ARG...], set from Python (no PySys_SetArgv: it is
 * deprecated from 3.11 on). */
static int set_argv(int argc, char **argv)
{
    PyObject *list = PyList_New(0);
    for (int i = 2; list && i < argc; i++) {
        PyObject *s = PyUnicode_DecodeFSDefault(argv[i]);
        if (!s || PyList_Append(list, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(list);
            return -1;
        }
        Py_DECREF(s);
    }
    int rc = list ? PySys_SetObject("argv", list) : -1;
    Py_XDECREF(list);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "string") != 0 && strcmp(argv[1], "file") != 0)) {
        fprintf(stderr, "usage: %s string|file SCRIPT [ARG...]\n", argv[0]);
        return 2;
    }
    char *text = NULL;
    FILE *f = NULL;
    if (strcmp(argv[1], "string") == 0)
        text = read_all(argv[2]);
    else
        f = fopen(argv[2], "r");
    if (!text && !f) {
        perror(argv[2]);
        return 2;
    }
    Py_Initialize();
    int rc = set_argv(argc, argv) < 0 ? -1 : 0;
    if (rc == 0 && text)
        rc = PyRun_SimpleString(text);
    else if (rc == 0)
        rc = PyRun_SimpleFile(f, argv[2]);
    if (f)
        fclose(f);
    free(text);
    if (Py_FinalizeEx() < 0)
        rc = -1;
    return rc == 0 ? 0 : 1;
}
