"""`python -m tunerguard ARGS` and the `tunerguard` console script: exec the
packaged binary with ARGS (the process becomes the command: its exit status
and signals are the command's).

Two defaults come from this interpreter, since the person who runs the
command from a virtual environment means that environment's Python:
`doctor` and `repro` get `--python <this interpreter>` unless --python or
$PYTHON says otherwise, and `repro` gets TUNERGUARD_SOURCE_DIR=<package dir>
(the reproducers are packaged) unless it is set.  `run` and the rest get the
environment unchanged.
"""
import os
import sys

from tunerguard import command_path, package_dir


def _command_line(args, environ):
    """(argv after the binary, environment) for ARGS."""
    args = list(args)
    env = environ
    sub = args[0] if args else ""
    if sub in ("doctor", "repro"):
        given = any(a == "--python" or a.startswith("--python=") for a in args[1:])
        if not given and not environ.get("PYTHON"):
            args[1:1] = ["--python", sys.executable]
    if sub == "repro" and not environ.get("TUNERGUARD_SOURCE_DIR"):
        env = dict(environ, TUNERGUARD_SOURCE_DIR=package_dir())
    return args, env


def main(argv=None):
    try:
        binary = command_path()
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 2
    args, env = _command_line(sys.argv[1:] if argv is None else argv, os.environ)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(binary, [binary] + args, env)


if __name__ == "__main__":
    sys.exit(main())
