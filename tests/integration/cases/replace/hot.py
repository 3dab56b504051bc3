# replace/hot.py: run after the prelude in tests/integration/harness.py
import functools, queue
with open("hotmod.py", "w") as f:
    f.write("class K:\n    def m(self, x):\n        if x:\n            x()\n        return 1\n")
sys.path.insert(0, ".")
import hotmod
k = hotmod.K()
q, cur, waits = queue.Queue(), [None], [0]
def audit(event, args):
    if event == "tunerguard.serialize_wait":
        waits[0] += 1
        cur[0].set()  # the holder may leave: this call waits for it
sys.addaudithook(audit)
def holder():
    while True:
        pair = q.get()
        if pair is None:
            return
        k.m(lambda: (pair[0].set(), pair[1].wait()))
th = threading.Thread(target=holder, daemon=True)
th.start()
def ready():
    """The holder inside k.m, blocked: the next guarded call must wait."""
    if cur[0] is not None:
        cur[0].set()
    inside, release = threading.Event(), threading.Event()
    cur[0] = release
    q.put((inside, release))
    inside.wait()
    return 0
N = 200
calls = 0
def style(name, call):
    global calls
    before = waits[0]
    for i in range(N):
        ready()
        call()
    calls += N
    print("STYLE", name, waits[0] - before, "of", N)
bound = k.m
args, kw = (0,), {"x": 0}
part = functools.partial(hotmod.K.m, k)
style("method", lambda: k.m(0))
style("class", lambda: hotmod.K.m(k, 0))
style("bound", lambda: bound(0))
style("star", lambda: k.m(*args))
style("starstar", lambda: k.m(**kw))
style("kw", lambda: k.m(x=0))
style("partial", lambda: part(0))
before = waits[0]
list(map(k.m, (ready() for i in range(N))))
print("STYLE map", waits[0] - before, "of", N)
def other(self, x):
    if x:
        x()
    return 2
if sys.version_info[:2] != (3, 11):  # a method descriptor there: no __code__
    hotmod.K.m.__code__ = other.__code__
    style("newcode", lambda: k.m(0))
    print("RESULT", k.m(0))
cur[0].set()
q.put(None)
th.join()
print("MINOR", sys.version_info[1])
print("DONE")
