"""The GIL regime a test driver runs a free-threaded interpreter's children in
(--gil-regime), and the check that it held in them.

  nogil       PYTHON_GIL=0: the GIL stays off whatever the program imports.
  gil         PYTHON_GIL=1: the GIL on from the start (the model of Triton and
              the fixtures import no extension that would turn it on).
  gil-import  PYTHON_GIL unset: real Triton's extension, which does not declare
              Py_mod_gil, turns the GIL on when it is imported (a warning says so).

Each child gets tests/free_threaded/site on its PYTHONPATH (sitecustomize.py) and
TG_GIL_LOG, a file outside its own folders; as it exits it appends whether the
GIL was on then and whether it had imported triton.  verify() reads the file: at
least one child recorded (where any ran), and every one as the regime names (gil-import: every
child that imported triton had the GIL on).  Without --gil-regime nothing of this
happens and the children's environment is left as it was."""
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SITE = os.path.join(HERE, "site")
REGIMES = ("nogil", "gil", "gil-import")


def add_argument(ap):
    ap.add_argument("--gil-regime", choices=REGIMES,
                    help="free-threaded interpreter: run the children in this GIL regime and check it held")


class Regime:
    def __init__(self, name):
        self.name = name
        self.log = None
        self.children = 0
        if name:
            fd, self.log = tempfile.mkstemp(prefix="tg-gil-regime-", suffix=".log")
            os.close(fd)

    def apply(self, env):
        """env (a dict) for a child, changed in place and returned."""
        if not self.name:
            return env
        self.children += 1
        env.pop("PYTHON_GIL", None)
        if self.name != "gil-import":
            env["PYTHON_GIL"] = "0" if self.name == "nogil" else "1"
        path = env.get("PYTHONPATH")
        env["PYTHONPATH"] = SITE + (os.pathsep + path if path else "")
        env["TG_GIL_LOG"] = self.log
        return env

    def check_interpreter(self, python):
        """None when python is a free-threaded build, else why not."""
        if not self.name:
            return None
        p = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_config_var('Py_GIL_DISABLED'))"],
                           capture_output=True, text=True)
        if p.stdout.strip() != "1":
            return f"{python} is not a free-threaded build (Py_GIL_DISABLED {p.stdout.strip() or p.stderr.strip()!r})"
        return None

    def verify(self):
        """(ok, one line) on what the children recorded; (True, None) without a regime."""
        if not self.name:
            return True, None
        with open(self.log) as f:
            recs = [dict(kv.split("=", 1) for kv in ln.split()[:2]) | {"who": ln.split(None, 3)[-1].strip()}
                    for ln in f if ln.strip()]
        os.unlink(self.log)
        if not recs and not self.children:
            return True, f"GIL regime {self.name}: no child was run"
        if not recs:
            return False, f"GIL regime {self.name}: no child recorded its GIL state (tests/free_threaded/site)"
        if self.name == "gil-import":
            bad = [r for r in recs if r["triton"] == "1" and r["gil"] != "1"]
            if not any(r["triton"] == "1" for r in recs):
                return False, f"GIL regime {self.name}: no child of {len(recs)} imported triton"
        else:
            want = "0" if self.name == "nogil" else "1"
            bad = [r for r in recs if r["gil"] != want]
        if bad:
            return False, (f"GIL regime {self.name}: {len(bad)} of {len(recs)} children ended with the GIL "
                           f"{'on' if bad[0]['gil'] == '1' else 'off'}, e.g. {bad[0]['who']}")
        return True, f"GIL regime {self.name}: held in all {len(recs)} children that recorded it"
