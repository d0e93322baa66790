/*
 * The profile behind call trees: interned strings, images and frames, the
 * distinct stacks and the stalls with their samples (see tree.h).
 *
 * Adding a sample is the hot path (a million samples of 64 frames must
 * aggregate in well under a second).  A stack is kept once, whole, in a
 * pool and found by the hash of its frames; the prefix hashes of the
 * previous sample's stack are remembered, as consecutive samples of a
 * stall mostly share their outer frames.  Only when the pool is full do
 * stacks go to a trie, keyed by (parent, frame), where deep stacks that
 * differ near the leaf share their prefix.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util/str.h"
#include "util/table-alloc.h"
#include "tree-private.h"

#define ARENA_CHUNK (64u * 1024u)

static void *arena_alloc(struct sw_profile *p, size_t size)
{
	size = (size + 7) & ~(size_t)7;
	if (!p->arena || p->arena->used + size > p->arena->cap) {
		size_t cap = size > ARENA_CHUNK ? size : ARENA_CHUNK;
		struct arena_chunk *c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->next = p->arena;
		c->used = 0;
		c->cap = cap;
		p->arena = c;
	}
	void *ret = p->arena->data + p->arena->used;
	p->arena->used += size;
	return ret;
}

uint64_t sw_tree_hash_bytes(uint64_t h, const void *data, size_t len)
{
	const uint8_t *s = data;
	for (size_t i = 0; i < len; i++) {
		h ^= s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* A string table: open addressing over arena copies. */
static const char *intern(struct sw_profile *p, const char *s)
{
	if (!s)
		return NULL;
	size_t len = strlen(s);
	uint64_t h = sw_tree_hash_bytes(SW_FNV_OFFSET, s, len);
	if (p->nstrings * 2 >= p->strings_cap) {
		size_t cap = p->strings_cap ? p->strings_cap * 2 : 1024;
		const char **t = sw_table_alloc(cap, sizeof(*t));
		if (!t)
			return NULL;
		for (size_t i = 0; i < p->strings_cap; i++) {
			const char *o = p->strings[i];
			if (!o)
				continue;
			size_t j = sw_tree_hash_bytes(SW_FNV_OFFSET, o, strlen(o)) & (cap - 1);
			while (t[j])
				j = (j + 1) & (cap - 1);
			t[j] = o;
		}
		free(p->strings);
		p->strings = t;
		p->strings_cap = cap;
	}
	size_t j = h & (p->strings_cap - 1);
	while (p->strings[j]) {
		if (strcmp(p->strings[j], s) == 0)
			return p->strings[j];
		j = (j + 1) & (p->strings_cap - 1);
	}
	char *copy = arena_alloc(p, len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, s, len + 1);
	p->strings[j] = copy;
	p->nstrings++;
	return copy;
}

int sw_profile_new(struct sw_profile **ret)
{
	struct sw_profile *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	/* stack 0 is the empty stack, the parent of every root frame */
	p->stacks_cap = 1024;
	p->stacks = malloc(p->stacks_cap * sizeof(*p->stacks));
	p->has_child = calloc(p->stacks_cap / 64, sizeof(uint64_t));
	p->stack_table_cap = 2048;
	p->stack_table = calloc(p->stack_table_cap, sizeof(*p->stack_table));
	if (!p->stacks || !p->stack_table || !p->has_child) {
		sw_profile_free(p);
		return -ENOMEM;
	}
	p->stacks[0].parent = 0;
	p->stacks[0].frame = UINT32_MAX;
	p->nstacks = 1;
	/* run 0 is the empty stack too */
	p->runs_cap = 1024;
	p->runs = calloc(p->runs_cap, sizeof(*p->runs));
	if (!p->runs) {
		sw_profile_free(p);
		return -ENOMEM;
	}
	p->nruns = 1;
	*ret = p;
	return 0;
}

void sw_profile_free(struct sw_profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nstalls; i++) {
		free((char *)p->stalls[i]->info.extra_json);
		free(p->stalls[i]->threads);
		free(p->stalls[i]->samples);
		free(p->stalls[i]);
	}
	free(p->stalls);
	sw_tree_free(p->cached_tree);
	while (p->arena) {
		struct arena_chunk *next = p->arena->next;
		free(p->arena);
		p->arena = next;
	}
	free(p->strings);
	free(p->images);
	free(p->image_table);
	free(p->frames);
	free(p->frame_fid);
	free(p->frame_shown);
	free(p->funcs);
	free(p->func_table);
	free(p->frame_table);
	free(p->stacks);
	free(p->has_child);
	free(p->stack_table);
	free(p->last_frames);
	free(p->last_stacks);
	free(p->last_paths);
	free(p->pool);
	free(p->runs);
	free(p->run_table);
	free(p->seen_frames);
	free(p->seen_hash);
	free(p->stack_funcs);
	free(p->split_fid_kid);
	free(p->spare_nodes.block); /* after the cached tree, which may give its nodes back */
	free(p->spare_text.block);
	free(p->spare_merge.block);
	free(p);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash && slash[1] ? slash + 1 : path;
}

bool sw_tree_path_is_agent_or_kernel(const char *path)
{
	if (!path)
		return false;
	/* the kernel's virtual shared objects, as the agent names them */
	if (strncmp(path, "linux-vdso", 10) == 0 || strncmp(path, "linux-gate", 10) == 0 ||
	    strcmp(path, "[vdso]") == 0)
		return true;
	/* the agent: its own frames (its wrappers of sleeping calls) are never the app's */
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	return strcmp(base, "libstallwatch-agent.so") == 0 ||
	       strcmp(base, "libstallwatch.dylib") == 0 || strstr(path, "Stallwatch.framework/");
}

bool sw_tree_path_is_system(const char *path)
{
	/*
	 * Linux distributions put their libraries under /lib and /usr/lib
	 * (with multiarch subdirectories); Darwin under /usr/lib (libsystem_*
	 * in /usr/lib/system) and /System/Library, including the iOS runtime
	 * and the dyld shared cache's frameworks.  /usr/local and /opt are the
	 * user's own.
	 */
	static const char *const prefixes[] = {
	    "/lib/",           "/lib32/",          "/lib64/",
	    "/usr/lib/",       "/usr/lib32/",      "/usr/lib64/",
	    "/usr/libexec/",   "/System/Library/", "/System/iOSSupport/",
	    "/Library/Apple/", "/usr/lib/system/",
	};
	if (!path)
		return false;
	if (sw_tree_path_is_agent_or_kernel(path))
		return true;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(path, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

/* Whether the n bytes at p are one of the top-level packages of Go's standard library. */
static bool go_std_package(const char *p, size_t n)
{
	static const char *const std[] = {
	    "archive",  "bufio",    "bytes",   "cmp",     "compress", "container", "context",
	    "crypto",   "database", "debug",   "embed",   "encoding", "errors",    "expvar",
	    "flag",     "fmt",      "go",      "hash",    "html",     "image",     "index",
	    "internal", "io",       "iter",    "log",     "maps",     "math",      "mime",
	    "net",      "os",       "path",    "plugin",  "reflect",  "regexp",    "runtime",
	    "slices",   "sort",     "strconv", "strings", "structs",  "sync",      "syscall",
	    "testing",  "text",     "time",    "unicode", "unique",   "unsafe",    "vendor",
	    "weak",
	};
	for (size_t i = 0; i < sizeof(std) / sizeof(std[0]); i++)
		if (strlen(std[i]) == n && !memcmp(std[i], p, n))
			return true;
	return false;
}

/* Whether the folder name at p (n bytes) is one a Go toolchain's root goes by. */
static bool go_root_name(const char *p, size_t n)
{
	return (n == 2 && !memcmp(p, "go", 2)) || (n == 6 && !memcmp(p, "golang", 6)) ||
	       (n == 7 && !memcmp(p, "libexec", 7)) /* Homebrew's */ ||
	       (n > 3 && !memcmp(p, "go1.", 4)) || (n > 4 && !memcmp(p, "go-1.", 5)) ||
	       (n > 10 && !memcmp(p, "toolchain@", 10)) /* one the go command fetched */;
}

/*
 * A source of Go's standard library or of the code Go's tools write into a
 * program: GOROOT/src/PACKAGE/... (GOROOT being /usr/local/go, /usr/lib/go-1.19,
 * ~/sdk/go1.21.5 and the like), PACKAGE/... when built with -trimpath, the
 * compiler's wrappers ("<autogenerated>") and cgo's glue (_cgo_*, cgo-gcc-prolog).
 */
static bool go_toolchain_source(const char *file)
{
	const char *base = strrchr(file, '/');
	base = base ? base + 1 : file;
	if (!strcmp(base, "<autogenerated>") || !strncmp(base, "_cgo_", 5) ||
	    !strcmp(base, "cgo-gcc-prolog"))
		return true;
	while (!strncmp(file, "./", 2)) /* Go's compile units are in "." */
		file += 2;
	if (!sw_ends_with(file, ".go") && !sw_ends_with(file, ".s"))
		return false;
	if (file[0] != '/') /* -trimpath: the import path */
		return go_std_package(file, strcspn(file, "/"));
	for (const char *src = strstr(file, "/src/"); src; src = strstr(src + 1, "/src/")) {
		const char *dir = src;
		while (dir > file && dir[-1] != '/')
			dir--;
		const char *pkg = src + 5;
		size_t n = strcspn(pkg, "/");
		if (pkg[n] == '/' && go_root_name(dir, (size_t)(src - dir)) &&
		    go_std_package(pkg, n))
			return true;
	}
	return false;
}

bool sw_tree_source_is_toolchain(const char *file)
{
	return file && (!strncmp(file, "/rustc/", 7) || !strncmp(file, "/rust/deps/", 11) ||
			strstr(file, "/usr/include/") || go_toolchain_source(file));
}

/*
 * Whether a folder of path names a Go module at a version, as the module
 * cache and -trimpath name a dependency's sources: MODULE@vMAJOR.MINOR...
 * (a semantic version, or a pseudo-version v0.0.0-...), the go command's
 * own toolchain@... aside (the standard library's).
 */
static bool go_module_version(const char *path)
{
	for (const char *at = strstr(path, "@v"); at; at = strstr(at + 1, "@v")) {
		const char *dir = at;
		while (dir > path && dir[-1] != '/')
			dir--;
		size_t digits = strspn(at + 2, "0123456789");
		if (at > dir && digits && at[2 + digits] == '.' && strchr(at, '/') &&
		    strncmp(dir, "toolchain@", 10) != 0)
			return true;
	}
	return false;
}

bool sw_tree_source_is_dependency(const char *file)
{
	/* the folders package managers unpack or check out dependencies into */
	static const char *const folders[] = {
	    "/.build/checkouts/",         /* SwiftPM */
	    "/SourcePackages/checkouts/", /* Xcode's Swift packages */
	    "/Pods/",                     /* CocoaPods */
	    "/Carthage/Checkouts/",
	    "/vcpkg_installed/",
	    "/.conan/data/",
	    "/.conan2/p/",
	};
	if (!file)
		return false;
	for (size_t i = 0; i < sizeof(folders) / sizeof(folders[0]); i++)
		if (strstr(file, folders[i]))
			return true;
	/* Cargo's: CARGO_HOME/registry/src/INDEX/CRATE-VERSION/..., CARGO_HOME/git/checkouts/... */
	if (sw_ends_with(file, ".rs"))
		return strstr(file, "/registry/src/") || strstr(file, "/git/checkouts/");
	/* Go's: GOMODCACHE/MODULE@VERSION/..., or MODULE@VERSION/... under -trimpath */
	if (sw_ends_with(file, ".go") || sw_ends_with(file, ".s"))
		return go_module_version(file);
	return false;
}

static uint64_t image_hash(const char *name, const struct sw_tree_image *img)
{
	uint64_t h = 0xcbf29ce484222325ull ^ img->load_address;
	for (const char *c = name; *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
	for (uint32_t i = 0; i < img->id_len && i < sizeof(img->id); i++)
		h = (h ^ img->id[i]) * 0x100000001b3ull;
	return h ^ (h >> 29);
}

static bool same_image(const struct sw_tree_image *o, const char *name,
		       const struct sw_tree_image *img)
{
	return strcmp(o->name, name) == 0 && o->load_address == img->load_address &&
	       o->id_len == img->id_len && memcmp(o->id, img->id, img->id_len) == 0 &&
	       (o->path == img->path || (o->path && img->path && !strcmp(o->path, img->path)));
}

/* The table slot of an image: its index, or the empty slot where it goes. */
static size_t image_slot(const struct sw_profile *p, const char *name,
			 const struct sw_tree_image *img)
{
	size_t j = image_hash(name, img) & (p->image_table_cap - 1);
	while (p->image_table[j] && !same_image(&p->images[p->image_table[j] - 1], name, img))
		j = (j + 1) & (p->image_table_cap - 1);
	return j;
}

/* Keeps the table at most half full; a thousand images were a linear search each. */
static int grow_image_table(struct sw_profile *p)
{
	if ((p->nimages + 1) * 2 <= p->image_table_cap)
		return 0;
	size_t cap = p->image_table_cap ? p->image_table_cap * 2 : 64;
	uint32_t *t = sw_table_alloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	free(p->image_table);
	p->image_table = t;
	p->image_table_cap = cap;
	for (size_t i = 0; i < p->nimages; i++)
		t[image_slot(p, p->images[i].name, &p->images[i])] = (uint32_t)i + 1;
	return 0;
}

/* A ceiling was reached: remembered for sw_profile_limit(). */
static int over(struct sw_profile *p, const char *what)
{
	p->limit = what;
	return -E2BIG;
}

const char *sw_profile_limit(const struct sw_profile *p)
{
	return p->limit;
}

int sw_profile_image(struct sw_profile *p, const struct sw_tree_image *img, uint32_t *ret_index)
{
	const char *name = img->name ? img->name : img->path ? base_name(img->path) : "?";
	if (img->id_len > sizeof(img->id))
		return -E2BIG;
	if (grow_image_table(p) < 0)
		return -ENOMEM;
	size_t slot = image_slot(p, name, img);
	if (p->image_table[slot]) {
		*ret_index = p->image_table[slot];
		return 0;
	}
	if (p->nimages >= SW_TREE_MAX_IMAGES)
		return over(p, "more than 65536 images in all");
	if (p->nimages == p->images_cap) {
		size_t cap = p->images_cap ? p->images_cap * 2 : 16;
		struct sw_tree_image *n = realloc(p->images, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		p->images = n;
		p->images_cap = cap;
	}
	struct sw_tree_image copy = *img;
	copy.name = intern(p, name);
	copy.path = intern(p, img->path);
	if (!copy.name || (img->path && !copy.path))
		return -ENOMEM;
	copy.system = img->system || sw_tree_path_is_system(img->path);
	p->images[p->nimages++] = copy;
	p->image_table[slot] = (uint32_t)p->nimages;
	*ret_index = (uint32_t)p->nimages;
	return 0;
}

const struct sw_tree_image *sw_profile_get_image(const struct sw_profile *p, uint32_t index)
{
	return index && index <= p->nimages ? &p->images[index - 1] : NULL;
}

size_t sw_profile_nimages(const struct sw_profile *p)
{
	return p->nimages;
}

size_t sw_profile_nframes(const struct sw_profile *p)
{
	return p->nframes;
}

size_t sw_profile_dense_stacks(const struct sw_profile *p)
{
	return p->nruns;
}

static uint64_t frame_hash(const struct sw_tree_frame *f)
{
	uint64_t h = mix64(f->image ^ ((uint64_t)f->line << 32));
	h = mix64(h ^ (uintptr_t)f->linkage) + (uintptr_t)f->name;
	h = mix64(h ^ (uintptr_t)f->full_name) + (uintptr_t)f->file;
	h = mix64(h ^ f->address) + f->offset;
	return mix64(h ^ (f->inlined | f->has_offset << 1 | f->hinted << 2));
}

static bool frame_equal(const struct sw_tree_frame *a, const struct sw_tree_frame *b)
{
	return a->image == b->image && a->linkage == b->linkage && a->name == b->name &&
	       a->full_name == b->full_name && a->file == b->file && a->line == b->line &&
	       a->address == b->address && a->offset == b->offset &&
	       a->has_offset == b->has_offset && a->inlined == b->inlined && a->hinted == b->hinted;
}

/* A frame table slot: the index + 1 (up to SW_TREE_MAX_FRAMES), and a tag from the hash. */
#define FRAME_SLOT_ID_BITS 25
#define FRAME_SLOT_ID_MASK ((1u << FRAME_SLOT_ID_BITS) - 1)
_Static_assert(SW_TREE_MAX_FRAMES <= FRAME_SLOT_ID_MASK, "a frame slot holds every index + 1");

/* The top bits of a frame table slot: those of the frame's hash. */
static uint32_t frame_tag(uint64_t h)
{
	return (uint32_t)(h >> (64 - (32 - FRAME_SLOT_ID_BITS))) << FRAME_SLOT_ID_BITS;
}

static uint32_t frame_slot(uint64_t h, uint32_t index)
{
	return frame_tag(h) | (index + 1);
}

static int grow_frame_table(struct sw_profile *p)
{
	size_t cap = p->frame_table_cap ? p->frame_table_cap * 2 : 1024;
	uint32_t *t = sw_table_alloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < p->nframes; i++) {
		uint64_t h = frame_hash(&p->frames[i].f);
		size_t j = h & (cap - 1);
		while (t[j])
			j = (j + 1) & (cap - 1);
		t[j] = frame_slot(h, (uint32_t)i);
	}
	free(p->frame_table);
	p->frame_table = t;
	p->frame_table_cap = cap;
	return 0;
}

/* The key a tree merges frames by: the function, not the line or address. */
static int frame_func_key(struct sw_profile *p, struct sw_frame_entry *e)
{
	const struct sw_tree_frame *f = &e->f;
	const struct sw_tree_image *img = sw_profile_get_image(p, f->image);
	uint64_t h = sw_tree_hash_bytes(SW_FNV_OFFSET, img ? img->name : "?",
					img ? strlen(img->name) + 1 : 2);
	const char *fn = f->linkage ? f->linkage : f->name;
	/* unknown functions merge per image: their addresses tell nothing more */
	if (fn)
		h = sw_tree_hash_bytes(h, fn, strlen(fn) + 1);
	else if (img)
		h = sw_tree_hash_bytes(h, "?", 2);
	else
		h = sw_tree_hash_bytes(h, &f->address, sizeof(f->address));
	e->func = h ^ f->inlined;
	return 0;
}

/* The dense id of function key func, added when new. */
static int func_id(struct sw_profile *p, uint64_t func, uint32_t *ret)
{
	if (p->nfuncs * 2 >= p->func_table_cap) {
		size_t cap = p->func_table_cap ? p->func_table_cap * 2 : 1024;
		uint32_t *t = sw_table_alloc(cap, sizeof(*t));
		if (!t)
			return -ENOMEM;
		for (size_t i = 0; i < p->nfuncs; i++) {
			size_t j = mix64(p->funcs[i]) & (cap - 1);
			while (t[j])
				j = (j + 1) & (cap - 1);
			t[j] = (uint32_t)i + 1;
		}
		free(p->func_table);
		p->func_table = t;
		p->func_table_cap = cap;
	}
	size_t j = mix64(func) & (p->func_table_cap - 1);
	for (; p->func_table[j]; j = (j + 1) & (p->func_table_cap - 1))
		if (p->funcs[p->func_table[j] - 1] == func) {
			*ret = p->func_table[j] - 1;
			return 0;
		}
	if (p->nfuncs == p->funcs_cap) {
		size_t cap = p->funcs_cap ? p->funcs_cap * 2 : 256;
		uint64_t *n = realloc(p->funcs, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		p->funcs = n;
		p->funcs_cap = cap;
	}
	p->funcs[p->nfuncs] = func;
	p->func_table[j] = (uint32_t)++p->nfuncs;
	*ret = (uint32_t)p->nfuncs - 1;
	return 0;
}

int sw_profile_frame(struct sw_profile *p, const struct sw_tree_frame *in, uint32_t *ret_id)
{
	struct sw_tree_frame f = *in;
	f.linkage = intern(p, in->linkage);
	f.name = intern(p, in->name);
	f.full_name = intern(p, in->full_name);
	f.file = intern(p, in->file);
	if ((in->linkage && !f.linkage) || (in->name && !f.name) ||
	    (in->full_name && !f.full_name) || (in->file && !f.file))
		return -ENOMEM;
	if (f.image > p->nimages)
		f.image = 0;
	if (p->nframes * 2 >= p->frame_table_cap && grow_frame_table(p) < 0)
		return -ENOMEM;
	uint64_t h = frame_hash(&f);
	uint32_t tag = frame_tag(h);
	size_t j = h & (p->frame_table_cap - 1);
	for (uint32_t slot; (slot = p->frame_table[j]) != 0;
	     j = (j + 1) & (p->frame_table_cap - 1)) {
		uint32_t id = (slot & FRAME_SLOT_ID_MASK) - 1;
		if ((slot & ~FRAME_SLOT_ID_MASK) == tag && frame_equal(&p->frames[id].f, &f)) {
			*ret_id = id;
			return 0;
		}
	}
	if (p->nframes >= SW_TREE_MAX_FRAMES)
		return over(p, "more than 16777216 distinct frames in all");
	if (p->nframes == p->frames_cap) {
		size_t cap = p->frames_cap ? p->frames_cap * 2 : 256;
		struct sw_frame_entry *n = realloc(p->frames, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		p->frames = n;
		struct sw_frame_fid *fid = realloc(p->frame_fid, cap * sizeof(*fid));
		if (!fid)
			return -ENOMEM;
		p->frame_fid = fid;
		const char **shown = realloc(p->frame_shown, cap * sizeof(*shown));
		if (!shown)
			return -ENOMEM;
		p->frame_shown = shown;
		p->frames_cap = cap;
	}
	/* the name it is shown under, as sw_tree_frame_name() gives it */
	char scratch[32];
	const char *shown = intern(p, sw_tree_frame_name(p, &f, false, scratch, sizeof(scratch)));
	if (!shown)
		return -ENOMEM;
	struct sw_frame_entry *e = &p->frames[p->nframes];
	e->f = f;
	e->toolchain = sw_tree_source_is_toolchain(f.file);
	e->dependency = !e->toolchain && sw_tree_source_is_dependency(f.file);
	frame_func_key(p, e);
	p->frame_fid[p->nframes].slot = 0;
	int r = func_id(p, e->func, &p->frame_fid[p->nframes].fid);
	if (r < 0)
		return r;
	p->frame_shown[p->nframes] = shown;
	p->frame_table[j] = frame_slot(h, (uint32_t)p->nframes);
	*ret_id = (uint32_t)p->nframes++;
	return 0;
}

const struct sw_tree_frame *sw_profile_get_frame(const struct sw_profile *p, uint32_t id)
{
	return id < p->nframes ? &p->frames[id].f : NULL;
}

bool sw_profile_frame_toolchain(const struct sw_profile *p, uint32_t id)
{
	return id < p->nframes && p->frames[id].toolchain;
}

bool sw_profile_frame_compiled_in(const struct sw_profile *p, uint32_t id)
{
	return id < p->nframes && (p->frames[id].toolchain || p->frames[id].dependency);
}

const char *sw_profile_frame_name(const struct sw_profile *p, uint32_t id, bool full)
{
	if (id >= p->nframes)
		return NULL;
	if (full && p->frames[id].f.full_name)
		return p->frames[id].f.full_name;
	return p->frame_shown[id];
}

int sw_profile_add_stall(struct sw_profile *p, const struct sw_tree_stall_info *info,
			 struct sw_tree_stall **ret)
{
	if (p->nstalls >= SW_TREE_MAX_STALLS)
		return over(p, "more than 1048576 stalls in all");
	if (p->nstalls == p->stalls_cap) {
		size_t cap = p->stalls_cap ? p->stalls_cap * 2 : 16;
		struct sw_tree_stall **n = realloc(p->stalls, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		p->stalls = n;
		p->stalls_cap = cap;
	}
	struct sw_tree_stall *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->info = *info;
	s->info.source = intern(p, info->source);
	s->info.kind = intern(p, info->kind ? info->kind : "busy");
	s->info.mode = intern(p, info->mode);
	/* often megabytes (raw stacks), printed once: the stall's own, not interned */
	s->info.extra_json = info->extra_json ? strdup(info->extra_json) : NULL;
	s->info.metadata_json = intern(p, info->metadata_json);
	if ((info->source && !s->info.source) || !s->info.kind || (info->mode && !s->info.mode) ||
	    (info->extra_json && !s->info.extra_json) ||
	    (info->metadata_json && !s->info.metadata_json)) {
		free((char *)s->info.extra_json);
		free(s);
		return -ENOMEM;
	}
	p->stalls[p->nstalls++] = s;
	*ret = s;
	return 0;
}

void sw_profile_drop_last_stall(struct sw_profile *p)
{
	if (!p->nstalls)
		return;
	struct sw_tree_stall *s = p->stalls[--p->nstalls];
	if (p->cached_stall == s) {
		sw_tree_free(p->cached_tree);
		p->cached_tree = NULL;
		p->cached_stall = NULL;
	}
	free((char *)s->info.extra_json);
	free(s->threads);
	free(s->samples);
	free(s);
}

int sw_profile_set_summary_extra(struct sw_profile *p, const char *json)
{
	p->summary_extra = json ? intern(p, json) : NULL;
	return !json || p->summary_extra ? 0 : -ENOMEM;
}

const char *sw_profile_summary_extra(const struct sw_profile *p)
{
	return p->summary_extra;
}

void sw_tree_stall_drop_extra_json(struct sw_profile *p, struct sw_tree_stall *s)
{
	sw_spare_keep(&p->spare_text, (char *)s->info.extra_json, s->extra_json_cap);
	s->info.extra_json = NULL;
	s->extra_json_cap = s->extra_json_len = 0;
}

char *sw_profile_take_spare_text(struct sw_profile *p, size_t *ret_cap)
{
	return sw_spare_take(&p->spare_text, 0, ret_cap);
}

void sw_tree_stall_drop_samples(struct sw_profile *p, struct sw_tree_stall *s)
{
	sw_tree_stall_signature(p, s); /* what the stall is known by, while it can be */
	if (p->cached_stall == s) {
		sw_tree_free(p->cached_tree);
		p->cached_tree = NULL;
		p->cached_stall = NULL;
	}
	free(s->samples);
	s->samples = NULL;
	s->nsamples = s->samples_cap = 0;
	s->samples_dropped = true;
}

void sw_tree_stall_take_extra_json(struct sw_tree_stall *s, char *json, size_t len, size_t cap)
{
	free((char *)s->info.extra_json);
	s->info.extra_json = json;
	s->extra_json_cap = json ? cap : 0;
	s->extra_json_len = json ? len : 0;
}

size_t sw_profile_nstalls(const struct sw_profile *p)
{
	return p->nstalls;
}

struct sw_tree_stall *sw_profile_stall(const struct sw_profile *p, size_t i)
{
	return i < p->nstalls ? p->stalls[i] : NULL;
}

int sw_tree_stall_thread(struct sw_profile *p, struct sw_tree_stall *s, uint64_t tid,
			 const char *name, uint32_t *ret_index)
{
	for (uint32_t i = 0; i < s->nthreads; i++) {
		if (s->threads[i].id != tid)
			continue;
		if (name && name[0] && !s->threads[i].name[0]) {
			const char *n = intern(p, name);
			if (!n)
				return -ENOMEM;
			s->threads[i].name = n;
		}
		*ret_index = i;
		return 0;
	}
	if (s->nthreads >= SW_TREE_MAX_THREADS)
		return over(p, "more than 4096 threads in one stall");
	struct sw_tree_thread *n = realloc(s->threads, (s->nthreads + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	s->threads = n;
	const char *nm = intern(p, name ? name : "");
	if (!nm)
		return -ENOMEM;
	s->threads[s->nthreads] = (struct sw_tree_thread){
	    .id = tid,
	    .name = nm,
	    .main = tid == s->info.thread_id,
	};
	*ret_index = s->nthreads++;
	return 0;
}

/*
 * A stack's slot in the table comes from a hash of its whole path (its
 * parent's path hash and its frame), not from its parent's id: the slots
 * of every frame of a sample are known before any is looked up, so a walk
 * down the trie fetches them together instead of waiting for one level's
 * cache miss before it can start the next.  A stack found there still
 * matches only by its parent and frame.
 */
#define PATH_ROOT 0x9e3779b9u

static uint32_t path_step(uint32_t path, uint32_t frame)
{
	return (uint32_t)mix64((uint64_t)path << 32 | frame);
}

static int grow_stack_table(struct sw_profile *p)
{
	size_t cap = p->stack_table_cap * 2;
	uint32_t *t = sw_table_alloc(cap, sizeof(*t));
	uint32_t *path = malloc(p->nstacks * sizeof(*path));
	if (!t || !path) {
		free(t);
		free(path);
		return -ENOMEM;
	}
	/*
	 * every stack is in the table: read them in order, not in the old
	 * table's; a parent comes before its children, so its path is known
	 */
	path[0] = PATH_ROOT;
	for (uint32_t id = 1; id < p->nstacks; id++)
		path[id] = path_step(path[p->stacks[id].parent], p->stacks[id].frame);
	enum { AHEAD = 16 };
	for (uint32_t id = 1; id < p->nstacks; id++) {
		if (id + AHEAD < p->nstacks)
			__builtin_prefetch(&t[path[id + AHEAD] & (cap - 1)]);
		size_t j = path[id] & (cap - 1);
		while (t[j])
			j = (j + 1) & (cap - 1);
		t[j] = id;
	}
	free(path);
	free(p->stack_table);
	p->stack_table = t;
	p->stack_table_cap = cap;
	return 0;
}

/* Room for n more stacks: the array, the bits and a table at most half full. */
static int reserve_stacks(struct sw_profile *p, size_t n)
{
	if (p->nstacks + n > SW_TREE_MAX_STACKS)
		return over(p, "more than 67108864 distinct stacks in all");
	while ((p->nstacks + n) * 2 >= p->stack_table_cap)
		if (grow_stack_table(p) < 0)
			return -ENOMEM;
	if (p->nstacks + n <= p->stacks_cap)
		return 0;
	size_t cap = p->stacks_cap * 2;
	while (cap < p->nstacks + n)
		cap *= 2;
	struct sw_trie_stack *st = realloc(p->stacks, cap * sizeof(*st));
	if (!st)
		return -ENOMEM;
	p->stacks = st;
	sw_huge_pages(st, cap * sizeof(*st)); /* read at random by id */
	uint64_t *bits = realloc(p->has_child, cap / 64 * sizeof(*bits));
	if (!bits)
		return -ENOMEM;
	memset(bits + p->stacks_cap / 64, 0, (cap - p->stacks_cap) / 64 * sizeof(*bits));
	p->has_child = bits;
	p->stacks_cap = cap;
	return 0;
}

static bool has_child(const struct sw_profile *p, uint32_t stack)
{
	return p->has_child[stack / 64] >> (stack % 64) & 1;
}

/* Adds stack id, frame called from parent, in table slot j (empty). */
static void put_stack(struct sw_profile *p, size_t j, uint32_t id, uint32_t parent, uint32_t frame)
{
	p->stacks[id] = (struct sw_trie_stack){parent, frame};
	p->stack_table[j] = id;
	p->has_child[parent / 64] |= 1ull << (parent % 64);
}

/*
 * Adds frames[at..depth) below parent, which has no child: every stack is
 * new, so none is looked up, and the slots of the next few are fetched
 * while one is written.  Their path hashes are in p->last_paths; fills
 * p->last_stacks.  Room is reserved.
 */
static void new_chain(struct sw_profile *p, uint32_t parent, const uint32_t *frames, size_t at,
		      size_t depth)
{
	size_t mask = p->stack_table_cap - 1;
	enum { AHEAD = 8 };
	for (size_t k = at; k < depth && k < at + AHEAD; k++)
		__builtin_prefetch(&p->stack_table[p->last_paths[k] & mask]);
	for (size_t k = at; k < depth; k++) {
		if (k + AHEAD < depth)
			__builtin_prefetch(&p->stack_table[p->last_paths[k + AHEAD] & mask]);
		uint32_t id = (uint32_t)p->nstacks++;
		size_t j = p->last_paths[k] & mask;
		while (p->stack_table[j])
			j = (j + 1) & mask;
		put_stack(p, j, id, parent, frames[k]);
		p->last_stacks[k] = id;
		parent = id;
	}
}

/* Room for the previous sample's frames, stacks and paths at depth. */
static int reserve_last(struct sw_profile *p, size_t depth)
{
	if (depth <= p->last_cap)
		return 0;
	size_t cap = depth < 64 ? 64 : depth;
	uint32_t **arrays[] = {&p->last_frames, &p->last_stacks, &p->last_paths};
	for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
		uint32_t *a = realloc(*arrays[i], cap * sizeof(uint32_t));
		if (!a)
			return -ENOMEM;
		*arrays[i] = a;
	}
	p->last_cap = cap;
	return 0;
}

/*
 * The trie leaf of frames[0..depth) (frames of p: hash_stack() checked
 * them), reusing the previous trie stack's prefix.  The walk below it
 * looks a level up while slots a few levels deeper are fetched, and the
 * stacks their first slots name: most levels then find their stack in the
 * cache.
 */
static int stack_of(struct sw_profile *p, const uint32_t *frames, size_t depth, uint32_t *ret)
{
	int r = reserve_last(p, depth);
	if (r < 0)
		return r;
	size_t i = 0;
	while (i < depth && i < p->last_depth && frames[i] == p->last_frames[i])
		i++;
	if ((r = reserve_stacks(p, depth - i)) < 0) {
		p->last_depth = 0;
		return r;
	}
	uint32_t stack = i ? p->last_stacks[i - 1] : 0;
	uint32_t path = i ? p->last_paths[i - 1] : PATH_ROOT;
	for (size_t k = i; k < depth; k++)
		p->last_paths[k] = path = path_step(path, frames[k]);

	const uint32_t *table = p->stack_table;
	size_t mask = p->stack_table_cap - 1;
	enum { AHEAD = 8, NEAR = 4 };
	for (size_t k = i; k < depth && k < i + AHEAD; k++)
		__builtin_prefetch(&table[p->last_paths[k] & mask]);
	for (; i < depth && has_child(p, stack); i++) {
		if (i + AHEAD < depth)
			__builtin_prefetch(&table[p->last_paths[i + AHEAD] & mask]);
		if (i + NEAR < depth)
			__builtin_prefetch(&p->stacks[table[p->last_paths[i + NEAR] & mask]]);
		size_t j = p->last_paths[i] & mask;
		uint32_t id;
		while ((id = table[j]) &&
		       (p->stacks[id].parent != stack || p->stacks[id].frame != frames[i]))
			j = (j + 1) & mask;
		if (!id) { /* new: so is everything below it */
			id = (uint32_t)p->nstacks++;
			put_stack(p, j, id, stack, frames[i]);
		}
		p->last_stacks[i] = stack = id;
	}
	if (i < depth) {
		new_chain(p, stack, frames, i, depth);
		stack = p->last_stacks[depth - 1];
	}
	memcpy(p->last_frames, frames, depth * sizeof(*frames));
	p->last_depth = depth;
	*ret = stack;
	return 0;
}

/*
 * Stacks in the pool: a sample's stack is found by a hash of its whole
 * path, chained frame by frame so that the previous stack's prefix is not
 * hashed again (consecutive stacks of a stall share their outer frames).
 */
#define RUN_SEED 0x9e3779b97f4a7c15ull

static uint64_t run_step(uint64_t h, uint32_t frame)
{
	return (h ^ frame) * 0xff51afd7ed558ccdull;
}

static uint64_t run_hash(uint64_t chained, size_t depth)
{
	return mix64(chained + depth);
}

/* Room for the previous stack looked up at depth. */
static int reserve_seen(struct sw_profile *p, size_t depth)
{
	if (depth <= p->seen_cap)
		return 0;
	size_t cap = depth < 64 ? 64 : depth;
	uint32_t *f = realloc(p->seen_frames, cap * sizeof(*f));
	if (!f)
		return -ENOMEM;
	p->seen_frames = f;
	uint64_t *h = realloc(p->seen_hash, cap * sizeof(*h));
	if (!h)
		return -ENOMEM;
	p->seen_hash = h;
	p->seen_cap = cap;
	return 0;
}

/*
 * The hash of frames[0..depth), from the previous stack's prefix hashes
 * where frames share it; checks that the frames not shared exist.
 */
static int hash_stack(struct sw_profile *p, const uint32_t *frames, size_t depth, uint64_t *ret)
{
	int r = reserve_seen(p, depth);
	if (r < 0)
		return r;
	size_t i = 0;
	while (i < depth && i < p->seen_depth && frames[i] == p->seen_frames[i])
		i++;
	for (size_t k = i; k < depth; k++)
		if (frames[k] >= p->nframes) {
			p->seen_depth = 0;
			return -EINVAL;
		}
	uint64_t h = i ? p->seen_hash[i - 1] : RUN_SEED;
	for (size_t k = i; k < depth; k++) {
		p->seen_hash[k] = h = run_step(h, frames[k]);
		p->seen_frames[k] = frames[k];
	}
	p->seen_depth = depth;
	*ret = run_hash(h, depth);
	return 0;
}

/* The slot of the run of frames[0..depth) hashing to h, or the empty slot it would take. */
static struct run_slot *run_find(const struct sw_profile *p, uint64_t h, const uint32_t *frames,
				 size_t depth)
{
	size_t mask = p->run_table_cap - 1;
	for (size_t j = h & mask;; j = (j + 1) & mask) {
		struct run_slot *s = &p->run_table[j];
		if (!s->id)
			return s;
		const struct stack_run *run = &p->runs[s->id];
		if (s->hash == (uint32_t)h && run->depth == depth &&
		    memcmp(p->pool + run->off, frames, depth * sizeof(*frames)) == 0)
			return s;
	}
}

static int grow_run_table(struct sw_profile *p)
{
	size_t cap = p->run_table_cap ? p->run_table_cap * 2 : 4096;
	struct run_slot *t = sw_table_alloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < p->run_table_cap; i++) {
		struct run_slot s = p->run_table[i];
		if (!s.id)
			continue;
		size_t j = s.hash & (cap - 1); /* a table has at most 2^32 slots */
		while (t[j].id)
			j = (j + 1) & (cap - 1);
		t[j] = s;
	}
	free(p->run_table);
	p->run_table = t;
	p->run_table_cap = cap;
	return 0;
}

/*
 * Adds frames[0..depth) to the pool as a new stack in slot s: 1 when done,
 * 0 when the pool is full (the trie takes the stack).  Room in the table
 * is reserved.
 */
static int run_add(struct sw_profile *p, struct run_slot *s, uint64_t h, const uint32_t *frames,
		   size_t depth)
{
	if (p->pool_len + depth > SW_TREE_POOL_MAX)
		return 0;
	if (p->pool_len + depth > p->pool_cap) {
		size_t cap = p->pool_cap ? p->pool_cap : 4096;
		while (cap < p->pool_len + depth)
			cap *= 2;
		uint32_t *n = realloc(p->pool, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		p->pool = n;
		p->pool_cap = cap;
	}
	if (p->nruns == p->runs_cap) {
		size_t cap = p->runs_cap * 2;
		struct stack_run *n = realloc(p->runs, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		p->runs = n;
		p->runs_cap = cap;
	}
	uint32_t id = (uint32_t)p->nruns++;
	p->runs[id] = (struct stack_run){(uint32_t)p->pool_len, (uint32_t)depth};
	memcpy(p->pool + p->pool_len, frames, depth * sizeof(*frames));
	p->pool_len += depth;
	*s = (struct run_slot){id, (uint32_t)h};
	return 1;
}

int sw_profile_stack_id(struct sw_profile *p, const uint32_t *frames, size_t depth, uint32_t *ret)
{
	if (depth > SW_TREE_MAX_DEPTH)
		return -EINVAL;
	if (!depth) {
		*ret = 0;
		return 0;
	}
	uint64_t h;
	int r = hash_stack(p, frames, depth, &h);
	if (r < 0)
		return r;
	/* the table stays at most half full: a new stack's slot is then free */
	if ((p->nruns + 1) * 2 >= p->run_table_cap && (r = grow_run_table(p)) < 0)
		return r;
	struct run_slot *s = run_find(p, h, frames, depth);
	if (!s->id && (r = run_add(p, s, h, frames, depth)) == 0) {
		/* the pool is full: the trie shares the prefixes of what is left */
		uint32_t id;
		if ((r = stack_of(p, frames, depth, &id)) < 0)
			return r;
		*ret = SW_STACK_TRIE | id;
		return 0;
	}
	if (r < 0)
		return r;
	*ret = s->id;
	return 0;
}

/* Whether stack names a stack of the profile. */
static bool stack_known(const struct sw_profile *p, uint32_t stack)
{
	if (stack & SW_STACK_TRIE)
		return (stack & ~SW_STACK_TRIE) && (stack & ~SW_STACK_TRIE) < p->nstacks;
	return stack < p->nruns;
}

const uint32_t *sw_profile_path(const struct sw_profile *p, uint32_t stack, size_t *ret_depth)
{
	if (!stack || (stack & SW_STACK_TRIE))
		return NULL;
	*ret_depth = p->runs[stack].depth;
	return p->pool + p->runs[stack].off;
}

int sw_tree_stall_add_stack(struct sw_profile *p, struct sw_tree_stall *s, uint32_t thread,
			    uint32_t stack, uint64_t weight)
{
	if (thread >= s->nthreads || !stack_known(p, stack))
		return -EINVAL;
	if (s->samples_dropped)
		return -ESTALE;
	if (s->nsamples == s->samples_cap) {
		if (s->samples_cap >= SW_TREE_MAX_SAMPLES)
			return over(p, "more than 268435456 samples in one stall");
		size_t cap = s->samples_cap ? s->samples_cap * 2 : 64;
		struct sw_tree_sample *n = realloc(s->samples, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->samples = n;
		s->samples_cap = cap;
	}
	s->samples[s->nsamples++] = (struct sw_tree_sample){
	    .stack = stack,
	    .thread = thread,
	    .weight = weight,
	};
	if (s->threads[thread].main) {
		s->sampled += weight;
		s->main_samples++;
	}
	s->has_signature = false;
	if (p->cached_stall == s) {
		sw_tree_free(p->cached_tree);
		p->cached_tree = NULL;
		p->cached_stall = NULL;
	}
	return 0;
}

int sw_tree_stall_add_sample(struct sw_profile *p, struct sw_tree_stall *s, uint32_t thread,
			     const uint32_t *frames, size_t depth, uint64_t weight)
{
	if (depth > SW_TREE_MAX_DEPTH || thread >= s->nthreads)
		return -EINVAL;
	uint32_t stack;
	int r = sw_profile_stack_id(p, frames, depth, &stack);
	return r < 0 ? r : sw_tree_stall_add_stack(p, s, thread, stack, weight);
}

size_t sw_profile_stack(const struct sw_profile *p, uint32_t stack, uint32_t *frames, size_t max)
{
	size_t depth = 0;
	const uint32_t *path = sw_profile_path(p, stack, &depth);
	if (path) {
		if (depth <= max)
			memcpy(frames, path, depth * sizeof(*frames));
		return depth;
	}
	stack &= ~SW_STACK_TRIE;
	for (uint32_t s = stack; s; s = p->stacks[s].parent)
		depth++;
	if (depth > max)
		return depth;
	size_t i = depth;
	for (uint32_t s = stack; s; s = p->stacks[s].parent)
		frames[--i] = p->stacks[s].frame;
	return depth;
}
