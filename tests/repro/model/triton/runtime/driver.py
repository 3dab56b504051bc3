"""Model of the CUDA side of Triton 3.6 (triton.runtime.driver + the NVIDIA
backend's cuda_utils C module), reduced to the driver calls that matter for the
autotuner race.

Real Triton reaches libcuda from C: `loadBinary` and `launchKernel` in
third_party/nvidia/backend/driver.c wrap their driver calls in
Py_BEGIN_ALLOW_THREADS / Py_END_ALLOW_THREADS, and torch.cuda.synchronize()
releases the GIL around cudaDeviceSynchronize. Here ctypes.CDLL plays that part:
every foreign call through a CDLL releases the GIL for its duration. So the GIL
release points of Autotuner.run are the same ones (anatomy note §1.8):
  G1  the kernel launch            -> cuLaunchKernel
  G2  the module load per config   -> cuModuleLoadData + cuModuleGetFunction
  G5  the synchronize in do_bench  -> cuCtxSynchronize
The library is the stand-in libcuda of the tests (build/tests/fakecuda), found
through LD_LIBRARY_PATH like the real one.
"""
import ctypes
import threading

CUDA_SUCCESS = 0

CUresult = ctypes.c_int
CUmodule = ctypes.c_void_p
CUfunction = ctypes.c_void_p
CUstream = ctypes.c_void_p


class CudaError(RuntimeError):
    pass


def _check(name, rc):
    if rc != CUDA_SUCCESS:
        raise CudaError(f"Triton Error [CUDA]: {name} returned {rc}")


class CudaDriver:
    """driver.active: loads libcuda.so.1 once, on first use (as cuda_utils does)."""

    def __init__(self):
        self._lib = None
        self._lib_lock = threading.Lock()

    @property
    def lib(self):
        if self._lib is None:
            with self._lib_lock:
                if self._lib is None:
                    lib = ctypes.CDLL("libcuda.so.1")  # CDLL: the GIL is released around each call
                    lib.cuInit.argtypes = [ctypes.c_uint]
                    lib.cuInit.restype = CUresult
                    lib.cuModuleLoadData.argtypes = [ctypes.POINTER(CUmodule), ctypes.c_void_p]
                    lib.cuModuleLoadData.restype = CUresult
                    lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(CUfunction), CUmodule, ctypes.c_char_p]
                    lib.cuModuleGetFunction.restype = CUresult
                    lib.cuLaunchKernel.argtypes = [
                        CUfunction,  # f
                        ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,  # gridDimX, gridDimY, gridDimZ
                        ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,  # blockDimX, blockDimY, blockDimZ
                        ctypes.c_uint,  # sharedMemBytes
                        CUstream,  # hStream
                        ctypes.POINTER(ctypes.c_void_p),  # kernelParams
                        ctypes.POINTER(ctypes.c_void_p),  # extra
                    ]
                    lib.cuLaunchKernel.restype = CUresult
                    lib.cuCtxSynchronize.argtypes = []
                    lib.cuCtxSynchronize.restype = CUresult
                    _check("cuInit", lib.cuInit(0))
                    self._lib = lib
        return self._lib

    # -- cuda_utils.load_binary (driver.c loadBinary): GIL released --------------------------
    def load_binary(self, name, image):
        mod = CUmodule()
        fun = CUfunction()
        _check("cuModuleLoadData", self.lib.cuModuleLoadData(ctypes.byref(mod), image))
        _check("cuModuleGetFunction", self.lib.cuModuleGetFunction(ctypes.byref(fun), mod, name.encode()))
        return mod, fun

    # -- cuda_utils.launch (driver.c launchKernel -> _launch): GIL released ---------------------
    def launch(self, function, grid, num_warps, shared=0, stream=None):
        gx, gy, gz = (tuple(grid) + (1, 1, 1))[:3]
        _check("cuLaunchKernel",
               self.lib.cuLaunchKernel(function, gx, gy, gz, 32 * num_warps, 1, 1, shared, stream, None, None))

    # -- torch.cuda.synchronize() -> cudaDeviceSynchronize -> cuCtxSynchronize: GIL released -------
    def synchronize(self):
        _check("cuCtxSynchronize", self.lib.cuCtxSynchronize())

    # -- the bits of CudaDriver that triton.testing.do_bench uses --------------------------------
    def get_benchmarker(self):
        from ..testing import do_bench
        return do_bench

    def get_device_interface(self):
        return self  # stands for torch.cuda: only .synchronize() is used

    def get_empty_cache_for_benchmark(self):
        return bytearray(256)  # stands for the 256 MB torch.empty used to flush L2

    def clear_cache(self, cache):
        cache[:] = bytes(len(cache))

    def get_current_target(self):
        return ("cuda", 90, 32)  # (backend, arch, warp size): part of check_disk_cache's key


class DriverConfig:

    def __init__(self):
        self.active = CudaDriver()


driver = DriverConfig()
