/*
 * Private to the parser of Swift's current mangling, which is split over
 * demangle-swift.c (names, substitutions, generic signatures and the operator
 * loop), demangle-swift-type.c (types), demangle-swift-entity.c (entities,
 * conformances, specializations) and demangle-swift-global.c (thunks,
 * witness tables, metadata): the reading and stack helpers they share.
 */
#ifndef SW_DEMANGLE_SWIFT_PARSE_H
#define SW_DEMANGLE_SWIFT_PARSE_H

#include <string.h>

#include "demangle-swift-read.h"

static inline bool islow(int c)
{
	return c >= 'a' && c <= 'z';
}

static inline bool isup(int c)
{
	return c >= 'A' && c <= 'Z';
}

static inline bool push(struct swd *d, struct swn *n)
{
	if (!n || d->nstack >= SWD_MAX_STACK)
		return false;
	d->stack[d->nstack++] = n;
	return true;
}

static inline struct swn *top(struct swd *d)
{
	return d->nstack ? d->stack[d->nstack - 1] : NULL;
}

static inline struct swn *pop(struct swd *d)
{
	return d->nstack ? d->stack[--d->nstack] : NULL;
}

static inline struct swn *pop_kind(struct swd *d, enum swk k)
{
	struct swn *t = top(d);
	if (t && t->kind == k)
		return pop(d);
	return NULL;
}

static inline struct swn *pop_type(struct swd *d)
{
	struct swn *t = top(d);
	if (swd_is_type(t))
		return pop(d);
	return NULL;
}

static inline struct swn *with3(struct swd *d, enum swk k, struct swn *a, struct swn *b,
				struct swn *c)
{
	struct swn *n = with(d, k, a, b);
	if (n && c && swd_add(d, n, c) < 0)
		return NULL;
	return n;
}

static inline bool add(struct swd *d, struct swn *p, struct swn *k)
{
	return swd_add(d, p, k) == 0;
}

/* markers of function type attributes on the stack (K_ATTR_TYPE index) */
enum { M_ASYNC = 1, M_SENDABLE, M_THROWS, M_TYPED_THROWS, M_DIFF, M_ISOLATION, M_SENDING };

struct swn *swd_archetype(struct swd *d);
struct swn *swd_autodiff(struct swd *d, bool vtable, bool witness);
const char *swd_autodiff_kind(int c);
struct swn *swd_autodiff_subset(struct swd *d);
struct swn *swd_bound_generic(struct swd *d);
struct swn *swd_builtin(struct swd *d);
struct swn *swd_dep_member_chain(struct swd *d, struct swn *base, struct swn *path);
struct swn *swd_extension(struct swd *d);
struct swn *swd_f_entity(struct swd *d);
struct swn *swd_funcsig_spec(struct swd *d);
struct swn *swd_generic_param_index(struct swd *d);
struct swn *swd_generic_spec(struct swd *d, const char *text);
struct swn *swd_h_global(struct swd *d, int c);
struct swn *swd_h_op(struct swd *d);
struct swn *swd_impl_function(struct swd *d);
struct swn *swd_local_name(struct swd *d);
struct swn *swd_m_op(struct swd *d);
struct swn *swd_marker(struct swd *d, int code, const char *text, struct swn *kid);
struct swn *swd_nominal(struct swd *d, enum swk k);
struct swn *swd_param_type(struct swd *d, uint64_t depth, uint64_t idx);
struct swn *swd_partial_spec(struct swd *d, const char *text);
struct swn *swd_plain_function(struct swd *d);
struct swn *swd_pop_any_conformance(struct swd *d);
struct swn *swd_pop_assoc_name(struct swd *d);
struct swn *swd_pop_assoc_path(struct swd *d);
struct swn *swd_pop_conformance(struct swd *d);
struct swn *swd_pop_context(struct swd *d);
struct swn *swd_pop_decl_name(struct swd *d);
struct swn *swd_pop_function_type(struct swd *d, const char *conv);
struct swn *swd_pop_global(struct swd *d);
struct swn *swd_pop_module(struct swd *d);
struct swn *swd_pop_proto_list(struct swd *d);
struct swn *swd_pop_protocol(struct swd *d);
struct swn *swd_pop_tuple(struct swd *d);
struct swn *swd_pop_type_list(struct swd *d);
struct swn *swd_special_type(struct swd *d);
struct swn *swd_subscript(struct swd *d);
struct swn *swd_t_op(struct swd *d);
struct swn *swd_variable(struct swd *d);
struct swn *swd_w_op(struct swd *d);
struct swn *swd_wrap_type(struct swd *d, enum swk k);
struct swn *swd_y_op(struct swd *d);

/*
 * For the lists the mangling closes with a '_' after their first item:
 * pops items by pop_item (NULL: fail) back to that mark, last first, into a
 * new node of kind k, kept in the order the name gives them.  With
 * empty_ok, an empty-list marker ('y') on top stands for the empty list.
 */
struct swn *swd_pop_list(struct swd *d, enum swk k, bool empty_ok,
			 struct swn *(*pop_item)(struct swd *d));
/* Reverses the order of n's kids, for lists popped last first. */
void swd_reverse_kids(struct swn *n);

bool swd_is_entity(const struct swn *n);
bool swd_is_requirement(const struct swn *n);
bool swd_pop_labels(struct swd *d, const struct swn *type, struct swn **ret);
bool swd_is_conformance(const struct swn *n);

#endif
