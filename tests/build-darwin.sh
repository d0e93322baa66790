#!/bin/sh
# Cross-builds the Darwin agent for the five Apple targets on this Linux
# host, with clang 19 and ld64.lld 19 against the SDK stand-in in
# tests/darwin-sdk, and checks that each gives a libstallwatch.dylib.
# (The Mach-O checks of what was built live beside, in their own test.)
#
# usage: build-darwin.sh SOURCE_ROOT OUTDIR [TARGET...]
# TARGET is a name of cross/linux-*.txt (ios-arm64, iossim-arm64,
# iossim-x86_64, macos-arm64, macos-x86_64); all five by default.
# Exits 77 (skipped) when the toolchain is missing.
set -eu
src=$1
out=$2
shift 2
targets=${*:-ios-arm64 iossim-arm64 iossim-x86_64 macos-arm64 macos-x86_64}
for t in clang-19 ld64.lld-19 llvm-ar-19 meson ninja; do
	if ! command -v "$t" >/dev/null 2>&1; then
		echo "SKIP: $t not found: the Darwin cross builds need clang 19 and ld64.lld 19"
		exit 77
	fi
done
# a library path meant for the host must not leak into the Apple links
unset LIBRARY_PATH
mkdir -p "$out"
fail=0
for t in $targets; do
	dir=$out/$t
	if [ ! -f "$dir/build.ninja" ]; then
		rm -rf "$dir"
		meson setup --werror --cross-file "$src/cross/linux-$t.txt" "$dir" "$src" >"$out/$t.log" 2>&1 ||
			{ echo "FAIL: $t: meson setup (see $out/$t.log)"; fail=1; continue; }
	fi
	if ! ninja -C "$dir" >>"$out/$t.log" 2>&1; then
		echo "FAIL: $t: build (see $out/$t.log)"
		tail -20 "$out/$t.log"
		fail=1
		continue
	fi
	if [ ! -f "$dir/injector/libstallwatch.dylib" ]; then
		echo "FAIL: $t: no libstallwatch.dylib"
		fail=1
		continue
	fi
	echo "ok: $t: $dir/injector/libstallwatch.dylib"
done
exit $fail
