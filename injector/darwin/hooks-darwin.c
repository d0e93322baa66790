/*
 * The Darwin backend's loop hooks and Core Foundation facts: it hands the
 * portable run-loop detector (or the main-queue ping) the Core Foundation
 * and libdispatch calls it needs, learns when the app goes to the
 * background and back (no stall is reported for a suspended app), and
 * reads the bundle's identifier and version once, at start, never while
 * sampling.
 */
#include <stdio.h>
#include <string.h>

#include <CoreFoundation/CoreFoundation.h>
#include <TargetConditionals.h>
#include <dispatch/dispatch.h>

#include "../agent.h"
#include "../detect.h"
#include "darwin.h"

static char bundle_id[256];
static char bundle_version[64];
#if TARGET_OS_IPHONE
static CFStringRef background_name, foreground_name;
#endif

static void *get_main(void)
{
	return (void *)CFRunLoopGetMain();
}

static void *observer_create(const void *allocator, unsigned long activities, unsigned char repeats,
			     long order, swa_cf_observer_fn callout,
			     struct swa_cf_observer_context *context)
{
	CFRunLoopObserverContext ctx = {0, context->info, NULL, NULL, NULL};
	return (void *)CFRunLoopObserverCreate((CFAllocatorRef)allocator, activities, repeats,
					       order, (CFRunLoopObserverCallBack)callout, &ctx);
}

static void add_observer(void *run_loop, void *observer, const void *mode)
{
	CFRunLoopAddObserver((CFRunLoopRef)run_loop, (CFRunLoopObserverRef)observer,
			     (CFStringRef)mode);
}

static void invalidate(void *observer)
{
	CFRunLoopObserverInvalidate((CFRunLoopObserverRef)observer);
}

static void post_main(void (*fn)(void *), void *ctx)
{
	dispatch_async_f(dispatch_get_main_queue(), ctx, fn);
}

#if TARGET_OS_IPHONE
static void app_state(CFNotificationCenterRef center, void *observer, CFStringRef name,
		      const void *object, CFDictionaryRef info)
{
	(void)center;
	(void)observer;
	(void)object;
	(void)info;
	swa_loop_set_background(name == background_name ||
				CFStringCompare(name, background_name, 0) == kCFCompareEqualTo);
}

static void watch_app_state(void)
{
	background_name = CFStringCreateWithCString(
	    NULL, "UIApplicationDidEnterBackgroundNotification", kCFStringEncodingUTF8);
	foreground_name = CFStringCreateWithCString(
	    NULL, "UIApplicationWillEnterForegroundNotification", kCFStringEncodingUTF8);
	CFNotificationCenterRef c = CFNotificationCenterGetLocalCenter();
	CFNotificationCenterAddObserver(c, &bundle_id, app_state, background_name, NULL,
					CFNotificationSuspensionBehaviorDeliverImmediately);
	CFNotificationCenterAddObserver(c, &bundle_id, app_state, foreground_name, NULL,
					CFNotificationSuspensionBehaviorDeliverImmediately);
}
#else
static void watch_app_state(void)
{
	/* a Mac app keeps running behind other windows: nothing to pause */
}
#endif

int swa_plat_hooks_start(void)
{
	watch_app_state();
	if (swa_cfg.detector == SWA_DETECT_PING) {
		swa_ping_start(post_main);
		return 0;
	}
	CFStringRef init_mode = NULL;
#if TARGET_OS_IPHONE
	init_mode =
	    CFStringCreateWithCString(NULL, "UIInitializationRunLoopMode", kCFStringEncodingUTF8);
#endif
	struct swa_cf cf = {
	    .get_main = get_main,
	    .observer_create = observer_create,
	    .add_observer = add_observer,
	    .invalidate = invalidate,
	    .common_modes = kCFRunLoopCommonModes,
	    .init_mode = init_mode,
	};
	return swa_runloop_start(&cf);
}

void swa_plat_hooks_stop(void)
{
	swa_runloop_stop();
}

static void copy_string(CFTypeRef v, char *buf, size_t cap)
{
	buf[0] = '\0';
	if (v && CFGetTypeID(v) == CFStringGetTypeID() &&
	    !CFStringGetCString((CFStringRef)v, buf, (CFIndex)cap, kCFStringEncodingUTF8))
		buf[0] = '\0';
}

/* The main bundle's identifier and version, read once at start. */
void swa_darwin_read_bundle(void)
{
	CFBundleRef b = CFBundleGetMainBundle();
	if (!b)
		return;
	copy_string(CFBundleGetIdentifier(b), bundle_id, sizeof(bundle_id));
	CFStringRef key =
	    CFStringCreateWithCString(NULL, "CFBundleShortVersionString", kCFStringEncodingUTF8);
	if (key) {
		copy_string(CFBundleGetValueForInfoDictionaryKey(b, key), bundle_version,
			    sizeof(bundle_version));
		CFRelease(key);
	}
}

const char *swa_plat_bundle_id(void)
{
	return bundle_id[0] ? bundle_id : swa_plat_process_name();
}

const char *swa_plat_bundle_version(void)
{
	return bundle_version;
}
