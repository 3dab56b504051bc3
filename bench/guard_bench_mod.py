"""Two identical classes; the benchmark guards only the first."""


class Guarded:
    def run(self, x, k=None):
        return x


class Plain:
    def run(self, x, k=None):
        return x
