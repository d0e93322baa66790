/* Stand-in: the pthread calls and types of Darwin's 64-bit ABI. */
#ifndef SW_SDK_PTHREAD_H
#define SW_SDK_PTHREAD_H
#include <stddef.h>
#include <pthread/qos.h>
typedef struct _sw_opaque_pthread *pthread_t;
typedef unsigned long pthread_key_t;
typedef struct {
	long sig;
	char opaque[56];
} pthread_attr_t;
typedef struct {
	long sig;
	char opaque[56];
} pthread_mutex_t;
#define PTHREAD_MUTEX_INITIALIZER                                                                  \
	{                                                                                          \
		0x32AAABA7,                                                                        \
		{                                                                                  \
			0                                                                          \
		}                                                                                  \
	}
int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
int pthread_detach(pthread_t t);
pthread_t pthread_self(void);
int pthread_equal(pthread_t a, pthread_t b);
int pthread_mutex_lock(pthread_mutex_t *m);
int pthread_mutex_unlock(pthread_mutex_t *m);
int pthread_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));
int pthread_key_create(pthread_key_t *key, void (*destructor)(void *));
int pthread_setspecific(pthread_key_t key, const void *value);
/* Darwin names only the calling thread */
int pthread_setname_np(const char *name);
int pthread_main_np(void);
void *pthread_get_stackaddr_np(pthread_t t);
size_t pthread_get_stacksize_np(pthread_t t);
#endif
