"""Model of triton/runtime/cache.py: the file cache manager that
Autotuner.check_disk_cache keeps its `<kernel>.autotune.json` in.

One directory per key under TRITON_CACHE_DIR (else ~/.triton/cache, as
upstream); get_file answers the path of a present file, put writes through a
temporary file and a rename, so a reader never sees half a file.  The file
I/O lets the GIL go, as upstream's does (anatomy note §1.8, G6).
"""
import os
import uuid

from .. import _model


def _cache_root():
    return os.environ.get("TRITON_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".triton", "cache")


class FileCacheManager:

    def __init__(self, key):
        self.key = key
        self.cache_dir = os.path.join(_cache_root(), key)
        os.makedirs(self.cache_dir, exist_ok=True)

    def _make_path(self, filename):
        return os.path.join(self.cache_dir, filename)

    def get_file(self, filename):
        path = self._make_path(filename)
        return path if os.path.exists(path) else None

    def put(self, data, filename, binary=True):
        path = self._make_path(filename)
        tmp = f"{path}.tmp.{os.getpid()}.{uuid.uuid4().hex}"
        with open(tmp, "wb" if binary else "w") as f:
            f.write(data)
        os.replace(tmp, path)
        return path


def get_cache_manager(key):
    return FileCacheManager(key)


def triton_key():
    """Upstream hashes Triton's own sources; the model's version string will do."""
    return f"triton-model-{_model.VERSIONS[_model.TAG]}"
