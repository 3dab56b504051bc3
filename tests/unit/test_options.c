/* The TUNERGUARD_OPTIONS parser (core/options.c): every key, the defaults,
 * each bad value and its exact one-line message, malformed input, unknown
 * keys, ':' inside targets= values, quoted values, and "a failed parse
 * leaves pure defaults". */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/options.h"

/* Every key, in table order, from the table itself: rows added to
 * options.inc are covered without editing this file. */
static const char *const all_keys[] = {
#define TG_OPTION(name, type, def, help) #name,
#include "core/options.inc"
#undef TG_OPTION
};
static const char *const all_defaults[] = {
#define TG_OPTION(name, type, def, help) def,
#include "core/options.inc"
#undef TG_OPTION
};
#define NKEYS (sizeof all_keys / sizeof all_keys[0])

static const char *valid_keys(void)
{
    static char buf[512];
    size_t used = 0;
    for (size_t i = 0; i < NKEYS; i++)
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", i ? ", " : "", all_keys[i]);
    return buf;
}

static char msgbuf[1024];
static const char *unknown_msg(const char *key)
{
    snprintf(msgbuf, sizeof msgbuf, "unknown option '%s' in TUNERGUARD_OPTIONS (valid: %s)", key, valid_keys());
    return msgbuf;
}

static struct tg_options o;
static char err[768];

static void fini(void)
{
    tg_options_free(&o);
}

static void assert_defaults(const struct tg_options *p)
{
    cr_assert_eq(p->mode, TG_MODE_DETECT);
    cr_assert_not_null(p->log_path);
    cr_assert_str_eq(p->log_path, "tunerguard");
    cr_assert_not_null(p->targets);
    cr_assert_str_eq(p->targets, "");
    cr_assert_eq(p->exitcode, -1);
    cr_assert_eq(p->halt_on_race, 0);
    cr_assert_eq(p->verbosity, 0);
    cr_assert_eq(p->help, 0);
}

static int parse(const char *text)
{
    memset(err, 0, sizeof err);
    tg_options_free(&o);
    return tg_options_parse(text, &o, err, sizeof err);
}

/* A failed parse: -1, exactly `msg` (one line, no newline), pure defaults. */
static void expect_error(const char *text, const char *msg)
{
    int rc = parse(text);
    cr_assert_eq(rc, -1, "'%s' should be refused", text);
    cr_assert_str_eq(err, msg, "input '%s'\n   got: %s\n  want: %s", text, err, msg);
    cr_assert_null(strchr(err, '\n'), "the message is one line");
    assert_defaults(&o);
}

static void expect_ok(const char *text)
{
    int rc = parse(text);
    cr_assert_eq(rc, 0, "'%s' should parse, got: %s", text, err);
}

TestSuite(options, .fini = fini);

/* ---- defaults ------------------------------------------------------------ */

Test(options, null_and_empty_give_defaults)
{
    expect_ok(NULL);
    assert_defaults(&o);
    expect_ok("");
    assert_defaults(&o);
    expect_ok("   ");
    assert_defaults(&o);
    expect_ok(":");
    assert_defaults(&o);
}

/* ---- every key, valid values --------------------------------------------- */

/* Each key accepts its own default spelled out, alone and among others. */
Test(options, every_key_accepts_its_default)
{
    for (size_t i = 0; i < NKEYS; i++) {
        char text[256];
        snprintf(text, sizeof text, "%s=%s", all_keys[i], all_defaults[i]);
        expect_ok(text);
        assert_defaults(&o);
        snprintf(text, sizeof text, "halt_on_race=1:%s=%s:mode=serialize", all_keys[i], all_defaults[i]);
        expect_ok(text);
        cr_assert_eq(o.halt_on_race, strcmp(all_keys[i], "halt_on_race") ? 1 : 0, "%s", text);
        cr_assert_eq(o.mode, TG_MODE_SERIALIZE, "%s", text);
    }
    cr_assert_geq(NKEYS, 7);
}

Test(options, mode_values)
{
    expect_ok("mode=detect");
    cr_assert_eq(o.mode, TG_MODE_DETECT);
    expect_ok("mode=serialize");
    cr_assert_eq(o.mode, TG_MODE_SERIALIZE);
    expect_ok("mode=off");
    cr_assert_eq(o.mode, TG_MODE_OFF);
    cr_assert_str_eq(tg_mode_name(TG_MODE_OFF), "off");
    cr_assert_str_eq(tg_mode_name(TG_MODE_DETECT), "detect");
    cr_assert_str_eq(tg_mode_name(TG_MODE_SERIALIZE), "serialize");
}

Test(options, on_wait_timeout_values)
{
    expect_ok(NULL);
    cr_assert_eq(o.on_wait_timeout, TG_WAIT_END_PROCEED, "the default: a wait past a blocked holder ends");
    expect_ok("on_wait_timeout=wait");
    cr_assert_eq(o.on_wait_timeout, TG_WAIT_END_WAIT);
    expect_ok("on_wait_timeout=proceed");
    cr_assert_eq(o.on_wait_timeout, TG_WAIT_END_PROCEED);
    expect_error("on_wait_timeout=abort", "bad value 'abort' for option 'on_wait_timeout' (valid: proceed, wait)");
}

Test(options, log_path_values)
{
    expect_ok("log_path=stderr");
    cr_assert_str_eq(o.log_path, "stderr");
    /* whitespace separates pairs: the rest is a pair without '=' */
    expect_error("log_path=/tmp/some dir",
                 "malformed option 'dir' in TUNERGUARD_OPTIONS (expected key=value pairs separated by ':')");
    expect_ok("log_path=/tmp/x/y.z-1");
    cr_assert_str_eq(o.log_path, "/tmp/x/y.z-1");
}

Test(options, exitcode_values)
{
    expect_ok("exitcode=-1");
    cr_assert_eq(o.exitcode, -1);
    expect_ok("exitcode=0");
    cr_assert_eq(o.exitcode, 0);
    expect_ok("exitcode=7");
    cr_assert_eq(o.exitcode, 7);
    expect_ok("exitcode=255");
    cr_assert_eq(o.exitcode, 255);
}

Test(options, bool_and_verbosity_values)
{
    expect_ok("halt_on_race=1");
    cr_assert_eq(o.halt_on_race, 1);
    expect_ok("halt_on_race=0");
    cr_assert_eq(o.halt_on_race, 0);
    expect_ok("help=1");
    cr_assert_eq(o.help, 1);
    for (int v = 0; v <= 2; v++) {
        char s[32];
        snprintf(s, sizeof s, "verbosity=%d", v);
        expect_ok(s);
        cr_assert_eq(o.verbosity, v);
    }
}

Test(options, all_keys_together_and_last_wins)
{
    expect_ok("mode=serialize:log_path=/tmp/tg:targets=m.n:K.go:exitcode=9:halt_on_race=1:verbosity=2:help=0");
    cr_assert_eq(o.mode, TG_MODE_SERIALIZE);
    cr_assert_str_eq(o.log_path, "/tmp/tg");
    cr_assert_str_eq(o.targets, "m.n:K.go");
    cr_assert_eq(o.exitcode, 9);
    cr_assert_eq(o.halt_on_race, 1);
    cr_assert_eq(o.verbosity, 2);
    cr_assert_eq(o.help, 0);

    expect_ok("mode=off:mode=serialize:log_path=a:log_path=b");
    cr_assert_eq(o.mode, TG_MODE_SERIALIZE);
    cr_assert_str_eq(o.log_path, "b");
}

Test(options, whitespace_separates_pairs)
{
    expect_ok("mode=serialize verbosity=1\texitcode=3\nhalt_on_race=1");
    cr_assert_eq(o.mode, TG_MODE_SERIALIZE);
    cr_assert_eq(o.verbosity, 1);
    cr_assert_eq(o.exitcode, 3);
    cr_assert_eq(o.halt_on_race, 1);
}

/* ---- targets: ':' inside the value --------------------------------------- */

Test(options, targets_colon_inside_value)
{
    expect_ok("targets=a.b:C.run:mode=serialize");
    cr_assert_str_eq(o.targets, "a.b:C.run");
    cr_assert_eq(o.mode, TG_MODE_SERIALIZE);

    expect_ok("mode=off:targets=a.b:C.run");
    cr_assert_str_eq(o.targets, "a.b:C.run");
    cr_assert_eq(o.mode, TG_MODE_OFF);

    expect_ok("targets=pkg.mod:Outer.Inner.run,x:Y.warmup:verbosity=2");
    cr_assert_str_eq(o.targets, "pkg.mod:Outer.Inner.run,x:Y.warmup");
    cr_assert_eq(o.verbosity, 2);

    expect_ok("targets=a_1.b2:_C3.m_4");
    cr_assert_str_eq(o.targets, "a_1.b2:_C3.m_4");
}

Test(options, targets_bad_values)
{
    static const char *const bad[] = {
        "foo",            /* no module:Class.method */
        "a:b",            /* no method */
        ":C.run",         /* no module */
        "a:.run",         /* empty class */
        "a:C.",           /* empty method */
        "a:C.run,",       /* trailing empty entry */
        "a:C.run,,b:D.x", /* empty entry */
        "a:C.r-un",       /* not an identifier */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[128], msg[256];
        snprintf(text, sizeof text, "targets=%s", bad[i]);
        snprintf(msg, sizeof msg,
                 "bad value '%s' for option 'targets' (valid: module:Class.method[,module:Class.method...])", bad[i]);
        expect_error(text, msg);
    }
    /* A second ':' that does not start a known key belongs to the value,
     * and two colons in one entry are refused. */
    expect_error("targets=a:B.c:d",
                 "bad value 'a:B.c:d' for option 'targets' (valid: module:Class.method[,module:Class.method...])");
}

/* tuning=: entries like targets=, ':' inside the value, and each names a
 * method of a class some targets= entry names. */
Test(options, tuning_names_a_targets_class)
{
    expect_ok("targets=my.mod:Tuner.run,x:Y.go:tuning=my.mod:Tuner.measure,my.mod:Tuner.prune:mode=serialize");
    cr_assert_str_eq(o.tuning, "my.mod:Tuner.measure,my.mod:Tuner.prune");
    cr_assert_eq(o.mode, TG_MODE_SERIALIZE);
    tg_options_free(&o);
    expect_ok("tuning=a:Out.In.bench:targets=a:Out.In.run");
    cr_assert_str_eq(o.tuning, "a:Out.In.bench");
    tg_options_free(&o);
    expect_ok("targets=a:B.run");
    cr_assert_str_eq(o.tuning, "");
    tg_options_free(&o);
    expect_error("targets=my.mod:Tuner.run:tuning=my.mod:Other.measure",
                 "bad value for option 'tuning': 'my.mod:Other.measure' is a method of my.mod:Other, which no "
                 "targets= entry names (a tuning step belongs to a tuner declared with targets=)");
    /* the whole module:Class, not a prefix of it */
    expect_error("targets=my.mod:Tuner.run:tuning=my.mod:Tune.measure",
                 "bad value for option 'tuning': 'my.mod:Tune.measure' is a method of my.mod:Tune, which no "
                 "targets= entry names (a tuning step belongs to a tuner declared with targets=)");
    expect_error("tuning=a:B.measure",
                 "bad value for option 'tuning': 'a:B.measure' is a method of a:B, which no targets= entry names "
                 "(a tuning step belongs to a tuner declared with targets=)");
    expect_error("targets=a:B.run:tuning=a:B",
                 "bad value 'a:B' for option 'tuning' (valid: module:Class.method[,module:Class.method...])");
    expect_error("targets=a:B.run:tuning=a:B.m,",
                 "bad value 'a:B.m,' for option 'tuning' (valid: module:Class.method[,module:Class.method...])");
    expect_error("targets=a:B.run:tuning=a:B.m:typo=1", unknown_msg("typo"));
    /* the entry point itself is no tuning step: marked, its overlaps would never be races */
    expect_error("targets=a:B.run,a:B.go:tuning=a:B.m,a:B.go",
                 "bad value for option 'tuning': 'a:B.go' is named in targets= too: the tuning step is the method "
                 "the tuner measures in, not its entry point (without tuning= every overlap of its calls is a race)");
}

/* The one reading of a targets=/tuning= list (tg_target_next, core/options.h):
 * what the option check, arming and the guard each split an entry into. */
Test(options, target_list_entries)
{
    const char *list = "pkg.mod:Outer.Inner.step,a:B.m,,:x,c:D", *p = list;
    struct tg_target_span t;
    cr_assert(tg_target_next(&p, &t));
    cr_assert_eq(t.text, list);
    cr_assert_eq(t.len, strlen("pkg.mod:Outer.Inner.step"));
    cr_assert_eq(t.colon - t.text, 7, "the module: up to the first ':'");
    cr_assert_eq(t.dot - t.text, 19, "the method: after the last '.'");
    cr_assert(tg_target_next(&p, &t));
    cr_assert_eq(t.len, 5);
    cr_assert_eq(t.dot - t.colon, 2);
    cr_assert(tg_target_next(&p, &t), "an empty entry is one");
    cr_assert_eq(t.len, 0);
    cr_assert_null(t.colon);
    cr_assert(tg_target_next(&p, &t));
    cr_assert_eq(t.colon, t.text);
    cr_assert_null(t.dot, "no '.' after the ':'");
    cr_assert(tg_target_next(&p, &t));
    cr_assert_eq(t.len, 3);
    cr_assert_not(tg_target_next(&p, &t));
    cr_assert_not(tg_target_next(&p, &t), "and stays at the end");
    p = "a:B.m,";
    cr_assert(tg_target_next(&p, &t));
    cr_assert_not(tg_target_next(&p, &t), "a trailing comma ends the list (the check refuses it)");
    p = "";
    cr_assert_not(tg_target_next(&p, &t));
    p = NULL;
    cr_assert_not(tg_target_next(&p, &t));
}

Test(options, tuning_too_many_or_too_long)
{
    static char text[8192];
    size_t used = (size_t)snprintf(text, sizeof text, "targets=a:B.run:tuning=");
    for (int i = 0; i <= TG_TARGETS_MAX; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%sa:B.m%d", i ? "," : "", i);
    char msg[160];
    snprintf(msg, sizeof msg, "bad value for option 'tuning': %d entries, more than the %d tunerguard holds",
             TG_TARGETS_MAX + 1, TG_TARGETS_MAX);
    expect_error(text, msg);
    char meth[TG_TARGET_METHOD_MAX + 2];
    memset(meth, 'm', sizeof meth - 1);
    meth[sizeof meth - 1] = '\0';
    snprintf(text, sizeof text, "targets=a:B.run:tuning=a:B.%s", meth);
    snprintf(msg, sizeof msg, "bad value for option 'tuning': in 'a:B.%s' the method name is %d bytes, more than "
             "the %d tunerguard holds", meth, TG_TARGET_METHOD_MAX + 1, TG_TARGET_METHOD_MAX);
    expect_error(text, msg);
}

/* ---- bad values: the exact message --------------------------------------- */

Test(options, mode_bad_values)
{
    expect_error("mode=fast", "bad value 'fast' for option 'mode' (valid: detect, serialize, off)");
    expect_error("mode=", "bad value '' for option 'mode' (valid: detect, serialize, off)");
    expect_error("mode=DETECT", "bad value 'DETECT' for option 'mode' (valid: detect, serialize, off)");
    expect_error("mode=detected", "bad value 'detected' for option 'mode' (valid: detect, serialize, off)");
    expect_error("mode=det", "bad value 'det' for option 'mode' (valid: detect, serialize, off)");
}

Test(options, int_bad_values)
{
    static const char *const bad[] = {"256", "-2", "abc", "", "7x", "0x7", "+", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[128], msg[256];
        snprintf(text, sizeof text, "exitcode=%s", bad[i]);
        snprintf(msg, sizeof msg, "bad value '%s' for option 'exitcode' (valid: an integer from -1 to 255)", bad[i]);
        expect_error(text, msg);
    }
    expect_error("verbosity=3", "bad value '3' for option 'verbosity' (valid: an integer from 0 to 2)");
    expect_error("verbosity=-1", "bad value '-1' for option 'verbosity' (valid: an integer from 0 to 2)");
    expect_error("verbosity=high", "bad value 'high' for option 'verbosity' (valid: an integer from 0 to 2)");
}

Test(options, bool_bad_values)
{
    expect_error("halt_on_race=2", "bad value '2' for option 'halt_on_race' (valid: 0, 1)");
    expect_error("halt_on_race=true", "bad value 'true' for option 'halt_on_race' (valid: 0, 1)");
    expect_error("halt_on_race=", "bad value '' for option 'halt_on_race' (valid: 0, 1)");
    expect_error("help=yes", "bad value 'yes' for option 'help' (valid: 0, 1)");
    expect_error("help=01", "bad value '01' for option 'help' (valid: 0, 1)");
}

Test(options, log_path_empty)
{
    expect_error("log_path=", "bad value '' for option 'log_path' (valid: a path prefix, or 'stderr')");
}

/* ---- malformed and unknown ------------------------------------------------- */

Test(options, malformed_pairs)
{
    expect_error("mode", "malformed option 'mode' in TUNERGUARD_OPTIONS (expected key=value pairs separated by ':')");
    expect_error("=x", "malformed option '=x' in TUNERGUARD_OPTIONS (expected key=value pairs separated by ':')");
    expect_error("mode=detect:verbosity",
                 "malformed option 'verbosity' in TUNERGUARD_OPTIONS (expected key=value pairs separated by ':')");
}

/* An empty pair ("::") is skipped, sanitizer style: the pair after it is
 * parsed on its own, so its bad value is what gets named. */
Test(options, double_separator)
{
    expect_error("mode=detect::verbosity=9",
                 "bad value '9' for option 'verbosity' (valid: an integer from 0 to 2)");
    expect_ok("mode=serialize::verbosity=1");
    cr_assert_eq(o.mode, TG_MODE_SERIALIZE);
    cr_assert_eq(o.verbosity, 1);
}

Test(options, unknown_keys)
{
    expect_error("bogus=1", unknown_msg("bogus"));
    expect_error("Mode=detect", unknown_msg("Mode"));
    expect_error("mode=serialize:verbose=1", unknown_msg("verbose"));
    expect_error("exitcode=3:bogus=1", unknown_msg("bogus"));
}

/* A ':' in a targets= value followed by "word=" starts a new pair ('=' is
 * never part of a targets value), so a misspelt key after targets is named
 * as the unknown key, not blamed on targets. */
Test(options, targets_then_unknown_key_names_the_key)
{
    expect_error("targets=a:B.c:typo=1", unknown_msg("typo"));
    expect_error("targets=a:B.c:bogus=1", unknown_msg("bogus"));
    expect_error("mode=off:targets=pkg.m:C.run,x:Y.warmup:Verbosity=2:exitcode=1", unknown_msg("Verbosity"));
    expect_error("targets=a:B.c verbose=1", unknown_msg("verbose"));
    expect_error("targets=a:B.c:=1",
                 "malformed option '=1' in TUNERGUARD_OPTIONS (expected key=value pairs separated by ':')");
    /* a known key after targets still ends the value */
    expect_ok("targets=a:B.c:log_path='x:y'");
    cr_assert_str_eq(o.targets, "a:B.c");
    cr_assert_str_eq(o.log_path, "x:y");
    /* without '=' the text after ':' is still part of the value */
    expect_error("targets=a:B.c:typo",
                 "bad value 'a:B.c:typo' for option 'targets' (valid: module:Class.method[,module:Class.method...])");
}

/* ---- quoted values (sanitizer_common style) ---------------------------------- */

Test(options, quoted_values_hold_spaces_and_colons)
{
    expect_ok("log_path='my reports/tg':mode=serialize");
    cr_assert_str_eq(o.log_path, "my reports/tg");
    cr_assert_eq(o.mode, TG_MODE_SERIALIZE);

    expect_ok("log_path=\"a:b/tg\"");
    cr_assert_str_eq(o.log_path, "a:b/tg");

    expect_ok("mode=off:log_path=\"x y:z/tg\":verbosity=2");
    cr_assert_str_eq(o.log_path, "x y:z/tg");
    cr_assert_eq(o.mode, TG_MODE_OFF);
    cr_assert_eq(o.verbosity, 2);

    /* each quote kind holds the other one */
    expect_ok("log_path=\"it's here/tg\"");
    cr_assert_str_eq(o.log_path, "it's here/tg");
    expect_ok("log_path='say \"hi\"/tg'");
    cr_assert_str_eq(o.log_path, "say \"hi\"/tg");

    /* a quoted value is followed by ':' or whitespace, or ends the text */
    expect_ok("log_path='a b' mode=serialize\tverbosity=\"1\"");
    cr_assert_str_eq(o.log_path, "a b");
    cr_assert_eq(o.mode, TG_MODE_SERIALIZE);
    cr_assert_eq(o.verbosity, 1);

    /* quoting works for every kind of value */
    expect_ok("mode='serialize':exitcode=\"7\":halt_on_race='1':targets='a.b:C.run,x:Y.z'");
    cr_assert_eq(o.mode, TG_MODE_SERIALIZE);
    cr_assert_eq(o.exitcode, 7);
    cr_assert_eq(o.halt_on_race, 1);
    cr_assert_str_eq(o.targets, "a.b:C.run,x:Y.z");

    /* a quote that does not begin the value is an ordinary character */
    expect_ok("log_path=it's:mode=off");
    cr_assert_str_eq(o.log_path, "it's");
    cr_assert_eq(o.mode, TG_MODE_OFF);

    /* last one wins, quoted or not */
    expect_ok("log_path='a b':log_path=c");
    cr_assert_str_eq(o.log_path, "c");
}

Test(options, quoted_bad_values)
{
    expect_error("log_path=''", "bad value '' for option 'log_path' (valid: a path prefix, or 'stderr')");
    expect_error("mode='fast mode'", "bad value 'fast mode' for option 'mode' (valid: detect, serialize, off)");
    expect_error("verbosity=\"1:2\"", "bad value '1:2' for option 'verbosity' (valid: an integer from 0 to 2)");
}

Test(options, unterminated_quote)
{
    expect_error("log_path='my reports/tg",
                 "unterminated quote in the value of option 'log_path' in TUNERGUARD_OPTIONS (it begins with ' and "
                 "has no closing ')");
    expect_error("mode=serialize:log_path=\"a:b/tg:verbosity=1",
                 "unterminated quote in the value of option 'log_path' in TUNERGUARD_OPTIONS (it begins with \" and "
                 "has no closing \")");
    /* the other quote kind does not close it */
    expect_error("targets='a:B.c\"",
                 "unterminated quote in the value of option 'targets' in TUNERGUARD_OPTIONS (it begins with ' and "
                 "has no closing ')");
    /* an unknown key is named first */
    expect_error("bogus='x", unknown_msg("bogus"));
}

Test(options, text_after_closing_quote)
{
    expect_error("log_path='a b'c:mode=off",
                 "malformed option 'log_path' in TUNERGUARD_OPTIONS (text 'c' after the closing '; expected ':' or a "
                 "space)");
    expect_error("log_path=\"a\"\"b\"",
                 "malformed option 'log_path' in TUNERGUARD_OPTIONS (text '\"b\"' after the closing \"; expected ':' "
                 "or a space)");
}

/* ---- nothing half-configured ------------------------------------------------ */

Test(options, failed_parse_leaves_pure_defaults)
{
    static const char *const texts[] = {
        "mode=serialize:log_path=/tmp/x:targets=a:B.c:exitcode=5:halt_on_race=1:verbosity=2:bogus=1",
        "mode=serialize:log_path=/tmp/x:targets=a:B.c:verbosity=7",
        "mode=off:log_path=/tmp/x:targets=bad",
        "verbosity=2 exitcode=9 mode",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int rc = parse(texts[i]);
        cr_assert_eq(rc, -1, "'%s'", texts[i]);
        cr_assert_neq(err[0], '\0');
        assert_defaults(&o);
    }
}

Test(options, small_error_buffer_is_truncated_not_overflowed)
{
    char small[24];
    memset(small, 'Z', sizeof small);
    cr_assert_eq(tg_options_parse("bogus=1", &o, small, 16), -1);
    cr_assert_eq(strlen(small), 15);
    cr_assert_eq(small[16], 'Z');
    assert_defaults(&o);
}

/* ---- help ---------------------------------------------------------------------- */

Test(options, help_lists_every_key)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    tg_options_print_help(fds[1]);
    close(fds[1]);
    char buf[8192];
    size_t n = 0;
    ssize_t r;
    while ((r = read(fds[0], buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)r;
    close(fds[0]);
    buf[n] = '\0';
    cr_assert(strstr(buf, "TUNERGUARD_OPTIONS"));
    for (size_t i = 0; i < NKEYS; i++) {
        char needle[64];
        snprintf(needle, sizeof needle, "\n  %s ", all_keys[i]);
        cr_assert(strstr(buf, needle), "help lacks %s:\n%s", all_keys[i], buf);
    }
    cr_assert(strstr(buf, "detect") && strstr(buf, "serialize"), "mode's choices shown");
    cr_assert(strstr(buf, "tunerguard"), "default log_path shown");
}

/* ---- targets: what Python names can be, and the limits --------------------- */

#define TARGETS_BAD(v) "bad value '" v "' for option 'targets' (valid: module:Class.method[,module:Class.method...])"

Test(options, targets_accept_non_ascii_identifiers)
{
    /* str.isidentifier() accepts letters of any script */
    expect_ok("targets=m:Tun\xc3\xa9r.run");
    cr_assert_str_eq(o.targets, "m:Tun\xc3\xa9r.run");
    expect_ok("targets=mod\xc3\xa9.sub:\xce\x9a\xce\xbb\xce\xac\xcf\x83\xce\xb7.Inner.m\xc3\xa9thode");
}

Test(options, targets_refuse_empty_parts_and_non_identifiers)
{
    expect_error("targets=m:C..run", TARGETS_BAD("m:C..run"));     /* once taken as C.run */
    expect_error("targets=m:.C.run", TARGETS_BAD("m:.C.run"));
    expect_error("targets=a..b:C.run", TARGETS_BAD("a..b:C.run"));
    expect_error("targets=.a:C.run", TARGETS_BAD(".a:C.run"));
    expect_error("targets=m:1C.run", TARGETS_BAD("m:1C.run"));
    expect_error("targets=m:C.2run", TARGETS_BAD("m:C.2run"));
    expect_error("targets=m:C\xff.run", TARGETS_BAD("m:C\xff.run")); /* not UTF-8 */
    expect_error("targets=m:C\xc3.run", TARGETS_BAD("m:C\xc3.run")); /* a cut sequence */
}

static void long_name(char *buf, size_t n, char c)
{
    memset(buf, c, n);
    buf[n] = '\0';
}

Test(options, targets_name_lengths_are_held_or_refused)
{
    char name[200], text[400], msg[700];
    long_name(name, TG_TARGET_METHOD_MAX, 'm');
    snprintf(text, sizeof text, "targets=mod:C.%s", name);
    expect_ok(text); /* the longest method name the table holds */
    long_name(name, TG_TARGET_METHOD_MAX + 1, 'm');
    snprintf(text, sizeof text, "targets=mod:C.%s", name);
    snprintf(msg, sizeof msg, "bad value for option 'targets': in 'mod:C.%s' the method name is %d bytes, more than "
             "the %d tunerguard holds", name, TG_TARGET_METHOD_MAX + 1, TG_TARGET_METHOD_MAX);
    expect_error(text, msg); /* once cut to 47 bytes, naming a method that does not exist */
    long_name(name, TG_TARGET_CLASS_MAX, 'C');
    snprintf(text, sizeof text, "targets=mod:%s.run", name);
    expect_ok(text);
    long_name(name, TG_TARGET_CLASS_MAX + 1, 'C');
    snprintf(text, sizeof text, "targets=mod:%s.run", name);
    snprintf(msg, sizeof msg, "bad value for option 'targets': in 'mod:%s.run' the class name is %d bytes, more than "
             "the %d tunerguard holds", name, TG_TARGET_CLASS_MAX + 1, TG_TARGET_CLASS_MAX);
    expect_error(text, msg);
    long_name(name, TG_TARGET_MODULE_MAX, 'x');
    snprintf(text, sizeof text, "targets=%s:C.run", name);
    expect_ok(text);
    long_name(name, TG_TARGET_MODULE_MAX + 1, 'x');
    snprintf(text, sizeof text, "targets=%s:C.run", name);
    snprintf(msg, sizeof msg, "bad value for option 'targets': in '%s:C.run' the module name is %d bytes, more than "
             "the %d tunerguard holds", name, TG_TARGET_MODULE_MAX + 1, TG_TARGET_MODULE_MAX);
    expect_error(text, msg);
}

Test(options, targets_count_limit)
{
    char text[4096];
    size_t used = (size_t)snprintf(text, sizeof text, "targets=");
    for (int i = 0; i < TG_TARGETS_MAX; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%sm%d:C.run", i ? "," : "", i);
    expect_ok(text); /* as many as the arming table holds */
    snprintf(text + used, sizeof text - used, ",extra:C.run");
    char msg[256];
    snprintf(msg, sizeof msg, "bad value for option 'targets': %d entries, more than the %d tunerguard holds (the "
             "built-in ones aside)", TG_TARGETS_MAX + 1, TG_TARGETS_MAX);
    expect_error(text, msg); /* once dropped without a word */
}

/* ---- user text in messages: control bytes escaped ------------------------- */

Test(options, messages_escape_control_bytes)
{
    expect_error("mode=\x1b[31mred", "bad value '\\x1b[31mred' for option 'mode' (valid: detect, serialize, off)");
    expect_error("bo\x1bgus=1", unknown_msg("bo\\x1bgus"));
    expect_error("verbosity=\x07", "bad value '\\x07' for option 'verbosity' (valid: an integer from 0 to 2)");
    expect_error("targets=m:C.r\x1bun", TARGETS_BAD("m:C.r\\x1bun"));
    expect_error("log_path='a\x1b'x",
                 "malformed option 'log_path' in TUNERGUARD_OPTIONS (text 'x' after the closing '; expected ':' or a space)");
}

Test(options, log_path_with_control_bytes_refused)
{
    expect_error("log_path='/tmp/a\nb'",
                 "bad value '/tmp/a\\x0ab' for option 'log_path' (valid: a path prefix without control characters, or "
                 "'stderr')");
    expect_error("log_path=/tmp/\x1b[2Jx",
                 "bad value '/tmp/\\x1b[2Jx' for option 'log_path' (valid: a path prefix without control characters, "
                 "or 'stderr')");
}
