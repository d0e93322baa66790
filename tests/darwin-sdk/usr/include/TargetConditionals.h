/*
 * Stand-in: which Apple platform the code is built for.  clang 19 defines
 * the TARGET_OS_ macros itself for every Apple target; this only insists.
 */
#ifndef SW_SDK_TARGETCONDITIONALS_H
#define SW_SDK_TARGETCONDITIONALS_H
#if !defined(TARGET_OS_IPHONE) || !defined(TARGET_OS_SIMULATOR) || !defined(TARGET_OS_OSX)
#error "the compiler does not define the TARGET_OS_ macros: use clang 17 or later"
#endif
#endif
