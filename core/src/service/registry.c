/*
 * The registry: state a kind keeps in a client per (kind, name), such as
 * an adder's local sums and its topic listener, shared by every object of
 * that kind and name the client has. Keyed by the kind (4 bytes) and the
 * name; each value comes with the kind's close and free callbacks. The
 * client struct needs no field of any kind's.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct reg_item {
	const hl_reg_ops *ops;
	void *value;
} reg_item;

/* The map key: kind (4 bytes, host order) then the name. */
static char *reg_key(int kind, const void *name, size_t len, size_t *out_len)
{
	char *k = malloc(4 + len);
	int32_t k32 = (int32_t)kind;
	if (!k)
		return NULL;
	memcpy(k, &k32, 4);
	memcpy(k + 4, name, len);
	*out_len = 4 + len;
	return k;
}

void hl__registry_init(hl_client *c)
{
	pthread_mutex_init(&c->reg_mu, NULL);
}

void hl__registry_lock(hl_client *c)
{
	pthread_mutex_lock(&c->reg_mu);
}

void hl__registry_unlock(hl_client *c)
{
	pthread_mutex_unlock(&c->reg_mu);
}

void *hl__registry_get(hl_client *c, int kind, const void *name, size_t len)
{
	size_t kl;
	char *k = reg_key(kind, name, len, &kl);
	reg_item *it;
	if (!k)
		return NULL;
	it = hl__map_get(&c->registry, k, kl);
	free(k);
	return it ? it->value : NULL;
}

int hl__registry_put(hl_client *c, int kind, const void *name, size_t len,
                     void *value, const hl_reg_ops *ops)
{
	size_t kl;
	char *k = reg_key(kind, name, len, &kl);
	reg_item *it = malloc(sizeof(*it));
	if (!k || !it || hl__map_put(&c->registry, k, kl, it) != 0) {
		free(k);
		free(it);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	it->ops = ops;
	it->value = value;
	free(k);
	return HL_OK;
}

void hl__registry_del(hl_client *c, int kind, const void *name, size_t len)
{
	size_t kl;
	char *k = reg_key(kind, name, len, &kl);
	if (!k)
		return;
	free(hl__map_del(&c->registry, k, kl));
	free(k);
}

void hl__registry_close_all(hl_client *c)
{
	size_t i;
	hl_map_entry *e;
	pthread_mutex_lock(&c->reg_mu);
	for (i = 0; i < c->registry.nbuckets; i++)
		for (e = c->registry.buckets[i]; e; e = e->next) {
			reg_item *it = e->value;
			if (it->ops->close)
				it->ops->close(it->value);
		}
	pthread_mutex_unlock(&c->reg_mu);
}

void hl__registry_free_all(hl_client *c)
{
	size_t i;
	hl_map_entry *e;
	for (i = 0; i < c->registry.nbuckets; i++)
		for (e = c->registry.buckets[i]; e; e = e->next) {
			reg_item *it = e->value;
			if (it->ops->free)
				it->ops->free(it->value);
			free(it);
		}
	hl__map_clear(&c->registry);
}
