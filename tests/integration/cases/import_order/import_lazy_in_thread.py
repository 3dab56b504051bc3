# import_order/import_lazy_in_thread.py: run after the prelude in tests/integration/harness.py
box = {}
def load():
    import triton.runtime.autotuner as A
    box["A"] = A
t = threading.Thread(target=load); t.start(); t.join()
Autotuner = box["A"].Autotuner
assert is_guarded(Autotuner), "not guarded after a lazy import in a thread"
race_once(Autotuner(my_kernel))
print("DONE")
