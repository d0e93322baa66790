#!/bin/sh
# Assembles Stallwatch.xcframework from the Darwin agent: one dynamic
# Stallwatch.framework per platform (iOS devices arm64; the iOS simulator
# arm64 + x86_64 as one universal binary; macOS arm64 + x86_64), each with
# its Info.plist, the public header and a module map, and the
# XCFramework's Info.plist listing them as Xcode reads them.
#
# usage: make-xcframework.sh SOURCE_ROOT OUTDIR PLIST_TOOL VERSION [BUILDS]
# BUILDS holds one cross build per target (ios-arm64, iossim-arm64,
# iossim-x86_64, macos-arm64, macos-x86_64); missing ones are set up with
# the cross files in cross/: cross/darwin-*.txt with Xcode's SDKs on a Mac
# (where xcrun exists), cross/linux-*.txt against the SDK stand-in
# elsewhere.  Exits 77 when the toolchain is missing.
set -eu
src=$(cd "$1" && pwd)
out=$2
plist=$3
version=$4
builds=${5:-$out.builds}
targets="ios-arm64 iossim-arm64 iossim-x86_64 macos-arm64 macos-x86_64"

if command -v xcrun >/dev/null 2>&1; then
	host=darwin
	lipo=lipo
else
	host=linux
	lipo=llvm-lipo-19
	for t in clang-19 ld64.lld-19 llvm-lipo-19 meson ninja; do
		command -v "$t" >/dev/null 2>&1 ||
			{ echo "SKIP: $t not found: the Darwin builds need clang 19 and ld64.lld 19"; exit 77; }
	done
fi
unset LIBRARY_PATH

sdk_of() {
	case $1 in
	ios-*) echo iphoneos ;;
	iossim-*) echo iphonesimulator ;;
	*) echo macosx ;;
	esac
}

build() {
	dir=$builds/$1
	if [ ! -f "$dir/build.ninja" ]; then
		rm -rf "$dir"
		if [ $host = darwin ]; then
			meson setup --cross-file "$src/cross/darwin-$1.txt" \
				-Ddarwin_sdk="$(xcrun --sdk "$(sdk_of "$1")" --show-sdk-path)" "$dir" "$src"
		else
			meson setup --cross-file "$src/cross/linux-$1.txt" "$dir" "$src"
		fi >"$builds/$1.log" 2>&1 || { echo "meson setup failed for $1: see $builds/$1.log"; exit 1; }
	fi
	ninja -C "$dir" >>"$builds/$1.log" 2>&1 ||
		{ echo "build failed for $1: see $builds/$1.log"; tail -20 "$builds/$1.log"; exit 1; }
}

mkdir -p "$builds"
for t in $targets; do build "$t"; done

# framework DIR PLATFORM MIN_OS VERSIONED BINARY...: one Stallwatch.framework;
# MIN_OS is the lowest the cross files target for its slices
framework() {
	dir=$1 platform=$2 min_os=$3 versioned=$4
	shift 4
	rm -rf "$dir"
	if [ "$versioned" = yes ]; then
		# macOS frameworks are versioned bundles: Versions/A with symlinks
		top=$dir
		dir=$top/Versions/A
		mkdir -p "$dir/Resources"
		ln -s A "$top/Versions/Current"
		for f in Stallwatch Headers Modules Resources; do
			ln -s "Versions/Current/$f" "$top/$f"
		done
		info=$dir/Resources/Info.plist
	else
		mkdir -p "$dir"
		info=$dir/Info.plist
	fi
	mkdir -p "$dir/Headers" "$dir/Modules"
	if [ $# -eq 1 ]; then
		cp "$1" "$dir/Stallwatch"
	else
		$lipo -create "$@" -output "$dir/Stallwatch"
	fi
	cp "$src/injector/stallwatch.h" "$dir/Headers/stallwatch.h"
	cp "$src/injector/darwin/xcframework/module.modulemap" "$dir/Modules/module.modulemap"
	"$plist" framework "$info" "$platform" "$min_os" "$version"
}

bin() { echo "$builds/$1/injector/Stallwatch.dylib"; }
xc=$out/Stallwatch.xcframework
rm -rf "$xc"
mkdir -p "$xc"
framework "$xc/ios-arm64/Stallwatch.framework" iPhoneOS 14.0 no "$(bin ios-arm64)"
framework "$xc/ios-arm64_x86_64-simulator/Stallwatch.framework" iPhoneSimulator 14.0 no \
	"$(bin iossim-arm64)" "$(bin iossim-x86_64)"
framework "$xc/macos-arm64_x86_64/Stallwatch.framework" MacOSX 10.15 yes \
	"$(bin macos-arm64)" "$(bin macos-x86_64)"
"$plist" xcframework "$xc/Info.plist" \
	ios-arm64:ios:arm64 \
	ios-arm64_x86_64-simulator:ios:simulator:arm64,x86_64 \
	macos-arm64_x86_64:macos:arm64,x86_64
echo "$xc"
