/*
 * The long and double adders (Redisson's RLongAdder and RDoubleAdder, its
 * sum protocol, GRID-PROTOCOL 2.5): local adds with no round trip, a sum
 * from any client counting every client's adds (several objects of one
 * name in a client answering once), reset, destroy, two processes, a
 * client that never answers or closes mid-sum, a sum nobody listens to, a
 * cluster, and bad input.
 */
#include "harness.h"
#include "harness_topo.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static hl_object *adder(hl_client *c, int kind, const char *name)
{
	hl_object *o = NULL;
	HT_OK(hl_object_new(&o, c, kind, name, strlen(name)));
	return o;
}

/* Keys left under {name}: (a sum's counter and semaphore must go). */
static long long keys_of(ht_redis *r, const char *name)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "KEYS {%s}:*", name);
	long long n =
	        rep->type == REDIS_REPLY_ARRAY ? (long long)rep->elements : -1;
	freeReplyObject(rep);
	return n;
}

static long long numsub(ht_redis *r, const char *name)
{
	char ch[128];
	snprintf(ch, sizeof ch, "{%s}:adder-topic", name);
	return ht_numsub(r, ch, strlen(ch));
}

static int two_permits(void *arg)
{
	return ht_get_int(ht_raw_of(arg), "{ad:l}:0123456789abcdef0123456789"
	                                  "abcdef:semaphore") >= 2;
}

/* Two clients, one of them with two objects of the name: a sum from
 * either counts every add, each client answers once; reset zeroes all. */
static void two_clients(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0), *b = ht_client(r, 0);
	hl_object *a1 = adder(a, HL_KIND_LONG_ADDER, "ad:l");
	hl_object *a2 = adder(a, HL_KIND_LONG_ADDER, "ad:l");
	hl_object *b1 = adder(b, HL_KIND_LONG_ADDER, "ad:l");
	hl_object *d1, *d2;
	long long cmds;
	int64_t s = 0;
	double ds = 0;
	int i;

	/* one subscription per client, confirmed when the object exists */
	HT_EQ(numsub(r, "ad:l"), 2);
	cmds = ht_total_commands(r);
	HT_OK(hl_long_adder_add(a1, 5));
	HT_OK(hl_long_adder_add(a2, 2));
	for (i = 0; i < 3; i++)
		HT_OK(hl_long_adder_increment(b1));
	HT_OK(hl_long_adder_decrement(b1));
	HT_OK(hl_long_adder_add(b1, -1000));
	HT_OK(hl_long_adder_add(b1, 1000));
	/* local: nothing reached Redis (the count includes the first INFO;
	 * six round trips would be six commands at least) */
	HT_RANGE(ht_total_commands(r) - cmds, 1, 2);
	HT_OK(hl_long_adder_sum(&s, a1, -1));
	HT_EQ(s, 9);
	HT_OK(hl_long_adder_sum(&s, b1, -1));
	HT_EQ(s, 9);
	/* the protocol by hand, as Redisson's sum: two receivers, each
	 * client answers once (a with 7 for both its objects, b with 2) */
	{
		redisContext *raw = ht_raw_of(r);
		redisReply *rep =
		        ht_raw(raw, "PUBLISH {ad:l}:adder-topic "
		                    "1:0123456789abcdef0123456789abcdef");
		HT_EQ(rep->integer, 2);
		freeReplyObject(rep);
		HT_CHECK(ht_wait_until(two_permits, r, 5000));
		usleep(200000); /* no third answer comes */
		HT_EQ(ht_get_int(raw, "{ad:l}:0123456789abcdef0123456789abcdef:"
		                      "semaphore"),
		      2);
		HT_EQ(ht_get_int(raw, "{ad:l}:0123456789abcdef0123456789abcdef:"
		                      "counter"),
		      9);
		freeReplyObject(ht_raw(raw,
		                       "DEL {ad:l}:0123456789abcdef0123456789"
		                       "abcdef:semaphore {ad:l}:0123456789"
		                       "abcdef0123456789abcdef:counter"));
	}
	/* a sum reads, it does not take: again the same */
	HT_OK(hl_long_adder_sum(&s, a2, 5000));
	HT_EQ(s, 9);
	/* no key is left behind: counters and semaphores went */
	HT_EQ(keys_of(r, "ad:l"), 0);
	/* reset from b: every client's local sums are zero */
	HT_OK(hl_long_adder_reset(b1, -1));
	HT_OK(hl_long_adder_sum(&s, a1, -1));
	HT_EQ(s, 0);
	HT_OK(hl_long_adder_add(a2, 4));
	HT_OK(hl_long_adder_sum(&s, b1, -1));
	HT_EQ(s, 4);
	HT_EQ(keys_of(r, "ad:l"), 0);
	/* an object destroyed no longer counts; the client still answers for
	 * its other object */
	HT_OK(hl_long_adder_destroy(a2));
	HT_RC(hl_long_adder_add(a2, 1), HL_EINVAL);
	HT_OK(hl_long_adder_add(a1, 10));
	HT_OK(hl_long_adder_sum(&s, b1, -1));
	HT_EQ(s, 10);
	hl_object_free(a2);
	hl_object_free(a1);
	hl_object_free(b1);

	/* the double adder: INCRBYFLOAT of the plain form */
	d1 = adder(a, HL_KIND_DOUBLE_ADDER, "ad:d");
	d2 = adder(b, HL_KIND_DOUBLE_ADDER, "ad:d");
	HT_OK(hl_double_adder_add(d1, 1.5));
	HT_OK(hl_double_adder_add(d2, 0.25));
	HT_OK(hl_double_adder_increment(d2));
	HT_OK(hl_double_adder_add(d1, 1e-7));
	HT_OK(hl_double_adder_sum(&ds, d2, -1));
	HT_CHECK(fabs(ds - 2.7500001) < 1e-12);
	HT_OK(hl_double_adder_reset(d1, -1));
	HT_OK(hl_double_adder_sum(&ds, d1, -1));
	HT_CHECK(ds == 0);
	HT_EQ(keys_of(r, "ad:d"), 0);
	hl_object_free(d1);
	hl_object_free(d2);
	hl_client_free(a);
	hl_client_free(b);
}

/* Another process adds; a sum here counts it, and once it is gone only
 * this process's adds remain. */
static void processes(void)
{
	ht_redis *r = ht_redis_default();
	int up[2], down[2];
	pid_t pid;
	char ch;
	hl_client *c;
	hl_object *o;
	int64_t s = 0;
	int status;

	HT_CHECK(pipe(up) == 0 && pipe(down) == 0);
	pid = fork();
	HT_CHECK(pid >= 0);
	if (pid == 0) {
		hl_client *pc = ht_client(r, 0);
		hl_object *po = NULL;
		if (hl_object_new(&po, pc, HL_KIND_LONG_ADDER, "ad:p", 4) !=
		            HL_OK ||
		    hl_long_adder_add(po, 100) != HL_OK)
			_exit(3);
		if (write(up[1], "x", 1) != 1)
			_exit(4);
		if (read(down[0], &ch, 1) != 1)
			_exit(5);
		/* it sums too: counting the parent's */
		if (hl_long_adder_sum(&s, po, -1) != HL_OK || s != 101)
			_exit(6);
		hl_object_free(po);
		hl_client_free(pc);
		_exit(0);
	}
	HT_CHECK(read(up[0], &ch, 1) == 1);
	c = ht_client(r, 0);
	o = adder(c, HL_KIND_LONG_ADDER, "ad:p");
	HT_OK(hl_long_adder_add(o, 1));
	HT_OK(hl_long_adder_sum(&s, o, -1));
	HT_EQ(s, 101);
	HT_CHECK(write(down[1], "x", 1) == 1);
	HT_EQ(waitpid(pid, &status, 0), pid);
	HT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	HT_OK(hl_long_adder_sum(&s, o, -1));
	HT_EQ(s, 1);
	hl_object_free(o);
	hl_client_free(c);
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
}

static int numsub_zero(void *arg)
{
	return numsub(ht_redis_default(), arg) == 0;
}

/* Nobody listens: the sum is 0 at once; destroy and free stop the
 * listening (the subscription goes, without lingering); a sum also runs
 * as a task (an object's copy), while a local add has no task form. */
static void no_listener(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *o = adder(c, HL_KIND_LONG_ADDER, "ad:none");
	hl_task *t = NULL;
	const hl_value *v = NULL;
	hl_arg a = {HL_ARG_INT, NULL, 0, 3, 0};
	int64_t s = -1, t0;
	int res = -1;

	HT_OK(hl_long_adder_add(o, 3));
	HT_EQ(numsub(r, "ad:none"), 1);
	HT_OK(hl_long_adder_destroy(o));
	HT_OK(hl_long_adder_destroy(o) == HL_EINVAL ? HL_OK : HL_EIO);
	HT_CHECK(ht_wait_until(numsub_zero, "ad:none", 5000));
	t0 = ht_now_ms();
	HT_OK(hl_long_adder_sum(&s, o, -1));
	HT_EQ(s, 0);
	HT_CHECK(ht_now_ms() - t0 < 1000 * ht_scale());
	/* the task form of a sum, and of an add (refused) */
	HT_OK(hl_object_call_start(&t, o, HL_OP_LONG_ADDER_SUM, NULL, 0));
	HT_OK(ht_task_result(t, &res, 5000));
	HT_OK(hl_task_value(&v, t));
	HT_EQ(hl_value_int(v), 0);
	hl_task_free(t);
	HT_OK(hl_object_call_start(&t, o, HL_OP_LONG_ADDER_ADD, &a, 1));
	HT_RC(ht_task_result(t, &res, 5000), HL_EINVAL);
	hl_task_free(t);
	hl_object_free(o);
	/* freeing does what destroy does */
	o = adder(c, HL_KIND_DOUBLE_ADDER, "ad:none2");
	HT_EQ(numsub(r, "ad:none2"), 1);
	hl_object_free(o);
	HT_CHECK(ht_wait_until(numsub_zero, "ad:none2", 5000));
	hl_client_free(c);
}

/* Sums as tasks: each holds an executor while it waits, and this
 * client's own answers need one too; several at once all finish. */
static void sum_tasks(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *o = adder(c, HL_KIND_LONG_ADDER, "ad:tasks");
	hl_arg to = {HL_ARG_INT, NULL, 0, 3000, 0};
	hl_task *t[4];
	int i, res;
	int64_t t0 = ht_now_ms();
	HT_OK(hl_long_adder_add(o, 42));
	for (i = 0; i < 4; i++)
		HT_OK(hl_object_call_start(&t[i], o, HL_OP_LONG_ADDER_SUM, &to,
		                           1));
	for (i = 0; i < 4; i++) {
		const hl_value *v = NULL;
		HT_OK(ht_task_result(t[i], &res, 10000));
		HT_OK(hl_task_value(&v, t[i]));
		HT_EQ(hl_value_int(v), 42);
		hl_task_free(t[i]);
	}
	ht_note("4 sum tasks in %lld ms", (long long)(ht_now_ms() - t0));
	HT_CHECK(ht_now_ms() - t0 < 2500);
	hl_object_free(o);
	hl_client_free(c);
}

typedef struct sum_arg {
	hl_object *o;
	int64_t timeout_ms;
	int rc;
	int64_t sum;
	int64_t took_ms;
} sum_arg;

static void *sum_main(void *p)
{
	sum_arg *x = p;
	int64_t t0 = ht_now_ms();
	x->rc = hl_long_adder_sum(&x->sum, x->o, x->timeout_ms);
	x->took_ms = ht_now_ms() - t0;
	return NULL;
}

/* A receiver that never answers (a process that died after the publish
 * counted it): the sum fails with a timeout within its bound, and leaves
 * no key. A client closing while a sum runs does not hang it either. */
static void dead_client(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *px = ht_proxy_start(r->port);
	hl_client *a = ht_client(r, 0), *b = ht_client_url(px->url, NULL);
	hl_object *o = adder(a, HL_KIND_LONG_ADDER, "ad:dead");
	hl_object *ob = adder(b, HL_KIND_LONG_ADDER, "ad:dead");
	redisContext *mute = ht_sub_new(r, HT_S("{ad:dead}:adder-topic"));
	sum_arg x;
	pthread_t th;
	int64_t s = 0, t0;
	char *msg;

	HT_OK(hl_long_adder_add(o, 7));
	HT_OK(hl_long_adder_add(ob, 4));
	t0 = ht_now_ms();
	HT_RC(hl_long_adder_sum(&s, o, 600), HL_ETIMEDOUT);
	HT_RANGE(ht_now_ms() - t0, 550, 600 + 1500 * ht_scale());
	ht_note("timeout: %s", hl_error_last());
	msg = ht_sub_next(mute, NULL, 0);
	HT_CHECK(msg[0] == '1' && msg[1] == ':' && strlen(msg) == 34);
	free(msg);
	HT_EQ(keys_of(r, "ad:dead"), 0);
	redisFree(mute);
	/* without it, all answer */
	HT_OK(hl_long_adder_sum(&s, o, -1));
	HT_EQ(s, 11);
	/* b (its answers slowed down) closes while a waits for them: the sum
	 * ends within its bound, counting b (b answers what it was asked
	 * before it goes) or timing out */
	ht_proxy_cmd(px, "delay 150");
	memset(&x, 0, sizeof x);
	x.o = o;
	x.timeout_ms = 2000;
	th = ht_thread_start(sum_main, &x);
	ht_wait_waiting(a, 1);
	hl_client_close(b);
	ht_thread_join(th, 10000);
	ht_note("sum while a client closed: rc %d, sum %lld, %lld ms", x.rc,
	        (long long)x.sum, (long long)x.took_ms);
	HT_CHECK((x.rc == HL_OK && x.sum == 11) || x.rc == HL_ETIMEDOUT);
	HT_CHECK(x.took_ms <= 2000 + 1500 * ht_scale());
	/* b is gone: its adds too */
	HT_OK(hl_long_adder_sum(&s, o, -1));
	HT_EQ(s, 7);
	hl_object_free(ob);
	hl_object_free(o);
	hl_client_free(b);
	hl_client_free(a);
}

static int one_permit(void *arg)
{
	(void)arg;
	return ht_get_int(ht_raw_of(ht_redis_default()),
	                  "{ad:gone}:00000000000000000000000000000001:"
	                  "semaphore") >= 1;
}

/* An adder destroyed while a sum that counted it is on its way still
 * answers it (with nothing added): its unsubscribe is slowed down by a
 * proxy, so Redis counts it as a receiver of a publish sent after the
 * destroy; the client gives the permit all the same. */
static void destroy_mid_sum(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *px = ht_proxy_start(r->port);
	hl_client *b = ht_client_url(px->url, NULL);
	hl_object *o = adder(b, HL_KIND_LONG_ADDER, "ad:gone");
	redisReply *rep;
	HT_OK(hl_long_adder_add(o, 5));
	ht_proxy_cmd(px, "delay 300");
	HT_OK(hl_long_adder_destroy(o));
	/* the UNSUBSCRIBE is still on its way: Redis counts b */
	rep = ht_raw(ht_raw_of(r), "PUBLISH {ad:gone}:adder-topic "
	                           "1:00000000000000000000000000000001");
	HT_EQ(rep->integer, 1);
	freeReplyObject(rep);
	HT_CHECK(ht_wait_until(one_permit, NULL, 10000));
	/* destroyed: its 5 no longer counts */
	HT_EQ(ht_exists(r, HT_S("{ad:gone}:00000000000000000000000000000001:"
	                        "counter")),
	      0);
	HT_CHECK(ht_wait_until(numsub_zero, "ad:gone", 10000));
	ht_del(r, HT_S("{ad:gone}:00000000000000000000000000000001:"
	               "semaphore"));
	hl_object_free(o);
	hl_client_free(b);
}

/* A sum whose PUBLISH reply is lost (the command lands, the reply comes
 * after the command timeout) is in doubt, never published twice (every
 * client would answer a second request). */
static void lost_reply(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *px = ht_proxy_start(r->port);
	hl_client_options opt;
	hl_client *a = ht_client(r, 0), *c;
	hl_object *oa = adder(a, HL_KIND_LONG_ADDER, "ad:doubt");
	hl_object *oc;
	redisContext *seen = ht_sub_new(r, HT_S("{ad:doubt}:adder-topic"));
	struct timeval tv = {0, 300000};
	redisReply *rep = NULL;
	char *msg;
	int64_t s = 0;
	HT_OK(hl_client_options_init(&opt, HL_CLIENT_OPTIONS_VERSION));
	opt.command_timeout_ms = 250;
	opt.retry_attempts = 20;
	opt.retry_delay_ms = 50;
	c = ht_client_url(px->url, &opt);
	oc = adder(c, HL_KIND_LONG_ADDER, "ad:doubt");
	HT_OK(hl_long_adder_add(oa, 5));
	HT_OK(hl_long_adder_add(oc, 1));
	ht_proxy_cmd(px, "delay 400");
	HT_RC(hl_long_adder_sum(&s, oc, 5000), HL_EINDOUBT);
	ht_note("%s", hl_error_last());
	/* the request went out once: one message, and no second one */
	msg = ht_sub_next(seen, NULL, 0);
	HT_CHECK(msg[0] == '1' && msg[1] == ':');
	free(msg);
	ht_sleep_ms(1000); /* a second copy would have landed */
	redisSetTimeout(seen, tv);
	HT_CHECK(redisGetReply(seen, (void **)&rep) != REDIS_OK);
	if (rep)
		freeReplyObject(rep);
	redisFree(seen);
	ht_proxy_cmd(px, "delay 0");
	HT_OK(hl_long_adder_sum(&s, oa, -1));
	HT_EQ(s, 6);
	hl_object_free(oc);
	hl_object_free(oa);
	hl_client_free(c);
	hl_client_free(a);
}

/* A cluster: the topic is subscribed where Redisson publishes (the name's
 * slot), names on every master. */
static void cluster(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *a = ht_client_url(cl->url, NULL);
	hl_client *b = ht_client_url(cl->url, NULL);
	char name[32];
	int i;
	for (i = 0; i < 6; i++) {
		hl_object *x, *y;
		int64_t s = 0;
		double d = 0;
		snprintf(name, sizeof name, "ad:cl:%d", i);
		x = adder(a, HL_KIND_LONG_ADDER, name);
		y = adder(b, HL_KIND_LONG_ADDER, name);
		HT_OK(hl_long_adder_add(x, i));
		HT_OK(hl_long_adder_add(y, 100));
		HT_OK(hl_long_adder_sum(&s, y, -1));
		HT_EQ(s, 100 + i);
		HT_OK(hl_long_adder_reset(x, -1));
		HT_OK(hl_long_adder_sum(&s, x, -1));
		HT_EQ(s, 0);
		hl_object_free(x);
		hl_object_free(y);
		snprintf(name, sizeof name, "{ad:cl}:%d", i);
		x = adder(a, HL_KIND_DOUBLE_ADDER, name);
		y = adder(b, HL_KIND_DOUBLE_ADDER, name);
		HT_OK(hl_double_adder_add(x, 0.5));
		HT_OK(hl_double_adder_add(y, i));
		HT_OK(hl_double_adder_sum(&d, x, -1));
		HT_CHECK(d == 0.5 + i);
		hl_object_free(x);
		hl_object_free(y);
	}
	hl_client_free(a);
	hl_client_free(b);
	ht_cluster_destroy(cl);
}

static int two_subscribed(void *arg)
{
	ht_node *m = ht_sentinel_master(arg);
	redisReply *rep = ht_node_cmd(m, "PUBSUB NUMSUB {ad:sent}:adder-topic");
	int ok = rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
	         rep->element[1]->integer == 2;
	freeReplyObject(rep);
	return ok;
}

/* Sentinel failover: the adders subscribe again on the new master (the
 * local sums stay), and sums from either client count both. */
static void sentinel_failover(void)
{
	ht_sentinel *st = ht_sentinel_start(NULL);
	hl_client_options o;
	char url[600];
	hl_client *a, *b;
	hl_object *x, *y;
	int64_t s = 0;
	int rc, i;
	ht_failover_options(&o, 3000);
	ht_sentinel_url(st, url, sizeof url);
	a = ht_client_url(url, &o);
	b = ht_client_url(url, &o);
	x = adder(a, HL_KIND_LONG_ADDER, "ad:sent");
	y = adder(b, HL_KIND_LONG_ADDER, "ad:sent");
	HT_OK(hl_long_adder_add(x, 2));
	HT_OK(hl_long_adder_add(y, 3));
	HT_OK(hl_long_adder_sum(&s, x, -1));
	HT_EQ(s, 5);
	ht_sentinel_failover(st);
	HT_CHECK(ht_wait_until(two_subscribed, st, 20000));
	/* the clients may still be learning the new master: a sum that
	 * fails for that is tried again; one that answers is exact */
	for (i = 0; i < 50; i++) {
		rc = hl_long_adder_sum(&s, y, 5000);
		if (rc == HL_OK)
			break;
		ht_note("sum during the failover: %s", hl_error_last());
		ht_sleep_ms(200);
	}
	HT_OK(rc);
	HT_EQ(s, 5);
	HT_OK(hl_long_adder_add(y, 1));
	HT_OK(hl_long_adder_sum(&s, x, -1));
	HT_EQ(s, 6);
	hl_object_free(x);
	hl_object_free(y);
	hl_client_free(a);
	hl_client_free(b);
	ht_sentinel_destroy(st);
}

/* Bad input: numbers, foreign messages on the topic, a closed client. */
static void bad_input(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *o = adder(c, HL_KIND_LONG_ADDER, "ad:bad");
	hl_object *d = adder(c, HL_KIND_DOUBLE_ADDER, "ad:badd");
	hl_object *x = NULL;
	hl_arg nan_arg = {HL_ARG_DOUBLE, NULL, 0, 0, NAN};
	hl_arg bytes_arg = {HL_ARG_BYTES, "1", 1, 0, 0};
	char big[600];
	int64_t s = 0;

	HT_RC(hl_object_call(NULL, d, HL_OP_DOUBLE_ADDER_ADD, &nan_arg, 1),
	      HL_EINVAL);
	HT_RC(hl_double_adder_add(d, INFINITY), HL_EINVAL);
	HT_RC(hl_object_call(NULL, o, HL_OP_LONG_ADDER_ADD, &bytes_arg, 1),
	      HL_EINVAL);
	HT_RC(hl_object_call(NULL, o, HL_OP_LONG_ADDER_ADD, NULL, 0),
	      HL_EINVAL);
	HT_RC(hl_long_adder_sum(&s, o, 0), HL_EINVAL);
	HT_RC(hl_long_adder_add(NULL, 1), HL_EINVAL);
	/* wrapping, as Java's long */
	HT_OK(hl_long_adder_add(o, INT64_MAX));
	HT_OK(hl_long_adder_add(o, 2));
	HT_OK(hl_long_adder_sum(&s, o, -1));
	HT_EQ(s, INT64_MIN + 1);
	/* foreign messages on the topic are ignored */
	memset(big, 'a', sizeof big - 1);
	big[0] = '1';
	big[1] = ':';
	big[sizeof big - 1] = '\0';
	freeReplyObject(ht_raw(ht_raw_of(r), "PUBLISH {ad:bad}:adder-topic %s",
	                       "hello"));
	freeReplyObject(
	        ht_raw(ht_raw_of(r), "PUBLISH {ad:bad}:adder-topic %s", big));
	freeReplyObject(ht_raw(ht_raw_of(r), "PUBLISH {ad:bad}:adder-topic %b",
	                       "1:\0x", (size_t)4));
	HT_OK(hl_long_adder_sum(&s, o, -1));
	HT_EQ(s, INT64_MIN + 1);
	/* a name with an unbalanced brace is fine on a single server */
	HT_OK(hl_object_new(&x, c, HL_KIND_LONG_ADDER, "a{b", 3));
	HT_OK(hl_long_adder_add(x, 1));
	HT_OK(hl_long_adder_sum(&s, x, -1));
	HT_EQ(s, 1);
	hl_object_free(x);
	/* a closed client */
	hl_client_close(c);
	HT_RC(hl_long_adder_add(o, 1), HL_ECLOSED);
	HT_RC(hl_long_adder_sum(&s, o, -1), HL_ECLOSED);
	HT_RC(hl_object_new(&x, c, HL_KIND_LONG_ADDER, "ad:bad", 6),
	      HL_ECLOSED);
	hl_object_free(o);
	hl_object_free(d);
	hl_client_free(c);
}

HT_MAIN(HT_CASE(two_clients), HT_CASE(processes), HT_CASE(no_listener),
        HT_CASE(sum_tasks), HT_CASE(dead_client), HT_CASE(destroy_mid_sum),
        HT_CASE(lost_reply), HT_CASE(sentinel_failover), HT_CASE(cluster),
        HT_CASE(bad_input))
