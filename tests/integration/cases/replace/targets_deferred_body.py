# replace/targets_deferred_body.py: run after the prelude in tests/integration/harness.py
with open("defmod.py", "w") as f:
    f.write("class T:\n"
            "    async def a(self, x):\n        return x\n"
            "    async def ag(self, x):\n        yield x\n"
            "    def g(self, x):\n        yield x\n")
sys.path.insert(0, ".")
import asyncio, defmod
t = defmod.T()
async def collect():
    return [v async for v in t.ag(2)]
print("RAN", asyncio.run(t.a(1)), asyncio.run(collect()), list(t.g(3)))
print("GUARDED", [is_guarded(defmod.T, n) for n in ("a", "ag", "g")])
