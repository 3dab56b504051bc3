"""A fork child does not copy tunerguard's tables: after a guarded call (an
entry of the tuner table claimed), os.fork; the child reports the dirty
memory of the core library's zero-initialized data (the anonymous mapping
right after libtunerguard_core.so's own), where the 4.7 MB tuner table
lives.  The reset at fork must touch only the entries ever claimed: writing,
or even reading, the rest gives every child (a DataLoader worker) a copy."""
import os

import common  # noqa: F401  (the fixture on sys.path)

from tglife.tuners import Tuner


def core_bss_dirty_kb():
    """Private_Dirty (kB) of the mapping after the core's last file mapping,
    or None when it cannot be found."""
    entries, cur = [], None
    for line in open("/proc/self/smaps"):
        head = line.split()
        if head and "-" in head[0] and not head[0].endswith(":"):
            cur = {"path": head[5] if len(head) > 5 else "", "dirty": 0}
            entries.append(cur)
        elif line.startswith("Private_Dirty:") and cur is not None:
            cur["dirty"] = int(head[1])
    last = max((i for i, e in enumerate(entries) if "libtunerguard_core" in e["path"]), default=None)
    if last is None or last + 1 >= len(entries) or entries[last + 1]["path"]:
        return None
    return entries[last + 1]["dirty"]


tuners = [Tuner("kernel_%d" % i) for i in range(8)]
for t in tuners:
    assert t.run(lambda: 7) == 7
print("PARENT_DIRTY_KB", core_bss_dirty_kb(), flush=True)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    ok = all(t.run(lambda: 8) == 8 for t in tuners)  # the tables still work in the child
    os.write(w, ("%s %s" % (core_bss_dirty_kb(), ok)).encode())
    os._exit(0)
os.close(w)
got = os.read(r, 100).decode()
os.waitpid(pid, 0)
print("CHILD_DIRTY_KB", got, flush=True)
