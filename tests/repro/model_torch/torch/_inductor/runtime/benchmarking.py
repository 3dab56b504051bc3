"""Model of torch._inductor.runtime.benchmarking.benchmarker (torch 2.15.0).

benchmark_gpu(fn) runs fn through the model's triton.testing.do_bench, so it
synchronizes through the stand-in libcuda with the GIL released, as the real one
does through torch.cuda.synchronize.  The number it returns is the model's device
time: what the kernels launched by this thread during the measurement charged to
`device_clock` (a kernel's cost follows its config and its input), so which config
wins is fixed by the input, as on a GPU, and not by the noise of a CPU timer.
"""
import threading

import triton.testing


class DeviceClock(threading.local):
    """Per thread: the device time the kernels it launched have charged."""

    def __init__(self):
        self.ms = 0.0
        self.calls = 0

    def spend(self, ms):
        self.ms += ms
        self.calls += 1


device_clock = DeviceClock()


class Benchmarker:
    def benchmark_gpu(self, fn, **kwargs):
        start_ms, start_calls = device_clock.ms, device_clock.calls
        triton.testing.do_bench(fn, quantiles=None)
        calls = device_clock.calls - start_calls
        return (device_clock.ms - start_ms) / max(calls, 1)


benchmarker = Benchmarker()
