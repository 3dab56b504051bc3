# replace/targets_unguarded.py: run after the prelude in tests/integration/harness.py
class Foo:
    def run(self):
        return 1
print("FOO_GUARDED", is_guarded(Foo))
