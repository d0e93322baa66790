/*
 * Writes the property lists of Stallwatch.xcframework with libplist: the
 * Info.plist of each Stallwatch.framework and the XCFramework's own, which
 * lists its libraries the way Xcode reads them (LibraryIdentifier,
 * LibraryPath, SupportedArchitectures, SupportedPlatform and, for the
 * simulator, SupportedPlatformVariant).  A build tool: make-xcframework.sh
 * runs it on the build host.
 *
 * usage: xcframework-plist framework OUT PLATFORM MIN_OS VERSION
 *          PLATFORM: iPhoneOS, iPhoneSimulator or MacOSX
 *        xcframework-plist xcframework OUT ID:PLATFORM[:VARIANT]:ARCH[,ARCH...] ...
 */
#include <plist/plist.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUNDLE_ID  "dev.stallwatch.Stallwatch"
#define EXECUTABLE "Stallwatch"

static int usage(void)
{
	fprintf(stderr,
		"usage: xcframework-plist framework OUT PLATFORM MIN_OS VERSION\n"
		"       xcframework-plist xcframework OUT ID:PLATFORM[:VARIANT]:ARCHS ...\n");
	return 2;
}

static void set_str(plist_t dict, const char *key, const char *value)
{
	plist_dict_set_item(dict, key, plist_new_string(value));
}

static int write_plist(plist_t root, const char *path, int binary)
{
	char *data = NULL;
	uint32_t len = 0;
	if (binary)
		plist_to_bin(root, &data, &len);
	else
		plist_to_xml(root, &data, &len);
	FILE *f = data ? fopen(path, "wb") : NULL;
	int ok = f && fwrite(data, 1, len, f) == len;
	if (f && fclose(f) != 0)
		ok = 0;
	free(data);
	if (!ok)
		fprintf(stderr, "xcframework-plist: cannot write '%s'\n", path);
	return ok ? 0 : 1;
}

static int framework(const char *out, const char *platform, const char *min_os, const char *version)
{
	int mac = strcmp(platform, "MacOSX") == 0;
	if (!mac && strcmp(platform, "iPhoneOS") != 0 && strcmp(platform, "iPhoneSimulator") != 0)
		return usage();
	plist_t d = plist_new_dict();
	set_str(d, "CFBundleDevelopmentRegion", "en");
	set_str(d, "CFBundleExecutable", EXECUTABLE);
	set_str(d, "CFBundleIdentifier", BUNDLE_ID);
	set_str(d, "CFBundleInfoDictionaryVersion", "6.0");
	set_str(d, "CFBundleName", EXECUTABLE);
	set_str(d, "CFBundlePackageType", "FMWK");
	set_str(d, "CFBundleShortVersionString", version);
	set_str(d, "CFBundleVersion", version);
	plist_t platforms = plist_new_array();
	plist_array_append_item(platforms, plist_new_string(platform));
	plist_dict_set_item(d, "CFBundleSupportedPlatforms", platforms);
	set_str(d, mac ? "LSMinimumSystemVersion" : "MinimumOSVersion", min_os);
	if (!mac) {
		plist_t family = plist_new_array();
		plist_array_append_item(family, plist_new_uint(1)); /* iPhone */
		plist_array_append_item(family, plist_new_uint(2)); /* iPad */
		plist_dict_set_item(d, "UIDeviceFamily", family);
	}
	int r = write_plist(d, out, !mac);
	plist_free(d);
	return r;
}

/* One library: "ios-arm64_x86_64-simulator:ios:simulator:arm64,x86_64". */
static plist_t library(char *spec)
{
	char *fields[4];
	int n = 0;
	for (char *p = spec; n < 4; n++) {
		fields[n] = p;
		p = strchr(p, ':');
		if (!p) {
			n++;
			break;
		}
		*p++ = '\0';
	}
	if (n < 3)
		return NULL;
	plist_t d = plist_new_dict();
	set_str(d, "LibraryIdentifier", fields[0]);
	set_str(d, "LibraryPath", EXECUTABLE ".framework");
	plist_t archs = plist_new_array();
	for (char *a = strtok(fields[n - 1], ","); a; a = strtok(NULL, ","))
		plist_array_append_item(archs, plist_new_string(a));
	plist_dict_set_item(d, "SupportedArchitectures", archs);
	set_str(d, "SupportedPlatform", fields[1]);
	if (n == 4)
		set_str(d, "SupportedPlatformVariant", fields[2]);
	return d;
}

static int xcframework(const char *out, int n, char **specs)
{
	plist_t d = plist_new_dict();
	plist_t libs = plist_new_array();
	for (int i = 0; i < n; i++) {
		plist_t lib = library(specs[i]);
		if (!lib) {
			plist_free(libs);
			plist_free(d);
			return usage();
		}
		plist_array_append_item(libs, lib);
	}
	plist_dict_set_item(d, "AvailableLibraries", libs);
	set_str(d, "CFBundlePackageType", "XFWK");
	set_str(d, "XCFrameworkFormatVersion", "1.0");
	int r = write_plist(d, out, 0);
	plist_free(d);
	return r;
}

int main(int argc, char **argv)
{
	if (argc == 6 && strcmp(argv[1], "framework") == 0)
		return framework(argv[2], argv[3], argv[4], argv[5]);
	if (argc >= 4 && strcmp(argv[1], "xcframework") == 0)
		return xcframework(argv[2], argc - 3, argv + 3);
	return usage();
}
