# race/interrupt_tail.py: run after the prelude in tests/integration/harness.py
ran = []
entered, release = threading.Event(), threading.Event()
def hook(t, tag, *rest):
    ran.append(tag)
    if tag == "victim":
        entered.set()
        release.wait()
tuner = make_tuner(hook)
th = threading.Thread(target=tuner.run, args=("victim",), name="victim")
th.start()
entered.wait()
safety = threading.Timer(20.0, release.set)
safety.start()
before_call()
try:
    tuner.run("other")
    print("NOT INTERRUPTED")
except KeyboardInterrupt:
    print("INTERRUPTED", "victim still inside" if not release.is_set() else "after the victim")
release.set()
safety.cancel()
th.join()
print("RAN", ",".join(ran))
print("DONE pid", os.getpid())
