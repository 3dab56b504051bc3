# files/plant.py: run after the prelude in tests/integration/harness.py
pid = os.getpid()
for ext in EXTS:
    name = "tg.%d%s" % (pid, ext)
    if FIFO:
        os.mkfifo(name)
    else:
        os.symlink(os.path.abspath("precious" + ext), name)
