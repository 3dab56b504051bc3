# descriptors/group_folder.py: run after the prelude in tests/integration/harness.py
os.mkdir("shared"); os.chmod("shared", MODE); os.mkdir("elsewhere")
os.symlink(os.path.abspath("elsewhere"), "shared/evil")
os.lchown("shared/evil", 4242, -1)
