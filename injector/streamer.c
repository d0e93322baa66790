/*
 * The streamer: the agent's own thread that owns every socket.  It accepts
 * one client at a time on the listening socket (a newer client replaces an
 * older one, which gets a goodbye), sends the hello, waits for the client's
 * hello (protocol and optional token), then the image list, and from then on
 * turns ring records into wire messages with the shared encoder.  A slow
 * client only slows this thread: the watchdog never waits for it, the ring
 * fills and its overflow is counted and reported as dropped.
 *
 * Sockets and the wake pipe come from the backend, close-on-exec and
 * non-blocking; its send never raises SIGPIPE (a client that vanished must
 * not kill the app).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "config.h"
#include "control.h"
#include "wire/wire.h"

#define OUT_CAP        (512 * 1024)
#define HANDSHAKE_NS   5000000000ull
#define STATS_EVERY_NS SWA_NS_PER_S

enum state { NO_CLIENT, HANDSHAKE, STREAMING, CLOSING };

static int listen_fd = -1;
static int client = -1;
static enum state state = NO_CLIENT;
static int wake_pipe[2] = {-1, -1};
static uint8_t inbuf[SWA_CONTROL_MAX_BODY + 16];
static size_t inlen;
static uint8_t outbuf[OUT_CAP];
static size_t outlen, outoff;
static struct sw_wire_encoder enc;
static uint64_t handshake_deadline, last_stats;
static struct sw_wire_stats sent_stats;
static pthread_t thread;
static _Atomic bool stop_requested;
static struct swa_event *finished, *client_ready;
static char listen_desc[300];
uint64_t swa_clock_base;
static uint64_t wall_base;
struct swa_thread swa_streamer_thread;
extern struct swa_thread swa_watchdog_thread;

struct swa_ring swa_ring;
_Atomic uint64_t swa_dropped;
_Atomic uint64_t swa_samples_total;
_Atomic uint64_t swa_stalls_total;

void swa_streamer_wake(void)
{
	if (wake_pipe[1] >= 0) {
		ssize_t w = write(wake_pipe[1], "", 1);
		(void)w;
	}
}

static uint64_t ticks(uint64_t t)
{
	return t > swa_clock_base ? t - swa_clock_base : 0;
}

/* Encodes one message into the output buffer; -ENOSPC when it must drain first. */
static int put(const struct sw_wire_msg *m)
{
	int n = sw_wire_encode(&enc, outbuf + outlen, OUT_CAP - outlen, m);
	if (n < 0)
		return n;
	outlen += (size_t)n;
	return 0;
}

static void current_config(struct sw_wire_config *c)
{
	c->present = SW_CONFIG_HAS_THRESHOLD | SW_CONFIG_HAS_INTERVAL | SW_CONFIG_HAS_FLAGS |
		     SW_CONFIG_HAS_MAX_DEPTH;
	c->threshold_ms = atomic_load(&swa_cfg.threshold_ms);
	c->interval_us = atomic_load(&swa_cfg.interval_us);
	c->flags = atomic_load(&swa_cfg.all_threads) ? SW_CONFIG_ALL_THREADS : 0;
	c->max_depth = atomic_load(&swa_cfg.max_depth);
}

static void put_hello(void)
{
	struct sw_wire_msg m = {.type = SW_MSG_HELLO};
	m.hello.protocol = SW_WIRE_PROTOCOL;
	m.hello.platform = swa_plat_platform();
	m.hello.agent_version = SW_VERSION;
	m.hello.arch = SWA_ARCH_NAME;
	m.hello.os_version = swa_plat_os_version();
	m.hello.device_model = swa_plat_device_model();
	m.hello.process_name = swa_plat_process_name();
	m.hello.bundle_id = swa_cfg.bundle_id;
	m.hello.pid = (uint64_t)getpid();
	m.hello.clock_numer = 1;
	m.hello.clock_denom = 1;
	m.hello.clock_base = swa_clock_base;
	m.hello.wall_ns = wall_base;
	current_config(&m.hello.config);
	sw_wire_encoder_reset(&enc);
	put(&m);
}

static void put_goodbye(uint32_t reason, const char *text)
{
	struct sw_wire_msg m = {.type = SW_MSG_GOODBYE};
	m.goodbye.reason = reason;
	m.goodbye.text = text;
	put(&m);
}

static void image_msg(const struct swa_rec_image *rec, struct sw_wire_msg *m)
{
	m->type = SW_MSG_IMAGE_ADDED;
	m->image.index = rec->index;
	m->image.load_address = rec->load_address;
	m->image.text_vmaddr = rec->text_vmaddr;
	m->image.text_size = rec->text_size;
	m->image.id_kind = rec->id_kind;
	m->image.id_len = rec->id_len <= SW_WIRE_MAX_ID ? rec->id_len : 0;
	memcpy(m->image.id, rec->id, m->image.id_len);
	m->image.path = rec->path;
	m->image.arch = SWA_ARCH_NAME;
}

static void put_image_cb(const void *rec, size_t len, void *ctx)
{
	(void)len;
	(void)ctx;
	struct sw_wire_msg m;
	memset(&m, 0, sizeof(m));
	image_msg(rec, &m);
	put(&m);
}

static int put_stats(void)
{
	struct sw_wire_msg m = {.type = SW_MSG_STATS};
	m.stats.samples = atomic_load(&swa_samples_total);
	m.stats.dropped = atomic_load(&swa_dropped);
	m.stats.stalls = atomic_load(&swa_stalls_total);
	uint64_t a = 0, b = 0;
	swa_plat_thread_cpu_ns(&swa_watchdog_thread, &a);
	swa_plat_thread_cpu_ns(&swa_streamer_thread, &b);
	m.stats.agent_cpu_ns = a + b;
	int r = put(&m);
	if (r == 0)
		sent_stats = m.stats;
	return r;
}

/* Turns one ring record into its message; false for records to skip. */
static bool record_msg(uint16_t type, const void *p, struct sw_wire_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	switch (type) {
	case SW_MSG_SAMPLE: {
		const struct swa_rec_sample *s = p;
		m->sample.stall_id = s->stall_id;
		m->sample.time = ticks(s->time);
		m->sample.thread_id = s->thread_id;
		m->sample.thread_name = s->name;
		m->sample.flags = s->flags;
		m->sample.depth = s->depth;
		m->sample.frames = s->frames;
		return true;
	}
	case SW_MSG_STALL_BEGIN: {
		const struct swa_rec_begin *b = p;
		m->stall_begin.stall_id = b->stall_id;
		m->stall_begin.thread_id = b->thread_id;
		m->stall_begin.start_time = ticks(b->start_time);
		m->stall_begin.detect_time = ticks(b->detect_time);
		m->stall_begin.context = b->context;
		return true;
	}
	case SW_MSG_STALL_END: {
		const struct swa_rec_end *e = p;
		m->stall_end.stall_id = e->stall_id;
		m->stall_end.end_time = ticks(e->end_time);
		m->stall_end.duration_ns = e->duration_ns;
		m->stall_end.cpu_ns = e->cpu_ns;
		m->stall_end.samples = e->samples;
		m->stall_end.dropped = e->dropped;
		return true;
	}
	case SW_MSG_IMAGE_ADDED:
		image_msg(p, m);
		return true;
	case SW_MSG_IMAGE_REMOVED:
		m->image_removed.index = ((const struct swa_rec_removed *)p)->index;
		return true;
	case SW_MSG_SYMBOL_HINT: {
		const struct swa_rec_hint *h = p;
		m->symbol_hint.image_index = h->image_index;
		m->symbol_hint.offset = h->offset;
		m->symbol_hint.size = h->size;
		m->symbol_hint.name = h->name;
		return true;
	}
	}
	return false;
}

static void fill_from_ring(void)
{
	uint16_t type;
	size_t len;
	const void *p;
	bool any = false;
	while ((p = swa_ring_peek(&swa_ring, &type, &len))) {
		struct sw_wire_msg m;
		if (record_msg(type, p, &m)) {
			int r = put(&m);
			if (r == -ENOSPC)
				break;
			if (r < 0)
				atomic_fetch_add(&swa_dropped, 1);
		}
		swa_ring_pop(&swa_ring);
		any = true;
	}
	/* a stall's end brings the counters up to date */
	if (any && (atomic_load(&swa_dropped) != sent_stats.dropped))
		put_stats();
}

static void close_client(void)
{
	if (client >= 0)
		close(client);
	client = -1;
	state = NO_CLIENT;
	inlen = outlen = outoff = 0;
}

static void flush(void)
{
	while (client >= 0 && outoff < outlen) {
		long n = swa_plat_send(client, outbuf + outoff, outlen - outoff);
		if (n == -EINTR)
			continue;
		if (n == -EAGAIN || n == -EWOULDBLOCK)
			return;
		if (n <= 0) {
			swa_log("client went away: %s", n < 0 ? strerror((int)-n) : "closed");
			close_client();
			return;
		}
		outoff += (size_t)n;
	}
	outlen = outoff = 0;
	if (state == CLOSING)
		close_client();
}

static void accept_client(void)
{
	int fd = swa_plat_accept(listen_fd);
	if (fd < 0)
		return;
	if (client >= 0) {
		outlen = outoff = 0;
		put_goodbye(SW_GOODBYE_REPLACED, "another client took over");
		state = CLOSING;
		flush();
		close_client();
	}
	client = fd;
	state = HANDSHAKE;
	handshake_deadline = swa_plat_now() + HANDSHAKE_NS;
	put_hello();
	flush();
}

static bool config_ok(const struct sw_wire_config *c, const char **why)
{
	if ((c->present & SW_CONFIG_HAS_THRESHOLD) &&
	    (c->threshold_ms < 1 || c->threshold_ms > 3600000))
		*why = "threshold out of range (1 ms to 1 h)";
	else if ((c->present & SW_CONFIG_HAS_INTERVAL) &&
		 (c->interval_us < SWA_MIN_INTERVAL_US || c->interval_us > 10000000))
		*why = "interval out of range (1 ms to 10 s)";
	else if ((c->present & SW_CONFIG_HAS_MAX_DEPTH) &&
		 (c->max_depth < 1 || c->max_depth > SWA_MAX_DEPTH))
		*why = "depth out of range (1 to 4096)";
	else
		return true;
	return false;
}

static void apply_config(const struct sw_wire_config *c)
{
	struct sw_wire_msg m = {.type = SW_MSG_CONFIG_REPLY};
	const char *why = "";
	m.config_reply.accepted = config_ok(c, &why);
	if (m.config_reply.accepted) {
		if (c->present & SW_CONFIG_HAS_THRESHOLD)
			atomic_store(&swa_cfg.threshold_ms, c->threshold_ms);
		if (c->present & SW_CONFIG_HAS_INTERVAL)
			atomic_store(&swa_cfg.interval_us, c->interval_us);
		if (c->present & SW_CONFIG_HAS_FLAGS)
			atomic_store(&swa_cfg.all_threads, (c->flags & SW_CONFIG_ALL_THREADS) != 0);
		if (c->present & SW_CONFIG_HAS_MAX_DEPTH)
			atomic_store(&swa_cfg.max_depth, c->max_depth);
		why = "";
	}
	m.config_reply.reason = why;
	current_config(&m.config_reply.config);
	put(&m);
}

static void handle(const struct swa_control_msg *msg)
{
	if (msg->type == SW_MSG_CLIENT_HELLO && state == HANDSHAKE) {
		if (msg->protocol != SW_WIRE_PROTOCOL) {
			put_goodbye(SW_GOODBYE_PROTOCOL, "protocol version not supported");
			state = CLOSING;
			return;
		}
		if (swa_cfg.token[0] && strcmp(msg->token, swa_cfg.token) != 0) {
			put_goodbye(SW_GOODBYE_TOKEN, "token refused");
			state = CLOSING;
			return;
		}
		state = STREAMING;
		swa_images_each(put_image_cb, NULL);
		put_stats();
		swa_plat_event_signal(client_ready);
		swa_log("client connected on %s", listen_desc);
	} else if (msg->type == SW_MSG_CONFIG && state == STREAMING) {
		apply_config(&msg->config);
	}
}

static void read_client(void)
{
	ssize_t n = recv(client, inbuf + inlen, sizeof(inbuf) - inlen, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		close_client();
		return;
	}
	inlen += (size_t)n;
	size_t off = 0;
	while (off < inlen && state != CLOSING) {
		struct swa_control_msg msg;
		int r = swa_control_parse(inbuf + off, inlen - off, &msg);
		if (r == 0)
			break;
		if (r < 0) {
			put_goodbye(SW_GOODBYE_BAD_MESSAGE, "unreadable client message");
			state = CLOSING;
			off = inlen;
			break;
		}
		handle(&msg);
		off += (size_t)r;
	}
	memmove(inbuf, inbuf + off, inlen - off);
	inlen -= off;
	if (inlen == sizeof(inbuf) && state != CLOSING) {
		put_goodbye(SW_GOODBYE_BAD_MESSAGE, "client message too long");
		state = CLOSING;
	}
}

static void drain_wake(void)
{
	char buf[64];
	while (read(wake_pipe[0], buf, sizeof(buf)) > 0)
		;
}

/* At exit: everything in the ring, then goodbye, within the deadline. */
static void finish(uint64_t deadline)
{
	if (state != STREAMING)
		return;
	while (swa_plat_now() < deadline && client >= 0) {
		fill_from_ring();
		flush();
		if (client < 0 || (outlen == 0 && swa_ring_used(&swa_ring) == 0))
			break;
		struct pollfd pfd = {.fd = client, .events = POLLOUT};
		poll(&pfd, 1, 10);
	}
	if (client >= 0) {
		put_stats();
		put_goodbye(SW_GOODBYE_EXIT, "the process is exiting");
		state = CLOSING;
		while (client >= 0 && swa_plat_now() < deadline) {
			flush();
			struct pollfd pfd = {.fd = client, .events = POLLOUT};
			if (client >= 0)
				poll(&pfd, 1, 10);
		}
	}
}

static uint64_t finish_deadline;

static void *streamer_main(void *arg)
{
	(void)arg;
	swa_plat_name_self("sw-streamer");
	swa_plat_thread_self(&swa_streamer_thread);
	for (;;) {
		if (atomic_load(&stop_requested)) {
			finish(finish_deadline);
			break;
		}
		struct pollfd pfd[3] = {
		    {.fd = listen_fd, .events = POLLIN},
		    {.fd = wake_pipe[0], .events = POLLIN},
		    {.fd = client, .events = POLLIN | (outoff < outlen ? POLLOUT : 0)},
		};
		/* woken through the pipe for records and for the stop */
		int timeout = state == NO_CLIENT ? -1 : state == HANDSHAKE ? 100 : 250;
		poll(pfd, client >= 0 ? 3 : 2, timeout);
		if (pfd[1].revents)
			drain_wake();
		if (pfd[0].revents & POLLIN)
			accept_client();
		if (client >= 0 && (pfd[2].revents & (POLLIN | POLLHUP | POLLERR)))
			read_client();
		if (state == HANDSHAKE && swa_plat_now() > handshake_deadline)
			close_client();
		if (state == STREAMING) {
			fill_from_ring();
			uint64_t now = swa_plat_now();
			if (now - last_stats > STATS_EVERY_NS) {
				last_stats = now;
				if (atomic_load(&swa_dropped) != sent_stats.dropped ||
				    atomic_load(&swa_stalls_total) != sent_stats.stalls)
					put_stats();
			}
		}
		flush();
	}
	swa_plat_event_signal(finished);
	return NULL;
}

int swa_streamer_start(void)
{
	int r = swa_listen_open(swa_cfg.listen, &listen_fd, listen_desc, sizeof(listen_desc));
	if (r < 0) {
		if (swa_cfg.listen[0])
			swa_log("cannot listen on '%s': %s", swa_cfg.listen, strerror(-r));
		else
			swa_log("cannot listen on 127.0.0.1:%d-%d: %s", SW_WIRE_AGENT_PORT_FIRST,
				SW_WIRE_AGENT_PORT_LAST, strerror(-r));
		return r;
	}
	r = swa_plat_pipe(wake_pipe);
	if (r < 0)
		return r;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	wall_base = (uint64_t)ts.tv_sec * SWA_NS_PER_S + (uint64_t)ts.tv_nsec;
	finished = swa_plat_event_new();
	client_ready = swa_plat_event_new();
	if (!finished || !client_ready)
		return -ENOMEM;
	r = pthread_create(&thread, NULL, streamer_main, NULL);
	if (r)
		return -r;
	pthread_detach(thread);
	swa_log("listening on %s", listen_desc);
	return 0;
}

void swa_streamer_wait_client(uint32_t timeout_ms)
{
	swa_plat_event_wait(client_ready, (uint64_t)timeout_ms * SWA_NS_PER_MS);
	swa_plat_event_signal(client_ready); /* leave it signalled for anyone else */
}

void swa_streamer_stop(uint32_t timeout_ms)
{
	finish_deadline = swa_plat_now() + (uint64_t)timeout_ms * SWA_NS_PER_MS;
	atomic_store(&stop_requested, true);
	swa_streamer_wake();
	swa_plat_event_wait(finished, (uint64_t)(timeout_ms + 100) * SWA_NS_PER_MS);
	if (strncmp(listen_desc, "unix:", 5) == 0)
		unlink(listen_desc + 5);
}

void swa_streamer_atfork_child(void)
{
	if (listen_fd >= 0)
		close(listen_fd);
	if (client >= 0)
		close(client);
	listen_fd = client = -1;
}
