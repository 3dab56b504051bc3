#!/usr/bin/env python3
"""Run a test driver inside the Debian sid root that tools/dev makes (Debian's
own CPython 3.14 and 3.15 in the interpreter matrix, tests/CMakeLists.txt).

  run_in_root.py [--root DIR] --bind PATH [--bind PATH ...] -- COMMAND [ARG ...]

The root is ${TG_SID_ROOT:-${XDG_CACHE_HOME:-~/.cache}/tunerguard/sid-root}
unless --root says otherwise (`tools/dev sid-root` makes it once with
debootstrap).  COMMAND runs chrooted there in a mount namespace of its own
(unshare --mount, propagation private): each --bind PATH (the checkout, the
build) is bind-mounted at the same path inside the root, with /proc, /dev
(recursively) and a fresh tmpfs on /tmp (mounted first, so a bind under /tmp
stays visible); it starts in the same working
directory where that is inside a bind, else in /.  Nothing is mounted outside that
namespace, so every mount goes away with the command, however it ends; the
only trace in the root is the empty directories the bind targets need.

Exit status: COMMAND's; 77 (ctest's skip code) with one line on stderr that
starts "run_in_root: SKIPPED" when the root cannot be entered (not root, no
root made, no unshare/chroot, a mount refused)."""
import argparse
import os
import shlex
import shutil
import subprocess
import sys

SKIP = 77
HOST_ONLY = ("PATH", "TMPDIR", "PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP", "PYENV_VERSION", "VIRTUAL_ENV")


def default_root():
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.environ.get("TG_SID_ROOT") or os.path.join(cache, "tunerguard", "sid-root")


def skip(why):
    print("run_in_root: SKIPPED: %s" % why, file=sys.stderr, flush=True)
    return SKIP


# Runs inside the new mount namespace as root; $1 is the root, $2 the working
# directory to keep (the same path inside: a bind or /), then the bind
# paths up to "--", then the command.  A failed mount exits SKIP before chroot.
SETUP = r'''
root=$1; cwd=$2; shift 2
fail() { echo "run_in_root: SKIPPED: $1" >&2; exit 77; }
mount --make-rprivate / 2>/dev/null || true
mount -t proc proc "$root/proc" || fail "cannot mount /proc in $root"
mount --rbind /dev "$root/dev" || fail "cannot bind-mount /dev in $root"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp" || fail "cannot mount a tmpfs on $root/tmp"
# The binds last: a checkout under /tmp lands on the tmpfs, not under it.
while [ "$1" != -- ]; do
    mkdir -p "$root$1" && mount --bind "$1" "$root$1" || fail "cannot bind-mount $1 into $root"
    shift
done
shift
exec chroot "$root" /bin/sh -c 'cd "$0" 2>/dev/null || cd /; exec "$@"' "$cwd" "$@"
'''


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1].strip())
    ap.add_argument("--root", default=default_root())
    ap.add_argument("--bind", action="append", default=[])
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        ap.error("no command")
    root = os.path.abspath(a.root)
    if os.geteuid() != 0:
        return skip("entering %s needs root (chroot, mount); %s does not run here" % (root, cmd[0]))
    if not os.path.isfile(os.path.join(root, cmd[0].lstrip("/"))):
        return skip("%s has no %s: make the Debian sid root with `tools/dev sid-root`" % (root, cmd[0]))
    for tool in ("unshare", "chroot", "mount"):
        if not shutil.which(tool):
            return skip("no %s on this machine" % tool)
    binds = [os.path.realpath(b) for b in a.bind]
    for b in binds:
        if not os.path.isdir(b):
            return skip("%s (to bind into the root) is not a directory" % b)
    # The caller's environment, as the interpreters outside the root get it,
    # less what names places outside the root.
    env = {k: v for k, v in os.environ.items() if k not in HOST_ONLY and not k.startswith("LD_")}
    env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    argv = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", SETUP, "run_in_root", root, os.getcwd()]
    argv += binds + ["--"] + cmd
    print("run_in_root: %s: %s" % (root, " ".join(shlex.quote(c) for c in cmd)), flush=True)
    try:
        return subprocess.run(argv, env=env).returncode
    except OSError as e:
        return skip("cannot run unshare: %s" % e)


if __name__ == "__main__":
    sys.exit(main())
