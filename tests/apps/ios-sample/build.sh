#!/bin/sh
# Builds, injects and signs StallSample.app for a device on a Mac, without
# an Xcode project: swiftc from the command-line tools, `stallwatch inject`
# for the agent, codesign with your development identity and profile.
#
# usage: build.sh IDENTITY PROFILE.mobileprovision LIBSTALLWATCH.dylib [OUTDIR]
#   IDENTITY  a development signing identity ("Apple Development: ...";
#             `security find-identity -v -p codesigning` lists them)
#   PROFILE   a development provisioning profile that covers
#             dev.stallwatch.StallSample (or change CFBundleIdentifier)
#   LIBSTALLWATCH.dylib  the agent for iOS devices (README: cross/darwin-ios-arm64.txt)
set -eu
identity=$1
profile=$2
dylib=$3
out=${4:-build-sample}
here=$(cd "$(dirname "$0")" && pwd)
sdk=$(xcrun --sdk iphoneos --show-sdk-path)
app=$out/StallSample.app

rm -rf "$app" && mkdir -p "$app"
xcrun --sdk iphoneos swiftc -target arm64-apple-ios14.0 -sdk "$sdk" -g -Onone \
	-parse-as-library -module-name StallSample "$here"/Sources/*.swift \
	-Xlinker -rpath -Xlinker @executable_path/Frameworks \
	-o "$app/StallSample"
cp "$here/Info.plist" "$app/Info.plist"
cp "$profile" "$app/embedded.mobileprovision"
# the dSYM stays on the Mac (or goes to the Linux host) for symbolication
xcrun dsymutil "$app/StallSample" -o "$out/StallSample.app.dSYM"

# the agent: an LC_LOAD_DYLIB, the rpath, Frameworks/libstallwatch.dylib
stallwatch inject --dylib "$dylib" "$app"
rm -f "$out/StallSample.orig"

# entitlements: the profile's (team, application identifier) plus
# get-task-allow, which a development profile grants and the agent needs
security cms -D -i "$profile" >"$out/profile.plist"
/usr/libexec/PlistBuddy -x -c 'Print :Entitlements' "$out/profile.plist" >"$out/entitlements.plist"
codesign --force --sign "$identity" "$app/Frameworks/libstallwatch.dylib"
codesign --force --sign "$identity" --entitlements "$out/entitlements.plist" "$app"
echo "$app"
