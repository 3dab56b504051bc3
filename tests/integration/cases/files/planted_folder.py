# files/planted_folder.py: run after the prelude in tests/integration/harness.py
os.mkdir("shared"); os.chmod("shared", 0o1777); os.mkdir("elsewhere")
os.symlink(os.path.abspath("elsewhere"), "shared/evil")
os.lchown("shared/evil", 4242, -1)
