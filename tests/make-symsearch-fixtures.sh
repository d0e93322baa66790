#!/bin/sh
# Builds the ELF trees test-symsearch searches: programs whose debug info
# was split off with objcopy into each of the places the ELF conventions
# name, and a tree to be indexed recursively (with a symlink loop in it).
# Every build-id is recorded as readelf prints it, for the test to compare.
#
# usage: make-symsearch-fixtures.sh SRCDIR OUTDIR [STAMPFILE]
set -eu
src=$1
out=$2
stamp=${3:-}
case $stamp in "" | /*) ;; *) stamp=$PWD/$stamp ;; esac
rm -rf "$out"
mkdir -p "$out"
for t in gcc objcopy readelf; do
	if ! command -v $t >/dev/null 2>&1; then
		echo "missing $t" >"$out/SKIP"
		[ -z "$stamp" ] || touch "$stamp"
		exit 0
	fi
done
cd "$out"

# build NAME VARIANT DIR: DIR/NAME (stripped, with a debuglink) and NAME.debug beside it
build() {
	mkdir -p "$3"
	gcc -g -O1 -Wl,--build-id=sha1 -DVARIANT=$2 "$src/prog.c" -o "$3/$1.full"
	readelf -n "$3/$1.full" | awk '/Build ID:/ { print $3 }' >"$1.buildid"
	objcopy --only-keep-debug "$3/$1.full" "$3/$1.debug"
	objcopy --strip-debug --add-gnu-debuglink="$3/$1.debug" "$3/$1.full" "$3/$1"
	rm "$3/$1.full"
}

# 1: /usr/lib/debug/.build-id/xx/rest.debug under a private debug root
build byid 1 bin
id=$(cat byid.buildid)
mkdir -p debugroot/.build-id/$(echo "$id" | cut -c1-2)
mv bin/byid.debug debugroot/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug
# 2: .gnu_debuglink next to the binary
build beside 2 beside
# 3: .gnu_debuglink in .debug/
build dotdebug 3 dotdebug
mkdir -p dotdebug/.debug
mv dotdebug/dotdebug.debug dotdebug/.debug/
# 4: .gnu_debuglink under the debug root, at the binary's directory
build underroot 4 underroot
mkdir -p "debugroot$out/underroot"
mv underroot/underroot.debug "debugroot$out/underroot/"
# 5: only in a search path, deep down, beside a symlink loop
build indexed 5 bin
mkdir -p tree/a/b/c
mv bin/indexed.debug tree/a/b/c/
ln -s .. tree/a/loop
# 6: only on the debuginfod server
build served 6 bin
mkdir -p served
mv bin/served.debug served/
cp bin/served served/
# 7: a binary whose debug file is nowhere
build lost 7 bin
rm bin/lost.debug
touch STAMP
[ -z "$stamp" ] || touch "$stamp"
