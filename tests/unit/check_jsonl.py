#!/usr/bin/env python3
"""Check a tunerguard JSON Lines report against docs/report-schema.md (schema 2).

usage: check_jsonl.py FILE [--count N] [--expect LINE:PATH=JSON ...]

Every line must be one JSON object ending in a newline, with exactly the keys
and types the schema lists.  --count: the number of lines.  --expect: the value
at a dotted path (list indices are numbers) of line LINE (1-based) equals the
JSON literal, e.g. --expect '1:entering.python.2.func="forward"'.
Exit status 0 when everything holds, 1 with one line per problem otherwise.
"""
import json
import re
import sys

HEX = re.compile(r"^0x[0-9a-f]+$")
problems = []


def fail(where, msg):
    problems.append(f"{where}: {msg}")


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def check_type(where, v, t):
    """t: 'int', 'uint', 'str', 'bool', 'hex', or a tuple of alternatives ('null' allowed)."""
    alts = t if isinstance(t, tuple) else (t,)
    for a in alts:
        if a == "null" and v is None:
            return True
        if a == "int" and is_int(v):
            return True
        if a == "uint" and is_int(v) and v >= 0:
            return True
        if a == "num" and (is_int(v) or isinstance(v, float)) and v >= 0:
            return True
        if a == "str" and isinstance(v, str):
            return True
        if a == "bool" and isinstance(v, bool):
            return True
        if a == "hex" and isinstance(v, str) and HEX.match(v):
            return True
        if a == "list" and isinstance(v, list):
            return True
        if a == "object" and isinstance(v, dict):
            return True
    fail(where, f"{v!r} is not {'|'.join(alts)}")
    return False


def check_obj(where, obj, spec, optional=None):
    """optional: keys written only where they say something (type per key)."""
    if not isinstance(obj, dict):
        fail(where, "not an object")
        return
    spec = dict(spec)
    for k, t in (optional or {}).items():
        if k in obj:
            spec[k] = t
    missing = set(spec) - set(obj)
    extra = set(obj) - set(spec)
    if missing:
        fail(where, f"missing keys {sorted(missing)}")
    if extra:
        fail(where, f"undocumented keys {sorted(extra)}")
    for k, t in spec.items():
        if k in obj:
            check_type(f"{where}.{k}", obj[k], t)


TOP_COMMON = {
    "schema": "uint", "kind": "str", "seq": "uint", "pid": "uint", "rank": ("uint", "null"),
    "mode": ("str", "null"), "ts_ns": "uint", "wall_ns": "uint", "tuner": "object", "location": ("object", "null"),
    "entering": "object",
}
TOP = {
    "race": dict(TOP_COMMON, severity="str", serialized="bool", seen_at="str", tuning_step=("str", "null"),
                 inside=("object", "null")),
    "method_replaced": dict(TOP_COMMON, replacement="object"),
    "deadlock": dict(TOP_COMMON, cycle="list", policy="str", inside="object"),
    "wait_timeout": dict(TOP_COMMON, waited_ns="uint", stalled_ns=("uint", "null"), proceeds="bool",
                         wait_timeout_s="uint", on_wait_timeout="str", inside="object"),
    "holder_died": dict(TOP_COMMON, inside="object"),
    "exception": dict(TOP_COMMON, exception="object", race_seq=("uint", "null"), inside="object"),
    "interference": dict(TOP_COMMON, interference="object"),
    "repeats": dict({k: v for k, v in TOP_COMMON.items() if k != "entering"}, race_seq="uint", repeats="uint",
                    of="str", other_kernels="uint", other_kernel_names="list"),
    "fatal": dict(TOP_COMMON, tuner=("object", "null"), location="null", entering="null", signal="str",
                  signo="uint", si_code=("int", "null"), fault_addr=("hex", "null"), tid="uint",
                  native="list", tuners="list", race_seq=("uint", "null"), reports_before="uint"),
}
# Keys a record of that kind has only in some cases (docs/report-schema.md).
OPTIONAL = {
    "race": {"gil": "str"},  # "off": written only for a race without the GIL
}
CYCLE_TUNER = {"kernel": ("str", "null"), "holder_tid": ("uint", "null")}
REPLACEMENT = {"qualname": ("str", "null"), "file": ("str", "null"), "line": ("uint", "null")}
FATAL_TUNER = {"instance": "hex", "occupants": "list", "waiters": "uint"}
FATAL_OCCUPANT = {"tid": "int", "inside_ns": "uint", "depth": "int", "race_seq": ("uint", "null")}
INTERFERENCE = {"device": "uint", "foreign_launches": "uint", "own_launches": "uint",
                "cuda_kernel": ("str", "null"), "cuda_kernel_mangled": ("str", "null"),
                "best_config": ("str", "null"), "from": "list",
                "gpu": ("object", "null")}
ITF_GPU = {"overlap_us": "num", "overlap_ns": "uint", "timed_ns": "uint", "own_kernels": "uint",
           "foreign_kernels": "uint", "kernels": "list"}
ITF_GPU_KERNEL = {"kernel": ("str", "null"), "kernel_mangled": ("str", "null"), "tid": ("int", "null"), "stream": "uint", "count": "uint",
                  "overlap_ns": "uint"}
ITF_FROM = {"tid": "int", "function": "hex", "kernel": ("str", "null"), "kernel_mangled": ("str", "null")}
TUNER = {"class": ("str", "null"), "method": ("str", "null"), "kernel": ("str", "null"),
         "declared": ("bool", "null"), "instance": ("hex", "null")}
FRAME = {"func": "str", "file": "str", "line": "int"}
THREAD = {
    "tid": "int", "ident": "uint", "name": ("str", "null"), "entered_ns": ("uint", "null"),
    "entered_ago_ns": ("uint", "null"), "benchmarking": "bool", "launches": "uint",
    "syncs": "uint", "python": "list", "python_truncated": "bool", "python_omitted": "uint",
    "python_unreadable": "bool", "python_at_entry": "bool",
    "native_where": ("str", "null"), "native": "list", "mixed": "list", "cuda": ("object", "null"),
    "device_at_entry": ("int", "null"),
}
NATIVE = {"pc": "hex", "symbol": ("str", "null"), "mangled": ("str", "null"), "file": ("str", "null"),
          "line": ("uint", "null")}
MIXED_NATIVE = dict(NATIVE, kind="str", index="uint")
MIXED_PYTHON = dict(FRAME, kind="str", index="uint")
CUDA = {
    "fn": ("str", "null"), "fn_index": "uint", "kind": "str", "inside": "bool",
    "device": ("uint", "null"), "stream": "hex", "function": ("hex", "null"),
    "kernel": ("str", "null"), "kernel_mangled": ("str", "null"), "t_enter_ns": "uint",
    "t_exit_ns": ("uint", "null"),
}


def check_thread(where, t):
    check_obj(where, t, THREAD)
    if not isinstance(t, dict):
        return
    for i, f in enumerate(t.get("python") or []):
        check_obj(f"{where}.python[{i}]", f, FRAME)
    for i, f in enumerate(t.get("native") or []):
        check_obj(f"{where}.native[{i}]", f, NATIVE)
    for i, f in enumerate(t.get("mixed") or []):
        kind = f.get("kind") if isinstance(f, dict) else None
        if kind not in ("native", "python"):
            fail(f"{where}.mixed[{i}].kind", f"{kind!r} is not native|python")
            continue
        check_obj(f"{where}.mixed[{i}]", f, MIXED_NATIVE if kind == "native" else MIXED_PYTHON)
        src = t.get("native" if kind == "native" else "python") or []
        if is_int(f.get("index")) and not 0 <= f["index"] < len(src):
            fail(f"{where}.mixed[{i}].index", f"{f['index']} is outside {kind}[]")
    if isinstance(t.get("cuda"), dict):
        check_obj(f"{where}.cuda", t["cuda"], CUDA)
        if t["cuda"].get("kind") not in ("none", "launch", "sync", "module", "other"):
            fail(f"{where}.cuda.kind", f"unknown kind {t['cuda'].get('kind')!r}")


def check_report(where, r):
    if not isinstance(r, dict):
        fail(where, "not an object")
        return
    if r.get("schema") != 2:
        fail(where, f"schema {r.get('schema')!r}, want 2")
    kind = r.get("kind")
    if kind not in TOP:
        fail(where, f"unknown kind {kind!r}")
        return
    check_obj(where, r, TOP[kind], OPTIONAL.get(kind))
    if kind == "fatal":
        if r.get("tuner") is not None:
            check_obj(f"{where}.tuner", r["tuner"], TUNER)
        for i, f in enumerate(r.get("native") or []):
            check_obj(f"{where}.native[{i}]", f, NATIVE)
        for i, u in enumerate(r.get("tuners") or []):
            check_obj(f"{where}.tuners[{i}]", u, FATAL_TUNER)
            for j, o in enumerate((u or {}).get("occupants") or []):
                check_obj(f"{where}.tuners[{i}].occupants[{j}]", o, FATAL_OCCUPANT)
        return
    check_obj(f"{where}.tuner", r.get("tuner"), TUNER)
    if isinstance(r.get("location"), dict):
        check_obj(f"{where}.location", r["location"], FRAME)
    if kind == "repeats":
        for i, n in enumerate(r.get("other_kernel_names") or []):
            check_type(f"{where}.other_kernel_names[{i}]", n, "str")
        return
    check_thread(f"{where}.entering", r.get("entering"))
    if kind == "interference":
        check_obj(f"{where}.interference", r.get("interference"), INTERFERENCE)
        for i, f in enumerate((r.get("interference") or {}).get("from") or []):
            check_obj(f"{where}.interference.from[{i}]", f, ITF_FROM)
        gpu = (r.get("interference") or {}).get("gpu")
        if isinstance(gpu, dict):
            check_obj(f"{where}.interference.gpu", gpu, ITF_GPU)
            for i, k in enumerate(gpu.get("kernels") or []):
                check_obj(f"{where}.interference.gpu.kernels[{i}]", k, ITF_GPU_KERNEL)
    if kind == "deadlock":
        for i, c in enumerate(r.get("cycle") or []):
            check_obj(f"{where}.cycle[{i}]", c, CYCLE_TUNER)
        if not r.get("cycle"):
            fail(f"{where}.cycle", "empty")
        if r.get("policy") not in ("abort", "proceed"):
            fail(f"{where}.policy", f"{r.get('policy')!r} is not abort|proceed")
    if kind == "wait_timeout":
        if r.get("on_wait_timeout") not in ("proceed", "wait"):
            fail(f"{where}.on_wait_timeout", f"{r.get('on_wait_timeout')!r} is not proceed|wait")
        if r.get("proceeds") != (r.get("stalled_ns") is not None):
            fail(f"{where}.proceeds", "true exactly when stalled_ns is set")
    if kind == "method_replaced":
        check_obj(f"{where}.replacement", r.get("replacement"), REPLACEMENT)
    if kind == "race":
        if r.get("seen_at") == "tuning":  # the call that cleared the arguments had left: no inside thread
            if r.get("inside") is not None:
                fail(f"{where}.inside", "not null for seen_at tuning")
        else:
            check_thread(f"{where}.inside", r.get("inside"))
        if r.get("severity") not in ("high", "low"):
            fail(f"{where}.severity", f"{r.get('severity')!r} is not high|low")
        if r.get("seen_at") not in ("entry", "exit", "step", "tuning"):
            fail(f"{where}.seen_at", f"{r.get('seen_at')!r} is not entry|exit|step|tuning")
        if "gil" in r and (r["gil"] != "off" or r.get("severity") != "high" or r.get("serialized")):
            fail(f"{where}.gil", f"{r['gil']!r}: only \"off\", on a high-severity race not serialized")


def lookup(obj, path):
    for part in path.split("."):
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj


def main(argv):
    path, count, expects = argv[1], None, []
    i = 2
    while i < len(argv):
        if argv[i] == "--count":
            count = int(argv[i + 1])
        elif argv[i] == "--expect":
            expects.append(argv[i + 1])
        else:
            print(f"check_jsonl: unknown argument {argv[i]}")
            return 2
        i += 2
    with open(path, "rb") as f:
        data = f.read()
    if data and not data.endswith(b"\n"):
        fail(path, "last line has no newline")
    reports = []
    for n, raw in enumerate(data.splitlines(), 1):
        try:
            r = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            fail(f"line {n}", f"not JSON: {e}")
            reports.append(None)
            continue
        check_report(f"line {n}", r)
        reports.append(r)
    if count is not None and len(reports) != count:
        fail(path, f"{len(reports)} lines, want {count}")
    for e in expects:
        line, rest = e.split(":", 1)
        p, want = rest.split("=", 1)
        try:
            got = lookup(reports[int(line) - 1], p)
        except (IndexError, KeyError, TypeError, ValueError) as ex:
            fail(f"line {line}", f"{p}: no such path ({ex!r})")
            continue
        if got != json.loads(want):
            fail(f"line {line}", f"{p} = {got!r}, want {want}")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
