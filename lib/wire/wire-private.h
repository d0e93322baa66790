/*
 * What the wire encoder and decoder share beyond wire.h: the magic numbers
 * and the flag bits that only the format itself sees.
 */
#ifndef SW_WIRE_PRIVATE_H
#define SW_WIRE_PRIVATE_H

#include <stdint.h>

#include "wire.h"

#define SW_WIRE_AGENT_MAGIC  "SWAG"
#define SW_WIRE_CLIENT_MAGIC "SWCL"

/* ULEB128 of SW_WIRE_MAX_BODY takes 3 bytes. */
#define SW_WIRE_LEN_BYTES 3

#define SW_CONFIG_ALL_FIELDS                                                                       \
	(SW_CONFIG_HAS_THRESHOLD | SW_CONFIG_HAS_INTERVAL | SW_CONFIG_HAS_FLAGS |                  \
	 SW_CONFIG_HAS_MAX_DEPTH)

/* Sample flag bits outside SW_SAMPLE_PUBLIC_MASK describe the encoding. */
enum {
	SW_SAMPLE_WIRE_NAME = 1u << 8, /* the thread's name follows the flags */
	SW_SAMPLE_WIRE_REF = 1u << 9,  /* frames are relative to the thread's previous stack */
	/* recordings of format version 2 only: */
	SW_SAMPLE_WIRE_TABLE_ADD = 1u << 12, /* the stack becomes the table's next entry */
	SW_SAMPLE_WIRE_TABLE_REF = 1u << 13, /* a table entry is sent in place of the frames */
};

static inline uint64_t sw_wire_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t sw_wire_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

#endif
