/*
 * The nodes a client sends to, for tools that visit each of them (the
 * hilock command's list: SCAN on every master): hl_client_masters() names
 * them, hl_client_command_node() runs a raw command on one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid/grid.h"

/* The masters as addresses (n of them in *out, malloc'd). */
static int masters_of(hl_client *c, hl_addr **out, int *n)
{
	int i;
	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&c->topo_mu);
	if (c->conf.url.topology == HL_TOPO_CLUSTER && c->ncnodes > 0) {
		*out = calloc((size_t)c->ncnodes, sizeof(**out));
		if (*out) {
			for (i = 0; i < c->ncnodes; i++)
				(*out)[i] = c->cnodes[i].addr;
			*n = c->ncnodes;
		}
	} else if ((*out = calloc(1, sizeof(**out))) != NULL) {
		(*out)[0] = c->master;
		*n = 1;
	}
	pthread_mutex_unlock(&c->topo_mu);
	return *out ? HL_OK : hl__fail(HL_ENOMEM, "out of memory");
}

int hl_client_masters(hl_value **out, hl_client *client)
{
	hl_addr *nodes = NULL;
	hl_value **items = NULL;
	int n = 0, i, rc;
	char a[300];
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	*out = NULL;
	if ((rc = hl__client_enter(client)) != HL_OK)
		return rc;
	if ((rc = masters_of(client, &nodes, &n)) == HL_OK &&
	    !(items = calloc((size_t)n, sizeof(*items))))
		rc = hl__fail(HL_ENOMEM, "out of memory");
	for (i = 0; rc == HL_OK && i < n; i++) {
		hl__addr_str(&nodes[i], a, sizeof(a));
		if (!(items[i] = hl__value_bytes(a, strlen(a))))
			rc = hl__fail(HL_ENOMEM, "out of memory");
	}
	if (rc == HL_OK && !(*out = hl__value_array_take(items, (size_t)n)))
		rc = hl__fail(HL_ENOMEM, "out of memory");
	if (rc != HL_OK && items)
		for (i = 0; i < n; i++)
			hl_value_free(items[i]);
	free(items);
	free(nodes);
	hl__client_leave(client);
	return rc;
}

int hl_client_command_node(hl_value **out, hl_client *client, const char *node,
                           int argc, const char *const *argv,
                           const size_t *lens, int idempotent)
{
	hl_addr *nodes = NULL, at;
	hl_reply *r = NULL;
	hl_bound b;
	enum hl_sent sent = HL_SENT_NOTHING;
	int n = 0, i, rc, found = 0, attempt;
	char a[300];
	if (out)
		*out = NULL;
	if (!node)
		return hl__fail(HL_EINVAL, "node is NULL");
	if ((rc = hl__raw_words(argc, argv, lens)) != HL_OK)
		return rc;
	if ((rc = hl__client_enter(client)) != HL_OK)
		return rc;
	if ((rc = masters_of(client, &nodes, &n)) != HL_OK) {
		hl__client_leave(client);
		return rc;
	}
	for (i = 0; i < n && !found; i++)
		if (strcmp(hl__addr_str(&nodes[i], a, sizeof(a)), node) == 0) {
			at = nodes[i];
			found = 1;
		}
	free(nodes);
	if (!found) {
		hl__client_leave(client);
		return hl__fail(HL_EINVAL,
		                "\"%.300s\" is not a master of this client "
		                "(hl_client_masters() names them)",
		                node);
	}
	/* On a pooled connection to the node; an idempotent command is
	 * sent once more after a broken one. */
	for (attempt = 0; attempt < 2; attempt++) {
		hl__bound_init(&b, client, -1, NULL, 0);
		rc = hl__command_on_node(client, &r, argc, (const char **)argv,
		                         lens, &sent, &b, &at);
		if (rc == HL_OK ||
		    (rc != HL_EIO && rc != HL_ECONNECT && rc != HL_ETIMEDOUT) ||
		    (!idempotent && sent == HL_SENT_MAYBE))
			break;
	}
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
