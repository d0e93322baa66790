/*
 * MetricKit call stack trees into profile stalls (see metrickit.h), parsed
 * with jansson.  The document is walked twice: once to check every type,
 * count and bound (so a malformed payload adds nothing), then to add the
 * stalls.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrickit.h"
#include "util/str.h"
#include "util/time-units.h"

int sw_metrickit_sniff(const uint8_t *data, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r')
			continue;
		return data[i] == '{' || data[i] == '[';
	}
	return 0;
}

#ifndef SW_HAVE_JANSSON

int sw_metrickit_load(const char *data, size_t len, struct sw_profile *p, struct sw_report *r,
		      const char *source, uint64_t first_id, struct sw_error *err)
{
	(void)data;
	(void)len;
	(void)p;
	(void)r;
	(void)source;
	(void)first_id;
	return sw_error_set(err, -ENOTSUP, "built without JSON support (jansson)");
}

#else

#include <jansson.h>

__extension__ typedef unsigned __int128 u128;

struct mk {
	struct sw_profile *p;
	struct sw_report *r;
	struct sw_error *err;
	bool adding;
	size_t frames, trees;
	/* while adding */
	struct sw_tree_stall *stall;
	uint32_t thread;
	uint32_t *path;
	uint64_t duration_ns, total, cum;
	struct sw_buf name;
};

static int bad(struct mk *m, const char *where, const char *what)
{
	return sw_error_set(m->err, -EBADMSG, "%s: %s", where, what);
}

/* A frame's integer field; absent ones are 0 when optional. */
static int get_uint(struct mk *m, json_t *obj, const char *key, bool required, uint64_t *ret,
		    const char *where)
{
	json_t *v = json_object_get(obj, key);
	if (!v) {
		*ret = 0;
		if (!required)
			return 0;
		char msg[96];
		snprintf(msg, sizeof(msg), "\"%s\" is missing", key);
		return bad(m, where, msg);
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		char msg[96];
		snprintf(msg, sizeof(msg), "\"%s\" is not a non-negative integer", key);
		return bad(m, where, msg);
	}
	*ret = (uint64_t)json_integer_value(v);
	return 0;
}

static int parse_uuid(const char *s, uint8_t out[16])
{
	size_t n = 0;
	for (; *s && n < 32; s++) {
		if (*s == '-')
			continue;
		unsigned v;
		if (*s >= '0' && *s <= '9')
			v = (unsigned)(*s - '0');
		else if ((*s | 0x20) >= 'a' && (*s | 0x20) <= 'f')
			v = (unsigned)((*s | 0x20) - 'a' + 10);
		else
			return -EINVAL;
		out[n / 2] = (uint8_t)(n % 2 ? out[n / 2] | v : v << 4);
		n++;
	}
	return n == 32 && !*s ? 0 : -EINVAL;
}

/*
 * MetricKit names images but gives no paths: the libraries and frameworks
 * of iOS that --hide-system should hide, by name.
 */
static bool apple_system_image(const char *name)
{
	static const char *const prefixes[] = {"libsystem_", "libdispatch", "libobjc", "libswift",
					       "libc++",     "libdyld",     "dyld",    "libxpc"};
	static const char *const names[] = {
	    "UIKitCore",
	    "UIKit",
	    "CoreFoundation",
	    "Foundation",
	    "GraphicsServices",
	    "QuartzCore",
	    "FrontBoardServices",
	    "BaseBoard",
	    "CoreGraphics",
	    "SwiftUI",
	    "AttributeGraph",
	    "CFNetwork",
	    "libsystem_kernel.dylib",
	    "WebKit",
	    "JavaScriptCore",
	    "CoreData",
	    "RunningBoardServices",
	    "AppKit",
	    "CoreText",
	    "ImageIO",
	};
	if (!name)
		return false;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

/* The frame ids of one MetricKit frame: symbolicated, else "binaryName + offset". */
static int frame_ids(struct mk *m, json_t *f, bool has_children, const uint32_t **ret_ids,
		     size_t *ret_n, uint32_t *one)
{
	uint64_t address, offset;
	get_uint(m, f, "address", false, &address, "");
	get_uint(m, f, "offsetIntoBinaryTextSegment", false, &offset, "");
	const char *uuid = json_string_value(json_object_get(f, "binaryUUID"));
	const char *bin = json_string_value(json_object_get(f, "binaryName"));
	uint8_t id[16];
	bool have_id = uuid && parse_uuid(uuid, id) == 0;
	struct sw_report_image img = {
	    .name = bin ? bin : "?",
	    .id = have_id ? id : NULL,
	    .id_len = have_id ? 16 : 0,
	    .macho = true,
	    .load_address = address >= offset ? address - offset : 0,
	    .system = apple_system_image(bin),
	};
	int e = sw_report_frames(m->r, &img, address, has_children, ret_ids, ret_n);
	if (e == -E2BIG)
		return sw_error_set(m->err, e,
				    "more than %u distinct binaries (the limit of one report)",
				    SW_TREE_MAX_IMAGES);
	if (e < 0)
		return e;
	const struct sw_tree_frame *f0 = sw_profile_get_frame(m->p, (*ret_ids)[0]);
	if (*ret_n == 1 && !f0->linkage && !f0->name) {
		struct sw_tree_frame named = *f0;
		sw_buf_reset(&m->name);
		sw_buf_printf(&m->name, "%s + %llu", bin ? bin : "???", (unsigned long long)offset);
		named.name = sw_buf_str(&m->name);
		e = sw_profile_frame(m->p, &named, one);
		if (e < 0)
			return e;
		*ret_ids = one;
	}
	return 0;
}

/* The weight of count more samples, rounded so that all of them add up to the duration. */
static uint64_t scaled(struct mk *m, uint64_t count)
{
	if (!m->duration_ns || !m->total)
		return count;
	u128 a = (u128)m->cum * m->duration_ns / m->total;
	m->cum += count;
	u128 b = (u128)m->cum * m->duration_ns / m->total;
	return (uint64_t)(b - a);
}

static int walk(struct mk *m, json_t *f, size_t depth, size_t path_len, const char *where);

static int walk_children(struct mk *m, json_t *subs, size_t depth, size_t path_len,
			 uint64_t *ret_sum, const char *where)
{
	*ret_sum = 0;
	if (!subs)
		return 0;
	if (!json_is_array(subs))
		return bad(m, where, "\"subFrames\" is not an array");
	size_t i;
	json_t *c;
	json_array_foreach(subs, i, c)
	{
		uint64_t n;
		int e = walk(m, c, depth + 1, path_len, where);
		if (e < 0)
			return e;
		get_uint(m, c, "sampleCount", false, &n, where);
		if (*ret_sum > UINT64_MAX - n)
			return bad(m, where, "sample counts overflow");
		*ret_sum += n;
	}
	return 0;
}

static int walk(struct mk *m, json_t *f, size_t depth, size_t path_len, const char *where)
{
	if (!json_is_object(f))
		return bad(m, where, "a frame is not an object");
	if (depth >= SW_METRICKIT_MAX_DEPTH)
		return bad(m, where, "frames nested too deep");
	if (++m->frames > SW_METRICKIT_MAX_FRAMES)
		return bad(m, where, "too many frames");
	uint64_t count, v;
	int e = get_uint(m, f, "sampleCount", false, &count, where);
	if (e >= 0)
		e = get_uint(m, f, "address", false, &v, where);
	if (e >= 0)
		e = get_uint(m, f, "offsetIntoBinaryTextSegment", false, &v, where);
	if (e < 0)
		return e;
	json_t *uuid = json_object_get(f, "binaryUUID"), *bin = json_object_get(f, "binaryName");
	if ((uuid && !json_is_string(uuid) && !json_is_null(uuid)) ||
	    (bin && !json_is_string(bin) && !json_is_null(bin)))
		return bad(m, where, "\"binaryUUID\" or \"binaryName\" is not a string");
	json_t *subs = json_object_get(f, "subFrames");
	bool has_children = json_is_array(subs) && json_array_size(subs) > 0;
	size_t len = path_len;
	if (m->adding) {
		const uint32_t *ids;
		size_t n;
		uint32_t one;
		e = frame_ids(m, f, has_children, &ids, &n, &one);
		if (e < 0)
			return e;
		if (len + n > SW_TREE_MAX_DEPTH)
			return bad(m, where, "stack too deep");
		memcpy(m->path + len, ids, n * sizeof(*ids));
		len += n;
	}
	uint64_t children;
	e = walk_children(m, subs, depth, len, &children, where);
	if (e < 0 || !m->adding)
		return e;
	/* counts usually shrink toward the leaves; where they do not, self is 0 */
	uint64_t self = count > children ? count - children : 0;
	if (!self)
		return 0;
	return sw_tree_stall_add_sample(m->p, m->stall, m->thread, m->path, len, scaled(m, self));
}

/* "2.5 sec", "1200 ms", "3 min", or a number of seconds; 0 when absent or unreadable. */
static uint64_t hang_duration(json_t *meta)
{
	json_t *v = meta ? json_object_get(meta, "hangDuration") : NULL;
	double x;
	char unit[16] = "s";
	if (json_is_number(v)) {
		x = json_number_value(v);
	} else if (json_is_string(v)) {
		char num[32];
		const char *s = json_string_value(v);
		size_t k = 0;
		while (*s && k + 1 < sizeof(num) && (strchr("0123456789.", *s) || *s == ','))
			if (*s++ != ',')
				num[k++] = s[-1];
		num[k] = 0;
		while (*s == ' ')
			s++;
		snprintf(unit, sizeof(unit), "%s", s);
		char *end;
		x = strtod(num, &end);
		if (end == num)
			return 0;
	} else {
		return 0;
	}
	double scale = !strcmp(unit, "ms")    ? (double)SW_NS_PER_MS
		       : !strcmp(unit, "min") ? 60.0 * (double)SW_NS_PER_S
		       : (!strcmp(unit, "s") || !strncmp(unit, "sec", 3)) ? (double)SW_NS_PER_S
									  : 0;
	if (!(x > 0) || !(x * scale < 1e18))
		return 0;
	return (uint64_t)llround(x * scale);
}

static int check_tree(struct mk *m, json_t *tree, const char *where)
{
	if (!json_is_object(tree))
		return bad(m, where, "the call stack tree is not an object");
	json_t *stacks = json_object_get(tree, "callStacks");
	if (!json_is_array(stacks))
		return bad(m, where, "\"callStacks\" is missing or not an array");
	if (json_array_size(stacks) > SW_TREE_MAX_THREADS)
		return bad(m, where, "too many call stacks");
	size_t i;
	json_t *cs;
	json_array_foreach(stacks, i, cs)
	{
		if (!json_is_object(cs))
			return bad(m, where, "a call stack is not an object");
		json_t *roots = json_object_get(cs, "callStackRootFrames");
		if (!json_is_array(roots))
			return bad(m, where, "\"callStackRootFrames\" is missing or not an array");
		json_t *attr = json_object_get(cs, "threadAttributed");
		if (attr && !json_is_boolean(attr))
			return bad(m, where, "\"threadAttributed\" is not a boolean");
	}
	return 0;
}

/* The call stack of the stall's thread: the attributed one, else the first. */
static size_t attributed(json_t *stacks)
{
	for (size_t i = 0; i < json_array_size(stacks); i++)
		if (json_is_true(json_object_get(json_array_get(stacks, i), "threadAttributed")))
			return i;
	return 0;
}

static uint64_t root_total(json_t *cs)
{
	uint64_t t = 0, n;
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(cs, "callStackRootFrames"), i, f)
	{
		json_t *v = json_object_get(f, "sampleCount");
		n = json_is_integer(v) && json_integer_value(v) > 0
			? (uint64_t)json_integer_value(v)
			: 0;
		t = t > UINT64_MAX - n ? UINT64_MAX : t + n;
	}
	return t;
}

static int tree_stacks(struct mk *m, json_t *tree, const char *where)
{
	json_t *stacks = json_object_get(tree, "callStacks");
	bool per_thread = !json_is_false(json_object_get(tree, "callStackPerThread"));
	size_t main = attributed(stacks);
	if (m->adding) {
		/* the stall's thread adds up to the duration; others weigh alike */
		m->total = 0;
		for (size_t i = 0; i < json_array_size(stacks); i++)
			if (i == main || !per_thread) {
				uint64_t t = root_total(json_array_get(stacks, i));
				m->total = m->total > UINT64_MAX - t ? UINT64_MAX : m->total + t;
			}
		m->cum = 0;
	}
	size_t i;
	json_t *cs;
	json_array_foreach(stacks, i, cs)
	{
		if (m->adding) {
			/* one thread per call stack; not per thread, all are the stall's */
			uint64_t tid = per_thread ? (uint64_t)i + 1 : main + 1;
			char name[32] = "";
			if (i != main && per_thread)
				snprintf(name, sizeof(name), "thread %zu", i);
			int e = sw_tree_stall_thread(m->p, m->stall, tid, name, &m->thread);
			if (e < 0)
				return e;
			if (per_thread)
				m->cum = 0;
		}
		size_t k;
		json_t *f;
		json_array_foreach(json_object_get(cs, "callStackRootFrames"), k, f)
		{
			int e = walk(m, f, 0, 0, where);
			if (e < 0)
				return e;
		}
	}
	return 0;
}

static int one_tree(struct mk *m, json_t *tree, json_t *meta, const char *source, uint64_t id,
		    const char *where)
{
	if (++m->trees > SW_METRICKIT_MAX_TREES)
		return bad(m, where, "too many call stack trees");
	int e = check_tree(m, tree, where);
	if (e < 0 || !m->adding)
		return e < 0 ? e : tree_stacks(m, tree, where);
	json_t *stacks = json_object_get(tree, "callStacks");
	size_t main = attributed(stacks);
	bool per_thread = !json_is_false(json_object_get(tree, "callStackPerThread"));
	uint64_t count = 0;
	for (size_t i = 0; i < json_array_size(stacks); i++)
		if (i == main || !per_thread) {
			uint64_t t = root_total(json_array_get(stacks, i));
			count = count > UINT64_MAX - t ? UINT64_MAX : count + t;
		}
	m->duration_ns = hang_duration(meta);
	char *meta_text = meta ? json_dumps(meta, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	struct sw_tree_stall_info info = {
	    .id = id,
	    .source = source,
	    .kind = "hang",
	    .thread_id = main + 1,
	    .duration_ns = m->duration_ns,
	    .samples = count,
	    .counts_only = !m->duration_ns,
	    .metadata_json = meta_text,
	};
	e = sw_profile_add_stall(m->p, &info, &m->stall);
	free(meta_text);
	return e < 0 ? e : tree_stacks(m, tree, where);
}

/*
 * An object that is neither a payload with hangs nor a call stack tree:
 * says so, and names the diagnostics it holds instead (a payload of
 * crashes only, say).
 */
static int neither(struct mk *m, json_t *doc, const char *where)
{
	char held[160] = "";
	const char *key;
	json_t *v;
	json_object_foreach(doc, key, v)
	{
		size_t used = strlen(held);
		if (sw_ends_with(key, "Diagnostics"))
			snprintf(held + used, sizeof(held) - used, "%s%s", used ? ", " : "", key);
	}
	return sw_error_set(m->err, -EBADMSG,
			    "%s: neither a MetricKit payload with \"hangDiagnostics\" nor a call "
			    "stack tree with \"callStacks\"%s%s%s",
			    where, held[0] ? " (it holds " : "", held, held[0] ? ")" : "");
}

/* Every tree of the document, checked (adding false) or added. */
static int document(struct mk *m, json_t *root, const char *source, uint64_t first_id)
{
	json_t *items = json_is_array(root) ? root : NULL;
	size_t nitems = items ? json_array_size(items) : 1;
	uint64_t id = first_id;
	char where[64];
	for (size_t k = 0; k < nitems; k++) {
		json_t *doc = items ? json_array_get(items, k) : root;
		if (!json_is_object(doc))
			return bad(m, "payload", "not a JSON object");
		json_t *hangs = json_object_get(doc, "hangDiagnostics");
		if (!hangs && !json_object_get(doc, "callStacks")) {
			snprintf(where, sizeof(where), "document %zu", k + 1);
			return neither(m, doc, items ? where : "payload");
		}
		if (!hangs) {
			snprintf(where, sizeof(where), "call stack tree %zu", k + 1);
			int e = one_tree(m, doc, NULL, source, id++, where);
			if (e < 0)
				return e;
			continue;
		}
		if (!json_is_array(hangs))
			return bad(m, "payload", "\"hangDiagnostics\" is not an array");
		size_t i;
		json_t *h;
		json_array_foreach(hangs, i, h)
		{
			snprintf(where, sizeof(where), "hang diagnostic %zu", i + 1);
			if (!json_is_object(h))
				return bad(m, where, "not an object");
			json_t *meta = json_object_get(h, "diagnosticMetaData");
			if (meta && !json_is_object(meta))
				return bad(m, where, "\"diagnosticMetaData\" is not an object");
			int e = one_tree(m, json_object_get(h, "callStackTree"), meta, source, id++,
					 where);
			if (e < 0)
				return e;
		}
	}
	return (int)(id - first_id);
}

int sw_metrickit_load(const char *data, size_t len, struct sw_profile *p, struct sw_report *r,
		      const char *source, uint64_t first_id, struct sw_error *err)
{
	if (len > SW_METRICKIT_MAX_INPUT)
		return sw_error_set(err, -EFBIG, "larger than %zu MiB",
				    SW_METRICKIT_MAX_INPUT >> 20);
	json_error_t je;
	json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return sw_error_set(err, -EBADMSG,
				    "invalid JSON at line %d column %d (offset %d): %s", je.line,
				    je.column, je.position, je.text);
	struct mk m = {.p = p, .r = r, .err = err};
	int e = document(&m, root, source, first_id);
	if (e >= 0) {
		m.adding = true;
		m.frames = m.trees = 0;
		m.path = malloc(SW_TREE_MAX_DEPTH * sizeof(*m.path));
		sw_buf_init(&m.name, 4096);
		e = m.path ? document(&m, root, source, first_id) : -ENOMEM;
		free(m.path);
		sw_buf_finish(&m.name);
	}
	json_decref(root);
	return e;
}

#endif
