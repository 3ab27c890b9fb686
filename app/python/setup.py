"""Builds zkdv._native with the project's CMake (the repository two folders up) against the
installing interpreter's torch, and puts it beside the pure-Python package."""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def torch_python_option():
    """-DZKDV_TORCH_PYTHON for a torch that ships its own libtorch (PyPI's); none for
    Debian's python3-torch, whose libtorch is the system's libtorch-dev."""
    try:
        import torch.utils
    except ImportError as error:
        raise SystemExit(
            "zkdv is built against the installed torch, which this build cannot import (%s); install torch first "
            "and run pip install --no-build-isolation ./app/python" % error
        )
    prefix = torch.utils.cmake_prefix_path
    if os.path.exists(os.path.join(prefix, "Torch", "TorchConfig.cmake")):
        return ["-DZKDV_TORCH_PYTHON=" + sys.executable]
    return []


class CMakeBuild(build_ext):
    def build_extension(self, extension):
        if not os.path.exists(os.path.join(ROOT, "CMakeLists.txt")):
            raise SystemExit("setup.py builds from the ZKDV source tree; %s has no CMakeLists.txt" % ROOT)
        # One build folder per environment (a venv's python links to the system's, so the
        # prefix tells them apart) under the tree's ignored /build*/, reused by later installs.
        key = hashlib.sha256((sys.prefix + "\0" + sys.executable).encode()).hexdigest()[:12]
        build = os.environ.get("ZKDV_NATIVE_BUILD_DIR")
        if build:
            # A build tree of this source configured already for this interpreter's torch (the
            # test suite installs from its own): only the native target is brought up to date.
            if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
                raise SystemExit("ZKDV_NATIVE_BUILD_DIR=%s is not a configured CMake build tree" % build)
        else:
            build = os.path.join(ROOT, "build-pip-" + key)
            configure = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DZKDV_BUILD_UI=OFF",
                         "-DZKDV_BUILD_TESTS=OFF", "-DZKDV_BUILD_PYTHON=ON"] + torch_python_option()
            if shutil.which("ninja"):
                configure += ["-G", "Ninja"]
            subprocess.check_call(configure)
        subprocess.check_call(["cmake", "--build", build, "--target", "zkdv-python-native", "--parallel",
                               os.environ.get("ZKDV_BUILD_JOBS", "2")])
        built = os.path.join(build, "python", "zkdv")
        native = [name for name in os.listdir(built) if name.startswith("_native") and name.endswith(".so")]
        if len(native) != 1:
            raise SystemExit("the CMake build left %s in %s, not one _native module" % (native, built))
        target = self.get_ext_fullpath(extension.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(built, native[0]), target)


# setuptools stages the package in a build folder and lists its files in an egg-info folder,
# both reused; in the source tree a module since removed would be installed all the same.
# Stage each install afresh instead (and leave the source tree clean).
_staging = tempfile.TemporaryDirectory(prefix="zkdv-setup-")

setup(
    ext_modules=[Extension("zkdv._native", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": os.path.join(_staging.name, "build")}, "egg_info": {"egg_base": _staging.name}},
)
