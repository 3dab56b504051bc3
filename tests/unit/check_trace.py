#!/usr/bin/env python3
"""Check a tunerguard Chrome trace file (docs/trace.md).

    check_trace.py FILE [--truncated] [--expect KEY=VALUE ...] [--consistent-tid TID]

Without --truncated the file must be a closed JSON array whose last event is
"tunerguard trace end".  With --truncated it must NOT be closed and is
recovered by the documented rule: drop everything after the last newline,
drop the trailing ',', append ']'.  Then, always:
  - every event has ph, pid, tid (ints) and ts (number) unless ph is M;
  - per tid, B/E pair in file order (E never without B; unclosed B only when
    truncated); B/E and X slices nest properly (no partial overlap);
  - every flow start (s) has exactly one finish (f, bp=e) with the same id,
    name and cat, not earlier;
  - thread_name / process_name metadata are well formed.
Facts compared with --expect: count.<ph>, name.<name> (count),
thread.<tid> (its thread_name), end.<arg> (args of the end event),
flows (pairs), recovered (0/1).
--consistent-tid TID: the X events on TID carry stream=k and dur=k%1000 ns,
with k strictly increasing (the ring stress test: no torn event)."""
import json
import sys
from collections import defaultdict


def fail(msg):
    print("check_trace: " + msg)
    sys.exit(1)


def main():
    args = sys.argv[1:]
    path = args.pop(0)
    truncated = False
    expects = []
    consistent = None
    while args:
        a = args.pop(0)
        if a == "--truncated":
            truncated = True
        elif a == "--expect":
            expects.append(args.pop(0))
        elif a == "--consistent-tid":
            consistent = int(args.pop(0))
        else:
            fail("unknown argument " + a)
    text = open(path, encoding="utf-8").read()
    if not text.startswith("[\n"):
        fail("does not start with '[' and a newline")
    recovered = 0
    closed = text.rstrip().endswith("]")
    if truncated:
        if closed:
            fail("expected an unclosed (truncated) file")
        text = text[: text.rfind("\n") + 1].rstrip()
        if text.endswith(","):
            text = text[:-1]
        text += "\n]"
        recovered = 1
    elif not closed:
        fail("file is not closed with ']'")
    try:
        events = json.loads(text)
    except ValueError as e:
        fail("not valid JSON: %s" % e)
    if not isinstance(events, list):
        fail("not a JSON array")

    facts = defaultdict(int)
    facts["recovered"] = recovered
    stacks = defaultdict(list)        # tid -> open B (ts, name)
    intervals = defaultdict(list)     # tid -> [(start, end, what)]
    flows = defaultdict(dict)
    for n, ev in enumerate(events, 1):
        if not isinstance(ev, dict):
            fail("event %d is not an object" % n)
        ph = ev.get("ph")
        if ph not in ("B", "E", "X", "i", "s", "f", "M"):
            fail("event %d: bad ph %r" % (n, ph))
        for k in ("pid", "tid"):
            if not isinstance(ev.get(k), int):
                fail("event %d: %s missing or not an int" % (n, k))
        if ph != "M" and not isinstance(ev.get("ts"), (int, float)):
            fail("event %d: ts missing" % n)
        facts["count." + ph] += 1
        if "name" in ev and ph != "M":
            facts["name." + ev["name"]] += 1
        tid = ev["tid"]
        if ph == "M":
            if ev.get("name") not in ("thread_name", "process_name"):
                fail("event %d: unknown metadata %r" % (n, ev.get("name")))
            nm = ev.get("args", {}).get("name")
            if not isinstance(nm, str) or not nm:
                fail("event %d: metadata without a name" % n)
            if ev["name"] == "thread_name":
                if ("thread.%d" % tid) in facts:
                    fail("event %d: thread %d named twice" % (n, tid))
                facts["thread.%d" % tid] = nm
            else:
                facts["process_name"] = nm
        elif ph == "B":
            if not ev.get("name"):
                fail("event %d: B without a name" % n)
            stacks[tid].append((ev["ts"], ev["name"]))
        elif ph == "E":
            if not stacks[tid]:
                fail("event %d: E without B on tid %d" % (n, tid))
            ts0, name = stacks[tid].pop()
            if ev["ts"] < ts0:
                fail("event %d: E before its B (%s)" % (n, name))
            intervals[tid].append((ts0, ev["ts"], name))
        elif ph == "X":
            if not isinstance(ev.get("dur"), (int, float)) or ev["dur"] < 0:
                fail("event %d: X without dur" % n)
            intervals[tid].append((ev["ts"], ev["ts"] + ev["dur"], ev["name"]))
        elif ph == "i":
            if ev.get("s") not in ("t", "p", "g"):
                fail("event %d: instant without scope" % n)
        elif ph in ("s", "f"):
            fid = ev.get("id")
            if fid is None:
                fail("event %d: flow without id" % n)
            if ph == "f" and ev.get("bp") != "e":
                fail("event %d: flow finish without bp=e" % n)
            if ph in flows[fid]:
                fail("event %d: second %s for flow id %r" % (n, ph, fid))
            flows[fid][ph] = ev
    for tid, st in stacks.items():
        if st and not truncated:
            fail("tid %d: %d B without E (%s)" % (tid, len(st), st[-1][1]))
    for tid, ivs in intervals.items():
        ivs.sort(key=lambda x: (x[0], -x[1]))
        open_ = []
        for s, e, what in ivs:
            while open_ and open_[-1][1] <= s:
                open_.pop()
            if open_ and open_[-1][1] < e:
                fail("tid %d: %r [%s, %s] overlaps %r [%s, %s] without nesting"
                     % (tid, what, s, e, open_[-1][2], open_[-1][0], open_[-1][1]))
            open_.append((s, e, what))
    for fid, d in flows.items():
        if set(d) != {"s", "f"}:
            fail("flow id %r is not paired: %s" % (fid, sorted(d)))
        s, f = d["s"], d["f"]
        if (s.get("name"), s.get("cat")) != (f.get("name"), f.get("cat")):
            fail("flow id %r: name/cat differ" % fid)
        if f["ts"] < s["ts"]:
            fail("flow id %r ends before it starts" % fid)
        facts["flows"] += 1
    if not truncated:
        last = events[-1]
        if last.get("name") != "tunerguard trace end":
            fail("last event is not 'tunerguard trace end'")
        for k, v in last.get("args", {}).items():
            facts["end." + k] = v
    if consistent is not None:
        prev = -1
        for ev in events:
            if ev["ph"] == "X" and ev["tid"] == consistent:
                k = int(ev["args"]["stream"], 16)
                if k <= prev:
                    fail("tid %d: stream %d after %d (order)" % (consistent, k, prev))
                if round(ev["dur"] * 1000) != k % 1000:
                    fail("tid %d: torn event k=%d dur=%s" % (consistent, k, ev["dur"]))
                prev = k
                facts["consistent"] += 1
    bad = 0
    for e in expects:
        key, _, want = e.partition("=")
        got = facts.get(key, 0 if key.startswith(("count.", "name.")) else None)
        if str(got) != want:
            print("check_trace: %s: expected %s, got %s" % (key, want, got))
            bad = 1
    if bad:
        sys.exit(1)
    print("check_trace: ok, %d events%s" % (len(events), " (recovered)" if recovered else ""))


if __name__ == "__main__":
    main()
