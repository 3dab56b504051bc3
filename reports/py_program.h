/* Which Python source files are the program's own, for the call sites a
 * report names and the frames it folds (reports/stack_fold.h).
 *
 * The program's own code is the folder of the main script (of `python
 * prog.py`; the working folder for `-m`, `-c` and the interactive prompt)
 * and the folders below it, except what belongs to an installed
 * distribution: a package or module that a distribution's RECORD lists in
 * a folder on sys.path below the program's folder (`pip install --target`),
 * and the source folders an editable install (direct_url.json
 * "dir_info": {"editable": true}) maps: the paths its .pth files put on
 * sys.path and its project folder (direct_url.json's "url", and its src/),
 * taken with the distribution's top-level names (top_level.txt, else its
 * own name), and the MAPPING of the finder module those .pth files import
 * (setuptools).  A file outside the program's folder (a source folder on
 * PYTHONPATH elsewhere, site-packages, the standard library) is never the
 * program's.
 *
 * The facts (the program's folder, the distributions' folders) are read
 * once per process, at the first report, with C calls and file reads only:
 * no Python code runs, nothing is imported, the GIL is never released (a
 * capture of another thread's stack may be under way).  Each file name is
 * then decided once and its verdict kept by the frame classing
 * (tg_stack_set_file_program); nothing here runs on a guarded call's path. */
#ifndef TG_PY_PROGRAM_H
#define TG_PY_PROGRAM_H

/* Decide, once per name, whether the source file `full` (a code object's
 * co_filename) is the program's, and record the verdict under `stored` (the
 * name as a report frame keeps it, possibly its tail).  Only names the
 * frame classing would take for the program's are looked at.  Attached, under
 * the report lock (reports/emit.h),
 * report time; allocates nothing; leaves no Python error set. */
/* In a fork child: the facts' lock free again, facts being read by
 * another thread at the fork read anew.  The forking thread only. */
void tg_py_program_atfork_child(void);
void tg_py_program_note(const char *full, const char *stored);

#endif
