# replace/target_builtin_in_class_body.py: run after the prelude in tests/integration/harness.py
with open("mymod.py", "w") as f:
    f.write("class C:\n    run = len\n")
sys.path.insert(0, ".")
import mymod
print("C", is_guarded(mymod.C), mymod.C().run([1, 2, 3]))
