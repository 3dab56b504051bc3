/* tunerguard report: what was read, shared by the reading (cli_report.c) and
 * the printing (cli_report_print.c) of the summary. */
#ifndef TG_CLI_REPORT_H
#define TG_CLI_REPORT_H

#include <stddef.h>

#include "cli.h"
#include "cli_walk.h"

struct race {
    char *kernel;   /* the kernel's name; unnamed: the tuner's method (or class) */
    int unnamed;    /* the tuner has no kernel name: kernel names the tuner */
    int high, serialized;
    long pid, rank; /* rank -1: none */
    long long ts;   /* -1: unknown (text fallback) */
    long long wall; /* wall-clock ns (the record's wall_ns), -1: unknown */
    long long seq;  /* -1: unknown (text fallback) */
    char *instance; /* tuner.instance ("0x..."), NULL: unknown */
    char *file;
    char *where;
};

/* A thread inside a tuner when a process died, in a session that raced. */
struct occupant {
    long tid;
    long long race_seq;
    char *instance;
};

/* A process that died of a fatal signal (one "fatal" record or text block). */
struct fatal {
    long pid, rank;      /* rank -1: none */
    long long seq;       /* -1: unknown (text fallback) */
    char *signal;        /* "SIGSEGV" */
    long tid;            /* the thread that received it; -1: unknown */
    char *fault_addr;    /* NULL: none (a sent signal) */
    int in_tuner;        /* 1 inside a tuner, 0 inside none, -1 unknown (text fallback) */
    char *instance;      /* the innermost tuner's instance, NULL: none/unknown */
    char *kernel;        /* tuner.kernel as written, NULL: null */
    long long race_seq;  /* -1: null */
    long reports_before; /* -1: unknown */
    char *file;
    struct occupant *occ; /* other sessions in tuners that raced (race_seq set) */
    size_t nocc;
};

struct strcount {
    char *s;
    size_t len; /* of s */
    int n;
};


struct state {
    struct race *races;
    size_t nraces;
    struct strcount *summary;
    size_t nsummary;
    struct fatal *fatals;
    size_t nfatals;
    long (*procs)[2]; /* pid, rank; in order of first appearance */
    size_t nprocs, capprocs;
    struct cli_pairset procset; /* the same pairs, for lookup */
    int replaced, other, bad_lines;
    int deadlocks;      /* "deadlock" records */
    int wait_timeouts, waits_proceeded; /* "wait_timeout" records; of them, the waits that ended
                                           with the thread proceeding unserialized */
    size_t failing;     /* records that fail the run (tg_report_fails; fatal records apart) */
    struct cli_pairset records; /* (process, record) of every record counted */
    size_t dup_records; /* records skipped as copies of ones counted (a copied file) */
    int copy_file;      /* the .jsonl just read held only such copies */
    size_t jsonl_records; /* records the .jsonl just read held (0: its .txt is the fallback) */
    int said_malformed, said_unknown_kind; /* the first of each named on stderr */
    size_t nreports;    /* report files read (a .txt read with its .jsonl is not counted) */
    size_t problems;    /* files and folders not read in full, each named on stderr */
    struct cli_pairset seen; /* (dev, inode) of every file and folder read */
    int want_traces;
    struct cli_trace trace;
    size_t ntraces;
    char **explicit_files; /* file PATHs given on the command line */
    size_t nexplicit;
};

/* cli_report_state.c.  P grown to hold NEED items of SIZE (*CAP updated);
 * out of memory: one line, exit 1. */
void *cli_grow(void *p, size_t *cap, size_t need, size_t size);
/* Process (PID, RANK) seen: listed once, in order of first appearance. */
void cli_note_proc(struct state *st, long pid, long rank);
void cli_add_race(struct state *st, struct race r);
void cli_add_fatal(struct state *st, struct fatal f);
/* A copy of S, NULL for NULL. */
char *cli_dup_or_null(const char *s);
/* A SUMMARY line of a .txt: counted with its equals. */
void cli_add_summary(struct state *st, const char *line, size_t len);
void cli_free_state(struct state *st);
/* 1 when the record (PID, RANK, SEQ, TS_NS) was counted before: the same
 * process (pid, rank) and the same record of it (its seq, its monotonic
 * time); else 0, and it is noted.  SEQ or TS_NS < 0: never a copy. */
int cli_record_seen(struct state *st, long long pid, long long rank, long long seq, long long ts_ns);

/* One line on stderr naming PATH and what is wrong; counted as not read
 * in full. */
void cli_report_problem(struct state *st, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The records of a .jsonl file read whole into TEXT (LEN bytes), counted
 * into st (cli_report_jsonl.c).  Returns the number of "fatal" records, or
 * -1 when the file was refused (a newer schema).  Lines that are not
 * records are counted and the file named once, saying how many and whether
 * the last one was cut short. */
int cli_read_jsonl(struct state *st, const char *path, const char *text, size_t len);

/* Print the summary on stdout (text, or one JSON document). */
void cli_report_print(const struct state *st, int as_json);
/* Sort the fatal records for printing: by rank (none last), pid, seq. */
void cli_report_sort(struct state *st);

#endif
