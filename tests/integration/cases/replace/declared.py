# replace/declared.py: run after the prelude in tests/integration/harness.py
with open("decl.py", "w") as f:
    f.write("class Tuner:\n"
            "    def run(self, hold=None):\n"
            "        if hold:\n            hold()\n"
            "        return 1\n")
sys.path.insert(0, ".")
import decl
t = decl.Tuner()
inside, go = threading.Event(), threading.Event()
def hold():
    inside.set()
    go.wait()
holder = threading.Thread(target=t.run, args=(hold,))
holder.start()
inside.wait()
before = sys.getrefcount(decl.Tuner), sys.getrefcount(t)
def other():
    for i in range(200):
        t.run()
o = threading.Thread(target=other)
o.start()
o.join()
print("REFS", sys.getrefcount(decl.Tuner) - before[0], sys.getrefcount(t) - before[1])
go.set()
holder.join()
print("DONE")
