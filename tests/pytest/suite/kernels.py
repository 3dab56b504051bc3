"""The suite's kernels: autotuned ones on the release's triton.autotune (each
racing test has its own, so its key is cold), and a plain one."""
import triton

import conftest

CONFIGS = [triton.Config({"BLOCK": b}) for b in (16, 32, 64, 128)]


def _tuned(fn):
    return triton.autotune(configs=CONFIGS, key=["n"], do_bench=conftest.do_bench)(triton.jit(fn))


def _scale(out, x, n, BLOCK: triton.language.constexpr = 16):
    for i in range(n):
        out[i] = 2 * x[i]


def scale_racing(out, x, n, BLOCK: triton.language.constexpr = 16):
    _scale(out, x, n, BLOCK)


def scale_known(out, x, n, BLOCK: triton.language.constexpr = 16):
    _scale(out, x, n, BLOCK)


def scale_suppressed(out, x, n, BLOCK: triton.language.constexpr = 16):
    _scale(out, x, n, BLOCK)


def scale_warm(out, x, n, BLOCK: triton.language.constexpr = 16):
    _scale(out, x, n, BLOCK)


def scale_api(out, x, n, BLOCK: triton.language.constexpr = 16):
    _scale(out, x, n, BLOCK)


def scale_hang(out, x, n, BLOCK: triton.language.constexpr = 16):
    _scale(out, x, n, BLOCK)


scale_racing = _tuned(scale_racing)
scale_known = _tuned(scale_known)
scale_suppressed = _tuned(scale_suppressed)
scale_warm = _tuned(scale_warm)
scale_hang = _tuned(scale_hang)
scale_api = _tuned(scale_api)


@triton.jit
def scale_plain(out, x, n):
    _scale(out, x, n)


def launch(kernel, n=8):
    x = list(range(n))
    out = [0] * n
    kernel[(1,)](out, x, n)
    return out
