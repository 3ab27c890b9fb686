"""`pip install --no-build-isolation ./app/python` from the source tree, as docs/python.md
says, into a folder of its own: the installed package (not the build tree's) records the
README example, and its tape verifies and replays exact.

The install reuses this build's tree for the native part (ZKDV_NATIVE_BUILD_DIR), so the test
exercises pip, setup.py and the packaging without compiling the core a second time."""

import os
import subprocess
import sys

from conftest import assert_replays_exact

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_DIR = os.environ.get("ZKDV_BUILD_DIR")


def test_pip_installs_a_package_that_records_an_auditable_tape(tmp_path):
    assert BUILD_DIR, "ZKDV_BUILD_DIR names this build's tree (ctest sets it)"
    site = tmp_path / "site"
    environment = dict(os.environ, ZKDV_NATIVE_BUILD_DIR=BUILD_DIR, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    environment.pop("PYTHONPATH", None)
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--target", str(site),
         os.path.join(REPOSITORY, "app", "python")],
        env=environment, capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stdout + install.stderr

    native = [name for name in os.listdir(site / "zkdv") if name.startswith("_native") and name.endswith(".so")]
    assert len(native) == 1, os.listdir(site / "zkdv")
    assert (site / "zkdv" / "torch" / "proof.py").is_file()

    tape = tmp_path / "example.zkdv"
    example = os.path.join(REPOSITORY, "app", "python", "examples", "train_mlp.py")
    # -I: the script's folder and PYTHONPATH stay off sys.path, so only the installed package can be imported.
    run = subprocess.run(
        [sys.executable, "-I", "-c", "import sys; sys.path.insert(0, sys.argv.pop(1)); import zkdv; print('zkdv from', zkdv.__file__); "
         "import runpy; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')", str(site), example, str(tape)],
        capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "zkdv from " + str(site / "zkdv" / "__init__.py") in run.stdout, run.stdout
    assert_replays_exact(tmp_path, tape, 40)
