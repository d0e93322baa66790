/*
 * The stallwatch wire format: versioned, length-prefixed binary messages
 * between the agent (in the app) and the command (on the host), and the
 * body of .swtrace recordings.  stallwatch-format(5) is the specification;
 * this header is its C face.
 *
 * A message is a type byte, the body length as ULEB128 (at most
 * SW_WIRE_MAX_BODY) and the body.  Unknown types are skipped by their
 * length, so a newer agent works with an older command.  Integers in bodies
 * are ULEB128, signed ones zigzag-encoded; strings are a ULEB128 length and
 * that many bytes (at most SW_WIRE_MAX_STRING, no NUL).
 *
 * Samples are compressed against the previous sample of the same thread on
 * the same stream: frames shared at the root end are counted, not repeated,
 * and the other frames are deltas.  Encoder and decoder therefore carry state
 * per stream (struct sw_wire_encoder, struct sw_wire_decoder); both start a
 * new stream with the agent's hello.
 *
 * The encoder (wire-encode.c) allocates nothing, takes no lock and writes
 * into the caller's buffer, so the agent may use it anywhere.  It is the only
 * part of lib/ the agent links.
 */
#ifndef SW_WIRE_H
#define SW_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Protocol versions (stallwatch-format(5), COMPATIBILITY).  Messages and
 * fields are added without a new version: older readers skip what they do
 * not know, newer readers do without what an older writer did not send.
 * The version changes only when a message or field changes meaning or
 * layout.  The agent writes SW_WIRE_PROTOCOL; the command reads every
 * version from SW_WIRE_PROTOCOL_OLDEST to SW_WIRE_PROTOCOL, answers an
 * agent's hello in the agent's version, and refuses a newer one by name.
 */
#define SW_WIRE_PROTOCOL        1
#define SW_WIRE_PROTOCOL_OLDEST 1

/*
 * Where an agent listens on iOS and macOS: 127.0.0.1, the first free port
 * of this range, so several instrumented apps coexist; the command scans
 * the range on a device.
 */
#define SW_WIRE_AGENT_PORT_FIRST 27300
#define SW_WIRE_AGENT_PORT_LAST  27309

#define SW_WIRE_MAX_BODY   (1u << 20)
#define SW_WIRE_MAX_STRING 4096u
#define SW_WIRE_MAX_FRAMES 4096u
#define SW_WIRE_MAX_ID     32u
/* Executable segments of an image besides its first (Node has several). */
#define SW_WIRE_MAX_MORE_TEXT 8u
/* The largest encoded message: type, length and body. */
#define SW_WIRE_MAX_MESSAGE (SW_WIRE_MAX_BODY + 4u)
/*
 * The stack table of a recording (format version 2): the distinct stacks
 * its samples had, each written once and referred to by number after.
 * The writer stops adding at either ceiling; a reader refuses more.
 */
#define SW_WIRE_TABLE_MAX_STACKS (1u << 20)
#define SW_WIRE_TABLE_MAX_FRAMES (8u << 20)

enum sw_wire_type {
	/* agent to client */
	SW_MSG_HELLO = 1,
	SW_MSG_IMAGE_ADDED = 2,
	SW_MSG_IMAGE_REMOVED = 3,
	SW_MSG_STALL_BEGIN = 4,
	SW_MSG_STALL_END = 5,
	SW_MSG_SAMPLE = 6,
	SW_MSG_STATS = 7,
	SW_MSG_SYMBOL_HINT = 8,
	SW_MSG_GOODBYE = 9,
	SW_MSG_CONFIG_REPLY = 10,
	/* client to agent */
	SW_MSG_CLIENT_HELLO = 64,
	SW_MSG_CONFIG = 65,
	/* written by the host into recordings, never sent by the agent */
	SW_MSG_RECORD_INFO = 96,
};

enum sw_wire_platform {
	SW_PLATFORM_UNKNOWN = 0,
	SW_PLATFORM_LINUX = 1,
	SW_PLATFORM_IOS = 2,
	SW_PLATFORM_MACOS = 3,
	SW_PLATFORM_IOS_SIMULATOR = 4,
};

enum sw_wire_id_kind {
	SW_ID_NONE = 0,
	SW_ID_UUID = 1,     /* Mach-O LC_UUID, 16 bytes */
	SW_ID_BUILD_ID = 2, /* ELF NT_GNU_BUILD_ID */
};

enum sw_wire_sample_flags {
	SW_SAMPLE_TRUNCATED = 1u << 0,    /* depth cap or unwind failure cut the stack */
	SW_SAMPLE_LEAF_FROM_LR = 1u << 1, /* frame 1 is the link register of a leaf */
	SW_SAMPLE_CFI = 1u << 2,          /* some frames were unwound by CFI */
	SW_SAMPLE_ASYNC = 1u << 3,        /* an async (Swift concurrency) frame was seen */
	SW_SAMPLE_BLOCKED = 1u << 4,      /* thread was in a system call, read without a signal */
	/* no stack, and why: */
	SW_SAMPLE_SIGNAL_BLOCKED = 1u << 5, /* the thread runs and blocks the agent's signal */
	SW_SAMPLE_NO_SIGNAL = 1u << 6,      /* it runs, and the agent sends no signals */
	SW_SAMPLE_PASSIVE = 1u << 7,        /* the agent samples nothing (a seccomp filter) */
	/* it runs, on an alternate signal stack too small for the agent's handler */
	SW_SAMPLE_SMALL_ALTSTACK = 1u << 14,
	/* frames between both ends were left out (elided, elided_at follow the frames) */
	SW_SAMPLE_ELIDED = 1u << 10,
	SW_SAMPLE_COPY_SHORT = 1u << 11, /* the stack copy stopped before the stack's top */
	/* 0x100, 0x200, 0x1000 and 0x2000 are the encoding's (wire-private.h) */
	SW_SAMPLE_PUBLIC_MASK = 0x4cffu,
};

enum sw_wire_config_flags {
	SW_CONFIG_ALL_THREADS = 1u << 0,
};

/* Which fields of a CONFIG message the client sets. */
enum sw_wire_config_fields {
	SW_CONFIG_HAS_THRESHOLD = 1u << 0,
	SW_CONFIG_HAS_INTERVAL = 1u << 1,
	SW_CONFIG_HAS_FLAGS = 1u << 2,
	SW_CONFIG_HAS_MAX_DEPTH = 1u << 3,
};

struct sw_wire_config {
	uint32_t present; /* sw_wire_config_fields; all set in hellos and replies */
	uint32_t threshold_ms;
	uint32_t interval_us;
	uint32_t flags; /* sw_wire_config_flags */
	uint32_t max_depth;
};

/*
 * Times are clock ticks since the hello's clock_base; ticks * clock_numer /
 * clock_denom gives nanoseconds (1/1 on Linux, mach_timebase_info on Darwin).
 */
struct sw_wire_hello {
	uint32_t protocol;
	uint32_t platform; /* sw_wire_platform */
	const char *agent_version;
	const char *arch;
	const char *os_version;
	const char *device_model;
	const char *process_name;
	const char *bundle_id;
	uint64_t pid;
	uint64_t clock_numer, clock_denom;
	uint64_t clock_base; /* raw monotonic ticks at the agent's start */
	uint64_t wall_ns;    /* Unix time in ns at clock_base */
	struct sw_wire_config config;
	/* added later, absent from older agents: why the agent samples nothing, "" or NULL */
	const char *passive;
	/* added later still: the app's version (CFBundleShortVersionString), "" or NULL */
	const char *bundle_version;
};

struct sw_wire_image {
	uint32_t index;        /* the agent's number for the image, reused after removal */
	uint64_t load_address; /* runtime address of the text segment */
	uint64_t text_vmaddr;  /* the file's address of the same segment */
	uint64_t text_size;
	uint32_t id_kind; /* sw_wire_id_kind */
	uint32_t id_len;
	uint8_t id[SW_WIRE_MAX_ID];
	const char *path;
	const char *arch;
	/* further executable segments (file address, size), same slide; old readers skip them */
	uint32_t nmore_text;
	struct sw_wire_text_range {
		uint64_t vmaddr, size;
	} more_text[SW_WIRE_MAX_MORE_TEXT];
};

struct sw_wire_image_removed {
	uint32_t index;
};

struct sw_wire_stall_begin {
	uint64_t stall_id;
	uint64_t thread_id;
	uint64_t start_time;  /* when the busy loop iteration began */
	uint64_t detect_time; /* when the watchdog declared the stall */
	const char *context;  /* loop context: run-loop mode, hook name */
};

struct sw_wire_stall_end {
	uint64_t stall_id;
	uint64_t end_time;
	uint64_t duration_ns;
	uint64_t cpu_ns; /* main thread CPU time over the stall */
	uint64_t samples;
	uint64_t dropped;
	/*
	 * added later, absent from older agents (has_late false): the stalled
	 * thread's samples taken more than one interval after they were due,
	 * because the agent's thread or the stalled one got a processor late
	 * (a busy machine, not the agent's own work), and their lateness in all
	 */
	bool has_late;
	uint64_t late, late_ns;
};

struct sw_wire_sample {
	uint64_t stall_id;
	uint64_t time;
	uint64_t thread_id;
	const char *thread_name; /* decoded: the thread's last known name or "" */
	uint32_t flags;          /* sw_wire_sample_flags */
	uint32_t depth;
	const uint64_t *frames; /* depth addresses, leaf (program counter) first */
	/*
	 * With SW_SAMPLE_ELIDED: frames[0..elided_at) are the innermost frames,
	 * frames[elided_at..depth) the outermost, and elided frames between them
	 * were left out.
	 */
	uint32_t elided_at;
	uint64_t elided;
	/*
	 * Recordings only (format version 2): the entry of the recording's
	 * stack table (from 1) that frames are, 0 for none; table_add when this
	 * sample adds the entry (its frames are sent), else it refers to one
	 * sent before.  The decoder sets table_hash to the entry's
	 * sw_stalls_stack_hash(), so readers may key on the entry alone.
	 */
	uint32_t table;
	bool table_add;
	uint64_t table_hash;
	/*
	 * Decoded: the bytes that follow the fields this reader knows (a newer
	 * agent's), which an encoder given them writes back after its own.
	 */
	const uint8_t *rest;
	size_t rest_len;
};

struct sw_wire_stats {
	uint64_t samples;
	uint64_t dropped;
	uint64_t stalls;
	uint64_t agent_cpu_ns;
	/*
	 * When the main loop was first seen waiting: ticks since clock_base + 1,
	 * 0 when it never was.  has_loop is false for agents from before the field.
	 */
	bool has_loop;
	uint64_t loop_first_wait;
};

struct sw_wire_symbol_hint {
	uint32_t image_index;
	uint64_t offset; /* from the image's load address */
	uint64_t size;
	const char *name;
};

struct sw_wire_goodbye {
	uint32_t reason;
	const char *text;
};

enum sw_wire_goodbye_reason {
	SW_GOODBYE_EXIT = 0,        /* the process is exiting */
	SW_GOODBYE_PROTOCOL = 1,    /* the client's protocol is not supported */
	SW_GOODBYE_TOKEN = 2,       /* the client's token was refused */
	SW_GOODBYE_BAD_MESSAGE = 3, /* the client sent something unreadable */
	SW_GOODBYE_REPLACED = 4,    /* another client took over */
};

struct sw_wire_config_reply {
	bool accepted;
	const char *reason;           /* why not, when refused */
	struct sw_wire_config config; /* what is in force now */
};

struct sw_wire_client_hello {
	uint32_t protocol;
	const char *token;
	const char *client_version;
};

struct sw_wire_record_info {
	const char *key;
	const char *value;
};

struct sw_wire_msg {
	uint32_t type; /* sw_wire_type; anything else is skipped by decoders */
	union {
		struct sw_wire_hello hello;
		struct sw_wire_image image;
		struct sw_wire_image_removed image_removed;
		struct sw_wire_stall_begin stall_begin;
		struct sw_wire_stall_end stall_end;
		struct sw_wire_sample sample;
		struct sw_wire_stats stats;
		struct sw_wire_symbol_hint symbol_hint;
		struct sw_wire_goodbye goodbye;
		struct sw_wire_config_reply config_reply;
		struct sw_wire_client_hello client_hello;
		struct sw_wire_config config;
		struct sw_wire_record_info record_info;
	};
};

/* ---- encoding (wire-encode.c; shared with the agent) ---- */

#define SW_WIRE_ENCODER_THREADS 64
#define SW_WIRE_ENCODER_FRAMES  512
#define SW_WIRE_THREAD_NAME_MAX 64

struct sw_wire_encoder_thread {
	uint64_t thread_id;
	uint64_t last_use;
	uint32_t depth; /* 0: slot empty */
	char name[SW_WIRE_THREAD_NAME_MAX];
	uint64_t frames[SW_WIRE_ENCODER_FRAMES];
};

/* The previous stack of the most recently sampled threads; about 266 KiB. */
struct sw_wire_encoder {
	uint64_t clock;
	struct sw_wire_encoder_thread threads[SW_WIRE_ENCODER_THREADS];
};

/* Starts a new stream: forgets every previous stack. */
void sw_wire_encoder_reset(struct sw_wire_encoder *enc);

/*
 * Encodes msg into buf.  Returns the number of bytes written, -ENOSPC when
 * cap is too small (the encoder's state is then unchanged), or -EINVAL when
 * msg breaks a limit of the format.  enc may be NULL for every type but
 * SW_MSG_SAMPLE.
 */
int sw_wire_encode(struct sw_wire_encoder *enc, uint8_t *buf, size_t cap,
		   const struct sw_wire_msg *msg);

/*
 * Forgets one thread's previous stack, so its next sample is sent whole.
 * For a sample that was encoded but then could not be delivered.
 */
void sw_wire_encoder_forget(struct sw_wire_encoder *enc, uint64_t thread_id);

/* ---- decoding (wire-decode.c; host only) ---- */

struct sw_error;
struct sw_wire_decoder;

int sw_wire_decoder_new(struct sw_wire_decoder **ret);
void sw_wire_decoder_free(struct sw_wire_decoder *dec);
/* Starts a new stream: forgets every previous stack and thread name. */
void sw_wire_decoder_reset(struct sw_wire_decoder *dec);
/*
 * Accepts samples that add to or name a stack table (a recording of format
 * version 2): refused in any other stream.  The table outlives resets.
 */
void sw_wire_decoder_use_table(struct sw_wire_decoder *dec);

/*
 * Decodes the message at the start of buf[0, len).  stream_offset is the
 * offset of buf[0] in the stream, for error messages.
 *
 * Returns the size of the message and fills msg; 0 when buf does not hold a
 * whole message yet; -EBADMSG with err naming the offset when the bytes are
 * not a valid message; -EPROTONOSUPPORT when a hello names a protocol this
 * reader does not read (err says which, and whether it is newer).  A message
 * of an unknown type is returned with its type and no fields, to be skipped.  Strings and frames in
 * msg point into the decoder and stay valid until the next call.  A hello resets the decoder's
 * stream state first.
 */
int sw_wire_decode(struct sw_wire_decoder *dec, const uint8_t *buf, size_t len,
		   uint64_t stream_offset, struct sw_wire_msg *msg, struct sw_error *err);
/*
 * Fetches into the cache what decoding the message at buf (len bytes, whole
 * or not) will read at random: the stack table entry a sample names.
 * Checks nothing; a reader calls it on messages a few ahead of the one it
 * decodes, so that the fetches have time to land.  Returns the message's
 * size when len holds it whole (where the next one starts), else 0.
 */
size_t sw_wire_decoder_prefetch(const struct sw_wire_decoder *dec, const uint8_t *buf, size_t len);

const char *sw_wire_type_name(uint32_t type);

#endif
