"""The extension as built by the root CMake project (python/CMakeLists.txt):
it exports its module init only, so the static library inside it cannot
clash with another copy of libquiver in the same process."""
import shutil
import subprocess

import pytest

import quiver


def test_extension_exports_only_its_init():
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    out = subprocess.run([nm, "-D", "--defined-only", quiver._quiver.__file__],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    exported = sorted(line.split()[-1] for line in out.splitlines() if line.strip())
    assert exported == ["PyInit__quiver"], exported[:20]


def test_library_version_matches_the_package():
    assert quiver.library_version == quiver.__version__
