/*
 * The grid's object handle and its one executor: every operation of every
 * kind runs here from its table (gen_kinds.c): the arguments checked
 * against the spec, the template turned into a command or a script call,
 * the retry decided by the operation's mode (a lost reply of a "once"
 * operation is HL_EINDOUBT, never a second run), the reply converted to
 * the operation's result type. Kinds with C of their own (custom
 * operations) reuse the same pieces.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid/grid.h"
#include "prim/object.h"

static const hl_kinddef *kind_of(int kind)
{
	size_t i;
	for (i = 0; i < hl__grid_nkinds; i++)
		if (hl__grid_kinds[i].kind == kind)
			return &hl__grid_kinds[i];
	return NULL;
}

static const hl_opdef *op_of(int op)
{
	const hl_kinddef *k = kind_of(op >> 8);
	unsigned i = (unsigned)op & 0xff;
	if (op < 0 || !k || i >= k->nops)
		return NULL;
	return &k->ops[i];
}

const hl_opdef *hl__grid_op(int op)
{
	return op_of(op);
}

const char *hl_kind_name(int kind)
{
	const hl_kinddef *k = kind_of(kind);
	return k ? k->name : NULL;
}

const char *hl_op_name(int op)
{
	const hl_opdef *d = op_of(op);
	return d ? d->name : NULL;
}

const char *hl__grid_label(const hl_object *o, char *buf, size_t len)
{
	char name[80];
	snprintf(buf, len, "%s \"%s\"", o->kind->name,
	         hl__printable(name, sizeof(name), o->name, o->name_len));
	return buf;
}

static void object_destroy(hl_object *o)
{
	unsigned i;
	if (!o)
		return;
	if (o->state && o->kind->hooks)
		o->kind->hooks->close(o);
	for (i = 0; i < o->nkeys; i++)
		if (o->keys[i] != o->name)
			free(o->keys[i]);
	free(o->name);
	if (o->client)
		hl__client_unref(o->client);
	free(o);
}

/* {name}<suffix>; a suffix ending in %client ends in this client's id
 * instead (Redisson's PER_CLIENT keys). A "suffix" ending in {name} is
 * <prefix>{name} (Redisson's prefixName). */
static char *derive_key(hl_client *c, const char *suffix, const char *name,
                        size_t name_len, size_t *out_len)
{
	const char *mark = strstr(suffix, "%client");
	const char *id = hl_client_id(c);
	char buf[128];
	size_t n = strlen(suffix);
	if (n > 6 && n - 6 < sizeof(buf) &&
	    strcmp(suffix + n - 6, "{name}") == 0) {
		memcpy(buf, suffix, n - 6);
		buf[n - 6] = '\0';
		return hl__derive_name(buf, "", name, name_len, 0, out_len);
	}
	if (!mark)
		return hl__derive_name("", suffix, name, name_len, 0, out_len);
	n = (size_t)(mark - suffix);
	if (n + strlen(id) >= sizeof(buf))
		return NULL;
	memcpy(buf, suffix, n);
	strcpy(buf + n, id);
	return hl__derive_name("", buf, name, name_len, 0, out_len);
}

/* A new object without entering the client (o's client reference taken
 * by the caller). */
static int object_make(hl_object **out, hl_client *c, const hl_kinddef *k,
                       const void *name, size_t name_len)
{
	hl_object *o = calloc(1, sizeof(*o));
	unsigned i;
	if (!o || !(o->name = malloc(name_len + 1))) {
		free(o);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	memcpy(o->name, name, name_len);
	o->name[name_len] = '\0';
	o->name_len = name_len;
	o->kind = k;
	for (i = 0; i < k->nkeys && i < HL_GRID_MAXKEYS; i++) {
		if (!k->suffixes[i]) {
			o->keys[i] = o->name;
			o->key_lens[i] = name_len;
		} else if (!(o->keys[i] =
		                     derive_key(c, k->suffixes[i], o->name,
		                                name_len, &o->key_lens[i]))) {
			o->nkeys = i;
			object_destroy(o);
			return hl__fail(HL_ENOMEM, "out of memory");
		}
		o->nkeys = i + 1;
	}
	o->client = c;
	*out = o;
	return HL_OK;
}

int hl_object_new(hl_object **out, hl_client *client, int kind,
                  const void *name, size_t name_len)
{
	const hl_kinddef *k = kind_of(kind);
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	*out = NULL;
	if (!k)
		return hl__fail(HL_EINVAL, "unknown kind %d", kind);
	if ((rc = hl__check_name(name, name_len)) != HL_OK)
		return rc;
	if ((rc = hl__client_enter(client)) != HL_OK)
		return rc;
	if (client->conf.url.topology == HL_TOPO_CLUSTER && k->nkeys > 1 &&
	    !hl__name_slot_safe(name, name_len)) {
		hl__client_leave(client);
		return hl__fail(
		        HL_EINVAL,
		        "%s name: in a cluster its keys would hash to "
		        "different slots (an unbalanced brace in the name)",
		        k->name);
	}
	atomic_fetch_add(&client->refs, 1);
	rc = object_make(out, client, k, name, name_len);
	if (rc != HL_OK)
		hl__client_unref(client);
	if (rc == HL_OK && k->hooks && (rc = k->hooks->open(*out)) != HL_OK) {
		hl__client_leave(client);
		object_destroy(*out);
		*out = NULL;
		return rc;
	}
	hl__client_leave(client);
	return rc;
}

hl_object *hl__grid_object_dup(const hl_object *obj)
{
	hl_object *o = NULL;
	atomic_fetch_add(&obj->client->refs, 1);
	if (object_make(&o, obj->client, obj->kind, obj->name, obj->name_len) !=
	    HL_OK) {
		hl__client_unref(obj->client);
		return NULL;
	}
	return o;
}

void hl_object_free(hl_object *obj)
{
	object_destroy(obj);
}

int hl_object_kind(const hl_object *obj)
{
	return obj ? obj->kind->kind : -1;
}

const char *hl_object_name(const hl_object *obj, size_t *out_len)
{
	if (out_len)
		*out_len = obj ? obj->name_len : 0;
	return obj ? obj->name : NULL;
}

/* ---- running one operation ---------------------------------------------- */

static int cmd_flags(int mode)
{
	if (mode == HL_MODE_READ)
		return HL_CMD_READ | HL_CMD_IDEMPOTENT;
	if (mode == HL_MODE_IDEM || mode == HL_MODE_MARK)
		return HL_CMD_WRITE | HL_CMD_IDEMPOTENT;
	return HL_CMD_WRITE;
}

/* A failure after which a "once" operation may have run is in doubt. */
static int settle(hl_gridcall *call, int rc, enum hl_sent sent)
{
	char label[120];
	if (rc == HL_OK || call->op->mode != HL_MODE_ONCE ||
	    sent != HL_SENT_MAYBE)
		return rc;
	return hl__fail_wrap(HL_EINDOUBT,
	                     "%s: %s: sent, but its reply was lost: Redis "
	                     "applied it once or not at all (it is not sent "
	                     "again, so it never counts twice)",
	                     hl__grid_label(call->obj, label, sizeof(label)),
	                     call->op->name);
}

int hl__grid_command(hl_gridcall *call, int argc, const char **argv,
                     const size_t *lens, hl_reply **out)
{
	enum hl_sent sent = HL_SENT_NOTHING;
	int rc =
	        hl__command_ex(call->obj->client, out, argc, argv, lens,
	                       cmd_flags(call->op->mode), &sent, call->b, NULL);
	return settle(call, rc, sent);
}

int hl__grid_eval(hl_gridcall *call, const hl_script_def *s, int nkeys,
                  int nargs, const char **args, const size_t *alens,
                  hl_reply **out)
{
	hl_client *c = call->obj->client;
	enum hl_sent sent = HL_SENT_NOTHING;
	const char **argv;
	size_t *lens;
	char nk[HL_DEC_MAX];
	int rc, flags = cmd_flags(call->op->mode);
	argv = malloc(sizeof(*argv) * (size_t)(nargs + nkeys + 3));
	lens = malloc(sizeof(*lens) * (size_t)(nargs + nkeys + 3));
	if (!argv || !lens) {
		free(argv);
		free(lens);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	argv[0] = "EVALSHA";
	lens[0] = 7;
	argv[1] = s->sha;
	lens[1] = 40;
	argv[2] = nk;
	lens[2] = hl__fmt_i64(nk, nkeys);
	memcpy(argv + 3, args, sizeof(*args) * (size_t)(nkeys + nargs));
	memcpy(lens + 3, alens, sizeof(*lens) * (size_t)(nkeys + nargs));
	rc = hl__command_ex(c, out, 3 + nkeys + nargs, argv, lens, flags, &sent,
	                    call->b, NULL);
	if (rc == HL_OK && hl__reply_type(*out) == HL_REPLY_ERROR &&
	    strncmp(hl__reply_str(*out), "NOSCRIPT", 8) == 0) {
		/* Not cached there (a restart, a failover, a flush): nothing
		 * ran, so EVAL is safe; an earlier lost attempt stays said. */
		enum hl_sent earlier = sent;
		hl__reply_free(*out);
		*out = NULL;
		argv[0] = "EVAL";
		lens[0] = 4;
		argv[1] = s->source;
		lens[1] = strlen(s->source);
		rc = hl__command_ex(c, out, 3 + nkeys + nargs, argv, lens,
		                    flags, &sent, call->b, NULL);
		if (earlier == HL_SENT_MAYBE)
			sent = HL_SENT_MAYBE;
	}
	free(argv);
	free(lens);
	return settle(call, rc, sent);
}

static int reply_failed(hl_gridcall *call, const hl_reply *r)
{
	char label[120];
	const char *e = hl__reply_str(r);
	hl__grid_label(call->obj, label, sizeof(label));
	if (strncmp(e, "WRONGTYPE", 9) == 0)
		return hl__fail(HL_EREDIS,
		                "%s: %s: the key holds another type of value "
		                "than a %s (%.200s)",
		                label, call->op->name, call->obj->kind->name,
		                e);
	/* bad input a script refused ("ERR hilock: <why>"), and an index
	 * out of range (LSET's error, or a script's in its words) */
	if (strncmp(e, "ERR hilock: ", 12) == 0)
		return hl__fail(HL_EINVAL, "%s: %s: %.300s", label,
		                call->op->name, e + 12);
	if (strstr(e, "index out of range") && call->op->nargs &&
	    strcmp(call->op->args[0].name, "index") == 0 && call->nargs &&
	    call->args[0].type == HL_ARG_INT)
		return hl__fail(HL_EINVAL,
		                "%s: %s: index %lld is out of range (Redis: "
		                "%.100s)",
		                label, call->op->name,
		                (long long)call->args[0].i, e);
	return hl__fail(HL_EREDIS, "%s: %s: redis error: %.400s", label,
	                call->op->name, e);
}

/* The values of an array reply r as a list, a map (alternating keys and
 * values, as Redis gives them) or scored (members and their scores, the
 * scores as doubles); nil reads as none. */
static int items(hl_gridcall *call, const hl_reply *r, int shape,
                 hl_value **out)
{
	char label[120];
	size_t i, n;
	hl_value **vs;
	int t = hl__reply_type(r);
	*out = NULL;
	if (t == HL_REPLY_NIL) {
		*out = hl__value_array(NULL, 0);
		return *out ? HL_OK : hl__fail(HL_ENOMEM, "out of memory");
	}
	if (t != HL_REPLY_ARRAY || (shape != HL_R_LIST && hl__reply_len(r) % 2))
		return hl__fail(HL_EPROTOCOL, "%s: %s: an unexpected reply",
		                hl__grid_label(call->obj, label, sizeof(label)),
		                call->op->name);
	{
		/* one allocation for the page; element by element only when
		 * an element is itself an array */
		int rc = hl__value_flat_of_reply(
		        out, r, shape == HL_R_SCORED,
		        shape == HL_R_SCORED ? hl__grid_label(call->obj, label,
		                                              sizeof(label))
		                             : "");
		if (rc != 1)
			return rc;
	}
	n = hl__reply_len(r);
	vs = calloc(n ? n : 1, sizeof(*vs));
	if (!vs)
		return hl__fail(HL_ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		const hl_reply *e = hl__reply_at(r, i);
		if (shape == HL_R_SCORED && i % 2) {
			double d = 0;
			int rc = hl__reply_type(e) == HL_REPLY_INTEGER
			                 ? (d = (double)hl__reply_int(e), HL_OK)
			                 : hl__parse_double(
			                           hl__reply_str(e),
			                           hl__reply_strlen(e), &d,
			                           hl__grid_label(
			                                   call->obj, label,
			                                   sizeof(label)));
			if (rc != HL_OK) {
				while (i)
					hl_value_free(vs[--i]);
				free(vs);
				return rc;
			}
			vs[i] = hl__value_double(d);
		} else {
			vs[i] = hl__value_of_reply(e);
		}
		if (!vs[i]) {
			while (i)
				hl_value_free(vs[--i]);
			free(vs);
			return hl__fail(HL_ENOMEM, "out of memory");
		}
	}
	*out = hl__value_array(vs, n);
	free(vs);
	return *out ? HL_OK : hl__fail(HL_ENOMEM, "out of memory");
}

/* A list, map or scored result; a page's [cursor, items]. */
static int many(hl_gridcall *call, const hl_reply *r, hl_value **out)
{
	char label[120];
	int shape = call->op->result, rc;
	hl_value *page[2];
	if (shape < HL_R_PAGE_LIST)
		return items(call, r, shape, out);
	if (hl__reply_type(r) != HL_REPLY_ARRAY || hl__reply_len(r) != 2 ||
	    hl__reply_type(hl__reply_at(r, 0)) != HL_REPLY_STRING)
		return hl__fail(HL_EPROTOCOL, "%s: %s: an unexpected reply",
		                hl__grid_label(call->obj, label, sizeof(label)),
		                call->op->name);
	rc = items(call, hl__reply_at(r, 1), shape - HL_R_PAGE_LIST + HL_R_LIST,
	           &page[1]);
	if (rc != HL_OK)
		return rc;
	page[0] = hl__value_of_reply(hl__reply_at(r, 0));
	if (!page[0]) {
		hl_value_free(page[1]);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	*out = hl__value_array(page, 2);
	return *out ? HL_OK : hl__fail(HL_ENOMEM, "out of memory");
}

int hl__grid_result(hl_gridcall *call, const hl_reply *r)
{
	char label[120];
	int t = hl__reply_type(r), rc;
	hl_value *v = NULL;
	int64_t i = 0;
	double d = 0;
	if (t == HL_REPLY_ERROR)
		return reply_failed(call, r);
	switch (call->op->result) {
	case HL_R_NONE:
		if (call->out)
			v = hl__value_new(HL_VALUE_NIL);
		break;
	case HL_R_BOOL:
		if (t == HL_REPLY_INTEGER)
			i = hl__reply_int(r) != 0;
		else if (t == HL_REPLY_STATUS)
			i = 1;
		else if (t == HL_REPLY_STRING)
			i = hl__reply_strlen(r) > 0 &&
			    strcmp(hl__reply_str(r), "0") != 0;
		v = hl__value_int(i);
		break;
	case HL_R_I64_OPT:
	case HL_R_F64_OPT:
		if (t == HL_REPLY_NIL) {
			v = hl__value_new(HL_VALUE_NIL);
			break;
		}
		if (call->op->result == HL_R_F64_OPT)
			goto f64;
		/* fall through */
	case HL_R_I64:
		if (t == HL_REPLY_INTEGER)
			i = hl__reply_int(r);
		else if (t == HL_REPLY_STRING &&
		         (rc = hl__parse_i64(
		                  hl__reply_str(r), hl__reply_strlen(r), &i,
		                  hl__grid_label(call->obj, label,
		                                 sizeof(label)))) != HL_OK)
			return rc;
		v = hl__value_int(i);
		break;
	case HL_R_F64:
	f64:
		if (t == HL_REPLY_INTEGER)
			d = (double)hl__reply_int(r);
		else if (t == HL_REPLY_STRING &&
		         (rc = hl__parse_double(
		                  hl__reply_str(r), hl__reply_strlen(r), &d,
		                  hl__grid_label(call->obj, label,
		                                 sizeof(label)))) != HL_OK)
			return rc;
		v = hl__value_double(d);
		break;
	case HL_R_LIST:
	case HL_R_MAP:
	case HL_R_SCORED:
	case HL_R_PAGE_LIST:
	case HL_R_PAGE_MAP:
	case HL_R_PAGE_SCORED:
		if ((rc = many(call, r, &v)) != HL_OK)
			return rc;
		break;
	default:
		v = hl__value_of_reply(r);
		break;
	}
	if (call->out) {
		if (!v)
			return hl__fail(HL_ENOMEM, "out of memory");
		*call->out = v;
	} else {
		hl_value_free(v);
	}
	return HL_OK;
}

/* The argument of spec index i as given (or its default, or NONE). */
static hl_arg arg_at(const hl_gridcall *call, unsigned i)
{
	const hl_argdef *d = &call->op->args[i];
	hl_arg a = i < call->nargs ? call->args[i] : hl__arg_none();
	if (a.type == HL_ARG_NONE && d->has_default) {
		if (d->type == HL_T_F64)
			a = hl__arg_double(d->def);
		else
			a = hl__arg_int((int64_t)d->def);
	}
	return a;
}

static int check_args(const hl_gridcall *call)
{
	const hl_opdef *op = call->op;
	char label[120];
	unsigned i, fixed = op->nargs;
	int list = op->nargs && (op->args[op->nargs - 1].type == HL_T_LIST ||
	                         op->args[op->nargs - 1].type == HL_T_SCORED);
	/* the label only for a message: a local operation (an adder's add)
	 * makes no round trip, and formatting it would be most of its cost */
#define LABEL hl__grid_label(call->obj, label, sizeof(label))
	if (list)
		fixed--;
	if (call->nargs > fixed && !list)
		return hl__fail(HL_EINVAL, "%s: %s takes %u arguments, not %zu",
		                LABEL, op->name, fixed, call->nargs);
	if (call->nargs && !call->args)
		return hl__fail(HL_EINVAL, "%s: %s: args is NULL", LABEL,
		                op->name);
	if (list && op->args[fixed].type == HL_T_SCORED &&
	    call->nargs > fixed && (call->nargs - fixed) % 2)
		return hl__fail(
		        HL_EINVAL,
		        "%s: %s: %s: a score and a member for each entry, "
		        "not %zu values",
		        LABEL, op->name, op->args[fixed].name,
		        call->nargs - fixed);
	for (i = 0; i < call->nargs; i++) {
		const hl_argdef *d = &op->args[i < fixed ? i : fixed];
		const hl_arg *a = &call->args[i];
		int score = d->type == HL_T_SCORED && (i - fixed) % 2 == 0;
		if (a->type == HL_ARG_NONE) {
			if (!d->optional && !d->has_default)
				return hl__fail(HL_EINVAL,
				                "%s: %s: %s is required", LABEL,
				                op->name, d->name);
			continue;
		}
		switch (score ? HL_T_F64 : d->type) {
		case HL_T_BYTES:
		case HL_T_LIST:
		case HL_T_SCORED:
			if (a->type != HL_ARG_BYTES)
				goto type;
			if (!a->bytes && a->len)
				return hl__fail(HL_EINVAL, "%s: %s: %s is NULL",
				                LABEL, op->name, d->name);
			if (a->len > 512u * 1024 * 1024)
				return hl__fail(
				        HL_EINVAL,
				        "%s: %s: %s is %zu bytes; Redis "
				        "takes at most 512 MB",
				        LABEL, op->name, d->name, a->len);
			break;
		case HL_T_I64:
		case HL_T_BOOL:
			if (a->type != HL_ARG_INT)
				goto type;
			break;
		case HL_T_MS:
			if (a->type != HL_ARG_INT)
				goto type;
			if (a->i < 1 || a->i > HL_TIME_MAX)
				return hl__fail(
				        HL_EINVAL,
				        "%s: %s: %s is %lld ms; it must be "
				        "1 ms to 2^40 ms",
				        LABEL, op->name, d->name,
				        (long long)a->i);
			break;
		case HL_T_F64:
			if (a->type != HL_ARG_DOUBLE && a->type != HL_ARG_INT)
				goto type;
			if (a->type == HL_ARG_DOUBLE && !(a->d - a->d == 0))
				return hl__fail(
				        HL_EINVAL,
				        "%s: %s: %s is not a finite number",
				        LABEL, op->name, d->name);
			break;
		case HL_T_BOUND:
			if (a->type != HL_ARG_DOUBLE && a->type != HL_ARG_INT)
				goto type;
			if (a->type == HL_ARG_DOUBLE && a->d != a->d)
				return hl__fail(
				        HL_EINVAL,
				        "%s: %s: %s is NaN, not a number",
				        LABEL, op->name, d->name);
			break;
		}
		continue;
	type:
		return hl__fail(
		        HL_EINVAL, "%s: %s: %s must be %s", LABEL, op->name,
		        d->name,
		        (d->type == HL_T_BYTES || d->type == HL_T_LIST ||
		         d->type == HL_T_SCORED) &&
		                        !score
		                ? "bytes"
		        : d->type == HL_T_F64 || d->type == HL_T_BOUND || score
		                ? "a number"
		                : "an integer");
	}
	for (i = (unsigned)call->nargs; i < fixed; i++)
		if (!op->args[i].optional && !op->args[i].has_default)
			return hl__fail(HL_EINVAL, "%s: %s: %s is required",
			                LABEL, op->name, op->args[i].name);
	return HL_OK;
#undef LABEL
}

/* Expand op's template for call into argv (numbers in buf). */
typedef struct expansion {
	const char **argv;
	size_t *lens;
	char *buf, *mark;
	char *sbuf; /* a scored list's scores */
	size_t sused;
	int argc, nkeys;
} expansion;

/* A "mark" operation's request marker: the key hilock_request:{name}:<32
 * random hex> after the script's keys, and its lifetime in ms (as long as
 * a resend may come: every retry with its pause) after its arguments. The
 * same for every resend of this call (core/grid/README.md). */
static int add_marker(hl_gridcall *call, expansion *x, char *num)
{
	const hl_conf *cf = &call->obj->client->conf;
	char id[33];
	size_t n;
	int64_t ms = (int64_t)(cf->retry_attempts + 1) *
	             (cf->command_timeout_ms + 2 * cf->retry_delay_ms);
	char *w = hl__derive_name("hilock_request:", "", call->obj->name,
	                          call->obj->name_len, 0, &n);
	if (!w || !(x->mark = realloc(w, n + 33))) {
		free(w);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	hl__random_hex(id);
	x->mark[n] = ':';
	memcpy(x->mark + n + 1, id, 32);
	memmove(x->argv + x->nkeys + 1, x->argv + x->nkeys,
	        sizeof(*x->argv) * (size_t)(x->argc - x->nkeys));
	memmove(x->lens + x->nkeys + 1, x->lens + x->nkeys,
	        sizeof(*x->lens) * (size_t)(x->argc - x->nkeys));
	x->argv[x->nkeys] = x->mark;
	x->lens[x->nkeys++] = n + 33;
	x->argc++;
	x->argv[x->argc] = num;
	x->lens[x->argc++] = hl__fmt_i64(num, ms < 1000 ? 1000 : ms);
	return HL_OK;
}

static int expand(hl_gridcall *call, expansion *x)
{
	const hl_opdef *op = call->op;
	size_t cap = op->ntoks + call->nargs + 3, bufcap, used = 0;
	unsigned t;
	int skip = 0;
	bufcap = (op->ntoks + 2) * HL_NUM_MAX;
	x->argv = malloc(sizeof(*x->argv) * cap);
	x->lens = malloc(sizeof(*x->lens) * cap);
	x->buf = malloc(bufcap);
	x->argc = 0;
	x->nkeys = 0;
	if (!x->argv || !x->lens || !x->buf)
		return hl__fail(HL_ENOMEM, "out of memory");
	if (op->nargs && op->args[op->nargs - 1].type == HL_T_SCORED) {
		/* the scores' text: measured first (a big batch) */
		size_t i, need = 1;
		char tmp[HL_NUM_MAX];
		for (i = op->nargs - 1; i < call->nargs; i++)
			if (call->args[i].type == HL_ARG_DOUBLE)
				need += hl__fmt_double(tmp, sizeof(tmp),
				                       call->args[i].d) +
				        1;
			else if (call->args[i].type == HL_ARG_INT)
				need += 22;
		if (!(x->sbuf = malloc(need)))
			return hl__fail(HL_ENOMEM, "out of memory");
	}
	for (t = 0; t < op->ntoks; t++) {
		const hl_tok *k = &op->toks[t];
		hl_arg a;
		char *num = x->buf + used;
		size_t n = 0;
		if (skip && k->type != HL_TOK_END)
			continue;
		switch (k->type) {
		case HL_TOK_LIT:
			x->argv[x->argc] = k->text;
			x->lens[x->argc++] = k->idx;
			break;
		case HL_TOK_KEY:
			x->argv[x->argc] = call->obj->keys[k->idx];
			x->lens[x->argc++] = call->obj->key_lens[k->idx];
			if (t < op->nkeys)
				x->nkeys++;
			break;
		case HL_TOK_OPT:
			skip = arg_at(call, k->idx).type == HL_ARG_NONE;
			break;
		case HL_TOK_END:
			skip = 0;
			break;
		case HL_TOK_PRESENT:
			a = arg_at(call, k->idx);
			x->argv[x->argc] = a.type == HL_ARG_NONE ? "0" : "1";
			x->lens[x->argc++] = 1;
			break;
		case HL_TOK_LIST: {
			size_t i;
			for (i = k->idx; i < call->nargs; i++) {
				const hl_arg *li = &call->args[i];
				if (li->type != HL_ARG_BYTES) { /* a score */
					char *sn = x->sbuf + x->sused;
					double d = li->type == HL_ARG_INT
					                   ? (double)li->i
					                   : li->d;
					n = hl__fmt_double(sn, HL_NUM_MAX, d);
					x->sused += n + 1;
					x->argv[x->argc] = sn;
					x->lens[x->argc++] = n;
					continue;
				}
				x->argv[x->argc] = li->bytes ? li->bytes : "";
				x->lens[x->argc++] = li->len;
				if (t < op->nkeys) /* names of keys */
					x->nkeys++;
			}
			break;
		}
		case HL_TOK_ARG:
			a = arg_at(call, k->idx);
			if (t < op->nkeys) /* a key named by an argument */
				x->nkeys++;
			if (a.type == HL_ARG_NONE) {
				x->argv[x->argc] = "";
				x->lens[x->argc++] = 0;
			} else if (a.type == HL_ARG_BYTES) {
				x->argv[x->argc] = a.bytes ? a.bytes : "";
				x->lens[x->argc++] = a.len;
			} else {
				if (op->args[k->idx].type == HL_T_F64 ||
				    op->args[k->idx].type == HL_T_BOUND) {
					double d = a.type == HL_ARG_INT
					                   ? (double)a.i
					                   : a.d;
					if (d - d != 0) /* a bound: infinite */
						n = (size_t)snprintf(
						        num, HL_NUM_MAX, "%s",
						        d > 0 ? "+inf"
						              : "-inf");
					else
						n = hl__fmt_double(
						        num, HL_NUM_MAX, d);
				} else {
					n = hl__fmt_i64(num, a.i);
				}
				used += n + 1;
				x->argv[x->argc] = num;
				x->lens[x->argc++] = n;
			}
			break;
		}
	}
	if (op->mode == HL_MODE_MARK)
		return add_marker(call, x, x->buf + used);
	return HL_OK;
}

/* In a cluster a script's keys must share one slot: a key named by an
 * argument (a queue's destination) in another slot is refused before
 * anything is sent (else CROSSSLOT, or a MOVED for the wrong key). */
static int same_slot(hl_gridcall *call, const expansion *x)
{
	char label[120], k0[80], ki[80];
	unsigned s0;
	int i;
	if (x->nkeys < 2 ||
	    call->obj->client->conf.url.topology != HL_TOPO_CLUSTER)
		return HL_OK;
	s0 = hl__slot(x->argv[0], x->lens[0]);
	for (i = 1; i < x->nkeys; i++)
		if (hl__slot(x->argv[i], x->lens[i]) != s0)
			return hl__fail(
			        HL_EINVAL,
			        "%s: %s: \"%s\" hashes to another cluster "
			        "slot than \"%s\" (%u, not %u); give both "
			        "one hash tag ({tag}a, {tag}b)",
			        hl__grid_label(call->obj, label, sizeof(label)),
			        call->op->name,
			        hl__printable(ki, sizeof(ki), x->argv[i],
			                      x->lens[i]),
			        hl__printable(k0, sizeof(k0), x->argv[0],
			                      x->lens[0]),
			        hl__slot(x->argv[i], x->lens[i]), s0);
	return HL_OK;
}

static int run_op(hl_gridcall *call)
{
	const hl_opdef *op = call->op;
	expansion x;
	hl_reply *r = NULL;
	int rc;
	if ((rc = check_args(call)) != HL_OK)
		return rc;
	if (op->custom)
		return op->custom(call);
	memset(&x, 0, sizeof(x));
	rc = expand(call, &x);
	if (rc == HL_OK && op->script)
		rc = same_slot(call, &x);
	if (rc == HL_OK && op->script)
		rc = hl__grid_eval(call, op->script, x.nkeys, x.argc - x.nkeys,
		                   x.argv, x.lens, &r);
	else if (rc == HL_OK)
		rc = hl__grid_command(call, x.argc, x.argv, x.lens, &r);
	free(x.argv);
	free(x.lens);
	free(x.buf);
	free(x.sbuf);
	free(x.mark);
	if (rc == HL_OK)
		rc = hl__grid_result(call, r);
	hl__reply_free(r);
	return rc;
}

static int call_checked(hl_value **out, hl_object *obj, int op,
                        const hl_arg *args, size_t nargs, int64_t timeout_ms,
                        hl_cancel *cancel)
{
	const hl_opdef *d;
	hl_gridcall call;
	hl_bound b;
	char label[120];
	int rc;
	if (out)
		*out = NULL;
	if (!obj)
		return hl__fail(HL_EINVAL, "object is NULL");
	d = op_of(op);
	if (!d || (op >> 8) != obj->kind->kind)
		return hl__fail(HL_EINVAL,
		                "%s: operation 0x%x is not one of a %s",
		                hl__grid_label(obj, label, sizeof(label)), op,
		                obj->kind->name);
	if (timeout_ms < -1 || timeout_ms > HL_TIME_MAX)
		return hl__fail(HL_EINVAL,
		                "timeout_ms is %lld: -1, or 0 to 2^40",
		                (long long)timeout_ms);
	if ((rc = hl__client_enter(obj->client)) != HL_OK)
		return rc;
	hl__bound_init(&b, obj->client,
	               timeout_ms < 0 ? -1 : hl__deadline(timeout_ms), cancel,
	               0);
	call.obj = obj;
	call.op = d;
	call.args = args;
	call.nargs = nargs;
	call.b = &b;
	call.out = out;
	rc = run_op(&call);
	hl__client_leave(obj->client);
	return rc;
}

int hl_object_call(hl_value **out, hl_object *obj, int op, const hl_arg *args,
                   size_t nargs)
{
	return call_checked(out, obj, op, args, nargs, -1, NULL);
}

int hl_object_call_ex(hl_value **out, hl_object *obj, int op,
                      const hl_arg *args, size_t nargs, int64_t timeout_ms,
                      hl_cancel *cancel)
{
	return call_checked(out, obj, op, args, nargs, timeout_ms, cancel);
}

/* ---- the typed calls' bodies ----------------------------------------------
 */

int hl__grid_none(hl_object *obj, int op, const hl_arg *a, size_t n)
{
	return call_checked(NULL, obj, op, a, n, -1, NULL);
}

int hl__grid_bool(int *out, hl_object *obj, int op, const hl_arg *a, size_t n)
{
	hl_value *v = NULL;
	int rc = call_checked(&v, obj, op, a, n, -1, NULL);
	if (rc == HL_OK && out)
		*out = hl_value_int(v) != 0;
	hl_value_free(v);
	return rc;
}

int hl__grid_i64(int64_t *out, hl_object *obj, int op, const hl_arg *a,
                 size_t n)
{
	hl_value *v = NULL;
	int rc = call_checked(&v, obj, op, a, n, -1, NULL);
	if (rc == HL_OK && out)
		*out = hl_value_int(v);
	hl_value_free(v);
	return rc;
}

int hl__grid_f64(double *out, hl_object *obj, int op, const hl_arg *a, size_t n)
{
	hl_value *v = NULL;
	int rc = call_checked(&v, obj, op, a, n, -1, NULL);
	if (rc == HL_OK && out)
		*out = hl_value_double(v);
	hl_value_free(v);
	return rc;
}

int hl__grid_i64_opt(int64_t *out, int *found, hl_object *obj, int op,
                     const hl_arg *a, size_t n)
{
	hl_value *v = NULL;
	int rc = call_checked(&v, obj, op, a, n, -1, NULL);
	int got = rc == HL_OK && hl_value_type(v) != HL_VALUE_NIL;
	if (out)
		*out = got ? hl_value_int(v) : 0;
	if (found)
		*found = got;
	hl_value_free(v);
	return rc;
}

int hl__grid_f64_opt(double *out, int *found, hl_object *obj, int op,
                     const hl_arg *a, size_t n)
{
	hl_value *v = NULL;
	int rc = call_checked(&v, obj, op, a, n, -1, NULL);
	int got = rc == HL_OK && hl_value_type(v) != HL_VALUE_NIL;
	if (out)
		*out = got ? hl_value_double(v) : 0;
	if (found)
		*found = got;
	hl_value_free(v);
	return rc;
}

int hl__grid_value(hl_value **out, hl_object *obj, int op, const hl_arg *a,
                   size_t n)
{
	/* out NULL: the answer of a change is not wanted (a put's previous
	 * value); a read without it is a mistake */
	const hl_opdef *d = hl__grid_op(op);
	if (!out && (!d || d->mode == HL_MODE_READ))
		return hl__fail(HL_EINVAL, "out is NULL");
	return call_checked(out, obj, op, a, n, -1, NULL);
}

/* ---- the common operations ------------------------------------------------
 */

/* One command on each key of obj (in order): the main key's integer
 * answer, and for del the sum. */
static int each_key(int64_t *out, hl_object *obj, const char *cmd,
                    const char *extra, int flags, int sum)
{
	hl_bound b;
	char label[120];
	unsigned i;
	int rc;
	int64_t total = 0;
	if (!obj)
		return hl__fail(HL_EINVAL, "object is NULL");
	if ((rc = hl__client_enter(obj->client)) != HL_OK)
		return rc;
	hl__bound_init(&b, obj->client, -1, NULL, 0);
	for (i = 0; i < obj->nkeys && rc == HL_OK; i++) {
		const char *argv[3] = {cmd, obj->keys[i], extra};
		size_t lens[3] = {strlen(cmd), obj->key_lens[i],
		                  extra ? strlen(extra) : 0};
		hl_reply *r = NULL;
		rc = hl__command(obj->client, &r, extra ? 3 : 2, argv, lens,
		                 flags, NULL, &b);
		if (rc == HL_OK && hl__reply_type(r) == HL_REPLY_ERROR)
			rc = hl__fail(HL_EREDIS, "%s: %s: redis error: %.300s",
			              hl__grid_label(obj, label, sizeof(label)),
			              cmd, hl__reply_str(r));
		else if (rc == HL_OK && (sum || i == 0))
			total = sum ? total + hl__reply_int(r)
			            : hl__reply_int(r);
		hl__reply_free(r);
	}
	hl__client_leave(obj->client);
	if (rc == HL_OK && out)
		*out = total;
	return rc;
}

int hl_object_delete(int *out_deleted, hl_object *obj)
{
	int64_t n = 0;
	int rc = each_key(&n, obj, "DEL", NULL,
	                  HL_CMD_WRITE | HL_CMD_IDEMPOTENT, 1);
	if (rc == HL_OK && out_deleted)
		*out_deleted = n > 0;
	return rc;
}

int hl_object_exists(int *out_exists, hl_object *obj)
{
	int64_t n = 0;
	int rc;
	if (!out_exists)
		return hl__fail(HL_EINVAL, "out_exists is NULL");
	rc = each_key(&n, obj, "EXISTS", NULL, HL_CMD_READ | HL_CMD_IDEMPOTENT,
	              0);
	if (rc == HL_OK)
		*out_exists = n > 0;
	return rc;
}

int hl_object_expire(int *out_set, hl_object *obj, int64_t ttl_ms)
{
	char ms[HL_DEC_MAX];
	int64_t n = 0;
	int rc;
	if (ttl_ms < 1 || ttl_ms > HL_TIME_MAX)
		return hl__fail(HL_EINVAL,
		                "ttl_ms is %lld; it must be 1 ms to 2^40 ms",
		                (long long)ttl_ms);
	hl__fmt_i64(ms, ttl_ms);
	rc = each_key(&n, obj, "PEXPIRE", ms, HL_CMD_WRITE | HL_CMD_IDEMPOTENT,
	              0);
	if (rc == HL_OK && out_set)
		*out_set = n > 0;
	return rc;
}

int hl_object_clear_expire(int *out_cleared, hl_object *obj)
{
	int64_t n = 0;
	int rc = each_key(&n, obj, "PERSIST", NULL,
	                  HL_CMD_WRITE | HL_CMD_IDEMPOTENT, 0);
	if (rc == HL_OK && out_cleared)
		*out_cleared = n > 0;
	return rc;
}

int hl_object_ttl(int64_t *out_ms, hl_object *obj)
{
	if (!out_ms)
		return hl__fail(HL_EINVAL, "out_ms is NULL");
	return each_key(out_ms, obj, "PTTL", NULL,
	                HL_CMD_READ | HL_CMD_IDEMPOTENT, 0);
}

/* ---- tasks ------------------------------------------------------------------
 */

/* A task's own copy of a call: the object (its client referenced), the
 * arguments' bytes. */
typedef struct call_task {
	hl_object *obj;
	int op;
	size_t nargs;
	hl_arg *args;
	char *bytes;
} call_task;

static void call_task_free(void *arg)
{
	call_task *t = arg;
	object_destroy(t->obj);
	free(t->args);
	free(t->bytes);
	free(t);
}

static int call_task_run(void *arg, const hl_bound *b, int *result,
                         hl_value **value)
{
	call_task *t = arg;
	hl_gridcall call;
	call.obj = t->obj;
	call.op = op_of(t->op);
	call.args = t->args;
	call.nargs = t->nargs;
	call.b = b;
	call.out = value;
	*result = 0;
	return run_op(&call);
}

static int call_task_run_int(void *arg, const hl_bound *b, int *result)
{
	(void)arg;
	(void)b;
	*result = 0;
	return HL_OK;
}

static const hl_call_ops call_task_ops = {call_task_run_int, call_task_free,
                                          call_task_run};

int hl_object_call_start(hl_task **out, hl_object *obj, int op,
                         const hl_arg *args, size_t nargs)
{
	const hl_opdef *d;
	call_task *t;
	size_t i, total = 0, used = 0;
	char label[120];
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	*out = NULL;
	if (!obj)
		return hl__fail(HL_EINVAL, "object is NULL");
	d = op_of(op);
	if (!d || (op >> 8) != obj->kind->kind)
		return hl__fail(HL_EINVAL,
		                "%s: operation 0x%x is not one of a %s",
		                hl__grid_label(obj, label, sizeof(label)), op,
		                obj->kind->name);
	if (nargs && !args)
		return hl__fail(HL_EINVAL, "args is NULL");
	if (op == HL_OP_RATE_LIMITER_TRY_ACQUIRE ||
	    op == HL_OP_RATE_LIMITER_ACQUIRE) /* a wait: a task of its own */
		return hl__rate_limiter_call_start(out, obj, op, args, nargs);
	if (hl__priority_is_wait(op)) /* a wait too */
		return hl__priority_take_call_start(out, obj, op, args, nargs);
	if (op == HL_OP_BOUNDED_BLOCKING_QUEUE_OFFER_TIMEOUT ||
	    op == HL_OP_BOUNDED_BLOCKING_QUEUE_PUT) /* a wait for room */
		return hl__bounded_queue_call_start(out, obj, op, args, nargs);
	if (hl__blocking_queue_is_wait(op)) /* a wait: in a line */
		return hl__blocking_queue_call_start(out, obj, op, args, nargs);
	for (i = 0; i < nargs; i++)
		if (args[i].type == HL_ARG_BYTES)
			total += args[i].len;
	if ((rc = hl__client_enter(obj->client)) != HL_OK)
		return rc;
	t = calloc(1, sizeof(*t));
	if (!t || (nargs && !(t->args = calloc(nargs, sizeof(*t->args)))) ||
	    !(t->bytes = malloc(total + 1))) {
		if (t) {
			free(t->args);
			free(t);
		}
		hl__client_leave(obj->client);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	for (i = 0; i < nargs; i++) {
		t->args[i] = args[i];
		if (args[i].type == HL_ARG_BYTES && args[i].bytes) {
			memcpy(t->bytes + used, args[i].bytes, args[i].len);
			t->args[i].bytes = t->bytes + used;
			used += args[i].len;
		}
	}
	t->nargs = nargs;
	t->op = op;
	if (!(t->obj = hl__grid_object_dup(obj))) {
		free(t->args);
		free(t->bytes);
		free(t);
		hl__client_leave(obj->client);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	rc = hl__task_call_start(out, obj->client, &call_task_ops, t);
	hl__client_leave(obj->client);
	return rc;
}

/* ---- raw commands ----------------------------------------------------------
 */

/* Check a raw command's words, and pick the key it is routed by: route_key,
 * else its first argument, else none. */
int hl__raw_words(int argc, const char *const *argv, const size_t *lens)
{
	int i;
	if (argc < 1 || argc > 1000000 || !argv || !lens)
		return hl__fail(HL_EINVAL, "a command needs argv and lens with "
		                           "at least one word");
	for (i = 0; i < argc; i++)
		if (!argv[i] && lens[i])
			return hl__fail(HL_EINVAL, "argv[%d] is NULL", i);
	return HL_OK;
}

int hl__raw_reply(hl_value **out, hl_reply *r, const char *cmd)
{
	int rc = HL_OK;
	if (hl__reply_type(r) == HL_REPLY_ERROR)
		rc = hl__fail(HL_EREDIS, "%.40s: %.400s", cmd,
		              hl__reply_str(r));
	else if (out && !(*out = hl__value_of_reply(r)))
		rc = hl__fail(HL_ENOMEM, "out of memory");
	hl__reply_free(r);
	return rc;
}

static int command_words(int argc, const char *const *argv, const size_t *lens,
                         const void *route_key, size_t route_key_len,
                         const char **key, size_t *keylen)
{
	int rc = hl__raw_words(argc, argv, lens);
	if (rc != HL_OK)
		return rc;
	*key = NULL;
	*keylen = 0;
	if (route_key) {
		*key = route_key;
		*keylen = route_key_len;
	} else if (argc >= 2) {
		*key = argv[1];
		*keylen = lens[1];
	}
	return HL_OK;
}

int hl_client_command(hl_value **out, hl_client *client, int argc,
                      const char *const *argv, const size_t *lens,
                      const void *route_key, size_t route_key_len,
                      int idempotent)
{
	hl_reply *r = NULL;
	hl_bound b;
	enum hl_sent sent = HL_SENT_NOTHING;
	const char *key;
	size_t keylen;
	int rc;
	if (out)
		*out = NULL;
	if ((rc = command_words(argc, argv, lens, route_key, route_key_len,
	                        &key, &keylen)) != HL_OK)
		return rc;
	if ((rc = hl__client_enter(client)) != HL_OK)
		return rc;
	hl__bound_init(&b, client, -1, NULL, 0);
	rc = hl__command_at(client, &r, argc, (const char **)argv, lens,
	                    idempotent ? HL_CMD_IDEMPOTENT | HL_CMD_WRITE
	                               : HL_CMD_WRITE,
	                    &sent, &b, NULL, key, keylen);
	hl__client_leave(client);
	if (rc != HL_OK && !idempotent && sent == HL_SENT_MAYBE)
		return hl__fail_wrap(HL_EINDOUBT,
		                     "%.40s: sent, but its reply was lost: it "
		                     "ran once or not at all",
		                     argv[0]);
	if (rc != HL_OK)
		return rc;
	return hl__raw_reply(out, r, argv[0]);
}

int hl_client_command_blocking(hl_value **out, hl_client *client, int argc,
                               const char *const *argv, const size_t *lens,
                               const void *route_key, size_t route_key_len,
                               int64_t timeout_ms, hl_cancel *cancel)
{
	hl_reply *r = NULL;
	hl_bound b;
	enum hl_sent sent = HL_SENT_NOTHING;
	const char *key = NULL;
	size_t keylen = 0;
	int rc;
	if (out)
		*out = NULL;
	if ((rc = command_words(argc, argv, lens, route_key, route_key_len,
	                        &key, &keylen)) != HL_OK)
		return rc;
	if (timeout_ms < -1 || timeout_ms > HL_TIME_MAX)
		return hl__fail(HL_EINVAL,
		                "timeout_ms is %lld: -1, or 0 to 2^40",
		                (long long)timeout_ms);
	if ((rc = hl__client_enter(client)) != HL_OK)
		return rc;
	hl__bound_init(&b, client,
	               timeout_ms < 0 ? -1 : hl__deadline(timeout_ms), cancel,
	               1);
	rc = hl__blocking_command(client, &r, argc, (const char **)argv, lens,
	                          key, keylen, -1, &b, &sent);
	hl__client_leave(client);
	if (rc != HL_OK && sent == HL_SENT_MAYBE)
		return hl__fail_wrap(HL_EINDOUBT,
		                     "%.40s: the connection broke while it "
		                     "waited: what it took, if anything, is "
		                     "not known",
		                     argv[0]);
	if (rc != HL_OK)
		return rc;
	return hl__raw_reply(out, r, argv[0]);
}
