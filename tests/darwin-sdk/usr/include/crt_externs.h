/* Stand-in: the process's environment, reachable from a dylib. */
#ifndef SW_SDK_CRT_EXTERNS_H
#define SW_SDK_CRT_EXTERNS_H
char ***_NSGetEnviron(void);
#endif
