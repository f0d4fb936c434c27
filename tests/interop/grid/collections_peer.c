/*
 * The hilock side of the collections interop (tests/interop/grid/run.sh,
 * CollectionsInterop.java), public API only: grid_peer.c's lines (call,
 * par, free ...; see there for ARG and RESULT) and three more:
 *
 *   multi spread|every[:START:STEP] THREADS ARITY KIND NAME OP ARG...
 *       The ARGs, ARITY at a time, are the calls. spread: THREADS
 *       threads share them (call g by thread g % THREADS), RESULT is
 *       [r0,r1,...] in the calls' order. every: each thread makes every
 *       call, in order (so the threads race on each), RESULT is
 *       [[r0 of thread 0,r0 of thread 1,...],[r1...],...]. A failed
 *       call's r is E:<status name>. With START:STEP, call g waits
 *       until the wall clock (CLOCK_REALTIME, ms) reads START + g * STEP,
 *       so that another process pacing its calls alike races on each.
 *   pc PRODUCERS CONSUMERS IDLE_MS PUSHOPS POPOPS KIND NAME ARG...
 *       At once: PRODUCERS threads share the ARGs (one value a call,
 *       value g by thread g % PRODUCERS, PUSHOPS a comma list used by
 *       thread index), and CONSUMERS threads call POPOPS (a comma list,
 *       by thread index) until the producers are done and nothing came
 *       for IDLE_MS (or 120 s passed). RESULT is "FAILS [v,v,...]": the
 *       failed calls and every value the consumers took.
 *   iter KIND NAME OP COUNT
 *       OP(cursor, COUNT) from cursor "0" while the next cursor is not
 *       "0" (a page result [next, items]): RESULT is "PAGES [items...]",
 *       the pages' items in order.
 *   ranges KIND NAME OP PAGE
 *       OP(start, start + PAGE - 1) from start 0 until a page has fewer
 *       than PAGE items (a list's ranges): RESULT as iter's.
 */
#define MAXTOK         65536
#define GRID_PEER_MORE more_line
#include "grid_peer.c"

#include <unistd.h>

static int split_ops(char *s, int kind, int *ops, int max, int *n)
{
	char *save = NULL, *t;
	*n = 0;
	for (t = strtok_r(s, ",", &save); t && *n < max;
	     t = strtok_r(NULL, ",", &save)) {
		if ((ops[*n] = op_of(kind, t)) < 0)
			return 0;
		(*n)++;
	}
	return *n > 0;
}

/* ---- multi ---- */

static void print_result(const hl_value *v, int rc)
{
	if (rc == HL_OK)
		print_value(v);
	else
		printf("E:%s", hl_status_name(rc));
}

struct multi {
	struct call *c;
	int every, threads, t;
	long long start, step;
	size_t arity, ncalls;
	hl_value **res;
	int *rcs;
	pthread_t th;
};

static void *multi_run(void *arg)
{
	struct multi *m = arg;
	size_t g;
	for (g = 0; g < m->ncalls; g++) {
		size_t at;
		if (m->every)
			at = g * (size_t)m->threads + (size_t)m->t;
		else if (g % (size_t)m->threads == (size_t)m->t)
			at = g;
		else
			continue;
		if (m->step > 0) {
			long long due = m->start + (long long)g * m->step, now;
			while ((now = now_ms()) < due) {
				struct timespec ts = {0, (long)(due - now) *
				                                 1000000L};
				nanosleep(&ts, NULL);
			}
		}
		m->rcs[at] =
		        hl_object_call(&m->res[at], m->c->o, m->c->op,
		                       &m->c->args[g * m->arity], m->arity);
	}
	return NULL;
}

static void multi_line(char **tok, int ntok)
{
	static struct call c;
	struct multi m[64];
	int every = strncmp(tok[1], "every", 5) == 0, n = atoi(tok[2]), i;
	long long start = 0, step = 0;
	char *pace = strchr(tok[1], ':');
	long arity = atol(tok[3]);
	size_t ncalls, total, g;
	hl_value **res;
	int *rcs;
	if (n < 1 || n > 64 || arity < 0 || arity > 16 ||
	    (!every && strncmp(tok[1], "spread", 6) != 0) ||
	    (pace && sscanf(pace, ":%lld:%lld", &start, &step) != 2) ||
	    parse_call(&c, tok + 4, ntok - 4) != 0 ||
	    (arity ? c.nargs % (size_t)arity : c.nargs)) {
		printf("err EINVAL bad multi line\n");
		free_call(&c);
		return;
	}
	ncalls = arity ? c.nargs / (size_t)arity : 1;
	total = every ? ncalls * (size_t)n : ncalls;
	res = calloc(total ? total : 1, sizeof(*res));
	rcs = calloc(total ? total : 1, sizeof(*rcs));
	for (i = 0; i < n; i++) {
		m[i].c = &c;
		m[i].every = every;
		m[i].start = start;
		m[i].step = step;
		m[i].threads = n;
		m[i].t = i;
		m[i].arity = (size_t)arity;
		m[i].ncalls = ncalls;
		m[i].res = res;
		m[i].rcs = rcs;
		pthread_create(&m[i].th, NULL, multi_run, &m[i]);
	}
	for (i = 0; i < n; i++)
		pthread_join(m[i].th, NULL);
	printf("ok [");
	for (g = 0; g < ncalls; g++) {
		if (g)
			printf(",");
		if (every) {
			printf("[");
			for (i = 0; i < n; i++) {
				if (i)
					printf(",");
				print_result(res[g * (size_t)n + (size_t)i],
				             rcs[g * (size_t)n + (size_t)i]);
			}
			printf("]");
		} else {
			print_result(res[g], rcs[g]);
		}
	}
	printf("]\n");
	for (g = 0; g < total; g++)
		hl_value_free(res[g]);
	free(res);
	free(rcs);
	free_call(&c);
}

/* ---- pc: producers and consumers at once ---- */

struct pc {
	struct call *c;
	int producer, t, nthreads, op;
	long idle_ms;
	long fails;
	hl_value **got;
	size_t ngot, cap;
	pthread_t th;
};

static int producers_left;
static pthread_mutex_t pc_mu = PTHREAD_MUTEX_INITIALIZER;

static long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *pc_run(void *arg)
{
	struct pc *p = arg;
	if (p->producer) {
		size_t g;
		for (g = (size_t)p->t; g < p->c->nargs;
		     g += (size_t)p->nthreads) {
			hl_value *v = NULL;
			if (hl_object_call(&v, p->c->o, p->op, &p->c->args[g],
			                   1) != HL_OK)
				p->fails++;
			hl_value_free(v);
		}
		pthread_mutex_lock(&pc_mu);
		producers_left--;
		pthread_mutex_unlock(&pc_mu);
	} else {
		long long start = mono_ms(), last = start;
		for (;;) {
			hl_value *v = NULL;
			int left;
			long long now;
			if (hl_object_call(&v, p->c->o, p->op, NULL, 0) !=
			    HL_OK) {
				p->fails++;
				hl_value_free(v);
				v = NULL;
			}
			now = mono_ms();
			if (hl_value_type(v) != HL_VALUE_NIL) {
				if (p->ngot == p->cap) {
					p->cap = p->cap ? 2 * p->cap : 256;
					p->got = realloc(
					        p->got,
					        p->cap * sizeof(*p->got));
				}
				p->got[p->ngot++] = v;
				last = now;
				continue;
			}
			hl_value_free(v); /* a nil value */
			pthread_mutex_lock(&pc_mu);
			left = producers_left;
			pthread_mutex_unlock(&pc_mu);
			if ((left == 0 && now - last > p->idle_ms) ||
			    now - start > 120000)
				break;
			usleep(500);
		}
	}
	return NULL;
}

static void pc_line(char **tok, int ntok)
{
	static struct call c;
	struct pc p[128];
	int np = ntok >= 8 ? atoi(tok[1]) : 0, nc, kind, i, npush, npop;
	int push[64], pop[64];
	long idle, fails = 0;
	size_t j, n = 0;
	nc = ntok >= 8 ? atoi(tok[2]) : 0;
	idle = ntok >= 8 ? atol(tok[3]) : 0;
	if (ntok < 8 || np < 1 || np > 64 || nc < 1 || nc > 64 ||
	    (kind = kind_of(tok[6])) < 0 ||
	    !split_ops(tok[4], kind, push, 64, &npush) ||
	    !split_ops(tok[5], kind, pop, 64, &npop)) {
		printf("err EINVAL bad pc line\n");
		return;
	}
	/* parse the values as the arguments of the first push op */
	tok[5] = tok[6];
	tok[6] = tok[7];
	tok[7] = (char *)hl_op_name(push[0]);
	if (parse_call(&c, tok + 5, ntok - 5) != 0) {
		printf("err EINVAL bad pc values\n");
		free_call(&c);
		return;
	}
	producers_left = np;
	memset(p, 0, sizeof(p));
	for (i = 0; i < np + nc; i++) {
		p[i].c = &c;
		p[i].producer = i < np;
		p[i].t = i < np ? i : i - np;
		p[i].nthreads = i < np ? np : nc;
		p[i].op = i < np ? push[i % npush] : pop[(i - np) % npop];
		p[i].idle_ms = idle;
		pthread_create(&p[i].th, NULL, pc_run, &p[i]);
	}
	for (i = 0; i < np + nc; i++) {
		pthread_join(p[i].th, NULL);
		fails += p[i].fails;
	}
	printf("ok %ld [", fails);
	for (i = np; i < np + nc; i++)
		for (j = 0; j < p[i].ngot; j++) {
			if (n++)
				printf(",");
			print_value(p[i].got[j]);
			hl_value_free(p[i].got[j]);
		}
	printf("]\n");
	for (i = np; i < np + nc; i++)
		free(p[i].got);
	free_call(&c);
}

/* ---- iter: every page of a page op ---- */

static void iter_line(char **tok, int ntok)
{
	int kind, op, rc = HL_OK;
	hl_object *o;
	const char *cursor = "0";
	size_t clen = 1, n = 0, npages = 0, cap = 0, k, j;
	long count = ntok == 5 ? atol(tok[4]) : 0;
	hl_value **pages = NULL;
	if (ntok != 5 || (kind = kind_of(tok[1])) < 0 ||
	    (op = op_of(kind, tok[3])) < 0 || !(o = get_obj(kind, tok[2]))) {
		printf("err EINVAL bad iter line\n");
		return;
	}
	for (;;) {
		hl_value *v = NULL;
		const hl_value *next;
		hl_arg a[2];
		memset(a, 0, sizeof(a));
		a[0].type = HL_ARG_BYTES;
		a[0].bytes = cursor;
		a[0].len = clen;
		a[1].type = HL_ARG_INT;
		a[1].i = count;
		if ((rc = hl_object_call(&v, o, op, a, 2)) != HL_OK)
			break;
		if (npages == cap) {
			cap = cap ? 2 * cap : 64;
			pages = realloc(pages, cap * sizeof(*pages));
		}
		pages[npages++] = v;
		next = hl_value_at(v, 0);
		if (hl_value_type(v) != HL_VALUE_ARRAY ||
		    hl_value_type(next) != HL_VALUE_BYTES) {
			rc = -1;
			break;
		}
		cursor = hl_value_bytes(next, &clen);
		if ((clen == 1 && cursor[0] == '0') || npages > 1000000)
			break;
	}
	if (rc == -1) {
		printf("err EPROTO not a page\n");
	} else if (rc != HL_OK) {
		err(rc);
	} else {
		printf("ok %zu [", npages);
		for (k = 0; k < npages; k++) {
			const hl_value *items = hl_value_at(pages[k], 1);
			for (j = 0; j < hl_value_len(items); j++) {
				if (n++)
					printf(",");
				print_value(hl_value_at(items, j));
			}
		}
		printf("]\n");
	}
	for (k = 0; k < npages; k++)
		hl_value_free(pages[k]);
	free(pages);
}

/* ---- ranges: a list read page by page ---- */

static void ranges_line(char **tok, int ntok)
{
	int kind, op, rc = HL_OK;
	hl_object *o;
	long page = ntok == 5 ? atol(tok[4]) : 0;
	size_t n = 0, npages = 0, cap = 0, k, j;
	hl_value **pages = NULL;
	if (ntok != 5 || page < 1 || (kind = kind_of(tok[1])) < 0 ||
	    (op = op_of(kind, tok[3])) < 0 || !(o = get_obj(kind, tok[2]))) {
		printf("err EINVAL bad ranges line\n");
		return;
	}
	for (;;) {
		hl_value *v = NULL;
		hl_arg a[2];
		memset(a, 0, sizeof(a));
		a[0].type = a[1].type = HL_ARG_INT;
		a[0].i = (int64_t)npages * page;
		a[1].i = a[0].i + page - 1;
		if ((rc = hl_object_call(&v, o, op, a, 2)) != HL_OK)
			break;
		if (npages == cap) {
			cap = cap ? 2 * cap : 64;
			pages = realloc(pages, cap * sizeof(*pages));
		}
		pages[npages++] = v;
		if (hl_value_len(v) < (size_t)page || npages > 1000000)
			break;
	}
	if (rc != HL_OK) {
		err(rc);
	} else {
		printf("ok %zu [", npages);
		for (k = 0; k < npages; k++)
			for (j = 0; j < hl_value_len(pages[k]); j++) {
				if (n++)
					printf(",");
				print_value(hl_value_at(pages[k], j));
			}
		printf("]\n");
	}
	for (k = 0; k < npages; k++)
		hl_value_free(pages[k]);
	free(pages);
}

static int more_line(char **tok, int ntok)
{
	if (strcmp(tok[0], "multi") == 0 && ntok >= 7)
		multi_line(tok, ntok);
	else if (strcmp(tok[0], "pc") == 0)
		pc_line(tok, ntok);
	else if (strcmp(tok[0], "iter") == 0)
		iter_line(tok, ntok);
	else if (strcmp(tok[0], "ranges") == 0)
		ranges_line(tok, ntok);
	else
		return 0;
	return 1;
}
