/*
 * The streamer: the agent's own thread that owns every socket.  It streams
 * to one client at a time, and only to a client that proved itself
 * (stallwatch-agent(7)): a new connection waits in one of a few slots,
 * gets a hello that says only the protocol and the bundle id, and has two
 * seconds to send a client hello with the token (or to come through a
 * connection the backend vouches for, usbmuxd on iOS).  Garbage, a wrong
 * token, a slow or silent client only ever cost that slot; when the slots
 * are full a new connection is closed at once.  A client that proves
 * itself replaces the one before (which gets a goodbye), receives the full
 * hello and the image list, may change the configuration, and from then
 * on gets the ring's records as wire messages from the shared encoder.  A slow
 * client only slows this thread: the watchdog never waits for it, the ring
 * fills and its overflow is counted and reported as dropped.
 *
 * Sockets and the wake pipe come from the backend, close-on-exec and
 * non-blocking; its send never raises SIGPIPE (a client that vanished must
 * not kill the app).  Each is checked to be still the agent's before every
 * use (descriptor.c): one the app closed or reused is forgotten, the wake
 * pipe and the listener are opened anew (the listener a few times at
 * most), and a lost client is simply gone.  Nothing is polled that is not
 * the agent's, so an agent whose descriptors were taken stays idle.
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
#define PROOF_NS       (2 * SWA_NS_PER_S) /* a new connection proves itself within this */
#define MAX_PENDING    8
#define STATS_EVERY_NS SWA_NS_PER_S
#define STALL_POLL_MS  50 /* the most of a stall's end an abrupt exit loses */

enum state { NO_CLIENT, STREAMING, CLOSING };

/* A connection that has not proved itself yet. */
struct pending {
	struct swa_fd fd;
	uint64_t deadline;
	size_t len;
	uint8_t in[1024];
};
static struct pending pend[MAX_PENDING];
static struct sw_wire_encoder pre_enc;

#define LISTEN_REOPENS 3

static struct swa_fd listener = SWA_FD_NONE, client_id = SWA_FD_NONE;
static struct swa_fd wake_r = SWA_FD_NONE, wake_w = SWA_FD_NONE;
static int reopens_left = LISTEN_REOPENS;
static enum state state = NO_CLIENT;
static _Atomic bool streaming; /* a proven client is connected: STREAMING, or CLOSING after it */
static uint8_t inbuf[SWA_CONTROL_MAX_BODY + 16];
static size_t inlen;
static uint8_t outbuf[OUT_CAP];
static size_t outlen, outoff;
static struct sw_wire_encoder enc;
static uint64_t last_stats;
static struct sw_wire_stats sent_stats;
static pthread_t thread;
static _Atomic bool stop_requested;
static struct swa_event *finished, *client_ready, *drained;
/* drains asked for (swa_streamer_drain()) and the last one done, counted */
static _Atomic uint32_t drain_asked, drain_done;
static char listen_desc[300];
uint64_t swa_clock_base;
static uint64_t wall_base;
struct swa_thread swa_streamer_thread;
extern struct swa_thread swa_watchdog_thread;

struct swa_ring swa_ring;
_Atomic uint64_t swa_dropped;
_Atomic uint64_t swa_samples_total;
_Atomic uint64_t swa_stalls_total;
_Atomic bool swa_stall_open;

void swa_streamer_wake(void)
{
	/* any thread: checks, never forgets (only the streamer changes them) */
	if (swa_fd_ours(&wake_w)) {
		ssize_t w = write(atomic_load(&wake_w.fd), "", 1);
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
	m.hello.bundle_version = swa_cfg.bundle_version;
	m.hello.pid = (uint64_t)getpid();
	m.hello.clock_numer = 1;
	m.hello.clock_denom = 1;
	m.hello.clock_base = swa_clock_base;
	m.hello.wall_ns = wall_base;
	current_config(&m.hello.config);
	m.hello.passive = swa_plat_passive_reason();
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
	m->image.nmore_text = rec->nmore_text;
	for (uint32_t i = 0; i < rec->nmore_text && i < SW_WIRE_MAX_MORE_TEXT; i++) {
		m->image.more_text[i].vmaddr = rec->more_text[i].vmaddr;
		m->image.more_text[i].size = rec->more_text[i].size;
	}
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
	uint64_t first = atomic_load(&swa_loop_first_wait);
	m.stats.has_loop = true;
	m.stats.loop_first_wait = first ? ticks(first) + 1 : 0;
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
		m->sample.elided = s->elided;
		m->sample.elided_at = s->elided_at;
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
		m->stall_end.has_late = true;
		m->stall_end.late = e->late;
		m->stall_end.late_ns = e->late_ns;
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

/* The client is gone (its descriptor closed or taken): nothing of its is kept. */
static void forget_client(void)
{
	state = NO_CLIENT;
	atomic_store(&streaming, false);
	inlen = outlen = outoff = 0;
}

static void close_client(void)
{
	swa_fd_close(&client_id);
	forget_client();
}

/* The client's descriptor while it is still ours; a lost one ends the client. */
static int client_fd(void)
{
	int fd = swa_fd_get(&client_id);
	if (fd < 0 && state != NO_CLIENT)
		forget_client();
	return fd;
}

static void flush(void)
{
	int fd;
	while ((fd = client_fd()) >= 0 && outoff < outlen) {
		long n = swa_plat_send(fd, outbuf + outoff, outlen - outoff);
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

/* One message to a connection not proven yet: whatever fits at once, no buffering. */
static void send_now(int fd, const struct sw_wire_msg *m)
{
	static uint8_t buf[1024];
	int n = sw_wire_encode(&pre_enc, buf, sizeof(buf), m);
	if (n > 0)
		swa_plat_send(fd, buf, (size_t)n);
}

/* What `attach BUNDLE-ID` needs to pick the app, and nothing else. */
static void send_first_hello(int fd)
{
	struct sw_wire_msg m = {.type = SW_MSG_HELLO};
	m.hello.protocol = SW_WIRE_PROTOCOL;
	m.hello.agent_version = m.hello.arch = m.hello.os_version = "";
	m.hello.device_model = m.hello.process_name = "";
	m.hello.bundle_id = swa_cfg.bundle_id;
	m.hello.clock_numer = m.hello.clock_denom = 1;
	sw_wire_encoder_reset(&pre_enc);
	send_now(fd, &m);
}

static void drop_pending(struct pending *p, uint32_t reason, const char *text)
{
	int fd = swa_fd_get(&p->fd);
	if (fd >= 0 && reason) {
		struct sw_wire_msg m = {.type = SW_MSG_GOODBYE};
		m.goodbye.reason = reason;
		m.goodbye.text = text;
		send_now(fd, &m);
	}
	swa_fd_close(&p->fd);
	p->len = 0;
}

static void accept_client(void)
{
	for (int i = 0; i < MAX_PENDING * 2; i++) {
		int lfd = swa_fd_get(&listener);
		int fd = lfd < 0 ? -1 : swa_plat_accept(lfd);
		if (fd < 0)
			return;
		struct pending *p = NULL;
		for (size_t k = 0; k < MAX_PENDING && !p; k++)
			if (atomic_load(&pend[k].fd.fd) < 0)
				p = &pend[k];
		if (!p || swa_fd_adopt(&p->fd, fd) < 0) {
			close(fd); /* every slot taken: the active client is not touched */
			continue;
		}
		p->len = 0;
		p->deadline = swa_plat_now() + PROOF_NS;
		send_first_hello(fd);
	}
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
	/* only a proven client is here: it alone may change the configuration */
	if (msg->type == SW_MSG_CONFIG && state == STREAMING)
		apply_config(&msg->config);
}

static void process_input(void);

static bool same_token(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned diff = la != lb;
	for (size_t i = 0; i < la && i < lb; i++)
		diff |= (unsigned)(a[i] ^ b[i]);
	return la && !diff;
}

/* A connection proved itself: it becomes the client, replacing the one before. */
static void promote(struct pending *p, size_t used)
{
	int fd = swa_fd_get(&p->fd);
	if (client_fd() >= 0) {
		outlen = outoff = 0;
		put_goodbye(SW_GOODBYE_REPLACED, "another client took over");
		state = CLOSING;
		flush();
		close_client();
	}
	swa_fd_adopt(&client_id, fd);
	atomic_store(&p->fd.fd, -1); /* handed over, not closed */
	inlen = p->len - used;
	memcpy(inbuf, p->in + used, inlen);
	p->len = 0;
	state = STREAMING;
	atomic_store(&streaming, true);
	put_hello();
	swa_images_each(put_image_cb, NULL);
	put_stats();
	process_input(); /* a configuration sent right behind the hello */
	flush();
	/* only now may an app waiting at start go on: it may end at once, with _exit() */
	swa_plat_event_signal(client_ready);
	swa_log("client connected on %s", listen_desc);
}

static void read_pending(struct pending *p)
{
	int fd = swa_fd_get(&p->fd);
	if (fd < 0) {
		p->len = 0;
		return;
	}
	ssize_t n = recv(fd, p->in + p->len, sizeof(p->in) - p->len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		drop_pending(p, 0, NULL);
		return;
	}
	p->len += (size_t)n;
	struct swa_control_msg msg;
	int r = swa_control_parse(p->in, p->len, &msg);
	if (r == 0 && p->len < sizeof(p->in))
		return;
	if (r <= 0 || msg.type != SW_MSG_CLIENT_HELLO)
		drop_pending(p, SW_GOODBYE_BAD_MESSAGE, "expected a client hello");
	else if (msg.protocol != SW_WIRE_PROTOCOL)
		drop_pending(p, SW_GOODBYE_PROTOCOL, "protocol version not supported");
	else if (!swa_plat_connection_proves(fd) && !same_token(msg.token, swa_cfg.token))
		drop_pending(p, SW_GOODBYE_TOKEN, "token refused");
	else
		promote(p, (size_t)r);
}

static void expire_pending(uint64_t now)
{
	for (size_t k = 0; k < MAX_PENDING; k++)
		if (atomic_load(&pend[k].fd.fd) >= 0 && now > pend[k].deadline)
			drop_pending(&pend[k], 0, NULL);
}

static void read_client(void)
{
	int fd = client_fd();
	if (fd < 0)
		return;
	ssize_t n = recv(fd, inbuf + inlen, sizeof(inbuf) - inlen, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		close_client();
		return;
	}
	inlen += (size_t)n;
	process_input();
}

static void process_input(void)
{
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
	int fd = swa_fd_get(&wake_r);
	while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
		;
}

/* Why the agent ends, for the goodbye: swa_streamer_stop()'s. */
static const char *finish_why = "the process is exiting";

/* At exit: everything in the ring, then goodbye, within the deadline. */
static void finish(uint64_t deadline)
{
	if (state != STREAMING)
		return;
	while (swa_plat_now() < deadline && client_fd() >= 0) {
		fill_from_ring();
		flush();
		if (client_fd() < 0 || (outlen == 0 && swa_ring_used(&swa_ring) == 0))
			break;
		struct pollfd pfd = {.fd = client_fd(), .events = POLLOUT};
		poll(&pfd, 1, 10);
	}
	if (client_fd() >= 0) {
		put_stats();
		put_goodbye(SW_GOODBYE_EXIT, finish_why);
		state = CLOSING;
		while (client_fd() >= 0 && swa_plat_now() < deadline) {
			flush();
			struct pollfd pfd = {.fd = client_fd(), .events = POLLOUT};
			if (pfd.fd >= 0)
				poll(&pfd, 1, 10);
		}
	}
}

static uint64_t finish_deadline;

static int open_wake_pipe(void)
{
	int p[2];
	int r = swa_plat_pipe(p);
	if (r < 0)
		return r;
	swa_fd_adopt(&wake_r, p[0]);
	swa_fd_adopt(&wake_w, p[1]);
	return 0;
}

/* Forgets what the app took over; opens a new wake pipe, and a new listener a few times. */
static void check_descriptors(void)
{
	if (swa_fd_get(&wake_r) < 0 || swa_fd_get(&wake_w) < 0) {
		swa_fd_close(&wake_r); /* the end still ours, if any */
		swa_fd_close(&wake_w);
		open_wake_pipe();
	}
	if (swa_fd_get(&listener) < 0 && reopens_left > 0) {
		int fd;
		reopens_left--;
		if (swa_listen_open(swa_cfg.listen, &fd, listen_desc, sizeof(listen_desc)) == 0 &&
		    swa_fd_adopt(&listener, fd) >= 0)
			swa_log("listening again on %s", listen_desc);
		else
			swa_log("cannot listen again: clients cannot connect");
	}
	client_fd();
}

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
		check_descriptors();
		/* only descriptors still ours: poll skips the negative ones */
		struct pollfd pfd[3 + MAX_PENDING] = {
		    {.fd = atomic_load(&listener.fd), .events = POLLIN},
		    {.fd = atomic_load(&wake_r.fd), .events = POLLIN},
		    {.fd = atomic_load(&client_id.fd),
		     .events = POLLIN | (outoff < outlen ? POLLOUT : 0)},
		};
		bool waiting = false;
		for (size_t k = 0; k < MAX_PENDING; k++) {
			pfd[3 + k].fd = swa_fd_get(&pend[k].fd);
			pfd[3 + k].events = POLLIN;
			waiting |= pfd[3 + k].fd >= 0;
		}
		/*
		 * Woken through the pipe for records and for the stop; during
		 * a stall its samples go out every STALL_POLL_MS too: a process
		 * that ends with _exit() (Go's runtime, a crash, the system's
		 * watchdog killing a hung app) runs nothing of ours on the way
		 * out, and loses what was not sent.
		 */
		int timeout = 250;
		if (waiting)
			timeout = 100;
		else if (state == NO_CLIENT)
			timeout = -1;
		else if (atomic_load_explicit(&swa_stall_open, memory_order_relaxed))
			timeout = STALL_POLL_MS;
		if (pfd[1].fd < 0 && timeout < 0)
			timeout = 1000; /* no wake pipe: look for the stop now and then */
		poll(pfd, 3 + MAX_PENDING, timeout);
		if (pfd[1].revents)
			drain_wake();
		if (pfd[0].revents & POLLIN)
			accept_client();
		if (pfd[2].revents & (POLLIN | POLLHUP | POLLERR))
			read_client();
		for (size_t k = 0; k < MAX_PENDING; k++)
			if (pfd[3 + k].fd >= 0 &&
			    (pfd[3 + k].revents & (POLLIN | POLLHUP | POLLERR)))
				read_pending(&pend[k]);
		expire_pending(swa_plat_now());
		if (state == STREAMING) {
			fill_from_ring();
			uint64_t now = swa_plat_now();
			/*
			 * The loop's first wait at once (within this poll's
			 * timeout): a client that stops reading before the end
			 * (--duration) of an app that idles without a stall
			 * would else take the loop for never watched.
			 */
			if (!sent_stats.loop_first_wait &&
			    atomic_load_explicit(&swa_loop_first_wait, memory_order_relaxed)) {
				last_stats = now;
				put_stats();
			} else if (now - last_stats > STATS_EVERY_NS) {
				last_stats = now;
				if (atomic_load(&swa_dropped) != sent_stats.dropped ||
				    atomic_load(&swa_stalls_total) != sent_stats.stalls)
					put_stats();
			}
		}
		flush();
		/* a drain asked for is done when all was sent that could be */
		uint32_t asked = atomic_load(&drain_asked);
		if (asked != atomic_load(&drain_done) &&
		    (state != STREAMING || (outlen == 0 && swa_ring_used(&swa_ring) == 0))) {
			atomic_store(&drain_done, asked);
			swa_plat_event_signal(drained);
		}
	}
	swa_plat_event_signal(finished);
	return NULL;
}

int swa_streamer_start(void)
{
	int fd = -1;
	int r = swa_listen_open(swa_cfg.listen, &fd, listen_desc, sizeof(listen_desc));
	if (r == 0 && swa_fd_adopt(&listener, fd) < 0)
		r = -EBADF;
	if (r < 0) {
		if (swa_cfg.listen[0])
			swa_log("cannot listen on '%s': %s", swa_cfg.listen, strerror(-r));
		else
			swa_log("cannot listen on 127.0.0.1:%d-%d: %s", SW_WIRE_AGENT_PORT_FIRST,
				SW_WIRE_AGENT_PORT_LAST, strerror(-r));
		return r;
	}
	for (size_t k = 0; k < MAX_PENDING; k++)
		atomic_store(&pend[k].fd.fd, -1);
	r = swa_plat_publish_token(listen_desc, swa_cfg.token, sizeof(swa_cfg.token));
	if (r < 0)
		swa_log("cannot publish a token for %s: %s", listen_desc, strerror(-r));
	r = open_wake_pipe();
	if (r < 0)
		return r;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	wall_base = (uint64_t)ts.tv_sec * SWA_NS_PER_S + (uint64_t)ts.tv_nsec;
	finished = swa_plat_event_new();
	client_ready = swa_plat_event_new();
	drained = swa_plat_event_new();
	if (!finished || !client_ready || !drained)
		return -ENOMEM;
	r = pthread_create(&thread, NULL, streamer_main, NULL);
	if (r)
		return -r;
	pthread_detach(thread);
	swa_log("listening on %s", listen_desc);
	return 0;
}

bool swa_streamer_has_client(void)
{
	return atomic_load(&streaming);
}

void swa_streamer_drain(uint32_t timeout_ms)
{
	if (!drained)
		return;
	uint32_t ticket = atomic_fetch_add(&drain_asked, 1) + 1;
	swa_streamer_wake();
	uint64_t deadline = swa_plat_now() + (uint64_t)timeout_ms * SWA_NS_PER_MS;
	for (;;) {
		uint64_t now = swa_plat_now();
		/* a later ticket done is this one done: they are served in order */
		if ((int32_t)(atomic_load(&drain_done) - ticket) >= 0 || now >= deadline)
			return;
		swa_plat_event_wait(drained, deadline - now);
	}
}

void swa_streamer_wait_client(uint32_t timeout_ms)
{
	swa_plat_event_wait(client_ready, (uint64_t)timeout_ms * SWA_NS_PER_MS);
	swa_plat_event_signal(client_ready); /* leave it signalled for anyone else */
}

void swa_streamer_stop(uint32_t timeout_ms, const char *why)
{
	finish_why = why; /* before the stop the streamer acts on */
	finish_deadline = swa_plat_now() + (uint64_t)timeout_ms * SWA_NS_PER_MS;
	atomic_store(&stop_requested, true);
	swa_streamer_wake();
	swa_plat_event_wait(finished, (uint64_t)(timeout_ms + 100) * SWA_NS_PER_MS);
	if (strncmp(listen_desc, "unix:", 5) == 0)
		unlink(listen_desc + 5);
	swa_plat_unpublish_token();
}

void swa_streamer_atfork_child(void)
{
	swa_fd_close(&listener);
	swa_fd_close(&client_id);
	swa_fd_close(&wake_r);
	swa_fd_close(&wake_w);
	for (size_t k = 0; k < MAX_PENDING; k++)
		swa_fd_close(&pend[k].fd);
}
