#!/usr/bin/env python3
"""Regenerate (or check) the report excerpt in README.md from the current code.

  tools/readme_excerpt.py --lib build/libtunerguard.so --fakecuda build/tests/fakecuda --write README.md
  tools/readme_excerpt.py ... --check README.md     # exit 1 if the excerpt is stale

It runs the CPU reproducer tests/repro/scenarios/deep_stack.py under detect mode
(a real program's depth: the thread inside 60 frames deep in the program and
~60 in import machinery, so the excerpt shows the folded shape),
takes the first race report of the text file and puts it between the markers
<!-- report-excerpt:begin --> and <!-- report-excerpt:end -->, with pids, tids,
addresses and the checkout's path made stable.  --check compares with every
what varies between runs and builds masked (durations with their unit, native
frames, line numbers in the interpreter's own files) and everything else, the
line numbers of the checkout's files included, compared as written."""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- report-excerpt:begin -->", "<!-- report-excerpt:end -->"
MAX_NATIVE = 8


def generate(lib, fakecuda, python):
    """The first report of the deep_stack scenario, in the README's form.  The
    scenario runs in a temporary folder, which is also its TMPDIR (its generated
    package goes there); the folder is removed whatever happens."""
    with tempfile.TemporaryDirectory(prefix="tg-excerpt-") as tmp:
        return first_report(lib, fakecuda, python, tmp)


def first_report(lib, fakecuda, python, tmp):
    env = dict(os.environ, LD_PRELOAD=os.path.abspath(lib), TUNERGUARD_OPTIONS=f"log_path={tmp}/tunerguard",
               LD_LIBRARY_PATH=os.path.abspath(fakecuda), PYTHONDONTWRITEBYTECODE="1", TMPDIR=tmp)
    subprocess.run([python, os.path.join(ROOT, "tests/repro/scenarios/deep_stack.py")], env=env, cwd=tmp,
                   capture_output=True, timeout=120)
    reps = glob.glob(f"{tmp}/tunerguard.*.txt")
    if not reps:
        sys.exit("readme_excerpt: no report was written")
    text = open(reps[0]).read()
    block = text.split("==================\n")[1]  # the first report, fences excluded
    out, native, tids = [], 0, {}
    for line in block.splitlines():
        line = line.replace(ROOT + "/", "")
        line = re.sub(r"\(pid=\d+", "(pid=4242", line)
        line = re.sub(r"tid=(\d+)", lambda m: "tid=%d" % tids.setdefault(m.group(1), 4243 + len(tids)), line)
        line = re.sub(r"0x[0-9a-f]{10,}", "0x7f3a1c2b4d10", line)  # pointers; module offsets stay
        line = re.sub(r"/\S*/lib/python3\.\d+/", "<python>/", line)
        line = re.sub(r"/\S*/tg-deep-[^/]+/", "<tmp>/", line)  # the scenario's generated package
        if re.match(r"\s+Native", line):
            native = 0
        elif re.match(r"\s+#\d+ .*\(.*\+0x", line):
            native += 1
            if native > MAX_NATIVE:
                if native == MAX_NATIVE + 1:
                    out.append("      ...")
                continue
        out.append(line)
    return "==================\n" + "\n".join(out) + "\n==================\n"


def masked(s):
    """What --check compares: a duration, whatever its unit ('3.8 ms' or '812.0 us'), a native frame
    (offsets and C line numbers of the interpreter's build) and a line number in the interpreter's
    own files are masked; frame numbers, counts and the checkout's line numbers are not."""
    out = []
    for line in s.splitlines():
        line = re.sub(r"\b\d+(\.\d+)? (s|ms|us|ns)\b", "<duration>", line)
        if re.match(r"\s+#\d+ .*\(.*\+0x[0-9a-f]+\)$", line):
            line = re.sub(r"0x[0-9a-f]+", "0x", line)
            line = re.sub(r"\d+", "N", line)
        line = re.sub(r"(<python>/\S+):\d+", r"\1:N", line)
        line = re.sub(r"0x[0-9a-f]{10,}", "0x", line)
        out.append(line)
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--fakecuda", required=True)
    ap.add_argument("--python", default=sys.executable)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write")
    g.add_argument("--check")
    a = ap.parse_args()
    excerpt = generate(a.lib, a.fakecuda, a.python)
    path = a.write or a.check
    readme = open(path).read()
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n```\n{excerpt}```\n{END}{tail}"
    if a.write:
        open(path, "w").write(new)
        return 0
    if masked(new) != masked(readme):
        print("readme_excerpt: the report excerpt in README.md is stale; run tools/readme_excerpt.py --write",
              file=sys.stderr)
        import difflib
        sys.stderr.writelines(difflib.unified_diff(masked(readme).splitlines(True), masked(new).splitlines(True),
                                                   "README.md", "current", n=1))
        return 1
    print("readme_excerpt: README.md excerpt matches the current report format")
    return 0


if __name__ == "__main__":
    sys.exit(main())
