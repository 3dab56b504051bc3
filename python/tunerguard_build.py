"""In-tree PEP 517 build backend of tunerguard: the CMake build, packed as a wheel.

pyproject.toml names this module (backend-path = ["python"]).  It needs only
the standard library, cmake and a C compiler: no setuptools, no wheel, no
network, so `pip install .` works offline with or without build isolation.

build_wheel:
  1. cmake configures a fresh build tree in a temporary directory (tests off,
     the stand-in libcuda.so.1 on: `tunerguard repro` runs the CPU
     reproducers), builds the library, the command, the man page and the
     stand-in, and `cmake --install`s them into a staging prefix;
  2. the wheel holds the package python/tunerguard/ with, beside its
     __init__.py, libtunerguard.so (with libtunerguard_core.so, which it
     loads from beside itself) and the tunerguard binary from that
     prefix (the binary finds the library next to itself), the reproducers
     (tests/repro, tests/gpu/triton_races.py, the stand-in libcuda), and the
     man page as data (share/man/man1/tunerguard.1 under the environment);
     entry_points.txt names the console script and the pytest plugin
     (pytest11: tunerguard.pytest_plugin, inactive unless asked).
The tag is py3-none-<platform>: one binary serves every CPython 3.9-3.15, but
it is native code.  The platform is manylinux_2_N_<arch> where N is the
highest GLIBC_2.N symbol version the ELF files need (readelf), so pip refuses
it on an older glibc instead of the loader failing later; linux_<arch>
without readelf.  TG_WHEEL_GLIBC=2.28 (tools/dev wheel, built in a Debian 11
root) tags it manylinux_2_28 instead, and fails the build, naming the
symbols, where a file needs a newer glibc.
"""
import base64
import hashlib
import io
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG_SRC = os.path.join(ROOT, "python", "tunerguard")

# Source files shipped for `tunerguard repro` (paths under the package mirror
# the source tree: the command looks for tests/repro and tests/gpu there;
# run_repro.py reads its GIL regimes from tests/free_threaded).
REPRO_TREES = ["tests/repro/model", "tests/repro/scenarios", "tests/repro/standin", "tests/free_threaded"]
REPRO_FILES = ["tests/repro/run_repro.py", "tests/repro/README.md", "tests/gpu/triton_races.py"]


# ---- metadata ---------------------------------------------------------------

def _read_project():
    """The [project] table of pyproject.toml (tomllib on 3.11+, else a reader
    of the flat `key = "string"` lines this file uses)."""
    path = os.path.join(ROOT, "pyproject.toml")
    try:
        import tomllib
        with open(path, "rb") as f:
            return tomllib.load(f)["project"]
    except ImportError:
        pass
    project, table = {}, None
    with open(path, encoding="utf-8") as f:
        for raw in f:
            s = raw.strip()
            if s.startswith("["):
                table = s.strip("[]").strip()
                if table.startswith("project."):
                    project.setdefault(table[len("project."):], {})
                continue
            m = re.match(r'^([A-Za-z0-9_.-]+|"[^"]+")\s*=\s*"([^"]*)"\s*$', s)
            if not m or not table or not table.startswith("project"):
                continue
            key = m.group(1).strip('"')
            if table == "project":
                project[key] = m.group(2)
            else:
                project[table[len("project."):]][key] = m.group(2)
    return project


def _dist_name(project):
    return re.sub(r"[-_.]+", "_", project["name"]).lower()


def _metadata_text(project):
    lines = ["Metadata-Version: 2.1", "Name: %s" % project["name"], "Version: %s" % project["version"]]
    if project.get("description"):
        lines.append("Summary: %s" % project["description"])
    if project.get("requires-python"):
        lines.append("Requires-Python: %s" % project["requires-python"])
    lic = project.get("license")
    if isinstance(lic, dict) and lic.get("text"):
        lines.append("License: %s" % lic["text"])
    for label, url in sorted(project.get("urls", {}).items()):
        lines.append("Project-URL: %s, %s" % (label, url))
    return "\n".join(lines) + "\n"


def _entry_points(project):
    """{group: {name: target}}: [project.scripts] as console_scripts, and each
    [project.entry-points.<group>] (pytest11: the pytest plugin)."""
    groups = {}
    if project.get("scripts"):
        groups["console_scripts"] = project["scripts"]
    for group, table in (project.get("entry-points") or {}).items():  # tomllib
        groups[group] = table
    for key, table in project.items():  # the line reader's "entry-points.<group>"
        if key.startswith("entry-points.") and isinstance(table, dict):
            groups[key[len("entry-points."):]] = table
    return groups


def _entry_points_text(project):
    return "".join("[%s]\n%s\n" % (group, "".join("%s = %s\n" % kv for kv in sorted(table.items())))
                   for group, table in sorted(_entry_points(project).items()))


def _dist_info_files(project, tag):
    """(name, bytes) of the .dist-info directory, RECORD aside."""
    files = [("METADATA", _metadata_text(project).encode())]
    if tag:
        files.append(("WHEEL", ("Wheel-Version: 1.0\nGenerator: tunerguard_build (in-tree)\n"
                                "Root-Is-Purelib: false\nTag: %s\n" % tag).encode()))
    ep = _entry_points_text(project)
    if ep:
        files.append(("entry_points.txt", ep.encode()))
    files.append(("top_level.txt", b"tunerguard\n"))
    return files


# ---- the CMake build --------------------------------------------------------

def _run(cmd, **kw):
    print("tunerguard_build: " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def _cmake_build(tmp):
    cmake = shutil.which("cmake")
    if not cmake:
        raise RuntimeError("tunerguard_build: building tunerguard needs cmake and a C compiler "
                           "(Debian: apt-get install cmake gcc make pkg-config libjansson-dev)")
    build, stage = os.path.join(tmp, "build"), os.path.join(tmp, "stage")
    _run([cmake, "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DTG_TESTS=OFF",
          "-DTG_FAKECUDA=ON", "-DCMAKE_INSTALL_PREFIX=" + stage, "-DCMAKE_INSTALL_LIBDIR=lib"])
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    _run([cmake, "--build", build, "--parallel", jobs, "--target", "tunerguard", "tunerguard_core", "tunerguard-cli",
          "tunerguard-man", "fakecuda"])
    _run([cmake, "--install", build, "--prefix", stage])
    out = {
        "lib": os.path.join(stage, "lib", "libtunerguard.so"),
        # the loader's core, found beside it at run time (loader/core_api.h)
        "core": os.path.join(stage, "lib", "libtunerguard_core.so"),
        "bin": os.path.join(stage, "bin", "tunerguard"),
        "man": os.path.join(stage, "share", "man", "man1", "tunerguard.1"),
        "fakecuda": os.path.join(build, "tests", "fakecuda", "libcuda.so.1"),
    }
    for what, path in out.items():
        if not os.path.isfile(path):
            raise RuntimeError("tunerguard_build: the CMake build made no %s (%s)" % (what, path))
    return out


def _check_version(binary, version):
    """The command's own version (tools/tunerguard.c) must be the package's."""
    got = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.split()
    if len(got) < 2 or got[1] != version:
        raise RuntimeError("tunerguard_build: pyproject.toml says version %s, the command says %r: "
                           "keep TG_VERSION in tools/tunerguard.c in step" % (version, " ".join(got)))


def _glibc_need(readelf, path):
    """(major, minor) of the newest glibc PATH needs: its GLIBC_2.N versions,
    2.36 for packed relocations (TG_RELR=ON: glibc 2.36 reads them)."""
    need = (2, 17)
    text = subprocess.run([readelf, "-V", "--wide", path], capture_output=True, text=True).stdout
    for major, minor in re.findall(r"Name: GLIBC_(\d+)\.(\d+)", text):
        need = max(need, (int(major), int(minor)))
    if "Name: GLIBC_ABI_DT_RELR" in text:
        need = max(need, (2, 36))
    return need


def _symbols_newer(readelf, path, limit):
    """The symbols PATH takes from a glibc newer than LIMIT, as name@GLIBC_2.N."""
    text = subprocess.run([readelf, "--dyn-syms", "--wide", path], capture_output=True, text=True).stdout
    found = re.findall(r"\bUND\s+(\S+@GLIBC_(\d+)\.(\d+))", text)
    return sorted({name for name, major, minor in found if (int(major), int(minor)) > limit})


def _pinned_glibc():
    """TG_WHEEL_GLIBC=2.N (tools/dev wheel): the glibc the wheel is tagged for,
    or None (the tag is what the files need)."""
    want = os.environ.get("TG_WHEEL_GLIBC")
    if not want:
        return None
    m = re.match(r"^(\d+)\.(\d+)$", want)
    if not m:
        raise RuntimeError("tunerguard_build: TG_WHEEL_GLIBC=%r is not a glibc version like 2.28" % want)
    return int(m.group(1)), int(m.group(2))


def _platform_tag(elves):
    """manylinux_2_N_<arch>: N the newest glibc the files need, or the one
    TG_WHEEL_GLIBC pins, where every file needs nothing newer (else the
    build fails naming the symbols)."""
    arch = platform.machine()
    if not sys.platform.startswith("linux"):
        raise RuntimeError("tunerguard_build: tunerguard is a Linux preload library")
    readelf = shutil.which("readelf")
    pinned = _pinned_glibc()
    if not readelf:
        if pinned:
            raise RuntimeError("tunerguard_build: TG_WHEEL_GLIBC needs readelf (binutils) to check the files")
        return "linux_" + arch
    need = max(_glibc_need(readelf, path) for path in elves)
    if pinned:
        if need > pinned:
            newer = ["%s: %s" % (os.path.basename(p), " ".join(_symbols_newer(readelf, p, pinned)) or "packed relocations")
                     for p in elves if _glibc_need(readelf, p) > pinned]
            raise RuntimeError("tunerguard_build: TG_WHEEL_GLIBC=%d.%d but the build needs glibc %d.%d: %s"
                               % (pinned + need + ("; ".join(newer),)))
        need = pinned
    return "manylinux_%d_%d_%s" % (need[0], need[1], arch)


# ---- the wheel --------------------------------------------------------------

def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


class _Wheel:
    def __init__(self, path):
        self.zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self.records = []
        self.when = time.gmtime(int(os.environ.get("SOURCE_DATE_EPOCH", time.time())))[:6]

    def add(self, name, data, mode=0o644, record=True):
        info = zipfile.ZipInfo(name, date_time=max(self.when, (1980, 1, 1, 0, 0, 0)))
        info.external_attr = (0o100000 | mode) << 16  # pip keeps the execute bits
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        if record:
            self.records.append(_record_line(name, data))

    def add_file(self, name, path, mode=None):
        with open(path, "rb") as f:
            data = f.read()
        if mode is None:
            mode = 0o755 if os.stat(path).st_mode & 0o111 else 0o644
        self.add(name, data, mode)

    def close(self, record_name):
        self.records.append("%s,," % record_name)
        self.add(record_name, ("\n".join(self.records) + "\n").encode(), record=False)
        self.zip.close()


def _package_sources():
    """(name in the wheel, source path) of the Python package and the reproducers."""
    out = []
    for name in sorted(os.listdir(PKG_SRC)):
        if name.endswith(".py"):
            out.append(("tunerguard/" + name, os.path.join(PKG_SRC, name)))
    for tree in REPRO_TREES:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, tree)):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for fn in sorted(filenames):
                if fn.endswith(".pyc"):
                    continue
                path = os.path.join(dirpath, fn)
                out.append(("tunerguard/" + os.path.relpath(path, ROOT).replace(os.sep, "/"), path))
    for rel in REPRO_FILES:
        out.append(("tunerguard/" + rel, os.path.join(ROOT, rel)))
    return out


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = _read_project()
    name, version = _dist_name(project), project["version"]
    tmp = tempfile.mkdtemp(prefix="tunerguard-wheel-")
    try:
        built = _cmake_build(tmp)
        _check_version(built["bin"], version)
        tag = "py3-none-" + _platform_tag([built["lib"], built["core"], built["bin"], built["fakecuda"]])
        wheel_name = "%s-%s-%s.whl" % (name, version, tag)
        os.makedirs(wheel_directory, exist_ok=True)
        whl = _Wheel(os.path.join(wheel_directory, wheel_name))
        for arc, path in _package_sources():
            whl.add_file(arc, path, 0o644)
        whl.add_file("tunerguard/libtunerguard.so", built["lib"], 0o755)
        whl.add_file("tunerguard/libtunerguard_core.so", built["core"], 0o755)
        whl.add_file("tunerguard/tunerguard", built["bin"], 0o755)
        whl.add_file("tunerguard/tests/fakecuda/libcuda.so.1", built["fakecuda"], 0o755)
        data = "%s-%s.data/data/" % (name, version)
        whl.add_file(data + "share/man/man1/tunerguard.1", built["man"], 0o644)
        dist_info = "%s-%s.dist-info/" % (name, version)
        for fn, content in _dist_info_files(project, tag):
            whl.add(dist_info + fn, content)
        whl.close(dist_info + "RECORD")
        return wheel_name
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    project = _read_project()
    dist_info = "%s-%s.dist-info" % (_dist_name(project), project["version"])
    path = os.path.join(metadata_directory, dist_info)
    os.makedirs(path, exist_ok=True)
    for fn, content in _dist_info_files(project, None):
        with open(os.path.join(path, fn), "wb") as f:
            f.write(content)
    return dist_info


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


# ---- the sdist ----------------------------------------------------------------

def _source_files():
    """The tracked files when this is a git checkout, else the tree without
    build outputs."""
    if os.path.isdir(os.path.join(ROOT, ".git")) and shutil.which("git"):
        r = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True)
        if r.returncode == 0:
            return sorted(p for p in r.stdout.decode().split("\0") if p and os.path.isfile(os.path.join(ROOT, p)))
    out = []
    skip = re.compile(r"^(build|build-.*|\.git|\.whl|\.carry|tunerguard-demo|dist)$")
    for dirpath, dirnames, filenames in os.walk(ROOT):
        rel = os.path.relpath(dirpath, ROOT)
        dirnames[:] = sorted(d for d in dirnames
                             if not (rel == "." and skip.match(d)) and d != "__pycache__")
        for fn in sorted(filenames):
            if not fn.endswith(".pyc"):
                out.append(os.path.normpath(os.path.join(rel, fn)))
    return out


def build_sdist(sdist_directory, config_settings=None):
    project = _read_project()
    base = "%s-%s" % (_dist_name(project), project["version"])
    os.makedirs(sdist_directory, exist_ok=True)
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in _source_files():
            tar.add(os.path.join(ROOT, rel), arcname=base + "/" + rel, recursive=False)
        pkg_info = _metadata_text(project).encode()
        info = tarfile.TarInfo(base + "/PKG-INFO")
        info.size, info.mtime, info.mode = len(pkg_info), int(time.time()), 0o644
        tar.addfile(info, io.BytesIO(pkg_info))
    return base + ".tar.gz"
