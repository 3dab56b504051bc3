#!/usr/bin/env python3
"""The two libraries' contract (loader/core_api.h), checked on the built files.

  check_split.py --loader LIB --core CORE [--readelf readelf] [--nm nm]

- the core has no thread-locals of its own (no PT_TLS): it is dlopen'd late,
  where initial-exec TLS could find glibc's static TLS surplus used up;
- the core needs the loader by its soname (DT_NEEDED libtunerguard.so) and
  exports tg_core_entry alone;
- the loader carries the core as the section .tg_core, unmapped (no
  SHF_ALLOC) and as large as the core's file (loader/core_embed.c);
- the loader exports the interposed names (dlsym, cu*, cupti*,
  tunerguard_cuda_count) and tg_/tg__ names only, every one of them used by
  the core.
Exit 0 when all hold, 1 otherwise (one line per problem)."""
import argparse
import os
import re
import subprocess
import sys


def out(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loader", required=True)
    ap.add_argument("--core", required=True)
    ap.add_argument("--readelf", default="readelf")
    ap.add_argument("--nm", default="nm")
    a = ap.parse_args()
    bad = []
    if re.search(r"^\s*TLS\s", out([a.readelf, "-lW", a.core]), re.M):
        bad.append(f"{a.core} has a PT_TLS segment: its thread-locals belong in the loader (a tls.c)")
    dyn = out([a.readelf, "-dW", a.core])
    if "Shared library: [libtunerguard.so]" not in dyn:
        bad.append(f"{a.core} has no DT_NEEDED libtunerguard.so")
    # The loader carries the core (loader/core_embed.c): a section no segment
    # maps (no SHF_ALLOC), as large as the core's file.
    # readelf -SW: [Nr] Name Type Address Off Size ES Flg Lk Inf Al
    sec = re.search(r"\]\s+\.tg_core\s+PROGBITS\s+\S+\s+\S+\s+(\S+)\s+\S+\s+([A-Za-z]*)\s+\d+\s+\d+\s+\d+\s*$",
                    out([a.readelf, "-SW", a.loader]), re.M)
    if not sec:
        bad.append(f"{a.loader} has no .tg_core section (the embedded core)")
    elif "A" in sec.group(2) or int(sec.group(1), 16) != os.path.getsize(a.core):
        bad.append(f"{a.loader}'s .tg_core is not the core unmapped: size {int(sec.group(1), 16)} "
                   f"(core {os.path.getsize(a.core)}), flags {sec.group(2)!r}")
    core_exports = {l.split()[-1] for l in out([a.nm, "-D", "--defined-only", a.core]).splitlines() if l.strip()}
    if core_exports != {"tg_core_entry"}:
        bad.append(f"{a.core} exports {sorted(core_exports)}, not tg_core_entry alone")
    core_needs = {l.split()[-1] for l in out([a.nm, "-D", "--undefined-only", a.core]).splitlines() if l.strip()}
    for line in out([a.nm, "-D", "--defined-only", a.loader]).splitlines():
        name = line.split()[-1]
        if name in ("dlsym", "tunerguard_cuda_count") or re.match(r"cu[A-Z]|cupti", name):
            continue
        if not name.startswith("tg_"):
            bad.append(f"{a.loader} exports {name}: neither interposed nor tg_-prefixed")
        elif name not in core_needs:
            bad.append(f"{a.loader} exports {name}, which the core does not use (loader/tunerguard.map)")
    for b in bad:
        print("FAIL", b)
    print("ok" if not bad else f"{len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
