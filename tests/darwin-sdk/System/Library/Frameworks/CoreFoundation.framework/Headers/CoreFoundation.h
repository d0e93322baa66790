/*
 * Stand-in: the Core Foundation types and calls the agent uses (the main
 * run loop and its observers, strings, the main bundle, the local
 * notification center), from Apple's Core Foundation reference.
 */
#ifndef SW_SDK_COREFOUNDATION_H
#define SW_SDK_COREFOUNDATION_H
#include <stdint.h>

typedef unsigned char Boolean;
typedef long CFIndex;
typedef unsigned long CFOptionFlags;
typedef unsigned long CFTypeID;
typedef uint32_t CFStringEncoding;
typedef const void *CFTypeRef;
typedef const struct __CFString *CFStringRef;
typedef const struct __CFAllocator *CFAllocatorRef;
typedef const struct __CFDictionary *CFDictionaryRef;
typedef struct __CFRunLoop *CFRunLoopRef;
typedef struct __CFRunLoopObserver *CFRunLoopObserverRef;
typedef struct __CFBundle *CFBundleRef;
typedef struct __CFNotificationCenter *CFNotificationCenterRef;

#define kCFStringEncodingUTF8 ((CFStringEncoding)0x08000100)

typedef CFIndex CFComparisonResult;
#define kCFCompareEqualTo ((CFComparisonResult)0)
typedef CFOptionFlags CFStringCompareFlags;

void CFRelease(CFTypeRef cf);
CFTypeID CFGetTypeID(CFTypeRef cf);
CFTypeID CFStringGetTypeID(void);
CFStringRef CFStringCreateWithCString(CFAllocatorRef alloc, const char *s, CFStringEncoding enc);
Boolean CFStringGetCString(CFStringRef s, char *buf, CFIndex cap, CFStringEncoding enc);
CFComparisonResult CFStringCompare(CFStringRef a, CFStringRef b, CFStringCompareFlags flags);

/* ---- run loops ---- */
typedef CFOptionFlags CFRunLoopActivity;
enum {
	kCFRunLoopEntry = 1UL << 0,
	kCFRunLoopBeforeTimers = 1UL << 1,
	kCFRunLoopBeforeSources = 1UL << 2,
	kCFRunLoopBeforeWaiting = 1UL << 5,
	kCFRunLoopAfterWaiting = 1UL << 6,
	kCFRunLoopExit = 1UL << 7,
};
typedef struct {
	CFIndex version;
	void *info;
	const void *(*retain)(const void *info);
	void (*release)(const void *info);
	CFStringRef (*copyDescription)(const void *info);
} CFRunLoopObserverContext;
typedef void (*CFRunLoopObserverCallBack)(CFRunLoopObserverRef observer, CFRunLoopActivity activity,
					  void *info);
extern const CFStringRef kCFRunLoopCommonModes;
CFRunLoopRef CFRunLoopGetMain(void);
CFRunLoopObserverRef CFRunLoopObserverCreate(CFAllocatorRef alloc, CFOptionFlags activities,
					     Boolean repeats, CFIndex order,
					     CFRunLoopObserverCallBack callout,
					     CFRunLoopObserverContext *context);
void CFRunLoopAddObserver(CFRunLoopRef rl, CFRunLoopObserverRef observer, CFStringRef mode);
void CFRunLoopObserverInvalidate(CFRunLoopObserverRef observer);

/* ---- bundles ---- */
CFBundleRef CFBundleGetMainBundle(void);
CFStringRef CFBundleGetIdentifier(CFBundleRef bundle);
CFTypeRef CFBundleGetValueForInfoDictionaryKey(CFBundleRef bundle, CFStringRef key);

/* ---- notifications ---- */
typedef CFIndex CFNotificationSuspensionBehavior;
#define CFNotificationSuspensionBehaviorDeliverImmediately ((CFNotificationSuspensionBehavior)4)
typedef void (*CFNotificationCallback)(CFNotificationCenterRef center, void *observer,
				       CFStringRef name, const void *object, CFDictionaryRef info);
CFNotificationCenterRef CFNotificationCenterGetLocalCenter(void);
void CFNotificationCenterAddObserver(CFNotificationCenterRef center, const void *observer,
				     CFNotificationCallback callback, CFStringRef name,
				     const void *object, CFNotificationSuspensionBehavior behavior);
#endif
