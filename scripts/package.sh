#!/bin/sh
# SPDX-License-Identifier: MIT
# The Debian package, from a clean tree, in one command: a release build installed under
# /usr (Debian's multiarch library directory), packed by CPack. Prints the .deb's path.
# Usage: scripts/package.sh [build-dir]   (needs cmake, a C compiler, dpkg-dev; no root)
set -eu
cd "$(dirname "$0")/.."
build=${1:-build-package}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr -DBUILD_TESTING=OFF > /dev/null
cmake --build "$build" -j"$(nproc)" > "$build.log" 2>&1 || { cat "$build.log"; exit 1; }
(cd "$build" && cpack -G DEB > cpack.log 2>&1) || { cat "$build/cpack.log"; exit 1; }
ls "$(pwd)/$build"/netdirect_*.deb
