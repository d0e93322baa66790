/*
 * Parsing the client's messages inside the agent (control.c).
 */
#ifndef SWA_CONTROL_H
#define SWA_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#include "wire/wire.h"

#define SWA_CONTROL_MAX_BODY 8192

struct swa_control_msg {
	uint32_t type;
	uint32_t protocol;
	char token[256];
	char client_version[64];
	struct sw_wire_config config;
};

/*
 * Parses the message at the start of buf: its size, 0 when incomplete,
 * -EBADMSG or -EMSGSIZE when it cannot be a valid client message.
 */
int swa_control_parse(const uint8_t *buf, size_t len, struct swa_control_msg *msg);

#endif
