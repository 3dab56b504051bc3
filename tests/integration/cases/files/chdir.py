# files/chdir.py: run after the prelude in tests/integration/harness.py
os.mkdir("sub")
os.chdir("sub")
