/*
 * The hilock side of the data grid interop (tests/interop/grid/run.sh),
 * public API only. The Java driver (GridInterop.java) starts it as
 *
 *   grid_peer URL
 *
 * and sends it lines; each is answered with one line, "ok RESULT" or
 * "err CODE MESSAGE":
 *
 *   call KIND NAME OP ARG...         hl_object_call: RESULT is the value
 *   ttl KIND NAME                    hl_object_ttl: i:<ms>
 *   par THREADS COUNT KIND NAME OP ARG...
 *                                    THREADS threads each make the call
 *                                    COUNT times: RESULT = the failures
 *   rate NAME THREADS MS PAUSE_US    THREADS threads call the rate
 *                                    limiter's try_acquire(1, 0) for MS
 *                                    ms, pausing PAUSE_US µs after each
 *                                    try: RESULT = "<n> S:R S:R ..." with
 *                                    the wall-clock ms (CLOCK_REALTIME)
 *                                    before sending and after the reply
 *                                    of each of the n granted
 *   free KIND NAME                   free the object (adders: stop taking
 *                                    part in sums)
 *   pfa MS KIND NAME NAME...         hl_blocking_queue_poll_from_any on
 *                                    the first queue and the others, MS
 *                                    the timeout: RESULT is [b:NAME,b:ELEM]
 *                                    or nil
 *   pfa_start THREADS MS KIND NAME...
 *                                    THREADS threads repeat that call until
 *                                    pfa_join; answers ok nil at once
 *   pfa_join                         the threads end at their next nil (or
 *                                    failure): RESULT = "<failures> NAME:ELEM
 *                                    ..." (hex), every element they took
 *
 * KIND and OP are the names of docs/grid.md, NAME is hex. An ARG is i:N,
 * d:X, b:HEX (bytes, "b:" alone is empty) or n (left out). A RESULT value
 * is nil, i:N, d:X (%.17g), b:HEX or [v,v,...]. Objects are kept by kind
 * and name until freed, so an adder's local sum lives between lines.
 */
#define _GNU_SOURCE
#include <hilock.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef MAXTOK
#define MAXTOK 4096
#endif
#define MAXOBJ 256

static hl_client *client;
#ifdef GRID_PEER_MORE
/* more lines (collections_peer.c): 1 if tok[0] was one of them (answered) */
static int GRID_PEER_MORE(char **tok, int ntok);
#endif

struct obj {
	int kind;
	char *name;
	size_t len;
	hl_object *o;
};
static struct obj objs[MAXOBJ];
static size_t nobjs;
static pthread_mutex_t objs_mu = PTHREAD_MUTEX_INITIALIZER;

static int kind_of(const char *s)
{
	int k;
	for (k = 1; k < 64; k++) {
		const char *n = hl_kind_name(k);
		if (n && strcmp(n, s) == 0)
			return k;
	}
	return -1;
}

static int op_of(int kind, const char *s)
{
	int j;
	for (j = 0; j < 256; j++) {
		const char *n = hl_op_name((kind << 8) | j);
		if (n && strcmp(n, s) == 0)
			return (kind << 8) | j;
	}
	return -1;
}

static long unhex(char **out, const char *hex)
{
	size_t n = strlen(hex), i;
	char *b = malloc(n / 2 + 1);
	if (!b || n % 2)
		return free(b), -1;
	for (i = 0; i < n / 2; i++) {
		unsigned x;
		if (sscanf(hex + 2 * i, "%2x", &x) != 1)
			return free(b), -1;
		b[i] = (char)x;
	}
	b[n / 2] = 0;
	*out = b;
	return (long)(n / 2);
}

static hl_object *get_obj(int kind, const char *hexname)
{
	char *name;
	long len = unhex(&name, hexname);
	size_t i;
	hl_object *o = NULL;
	if (len <= 0)
		return NULL;
	pthread_mutex_lock(&objs_mu);
	for (i = 0; i < nobjs; i++)
		if (objs[i].kind == kind && objs[i].len == (size_t)len &&
		    memcmp(objs[i].name, name, (size_t)len) == 0) {
			o = objs[i].o;
			break;
		}
	if (!o && nobjs < MAXOBJ &&
	    hl_object_new(&o, client, kind, name, (size_t)len) == HL_OK) {
		objs[nobjs].kind = kind;
		objs[nobjs].name = name;
		objs[nobjs].len = (size_t)len;
		objs[nobjs++].o = o;
		name = NULL;
	}
	pthread_mutex_unlock(&objs_mu);
	free(name);
	return o;
}

static void free_obj(int kind, const char *hexname)
{
	char *name;
	long len = unhex(&name, hexname);
	size_t i;
	if (len <= 0)
		return;
	pthread_mutex_lock(&objs_mu);
	for (i = 0; i < nobjs; i++)
		if (objs[i].kind == kind && objs[i].len == (size_t)len &&
		    memcmp(objs[i].name, name, (size_t)len) == 0) {
			hl_object_free(objs[i].o);
			free(objs[i].name);
			objs[i] = objs[--nobjs];
			break;
		}
	pthread_mutex_unlock(&objs_mu);
	free(name);
}

/* A parsed call: its object, op and args (bytes owned here). */
struct call {
	hl_object *o;
	int op;
	hl_arg args[MAXTOK];
	size_t nargs;
};

static int parse_call(struct call *c, char **tok, int ntok)
{
	int kind, i;
	c->nargs = 0; /* free_call after a failed parse frees nothing twice */
	if (ntok < 3 || (kind = kind_of(tok[0])) < 0 ||
	    (c->op = op_of(kind, tok[2])) < 0 ||
	    !(c->o = get_obj(kind, tok[1])))
		return -1;
	for (i = 3; i < ntok; i++) {
		hl_arg *a = &c->args[c->nargs++];
		memset(a, 0, sizeof(*a));
		if (strncmp(tok[i], "i:", 2) == 0) {
			a->type = HL_ARG_INT;
			a->i = strtoll(tok[i] + 2, NULL, 10);
		} else if (strncmp(tok[i], "d:", 2) == 0) {
			a->type = HL_ARG_DOUBLE;
			a->d = strtod(tok[i] + 2, NULL);
		} else if (strncmp(tok[i], "b:", 2) == 0) {
			char *b;
			long n = unhex(&b, tok[i] + 2);
			if (n < 0)
				return -1;
			a->type = HL_ARG_BYTES;
			a->bytes = b;
			a->len = (size_t)n;
		} else if (strcmp(tok[i], "n") == 0) {
			a->type = HL_ARG_NONE;
		} else {
			return -1;
		}
	}
	return 0;
}

static void free_call(struct call *c)
{
	size_t i;
	for (i = 0; i < c->nargs; i++)
		if (c->args[i].type == HL_ARG_BYTES)
			free((void *)c->args[i].bytes);
}

static void print_value(const hl_value *v)
{
	size_t i, n;
	const char *b;
	switch (hl_value_type(v)) {
	case HL_VALUE_INT:
		printf("i:%lld", (long long)hl_value_int(v));
		break;
	case HL_VALUE_DOUBLE:
		printf("d:%.17g", hl_value_double(v));
		break;
	case HL_VALUE_BYTES:
		b = hl_value_bytes(v, &n);
		printf("b:");
		for (i = 0; i < n; i++)
			printf("%02x", (unsigned char)b[i]);
		break;
	case HL_VALUE_ARRAY:
		printf("[");
		for (i = 0; i < hl_value_len(v); i++) {
			if (i)
				printf(",");
			print_value(hl_value_at(v, i));
		}
		printf("]");
		break;
	default:
		printf("nil");
	}
}

static void err(int rc)
{
	printf("err %s %s\n", hl_status_name(rc), hl_error_last());
}

/* a call's answer line: "ok VALUE" or "err ..." (rc from a statement
 * of its own: arguments are evaluated in no set order) */
static void answer(int rc, const hl_value *v)
{
	if (rc != HL_OK) {
		err(rc);
		return;
	}
	printf("ok ");
	print_value(v);
	printf("\n");
}

struct par {
	struct call *c;
	long count;
	long fails;
	pthread_t t;
};

static void *par_run(void *arg)
{
	struct par *p = arg;
	long i;
	for (i = 0; i < p->count; i++) {
		hl_value *v = NULL;
		if (hl_object_call(&v, p->c->o, p->c->op, p->c->args,
		                   p->c->nargs) != HL_OK)
			p->fails++;
		hl_value_free(v);
	}
	return NULL;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct rate {
	hl_object *o;
	long long until;
	long pause_us;
	long long *log; /* pairs */
	size_t n, cap;
	long fails;
	pthread_t t;
};

static void *rate_run(void *arg)
{
	struct rate *r = arg;
	while (now_ms() < r->until) {
		int got = 0;
		long long s = now_ms(), e;
		int rc = hl_rate_limiter_try_acquire(&got, r->o, 1, 0);
		if (rc != HL_OK) {
			/* which error, for the report (the driver's stderr) */
			fprintf(stderr, "grid_peer: try_acquire: %s %s\n",
			        hl_status_name(rc), hl_error_last());
			r->fails++;
			continue;
		}
		e = now_ms();
		if (got && r->n + 2 <= r->cap) {
			r->log[r->n++] = s;
			r->log[r->n++] = e;
		}
		if (r->pause_us > 0) {
			struct timespec ts = {r->pause_us / 1000000,
			                      (r->pause_us % 1000000) * 1000};
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

/* poll_from_any over hex names (the first is the queue) of kind: 0 or
 * the call's status */
static int pfa_call(hl_value **v, int kind, char **names, int n, long long ms)
{
	char *others[64];
	size_t lens[64];
	int i, rc, k = 0;
	hl_object *q =
	        kind < 0 || n < 1 || n > 64 ? NULL : get_obj(kind, names[0]);
	if (!q)
		return HL_EINVAL;
	for (i = 1; i < n; i++) {
		long len = unhex(&others[k], names[i]);
		if (len < 0)
			break;
		lens[k++] = (size_t)len;
	}
	rc = i < n ? HL_EINVAL
	           : hl_blocking_queue_poll_from_any(
	                     v, q, (const char *const *)others, lens, (size_t)k,
	                     ms, NULL);
	while (k)
		free(others[--k]);
	return rc;
}

static void pfa_print(const hl_value *v, FILE *f)
{
	size_t i, j, n;
	for (j = 0; j < 2; j++) {
		const char *b = hl_value_bytes(hl_value_at(v, j), &n);
		for (i = 0; i < n; i++)
			fprintf(f, "%02x", (unsigned char)b[i]);
		fputc(j ? ' ' : ':', f);
	}
}

/* the pfa_start threads: their results go to one memory stream */
static struct {
	pthread_t t[64];
	int n, kind, nnames;
	char *names[64];
	long long ms;
	volatile int stop;
	long fails;
	char *buf;
	size_t len;
	FILE *f;
	pthread_mutex_t mu;
} pfa = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void *pfa_run(void *arg)
{
	(void)arg;
	for (;;) {
		hl_value *v = NULL;
		int rc = pfa_call(&v, pfa.kind, pfa.names, pfa.nnames, pfa.ms);
		int got = rc == HL_OK && hl_value_type(v) == HL_VALUE_ARRAY;
		pthread_mutex_lock(&pfa.mu);
		/* a failure only counted: stderr may be the driver's stdout */
		if (rc != HL_OK)
			pfa.fails++;
		else if (got)
			pfa_print(v, pfa.f);
		pthread_mutex_unlock(&pfa.mu);
		hl_value_free(v);
		if (!got && pfa.stop)
			break;
		if (rc != HL_OK) {
			struct timespec ts = {0, 50000000};
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

static void pfa_line(char **tok, int ntok)
{
	int i;
	if (strcmp(tok[0], "pfa") == 0) {
		hl_value *v = NULL;
		int rc = ntok < 4 ? HL_EINVAL
		                  : pfa_call(&v, kind_of(tok[2]), tok + 3,
		                             ntok - 3, atoll(tok[1]));
		answer(rc, v);
		hl_value_free(v);
	} else if (strcmp(tok[0], "pfa_start") == 0) {
		if (pfa.n || ntok < 5 || ntok - 4 > 64 || atoi(tok[1]) < 1 ||
		    atoi(tok[1]) > 64 || kind_of(tok[3]) < 0) {
			printf("err EINVAL bad pfa_start line\n");
			return;
		}
		pfa.kind = kind_of(tok[3]);
		pfa.ms = atoll(tok[2]);
		pfa.nnames = ntok - 4;
		for (i = 0; i < pfa.nnames; i++)
			pfa.names[i] = strdup(tok[4 + i]);
		pfa.stop = 0;
		pfa.fails = 0;
		pfa.f = open_memstream(&pfa.buf, &pfa.len);
		for (i = 0; i < atoi(tok[1]); i++)
			if (pthread_create(&pfa.t[pfa.n], NULL, pfa_run,
			                   NULL) == 0)
				pfa.n++;
		printf("ok nil\n");
	} else if (strcmp(tok[0], "pfa_join") == 0 && pfa.n) {
		pfa.stop = 1;
		while (pfa.n)
			pthread_join(pfa.t[--pfa.n], NULL);
		fclose(pfa.f);
		printf("ok %ld %s\n", pfa.fails, pfa.buf);
		free(pfa.buf);
		for (i = 0; i < pfa.nnames; i++)
			free(pfa.names[i]);
	} else {
		printf("err EINVAL unknown pfa line\n");
	}
}

int main(int argc, char **argv)
{
	static char line[1 << 20];
	static char *tok[MAXTOK];
	static struct call call;
	if (argc != 2)
		return fprintf(stderr, "usage: grid_peer URL\n"), 2;
	if (hl_client_new(&client, argv[1], NULL) != HL_OK) {
		fprintf(stderr, "grid_peer: connect: %s\n", hl_error_last());
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		int ntok = 0, rc;
		char *save = NULL, *t;
		for (t = strtok_r(line, " \r\n", &save); t && ntok < MAXTOK;
		     t = strtok_r(NULL, " \r\n", &save))
			tok[ntok++] = t;
		if (ntok == 0)
			continue;
		if (strcmp(tok[0], "quit") == 0)
			break;
		if (strcmp(tok[0], "call") == 0) {
			hl_value *v = NULL;
			if (parse_call(&call, tok + 1, ntok - 1) != 0) {
				printf("err EINVAL bad call line\n");
			} else {
				rc = hl_object_call(&v, call.o, call.op,
				                    call.args, call.nargs);
				answer(rc, v);
			}
			hl_value_free(v);
			free_call(&call);
		} else if (strcmp(tok[0], "ttl") == 0 && ntok == 3) {
			int64_t ms = 0;
			hl_object *o = get_obj(kind_of(tok[1]), tok[2]);
			if (!o)
				printf("err EINVAL bad object\n");
			else if ((rc = hl_object_ttl(&ms, o)) != HL_OK)
				err(rc);
			else
				printf("ok i:%lld\n", (long long)ms);
		} else if (strcmp(tok[0], "free") == 0 && ntok == 3) {
			free_obj(kind_of(tok[1]), tok[2]);
			printf("ok nil\n");
		} else if (strcmp(tok[0], "par") == 0 && ntok >= 6) {
			int n = atoi(tok[1]), i;
			long fails = 0;
			struct par p[64];
			if (n < 1 || n > 64 ||
			    parse_call(&call, tok + 3, ntok - 3) != 0) {
				printf("err EINVAL bad par line\n");
				continue;
			}
			for (i = 0; i < n; i++) {
				p[i].c = &call;
				p[i].count = atol(tok[2]);
				p[i].fails = 0;
				pthread_create(&p[i].t, NULL, par_run, &p[i]);
			}
			for (i = 0; i < n; i++) {
				pthread_join(p[i].t, NULL);
				fails += p[i].fails;
			}
			free_call(&call);
			printf("ok i:%ld\n", fails);
		} else if (strcmp(tok[0], "rate") == 0 && ntok == 5) {
			int n = atoi(tok[2]), i;
			size_t j;
			long fails = 0, total = 0;
			struct rate r[64];
			hl_object *o = get_obj(HL_KIND_RATE_LIMITER, tok[1]);
			long long until = now_ms() + atol(tok[3]);
			if (!o || n < 1 || n > 64) {
				printf("err EINVAL bad rate line\n");
				continue;
			}
			for (i = 0; i < n; i++) {
				r[i].o = o;
				r[i].until = until;
				r[i].pause_us = atol(tok[4]);
				r[i].n = 0;
				r[i].cap = 20000;
				r[i].fails = 0;
				r[i].log = malloc(sizeof(long long) * r[i].cap);
				pthread_create(&r[i].t, NULL, rate_run, &r[i]);
			}
			for (i = 0; i < n; i++) {
				pthread_join(r[i].t, NULL);
				fails += r[i].fails;
				total += (long)r[i].n / 2;
			}
			if (fails) {
				printf("err EIO %ld try_acquire calls failed\n",
				       fails);
			} else {
				printf("ok %ld", total);
				for (i = 0; i < n; i++)
					for (j = 0; j < r[i].n; j += 2)
						printf(" %lld:%lld",
						       r[i].log[j],
						       r[i].log[j + 1]);
				printf("\n");
			}
			for (i = 0; i < n; i++)
				free(r[i].log);
		} else if (strncmp(tok[0], "pfa", 3) == 0) {
			pfa_line(tok, ntok);
#ifdef GRID_PEER_MORE
		} else if (GRID_PEER_MORE(tok, ntok)) {
			/* answered */
#endif
		} else {
			printf("err EINVAL unknown line\n");
		}
		fflush(stdout);
	}
	while (nobjs)
		hl_object_free(objs[--nobjs].o), free(objs[nobjs].name);
	hl_client_free(client);
	return 0;
}
