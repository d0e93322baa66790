/*
 * libimobiledevice loaded when a device command first needs it (dlopen),
 * not at start-up: it brings OpenSSL, and most runs never touch a device.
 * Each function device.c and device-launch.c call is reached through a
 * pointer of the same type; the macros below send the calls there, so the
 * calling code reads as plain libimobiledevice.  sw_device_load() must
 * succeed before any of them is called.
 */
#ifndef SW_DEVICE_DL_H
#define SW_DEVICE_DL_H

#include <stdbool.h>

#include <libimobiledevice/debugserver.h>
#include <libimobiledevice/installation_proxy.h>
#include <libimobiledevice/libimobiledevice.h>
#include <libimobiledevice/lockdown.h>

#include "util/error.h"

/* The library's file name, as its package installs it. */
#define SW_IMOBILEDEVICE_SONAME "libimobiledevice-1.0.so.6"

#define SW_IMOBILEDEVICE_FUNCTIONS(X)                                                              \
	X(debugserver_client_free)                                                                 \
	X(debugserver_client_new)                                                                  \
	X(debugserver_client_receive_with_timeout)                                                 \
	X(debugserver_client_send)                                                                 \
	X(debugserver_client_send_command)                                                         \
	X(idevice_connect)                                                                         \
	X(idevice_device_list_extended_free)                                                       \
	X(idevice_event_subscribe)                                                                 \
	X(idevice_event_unsubscribe)                                                               \
	X(idevice_free)                                                                            \
	X(idevice_get_device_list_extended)                                                        \
	X(idevice_get_handle)                                                                      \
	X(idevice_new_with_options)                                                                \
	X(idevice_set_debug_level)                                                                 \
	X(instproxy_client_free)                                                                   \
	X(instproxy_client_new)                                                                    \
	X(instproxy_client_options_free)                                                           \
	X(instproxy_client_options_new)                                                            \
	X(instproxy_client_options_set_return_attributes)                                          \
	X(instproxy_lookup)                                                                        \
	X(lockdownd_client_free)                                                                   \
	X(lockdownd_client_new)                                                                    \
	X(lockdownd_client_new_with_handshake)                                                     \
	X(lockdownd_get_value)                                                                     \
	X(lockdownd_service_descriptor_free)                                                       \
	X(lockdownd_start_service)

#define SW_IMD_DECLARE(name) extern __typeof__(name) *sw_imd_##name;
SW_IMOBILEDEVICE_FUNCTIONS(SW_IMD_DECLARE)
#undef SW_IMD_DECLARE

/*
 * Loads the library once (thread-safe); 0, or -ENOTSUP with err saying
 * which library is missing or lacks which function.
 */
int sw_device_load(struct sw_error *err);
/* Whether sw_device_load() has succeeded. */
bool sw_device_loaded(void);

#define debugserver_client_free                 (*sw_imd_debugserver_client_free)
#define debugserver_client_new                  (*sw_imd_debugserver_client_new)
#define debugserver_client_receive_with_timeout (*sw_imd_debugserver_client_receive_with_timeout)
#define debugserver_client_send                 (*sw_imd_debugserver_client_send)
#define debugserver_client_send_command         (*sw_imd_debugserver_client_send_command)
#define idevice_connect                         (*sw_imd_idevice_connect)
#define idevice_device_list_extended_free       (*sw_imd_idevice_device_list_extended_free)
#define idevice_event_subscribe                 (*sw_imd_idevice_event_subscribe)
#define idevice_event_unsubscribe               (*sw_imd_idevice_event_unsubscribe)
#define idevice_free                            (*sw_imd_idevice_free)
#define idevice_get_device_list_extended        (*sw_imd_idevice_get_device_list_extended)
#define idevice_get_handle                      (*sw_imd_idevice_get_handle)
#define idevice_new_with_options                (*sw_imd_idevice_new_with_options)
#define idevice_set_debug_level                 (*sw_imd_idevice_set_debug_level)
#define instproxy_client_free                   (*sw_imd_instproxy_client_free)
#define instproxy_client_new                    (*sw_imd_instproxy_client_new)
#define instproxy_client_options_free           (*sw_imd_instproxy_client_options_free)
#define instproxy_client_options_new            (*sw_imd_instproxy_client_options_new)
#define instproxy_client_options_set_return_attributes                                             \
	(*sw_imd_instproxy_client_options_set_return_attributes)
#define instproxy_lookup                    (*sw_imd_instproxy_lookup)
#define lockdownd_client_free               (*sw_imd_lockdownd_client_free)
#define lockdownd_client_new                (*sw_imd_lockdownd_client_new)
#define lockdownd_client_new_with_handshake (*sw_imd_lockdownd_client_new_with_handshake)
#define lockdownd_get_value                 (*sw_imd_lockdownd_get_value)
#define lockdownd_service_descriptor_free   (*sw_imd_lockdownd_service_descriptor_free)
#define lockdownd_start_service             (*sw_imd_lockdownd_start_service)

#endif
