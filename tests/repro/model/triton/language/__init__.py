# Model of triton.language: only tl.constexpr, for kernel signatures such as
# seeds/004's `def test(N: triton.language.constexpr = 0)`.


class constexpr:

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"constexpr[{self.value}]"
