"""A PEP 517 build backend for nsystrace: builds the SQLite extension with CMake and packs it, with the Python glue
of ext/python/nsystrace, into a wheel. Standard library only, so `pip install .` needs nothing from PyPI. The one
download is the serve page's charting library, which `npm ci` fetches at the version and integrity pinned in
ext/python/charts/package-lock.json (ext/python/charts/vendor.cmake); without npm, or offline, the package is built
all the same and its page works without charts, saying why.

The wheel is tagged py3-none-<platform>: the .so is loaded by SQLite, not imported by Python, so any Python 3 on
the platform can use it. NSYSTRACE_BUILD_DIR (environment) names the CMake build directory to use (default:
build/python-wheel in the source tree); an existing, configured one is only brought up to date.
"""
import base64
import hashlib
import os
import re
import subprocess
import sysconfig
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "ext", "python", "nsystrace")


def _version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:  # the one place the version is written
        return re.search(r"project\(nsystrace VERSION ([0-9.]+)", f.read()).group(1)


def _tag():
    return "py3-none-" + sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _build_extension():
    """Builds the extension and vendors the page's charting library (CMake's page_charts target: npm ci from
    ext/python/charts/package-lock.json; without npm, a note saying why). Returns the build directory."""
    build = os.environ.get("NSYSTRACE_BUILD_DIR") or os.path.join(ROOT, "build", "python-wheel")
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        subprocess.run(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DNSYSTRACE_TESTS=OFF"],
                       check=True)
    # One target a call: a build directory configured before page_charts existed learns of it while the first call
    # brings it up to date (make reads its rules once per call).
    for target in ("nsystrace", "page_charts"):
        subprocess.run(["cmake", "--build", build, "--target", target, "-j", str(os.cpu_count() or 1)], check=True)
    return build


def _metadata():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return (f"Metadata-Version: 2.1\nName: nsystrace\nVersion: {_version()}\n"
            "Summary: NVIDIA Nsight Systems profiles to Perfetto traces, and the same timeline in SQL\n"
            "Requires-Python: >=3.8\nDescription-Content-Type: text/markdown\n\n" + readme)


def _dist_info():
    return f"nsystrace-{_version()}.dist-info"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = os.path.join(metadata_directory, _dist_info())
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    return _dist_info()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    build = _build_extension()
    so = os.path.join(build, "nsystrace.so")
    files = {}  # path in the wheel -> bytes
    for name in sorted(os.listdir(PACKAGE)):
        if name.endswith(".py") or name.endswith(".html"):
            with open(os.path.join(PACKAGE, name), "rb") as f:
                files[f"nsystrace/{name}"] = f.read()
    with open(so, "rb") as f:
        files["nsystrace/nsystrace.so"] = f.read()
    # The recipes the serve page and `nsystrace stats` run.
    for sub in ("sql", "sql/nsys_stats"):
        for name in sorted(os.listdir(os.path.join(ROOT, sub))):
            if name.endswith(".sql"):
                with open(os.path.join(ROOT, sub, name), "rb") as f:
                    files[f"nsystrace/{sub}/{name}"] = f.read()
    # The page's charting library (server.py serves it from nsystrace/vendor/), or the note saying why it is not there.
    charts = os.path.join(build, "page_charts")
    for name in ("chart.umd.min.js", "chart.js-LICENSE.md", "chart.js-version.txt", "charts-missing.txt"):
        if os.path.exists(os.path.join(charts, name)):
            with open(os.path.join(charts, name), "rb") as f:
                files[f"nsystrace/vendor/{name}"] = f.read()
    info = _dist_info()
    files[f"{info}/METADATA"] = _metadata().encode()
    files[f"{info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: nsystrace build_backend\nRoot-Is-Purelib: false\n"
                              f"Tag: {_tag()}\n").encode()
    files[f"{info}/entry_points.txt"] = b"[console_scripts]\nnsystrace = nsystrace.cli:main\n"
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = f"nsystrace-{_version()}-{_tag()}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            info_z = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            info_z.external_attr = (0o755 if path.endswith(".so") else 0o644) << 16
            z.writestr(info_z, data, zipfile.ZIP_DEFLATED)
    return wheel


def build_sdist(sdist_directory, config_settings=None):
    raise NotImplementedError("nsystrace has no sdist: install from a clone (pip install .)")
