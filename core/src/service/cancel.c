/* Cancellation flags for blocking calls. */
#include "internal.h"

#include <stdlib.h>

struct hl_cancel {
	atomic_int triggered;
	pthread_mutex_t mu;
	hl_cancel_reg *regs; /* blocked calls to wake */
};

int hl_cancel_new(hl_cancel **out)
{
	hl_cancel *c;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	c = calloc(1, sizeof(*c));
	if (!c)
		return hl__fail(HL_ENOMEM, "out of memory");
	atomic_init(&c->triggered, 0);
	pthread_mutex_init(&c->mu, NULL);
	*out = c;
	return HL_OK;
}

void hl_cancel_trigger(hl_cancel *c)
{
	hl_cancel_reg *r;
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	atomic_store(&c->triggered, 1);
	/* Lock order: cancel, then the waiter's mutex. A waiter never takes
	 * the cancel's mutex while it holds its own. */
	for (r = c->regs; r; r = r->next) {
		pthread_mutex_lock(r->mu);
		pthread_cond_broadcast(r->cond);
		if (r->notify)
			hl__notify_set(r->notify);
		pthread_mutex_unlock(r->mu);
	}
	pthread_mutex_unlock(&c->mu);
}

void hl_cancel_reset(hl_cancel *c)
{
	if (c)
		atomic_store(&c->triggered, 0);
}

int hl_cancel_is_triggered(const hl_cancel *c)
{
	return c ? atomic_load(&((hl_cancel *)c)->triggered) : 0;
}

void hl_cancel_free(hl_cancel *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->mu);
	free(c);
}

void hl__cancel_register(hl_cancel *c, hl_cancel_reg *reg)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	reg->next = c->regs;
	c->regs = reg;
	pthread_mutex_unlock(&c->mu);
}

void hl__cancel_unregister(hl_cancel *c, hl_cancel_reg *reg)
{
	hl_cancel_reg **pp;
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	for (pp = &c->regs; *pp; pp = &(*pp)->next)
		if (*pp == reg) {
			*pp = reg->next;
			break;
		}
	pthread_mutex_unlock(&c->mu);
}
