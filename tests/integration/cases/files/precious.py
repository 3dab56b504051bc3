# files/precious.py: run after the prelude in tests/integration/harness.py
for e in (".txt", ".jsonl", ".trace.json"):
    with open("precious" + e, "w") as f:
        f.write("keep me\n")
