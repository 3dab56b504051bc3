# race/hot_loop.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
assert is_guarded(Autotuner), "Autotuner.run is not guarded"
tuner = Autotuner(my_kernel)
entered, release = threading.Event(), threading.Event()
def hook(t, tag, *rest):
    if tag == "victim":
        entered.set()
        release.wait(20)
tuner.hook = hook
def loop(n, last, t=tuner):
    done = 0
    for i in range(n):
        t.run(last if i == n - 1 else "warm")
        done += 1
    return done
loop(20000, "warm")
jit = getattr(sys, "_jit", None)
traced = None
if jit is not None and jit.is_enabled():
    import _opcode
    traced = False
    for off in range(0, len(loop.__code__.co_code), 2):
        try:
            traced = traced or _opcode.get_executor(loop.__code__, off) is not None
        except (ValueError, RuntimeError):
            pass
print("TRACED", traced)
th = threading.Thread(target=loop, args=(3, "victim"), name="victim")
th.start()
entered.wait(20)
loop(3, "other")
release.set()
th.join()
print("DONE pid", os.getpid())
