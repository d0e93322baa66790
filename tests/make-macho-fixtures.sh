#!/bin/sh
# Builds the Mach-O fixtures for test-macho and test-symsearch from
# tests/data/macho with clang's Apple targets, ld64.lld, llvm-lipo, llvm-strip
# and dsymutil, and records independent facts about them with llvm-nm,
# llvm-objdump and llvm-dwarfdump.
#
# usage: make-macho-fixtures.sh SRCDIR OUTDIR [STAMPFILE]
# Writes OUTDIR/STAMP last; when a tool is missing it writes OUTDIR/SKIP
# with the reason instead, and the tests skip.
set -eu
src=$1
out=$2
stamp=${3:-}
mkdir -p "$out"
case $stamp in ""|/*) ;; *) stamp=$PWD/$stamp ;; esac
rm -f "$out/SKIP" "$out/STAMP"

V=19
CLANG=clang-$V
LD=ld64.lld-$V
LD14=ld64.lld-14
LIPO=llvm-lipo-$V
STRIP=llvm-strip-$V
DSYMUTIL=dsymutil-$V
NM=llvm-nm-$V
OBJDUMP=llvm-objdump-$V
DWARFDUMP=llvm-dwarfdump-$V

for t in $CLANG $LD $LD14 $LIPO $STRIP $DSYMUTIL $NM $OBJDUMP $DWARFDUMP; do
	if ! command -v "$t" >/dev/null 2>&1; then
		echo "missing $t" >"$out/SKIP"
		[ -z "$stamp" ] || touch "$stamp"
		exit 0
	fi
done

cd "$out"
cp "$src/libSystem.tbd" .
cflags="-nostdlibinc -O1 -fno-exceptions -fno-rtti -fno-asynchronous-unwind-tables"

# compile TARGET TAG DWARFVERSION: objects TAG-app.o TAG-cxx.o TAG-lib.o
compile() {
	$CLANG -target "$1" $cflags -gdwarf-$3 -c "$src/app.c" -o "$2-app.o"
	$CLANG -target "$1" $cflags -gdwarf-$3 -c "$src/cxx.cpp" -o "$2-cxx.o"
	$CLANG -target "$1" $cflags -gdwarf-$3 -c "$src/lib.c" -o "$2-lib.o"
}

# link LINKER ARCH PLATFORM OUTPUT TAG [FLAGS...]: the app executable
link() {
	ld=$1 arch=$2 plat=$3 o=$4 tag=$5
	shift 5
	$ld -arch "$arch" -platform_version "$plat" 14.0 14.0 -o "$o" "$tag-app.o" "$tag-cxx.o" \
		libSystem.tbd -e _main "$@"
}

compile arm64-apple-ios14.0 arm64 5
compile x86_64-apple-ios14.0-simulator x86_64 5
compile arm64-apple-ios14.0 arm64d4 4

# arm64: lld-19 defaults (chained fixups, LC_DYLD_EXPORTS_TRIE) and variants.
link $LD arm64 ios app-arm64 arm64
link $LD arm64 ios app-arm64-nochain arm64 -no_fixup_chains
link $LD14 arm64 ios app-arm64-lld14 arm64d4
link $LD arm64 ios app-arm64-x arm64 -x
link $LD arm64 ios app-arm64-nofs arm64 -no_function_starts
link $LD arm64 ios app-arm64-d4 arm64d4
$STRIP -o app-arm64-stripped app-arm64
$STRIP -o app-arm64-lld14-stripped app-arm64-lld14
$DSYMUTIL -o app-arm64.dSYM app-arm64
$DSYMUTIL -o app-arm64-d4.dSYM app-arm64-d4

# x86_64 simulator, and universal files of both (32- and 64-bit fat headers).
link $LD x86_64 ios-simulator app-x86_64 x86_64
$DSYMUTIL -o app-x86_64.dSYM app-x86_64
$LIPO -create app-arm64 app-x86_64 -output app-universal
$LIPO -create app-arm64 app-x86_64 -fat64 -output app-universal64
# A universal dSYM: the two DWARF companions combined.
mkdir -p app-universal.dSYM/Contents/Resources/DWARF
$LIPO -create app-arm64.dSYM/Contents/Resources/DWARF/app-arm64 \
	app-x86_64.dSYM/Contents/Resources/DWARF/app-x86_64 \
	-output app-universal.dSYM/Contents/Resources/DWARF/app-universal

# A dylib, exported names only in the trie once stripped of everything else.
$LD -arch arm64 -platform_version ios 14.0 14.0 -dylib -install_name @rpath/libfix.dylib \
	-o libfix.dylib arm64-lib.o libSystem.tbd
$STRIP -o libfix-stripped.dylib libfix.dylib

# arm64e cannot come out of lld: patch a copy's cpusubtype to
# CPU_SUBTYPE_ARM64E with the pointer-authentication ABI bit, and make a
# universal file holding arm64 and arm64e.
cp app-arm64-nochain app-arm64e
printf '\002\000\000\200' | dd of=app-arm64e bs=1 seek=8 conv=notrunc 2>/dev/null
$LIPO -create app-arm64 app-arm64e -output app-arm64-arm64e

# Facts from independent tools.
for f in app-arm64 app-arm64-nochain app-arm64-lld14 app-arm64-x app-arm64-nofs \
	app-arm64-stripped app-arm64-lld14-stripped app-x86_64 libfix.dylib \
	libfix-stripped.dylib app-arm64e; do
	$NM --defined-only -n "$f" >"$f.nm" 2>/dev/null
	$OBJDUMP --macho --private-headers "$f" >"$f.headers"
done
$OBJDUMP --macho --function-starts app-arm64 >app-arm64.starts
$OBJDUMP --macho --exports-trie libfix-stripped.dylib >libfix-stripped.dylib.exports
$OBJDUMP --macho --exports-trie app-arm64-stripped >app-arm64-stripped.exports
for f in app-arm64.dSYM app-x86_64.dSYM app-arm64-d4.dSYM app-universal.dSYM app-universal \
	app-arm64-arm64e; do
	$DWARFDUMP --uuid "$f" >"$f.uuid"
done
$OBJDUMP --macho --private-headers app-arm64.dSYM/Contents/Resources/DWARF/app-arm64 \
	>app-arm64.dSYM.headers
$DWARFDUMP --debug-info app-arm64.dSYM >app-arm64.dSYM.info
touch STAMP
[ -z "$stamp" ] || touch "$stamp"
