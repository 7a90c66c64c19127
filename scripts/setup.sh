#!/usr/bin/env bash
# Installs whatever the build and the tests need and is not yet on the machine.
# Safe to run repeatedly: every step checks first and does nothing when satisfied.
set -euo pipefail

need_deb=()
have_deb() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for pkg in build-essential cmake pkg-config libzstd-dev liblz4-dev libxxhash-dev \
           libcmocka-dev clang-14 libclang-rt-14-dev; do
    have_deb "$pkg" || need_deb+=("$pkg")
done
if [ ${#need_deb[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${need_deb[*]}"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_deb[@]}" >/dev/null
fi
