#!/bin/sh
# SPDX-License-Identifier: MIT
# Build the ND SDK's examples and unit tests (an unmodified checkout of
# microsoft/NetworkDirect) against netdirect's ND provider library, one line per program.
#
#   scripts/nd-sdk-build.sh SDK_DIR OUT_DIR [BUILD_DIR]
#
# With BUILD_DIR (a netdirect cmake build tree) the programs use that tree and its sources'
# headers; without it, the installed library through `pkg-config netdirect-spi`.
# CXX picks the compiler (default c++). Exit status: 0 when every program built.
set -u
[ $# -ge 2 ] || { echo "usage: $0 SDK_DIR OUT_DIR [BUILD_DIR]" >&2; exit 2; }
sdk=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" && out=$(cd "$2" && pwd) || exit 2
cxx=${CXX:-c++}
here=$(cd "$(dirname "$0")/.." && pwd)

if [ $# -ge 3 ]; then
    build=$(cd "$3" && pwd) || exit 2
    cflags="-I$here/include -I$here/include/ndspi -DUNICODE -D_UNICODE"
    libs="-L$build/src/spi -L$build/src -Wl,-rpath,$build/src/spi -Wl,-rpath,$build/src
          -lnetdirect-spi -lnetdirect-spi-wmain -lnetdirect"
else
    cflags=$(pkg-config --cflags netdirect-spi) || exit 2
    libdir=$(pkg-config --variable=libdir netdirect-spi)
    libs="$(pkg-config --libs netdirect-spi) -Wl,-rpath,$libdir"
fi

ex=$sdk/src/examples
ut=$sdk/src/unittests
[ -f "$ex/ndtestutil/ndtestutil.cpp" ] || { echo "$sdk: not a NetworkDirect checkout" >&2; exit 2; }

# Windows-only pragmas (#pragma warning) are the one warning class switched off; the
# rest of -Wall is reported, as the count on each line.
flags="-std=gnu++17 -O2 -g -pthread -Wall -Wno-unknown-pragmas"
# ndrpingpong waits for a peer's RDMA Write by spinning on a plain (not volatile) byte,
# which MSVC reloads on every pass. g++ would delete the loop (C++'s forward-progress rule)
# or read the byte once; these keep a load in each pass, as the program expects.
flags="$flags -fno-finite-loops -fno-tree-loop-im -fno-move-loop-invariants -fno-tree-pre -fno-gcse"
# Our headers come first, so <ndsupport.h> is ours, not the SDK's copy in examples/.
incs="$cflags -I$ex -I$ex/ndtestutil"

failed=0
build_one() {   # name, directory, sources...
    name=$1 dir=$2
    shift 2
    log=$out/$name.log
    # shellcheck disable=SC2086
    if $cxx $flags $incs -I"$dir" "$@" "$ex/ndtestutil/ndtestutil.cpp" $libs -o "$out/$name" \
            > "$log" 2>&1; then
        echo "$name: built ($(grep -c 'warning:' "$log") warnings)"
    else
        echo "$name: FAILED ($(grep -c 'error' "$log") errors, see $log)"
        failed=$((failed + 1))
    fi
}

for p in ndadapterinfo ndcat ndmrlat ndmrrate ndping ndpingpong ndrping ndrpingpong; do
    build_one "$p" "$ex/$p" "$ex/$p/$p.cpp"
done
for p in ndconn ndcq ndmpic ndmval ndmw; do
    build_one "$p" "$ut/$p" "$ut/$p/$p.cpp"
done
# shellcheck disable=SC2046
build_one ndmemorytest "$ut/ndmemorytest" $(ls "$ut"/ndmemorytest/*.cpp)
[ "$failed" -eq 0 ]
