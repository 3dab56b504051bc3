"""Model of triton.compiler.compiler.make_backend: what check_disk_cache hashes."""


class _Backend:

    def __init__(self, target):
        self.target = target

    def hash(self):
        return f"model-backend-{self.target}"


def make_backend(target):
    return _Backend(target)
