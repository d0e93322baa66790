/* Stand-in: signal masks (a 32-bit set on Darwin). */
#ifndef SW_SDK_SIGNAL_H
#define SW_SDK_SIGNAL_H
#include <stdint.h>
typedef uint32_t sigset_t;
#define SIG_BLOCK   1
#define SIG_UNBLOCK 2
#define SIG_SETMASK 3
int sigfillset(sigset_t *set);
int sigemptyset(sigset_t *set);
int pthread_sigmask(int how, const sigset_t *set, sigset_t *old);
#endif
