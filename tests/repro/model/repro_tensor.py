"""A tiny stand-in for torch.Tensor, enough for the autotuner's hooks and the
model kernels: a list of floats with a dtype, zero_(), clone(), copy_().

Autotuner only ever touches tensors through .dtype (the tuning key),
.zero_() (reset_to_zero), .clone() (restore_value) and .copy_() (the
restore), so these are the operations whose *target* the race can change.
"""


class Tensor:
    __slots__ = ("data", "dtype", "name")

    def __init__(self, data, dtype="torch.float32", name=None):
        self.data = [float(v) for v in data]
        self.dtype = dtype
        self.name = name

    @classmethod
    def zeros(cls, n, dtype="torch.float32", name=None):
        return cls([0.0] * n, dtype, name)

    def zero_(self):
        for i in range(len(self.data)):
            self.data[i] = 0.0
        return self

    def clone(self):
        return Tensor(self.data, self.dtype, self.name)

    def copy_(self, src):
        if len(src.data) != len(self.data):
            raise RuntimeError(f"The size of tensor a ({len(self.data)}) must match the size of tensor b "
                               f"({len(src.data)})")
        self.data[:] = src.data
        return self

    def data_ptr(self):
        return id(self)

    def numel(self):
        return len(self.data)

    def tolist(self):
        return list(self.data)

    def __len__(self):
        return len(self.data)

    def __repr__(self):
        label = f" {self.name}" if self.name else ""
        return f"Tensor{label}({self.data}, dtype={self.dtype})"
