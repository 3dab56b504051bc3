# race/two_inside_sites.py: run after the prelude in tests/integration/harness.py
from triton.runtime.autotuner import Autotuner
tuner = Autotuner(my_kernel)
def race_with(victim_call):
    entered, release = threading.Event(), threading.Event()
    def hook(t, tag, *rest):
        if tag == "victim":
            entered.set()
            release.wait()
    tuner.hook = hook
    th = threading.Thread(target=victim_call, name="victim")
    th.start()
    entered.wait()
    enter()
    release.set()
    th.join()
def enter():
    tuner.run("other")  # the entering call site, both races
def inside_a():
    tuner.run("victim")  # inside call site A
def inside_b():
    tuner.run("victim")  # inside call site B
race_with(inside_a)
race_with(inside_b if os.environ["SECOND"] == "b" else inside_a)
print("DONE")
