#!/bin/sh
# Regenerates the seed corpora of fuzz-macho and fuzz-symsearch-elf from the
# test fixtures (build them first: meson test -C build --suite macho
# --suite symsearch).  The seeds are committed; this records how they were
# made.
#
# usage: tests/fuzz/make-corpus-macho.sh BUILDDIR
set -eu
b=$1/tests
here=$(dirname "$0")
m=$here/corpus-macho
e=$here/corpus-symsearch-elf
mkdir -p "$m" "$e"
cd "$b/macho-fixtures"
V=19
# Small x86_64 images (4 KiB pages): each load-command variant once.
ld64.lld-$V -arch x86_64 -platform_version ios-simulator 14.0 14.0 -o "$OLDPWD/$m/nochain" \
	x86_64-app.o x86_64-cxx.o libSystem.tbd -e _main -no_fixup_chains
ld64.lld-$V -arch x86_64 -platform_version ios-simulator 14.0 14.0 -dylib \
	-install_name @rpath/l.dylib -o "$OLDPWD/$m/dylib" x86_64-lib.o libSystem.tbd
llvm-strip-$V -o "$OLDPWD/$m/dylib-stripped" "$OLDPWD/$m/dylib"
cp app-x86_64 "$OLDPWD/$m/exe"
cp app-x86_64.dSYM/Contents/Resources/DWARF/app-x86_64 "$OLDPWD/$m/dsym"
cd "$OLDPWD"
# A universal file (FAT_MAGIC, big-endian header) with two small slices.
python3 - "$m/exe" "$m/dylib-stripped" "$m/fat" <<'PY'
import struct, sys
a, b = open(sys.argv[1], 'rb').read(), open(sys.argv[2], 'rb').read()
oa, ob = 4096, 4096 + ((len(a) + 4095) // 4096) * 4096
hdr = struct.pack('>II', 0xcafebabe, 2)
hdr += struct.pack('>iiIII', 0x01000007, 3, oa, len(a), 12)
hdr += struct.pack('>iiIII', 0x0100000c, 0, ob, len(b), 12)
out = hdr.ljust(oa, b'\0') + a.ljust(ob - oa, b'\0') + b
open(sys.argv[3], 'wb').write(out)
PY
chmod -x "$m"/* "$e"/*
cd "$b/symsearch-fixtures"
cp beside/beside "$OLDPWD/$e/stripped"
cp beside/beside.debug "$OLDPWD/$e/debug"
# Committed seeds must not name this machine's directories.
python3 "$here/scrub-paths.py" "$(cd "$1/.." && pwd)" "$m"/* "$e"/*
