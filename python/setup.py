"""Builds quiver._quiver, a CPython extension, from the library's C sources.

`pip install ./python` builds in-tree, so the library sources are taken from
../core (a glob of core/src/*/*.c, as core/CMakeLists.txt does) and compiled
into the extension itself: no separately installed libquiver is needed. The
system libraries the core links (zstd, lz4, xxhash) come from the Debian -dev
packages that scripts/setup.sh installs.
"""
import glob
import os
import platform
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
CORE = os.path.normpath(os.path.join(HERE, "..", "core"))

if not os.path.isdir(os.path.join(CORE, "src")):
    sys.exit("quiver: the C library sources (../core/src) were not found; "
             "install from a checkout of the Quiver repository")

# setuptools wants source paths relative to this directory.
os.chdir(HERE)
sources = sorted(os.path.relpath(p) for p in glob.glob(os.path.join(CORE, "src", "*", "*.c")))
sources.append(os.path.join("src", "_quiver.c"))

extra = ["-std=c11", "-O3", "-D_GNU_SOURCE", "-fvisibility=hidden",
         "-Wno-unused-parameter", "-Wno-missing-field-initializers"]
if platform.machine() in ("x86_64", "AMD64") and os.environ.get("QUIVER_PORTABLE") != "1":
    # The same baseline as the CMake release build (SSE4.2, POPCNT).
    extra.append("-march=x86-64-v2")
if os.environ.get("QUIVER_DEBUG") == "1":
    extra += ["-O0", "-g", "-UNDEBUG"]

class BuildExt(build_ext):
    """Adds the library sources at build time: setuptools refuses source
    paths outside the project directory in setup() arguments (it puts them
    in the sdist manifest), but compiles them happily."""

    def build_extension(self, ext):
        ext.sources = sources
        super().build_extension(ext)


ext = Extension(
    "quiver._quiver",
    sources=[os.path.join("src", "_quiver.c")],
    include_dirs=[os.path.relpath(os.path.join(CORE, "include")),
                  os.path.relpath(os.path.join(CORE, "src"))],
    libraries=["zstd", "lz4", "xxhash", "m", "pthread"],
    extra_compile_args=extra,
)

setup(ext_modules=[ext], cmdclass={"build_ext": BuildExt})
