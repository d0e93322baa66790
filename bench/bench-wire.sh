#!/bin/sh
# Runs bench-wire on the functions of a few installed shared libraries
# (found by soname through ldconfig, so no path is assumed), then, when the
# command and a test app are given, on stacks the agent recorded in that app:
# main thread only and every thread.
#
# usage: bench-wire.sh BENCH-WIRE [STALLWATCH STALLAPP]
set -eu
bench=$1
images=0
for soname in libc.so.6 libglib-2.0.so.0 libstdc++.so.6 libm.so.6 libgio-2.0.so.0; do
	lib=$(ldconfig -p | awk -v s="$soname" '$1 == s && /x86-64|AArch64/ { print $NF; exit }')
	[ -n "$lib" ] || continue
	nm -D --defined-only -S "$lib" 2>/dev/null |
		awk -v img=$images '$3 ~ /^[TtWi]$/ && NF >= 4 { print img, $1, $2 }'
	images=$((images + 1))
done | "$bench"

[ $# -ge 3 ] || exit 0
stallwatch=$2
app=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
steps="threads:16 busy:400 mutex:600 sleep:350 recurse:100:300 recurse:3000:300"
for mode in main all; do
	flag=
	[ "$mode" = all ] && flag=--all-threads
	# shellcheck disable=SC2086
	"$stallwatch" run $flag -o "$tmp/$mode.swtrace" --format ndjson -- "$app" $steps \
		>/dev/null 2>"$tmp/$mode.log" || { cat "$tmp/$mode.log"; exit 1; }
	printf '%s: ' "$mode thread(s), $steps"
	"$bench" "$tmp/$mode.swtrace"
done
