# silent/silent_python.py: run after the prelude in tests/integration/harness.py
import json, threading
def work(): json.dumps({"a": [1, 2]})
ts = [threading.Thread(target=work) for _ in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print("hello")
sys.exit(3)
