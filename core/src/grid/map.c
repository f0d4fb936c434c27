/*
 * The map's C (core/grid/map.kind): the operations over a list of keys or
 * of pairs, which Redis refuses when the list is empty (HMGET, HDEL,
 * HMSET with no field) and which answer at once then, as Redisson's do;
 * put_all refuses an odd count before anything is sent; get_all pairs
 * HMGET's answer with the keys asked, leaving out the absent ones.
 */
#include <stdlib.h>
#include <string.h>

#include "grid/grid.h"

/* argv: cmd, the map's key, then call's arguments; NULL when out of
 * memory. */
static int words(hl_gridcall *call, const char *cmd, const char ***argv,
                 size_t **lens)
{
	size_t i, n = call->nargs + 2;
	*argv = malloc(sizeof(**argv) * n);
	*lens = malloc(sizeof(**lens) * n);
	if (!*argv || !*lens) {
		free(*argv);
		free(*lens);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	(*argv)[0] = cmd;
	(*lens)[0] = strlen(cmd);
	(*argv)[1] = call->obj->keys[0];
	(*lens)[1] = call->obj->key_lens[0];
	for (i = 0; i < call->nargs; i++) {
		(*argv)[i + 2] = call->args[i].bytes ? call->args[i].bytes : "";
		(*lens)[i + 2] = call->args[i].len;
	}
	return HL_OK;
}

/* Run cmd over call's arguments: the reply in *out. */
static int run(hl_gridcall *call, const char *cmd, hl_reply **out)
{
	const char **argv;
	size_t *lens;
	int rc = words(call, cmd, &argv, &lens);
	if (rc != HL_OK)
		return rc;
	rc = hl__grid_command(call, (int)call->nargs + 2, argv, lens, out);
	free(argv);
	free(lens);
	return rc;
}

/* The answer when nothing was sent: an empty map, 0, nothing. */
static int answer_empty(hl_gridcall *call, int type)
{
	if (!call->out)
		return HL_OK;
	*call->out = type == HL_VALUE_ARRAY ? hl__value_array(NULL, 0)
	             : type == HL_VALUE_INT ? hl__value_int(0)
	                                    : hl__value_new(HL_VALUE_NIL);
	return *call->out ? HL_OK : hl__fail(HL_ENOMEM, "out of memory");
}

int hl__map_get_all(hl_gridcall *call)
{
	char label[120];
	hl_reply *r = NULL;
	int rc;
	if (call->nargs == 0)
		return answer_empty(call, HL_VALUE_ARRAY);
	if ((rc = run(call, "HMGET", &r)) != HL_OK)
		return rc;
	if (hl__reply_type(r) == HL_REPLY_ERROR) {
		rc = hl__grid_result(call, r);
		hl__reply_free(r);
		return rc;
	}
	if (hl__reply_type(r) != HL_REPLY_ARRAY ||
	    hl__reply_len(r) != call->nargs) {
		hl__reply_free(r);
		return hl__fail(
		        HL_EPROTOCOL, "%s: get_all: an unexpected reply",
		        hl__grid_label(call->obj, label, sizeof(label)));
	}
	if (!call->out) {
		hl__reply_free(r);
		return HL_OK;
	}
	/* one allocation for the entries (not two an entry) */
	rc = hl__value_flat_pairs(call->out, call->args, r);
	hl__reply_free(r);
	return rc;
}

int hl__map_fast_remove(hl_gridcall *call)
{
	hl_reply *r = NULL;
	int rc;
	if (call->nargs == 0)
		return answer_empty(call, HL_VALUE_INT);
	if ((rc = run(call, "HDEL", &r)) != HL_OK)
		return rc;
	rc = hl__grid_result(call, r);
	hl__reply_free(r);
	return rc;
}

int hl__map_put_all(hl_gridcall *call)
{
	char label[120];
	hl_reply *r = NULL;
	int rc;
	if (call->nargs % 2)
		return hl__fail(HL_EINVAL,
		                "%s: put_all: %zu values: keys and values "
		                "alternate, so their count is even",
		                hl__grid_label(call->obj, label, sizeof(label)),
		                call->nargs);
	if (call->nargs == 0)
		return answer_empty(call, HL_VALUE_NIL);
	if ((rc = run(call, "HMSET", &r)) != HL_OK)
		return rc;
	rc = hl__grid_result(call, r);
	hl__reply_free(r);
	return rc;
}
