# silent/silent_exec_at_finalization.py: run after the prelude in tests/integration/harness.py
class A:
    def __del__(self, exec=exec, w=os.write):
        w(1, b"del ran\n")
        exec("x = 1", {})
a = A()
a.me = a
sys.keep = sys.modules[__name__]  # __main__'s globals are cleared late
