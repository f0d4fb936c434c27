package hilock.interop;

import static java.nio.charset.StandardCharsets.UTF_8;
import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.SECONDS;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.redisson.Redisson;
import org.redisson.api.RBucket;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.api.RTopic;
import org.redisson.client.codec.LongCodec;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.ClusterServersConfig;
import org.redisson.config.Config;
import org.redisson.config.ReadMode;
import org.redisson.config.ShardedSubscriptionMode;

/**
 * The Redisson side of `make interop`: hilock processes (the C peer,
 * tests/interop/peer.c, and the contend example) and Redisson's locks
 * (RLock here; the fair, read-write, spin and fenced locks in Kinds)
 * contend on the same lock names, on a throwaway redis-server (single),
 * then on a Sentinel deployment and on a Cluster (started by the
 * launcher tests/interop/topo-up.c, driven over its stdin).
 *
 * <pre>
 *   java -jar hilock-interop-redisson.jar run --peer PEER_BINARY
 *       --contend CONTEND_BINARY --topo-up LAUNCHER --work DIR
 *       [--port PORT] [--topologies single,sentinel,cluster] [--filter F]
 * </pre>
 *
 * One line per scenario ("PASS [topology] name: detail" or "FAIL ..."),
 * then "N passed, N failed" for all topologies together; exit status 1
 * if any failed.
 */
public final class Interop {
	/** Upper bound of any one scenario, on top of each wait's own bound. */
	static final long SCENARIO_TIMEOUT_MS = 120_000;
	/** "Promptly": a wake-up by pub/sub, far below any lease in play. */
	static final long PROMPT_MS = 2_000;
	/** The short watchdog timeout of scenarios c and d (both sides). */
	static final long SHORT_WATCHDOG_MS = 3_000;
	static final Pattern OWNER = Pattern.compile(
		"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:[0-9]+");

	/** The topology under test: "single", "sentinel" or "cluster". */
	static String topology;
	/** hilock's URL of the deployment under test. */
	static String url;
	static String peerPath;
	static String contendPath;
	static String topoUpPath;
	static Path workDir;
	/** The Sentinel or Cluster launcher of the topology under test. */
	static Launcher launcher;
	/** Two clients with Redisson's default 30 s watchdog (two UUIDs). */
	static RedissonClient rA, rB;
	/** A client whose watchdog timeout is SHORT_WATCHDOG_MS. */
	static RedissonClient rShort;
	/** A client that only inspects Redis (queues, hashes, TTLs), reading
	 *  from the masters (readMode MASTER), never taking a lock. */
	static RedissonClient rI;

	/** The Redisson version on the classpath (its jar's pom.properties,
	 *  kept by the shade plugin), e.g. "4.7.0"; "unknown" if absent. */
	static final String REDISSON_VERSION = redissonVersion();

	static String redissonVersion() {
		try (var in = Interop.class.getResourceAsStream("/META-INF/maven/org.redisson/redisson/pom.properties")) {
			if (in == null)
				return "unknown";
			java.util.Properties p = new java.util.Properties();
			p.load(in);
			return p.getProperty("version", "unknown");
		} catch (IOException e) {
			return "unknown";
		}
	}

	/** The Redisson on the classpath is major.minor or newer (an unknown
	 *  version counts as the oldest). */
	static boolean redissonAtLeast(int major, int minor) {
		Matcher m = Pattern.compile("^(\\d+)\\.(\\d+)").matcher(REDISSON_VERSION);
		if (!m.find())
			return false;
		int ma = Integer.parseInt(m.group(1)), mi = Integer.parseInt(m.group(2));
		return ma > major || (ma == major && mi >= minor);
	}

	static final class Fail extends RuntimeException {
		private static final long serialVersionUID = 1L;

		Fail(String message) {
			super(message);
		}
	}

	static void check(boolean ok, String format, Object... args) {
		if (!ok)
			throw new Fail(String.format(format, args));
	}

	static long msSince(long t0) {
		return (System.nanoTime() - t0) / 1_000_000;
	}

	static String hex(String s) {
		StringBuilder b = new StringBuilder();
		for (byte x : s.getBytes(UTF_8))
			b.append(String.format("%02x", x & 0xff));
		return b.toString();
	}

	/** Redisson's lock channel: prefixName("redisson_lock__channel", name). */
	static String channel(String name) {
		return name.contains("{") ? "redisson_lock__channel:" + name
			: "redisson_lock__channel:{" + name + "}";
	}

	/** A listener's view of the lock channel: sharded in a cluster, as
	 *  Redisson 4.3.1 publishes there on Redis 7 (ShardedSubscriptionMode
	 *  AUTO: SSUBSCRIBE, SPUBLISH, PUBSUB SHARDNUMSUB). */
	static RTopic lockTopic(RedissonClient rc, String name) {
		return topic(rc, channel(name));
	}

	/** Any channel of the lock family, as lockTopic. */
	static RTopic topic(RedissonClient rc, String channel) {
		return topology.equals("cluster") ? rc.getShardedTopic(channel, LongCodec.INSTANCE)
			: rc.getTopic(channel, LongCodec.INSTANCE);
	}

	/** The lock hash as Redis holds it (HGETALL), field -> value. */
	static Map<String, String> lockHash(String name) {
		return rA.<String, String>getMap(name, StringCodec.INSTANCE).readAllMap();
	}

	/** A child process driven line by line over its stdin/stdout. */
	static class Child {
		final Process proc;
		final PrintWriter in;
		final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
		final String what;

		Child(String what, ProcessBuilder pb) throws IOException {
			this.what = what;
			proc = pb.start();
			in = new PrintWriter(new OutputStreamWriter(proc.getOutputStream(), UTF_8), true);
			Thread reader = new Thread(() -> {
				try (BufferedReader r = new BufferedReader(
					     new InputStreamReader(proc.getInputStream(), UTF_8))) {
					String l;
					while ((l = r.readLine()) != null)
						lines.add(l);
				} catch (IOException e) {
					// the process went away; EOF below says so
				}
				lines.add("EOF");
			}, what + "-reader");
			reader.setDaemon(true);
			reader.start();
		}

		/** The next line, or null if none came within ms. */
		String poll(long ms) throws InterruptedException {
			return lines.poll(ms, MILLISECONDS);
		}

		String next(long ms) throws InterruptedException {
			String l = poll(ms);
			check(l != null, "%s: no reply within %d ms", what, ms);
			return l;
		}

		void send(String command) {
			in.println(command);
		}

		String call(String command, long ms) throws InterruptedException {
			send(command);
			return next(ms);
		}

		String call(String command) throws InterruptedException {
			return call(command, 10_000);
		}

		/** Run a command and return the number after key= in its "ok" reply. */
		long ask(String command, String key) throws InterruptedException {
			return value(call(command), key, what + " " + command);
		}

		static long value(String reply, String key, String command) {
			Matcher m = Pattern.compile("\\b" + key + "=(-?[0-9]+)").matcher(reply);
			check(reply.startsWith("ok ") && m.find(), "%s: %s", command, reply);
			return Long.parseLong(m.group(1));
		}
	}

	/** One hilock client in its own process (peer.c). */
	static final class Peer extends Child implements AutoCloseable {
		final String owner;

		Peer(String name, long watchdogMs) throws Exception {
			this(name, watchdogMs, "reentrant");
		}

		/** A peer whose first handle is of the given kind (peer.c: "fair",
		 *  "read", "write", "spin", "fenced"; "use KIND" switches). */
		Peer(String name, long watchdogMs, String kind) throws Exception {
			super("hilock " + kind + " peer", peerBuilder(name, watchdogMs, kind));
			String ready = next(15_000);
			check(ready.startsWith("ready "), "hilock peer did not start: %s", ready);
			owner = ready.substring(6);
		}

		static ProcessBuilder peerBuilder(String name, long watchdogMs, String kind) {
			ProcessBuilder pb = new ProcessBuilder(peerPath, url, hex(name),
				Long.toString(watchdogMs), kind);
			pb.redirectError(ProcessBuilder.Redirect.INHERIT);
			return pb;
		}

		@Override
		public void close() throws Exception {
			try {
				send("quit");
			} catch (RuntimeException e) {
				// already gone
			}
			if (!proc.waitFor(10, SECONDS)) {
				proc.destroyForcibly();
				proc.waitFor(5, SECONDS);
			}
		}
	}

	/* ------------------------------------------------------------------
	 * a. Mutual exclusion: hilock processes and Redisson threads increment
	 *    one counter with plain GET/SET under the same lock.
	 * ------------------------------------------------------------------ */
	static String mutualExclusion() throws Exception {
		final String name = "interop:a:lock", counter = "interop:a:counter";
		final int cProcs = 2, cIters = 150, jThreads = 4, jIters = 100;
		final long expected = (long) cProcs * cIters + (long) jThreads * jIters;
		rA.getBucket(counter, StringCodec.INSTANCE).set("0");

		ProcessBuilder pb = new ProcessBuilder(contendPath, name, counter,
			Integer.toString(cIters), Integer.toString(cProcs));
		pb.environment().put("HILOCK_URL", url);
		pb.redirectOutput(ProcessBuilder.Redirect.DISCARD);
		pb.redirectError(ProcessBuilder.Redirect.INHERIT);

		CountDownLatch go = new CountDownLatch(1);
		ExecutorService pool = Executors.newFixedThreadPool(jThreads);
		List<Future<List<Long>>> workers = new ArrayList<>();
		for (int w = 0; w < jThreads; w++) {
			// Threads 0,1 share client A, threads 2,3 client B: two JVM-side
			// "processes" (UUIDs) plus two threads in each.
			final RedissonClient rc = w < 2 ? rA : rB;
			workers.add(pool.submit(() -> {
				RLock lock = rc.getLock(name);
				RBucket<String> bucket = rc.getBucket(counter, StringCodec.INSTANCE);
				List<Long> seen = new ArrayList<>();
				go.await();
				for (int i = 0; i < jIters; i++) {
					check(lock.tryLock(60, SECONDS), "Redisson tryLock(60 s) timed out");
					try {
						check(lock.isHeldByCurrentThread(), "Redisson holds but isHeldByCurrentThread false");
						long v = Long.parseLong(bucket.get());
						bucket.set(Long.toString(v + 1));
						seen.add(v);
					} finally {
						lock.unlock();
					}
				}
				return seen;
			}));
		}
		Process contend = pb.start();
		go.countDown();
		List<Long> seen = new ArrayList<>();
		try {
			for (Future<List<Long>> f : workers)
				seen.addAll(f.get(120, SECONDS));
			check(contend.waitFor(120, SECONDS), "hilock_contend did not finish in 120 s");
			check(contend.exitValue() == 0, "hilock_contend exited %d", contend.exitValue());
		} finally {
			pool.shutdownNow();
			if (contend.isAlive())
				contend.destroyForcibly();
		}
		long total = Long.parseLong(rA.<String>getBucket(counter, StringCodec.INSTANCE).get());
		check(total == expected, "counter %d, expected %d (%d hilock + %d Redisson increments)",
			total, expected, cProcs * cIters, jThreads * jIters);
		check(!rA.getLock(name).isLocked(), "lock still held at the end");
		// The counter proves exclusion only if the two sides really took turns:
		// count the places where hilock incremented between two Redisson holds.
		seen.sort(null);
		int handoffs = seen.get(0) > 0 ? 1 : 0;
		for (int i = 1; i < seen.size(); i++)
			if (seen.get(i) - seen.get(i - 1) > 1)
				handoffs++;
		if (seen.get(seen.size() - 1) + 1 < total)
			handoffs++;
		check(handoffs >= 2, "the sides did not interleave (%d hand-offs); the run proves nothing", handoffs);
		return String.format("counter %d exact (%d hilock procs x %d + %d Redisson threads x %d), "
			+ "%d hilock<->Redisson hand-offs", total, cProcs, cIters, jThreads, jIters, handoffs);
	}

	/* ------------------------------------------------------------------
	 * b. Wake-ups cross: each side's unlock message wakes the other's waiter.
	 * ------------------------------------------------------------------ */
	static String redissonWaitsForHilock(String name) throws Exception {
		ExecutorService one = Executors.newSingleThreadExecutor();
		// Listen on the channel as Redisson names it (client B, a bystander):
		// hilock's unlock must publish the payload 0 there.
		BlockingQueue<Long> heard = new LinkedBlockingQueue<>();
		RTopic topic = lockTopic(rB, name);
		int listener = topic.addListener(Long.class, (ch, msg) -> heard.add(msg));
		try (Peer p = new Peer(name, 30_000)) {
			check(p.ask("acquire 0 -1", "acquired") == 1, "hilock could not take the free lock");
			RLock lock = rA.getLock(name);
			long ttl = lock.remainTimeToLive();
			check(ttl > 20_000 && ttl <= 30_000, "Redisson remainTimeToLive %d, expected the 30 s watchdog lease", ttl);
			Future<Long> f = one.submit(() -> lock.tryLock(10, SECONDS) ? System.nanoTime() : -1L);
			try {
				f.get(800, MILLISECONDS);
				throw new Fail("Redisson tryLock returned while hilock holds the lock");
			} catch (TimeoutException expectedBlock) {
				// blocked, as it should be
			}
			long released = System.nanoTime();
			check(p.ask("release", "released") == 1, "hilock release did not free the lock");
			long at = f.get(15, SECONDS);
			check(at > 0, "Redisson tryLock(10 s) gave up after hilock released (unlock message not heard)");
			long ms = (at - released) / 1_000_000;
			check(ms < PROMPT_MS, "Redisson acquired %d ms after the hilock release (not woken by the message)", ms);
			check(p.ask("locked", "locked") == 1 && p.ask("held", "held") == 0,
				"hilock does not see the Redisson hold");
			Long msg = heard.poll(PROMPT_MS, MILLISECONDS);
			check(msg != null && msg == 0L, "on %s a listener heard %s after hilock's release, expected 0",
				channel(name), msg);
			one.submit(() -> {
				lock.unlock();
				return null;
			}).get(10, SECONDS);
			return "Redisson woke " + ms + " ms after hilock's release; heard \"0\" on " + channel(name) + onWhat(name);
		} finally {
			one.shutdownNow();
			topic.removeListener(listener);
		}
	}

	static String hilockWaitsForRedisson(String name) throws Exception {
		try (Peer p = new Peer(name, 30_000)) {
			RLock lock = rA.getLock(name);
			check(lock.tryLock(5, SECONDS), "Redisson could not take the free lock");
			RTopic topic = lockTopic(rB, name);
			long before = topic.countSubscribers();
			p.send("acquire 10000 -1");
			String early = p.poll(800);
			check(early == null, "hilock acquire returned while Redisson holds: %s", early);
			long during = topic.countSubscribers();
			check(during > before, "PUBSUB %s %s is %d while hilock waits (%d before): not subscribed there",
				topology.equals("cluster") ? "SHARDNUMSUB" : "NUMSUB", channel(name), during, before);
			long released = System.nanoTime();
			lock.unlock();
			String reply = p.next(15_000);
			long ms = msSince(released);
			check(Peer.value(reply, "acquired", "hilock acquire") == 1,
				"hilock wait (10 s) ran out after Redisson unlocked (message not heard): %s", reply);
			check(ms < PROMPT_MS, "hilock acquired %d ms after the Redisson unlock (not woken by the message)", ms);
			check(lock.isLocked() && !lock.isHeldByCurrentThread(), "Redisson does not see the hilock hold");
			check(p.ask("release", "released") == 1, "hilock release did not free the lock");
			check(!lock.isLocked(), "lock still held after hilock's release");
			return "hilock woke " + ms + " ms after Redisson's unlock" + onWhat(name);
		}
	}

	/* ------------------------------------------------------------------
	 * c. Ownership and reentrancy seen from the other side; forceUnlock.
	 * ------------------------------------------------------------------ */
	static String hilockHoldsRedissonLooks() throws Exception {
		final String name = "interop:c:hilock-holds";
		try (Peer p = new Peer(name, SHORT_WATCHDOG_MS)) {
			check(OWNER.matcher(p.owner).matches(), "hilock owner %s is not <uuid>:<decimal>", p.owner);
			check(p.ask("acquire 0 -1", "acquired") == 1, "hilock could not take the free lock");
			check(p.ask("acquire 0 -1", "acquired") == 1, "hilock reentrant acquire failed");
			check(p.ask("count", "count") == 2, "hilock hold count not 2");
			RLock lock = rA.getLock(name);
			check(lock.isLocked(), "Redisson isLocked() false while hilock holds");
			check(!lock.isHeldByCurrentThread(), "Redisson isHeldByCurrentThread() true while hilock holds");
			check(lock.getHoldCount() == 0, "Redisson getHoldCount() %d while hilock holds", lock.getHoldCount());
			Map<String, String> h = lockHash(name);
			check(h.equals(Map.of(p.owner, "2")), "lock hash %s, expected {%s=2}", h, p.owner);
			check(!lock.tryLock(0, SECONDS), "Redisson tryLock(0) succeeded while hilock holds");
			check(p.ask("release", "released") == 0, "hilock release of 1 of 2 holds freed the lock");
			h = lockHash(name);
			check(h.equals(Map.of(p.owner, "1")), "lock hash %s after one release, expected {%s=1}", h, p.owner);

			long t0 = System.nanoTime();
			check(lock.forceUnlock(), "Redisson forceUnlock() returned false on a hilock-held lock");
			String reply = p.call("waitlost 8000", 12_000);
			long ms = msSince(t0);
			check(Peer.value(reply, "lost", "hilock waitlost") == 1,
				"hilock watchdog did not report the hold lost within 8 s: %s", reply);
			check(ms <= SHORT_WATCHDOG_MS / 3 + 1500,
				"hilock found the loss after %d ms (watchdog %d ms renews every %d ms)",
				ms, SHORT_WATCHDOG_MS, SHORT_WATCHDOG_MS / 3);
			reply = p.call("release");
			check(reply.startsWith("err HL_ELOST"), "hilock release after forceUnlock: %s (want HL_ELOST)", reply);
			check(p.ask("locked", "locked") == 0, "lock still held after forceUnlock");
			return String.format("Redisson saw hold count 2 (field %s), forceUnlock -> hilock lost after %d ms",
				p.owner, ms);
		}
	}

	static String redissonHoldsHilockLooks() throws Exception {
		final String name = "interop:c:redisson-holds";
		try (Peer p = new Peer(name, SHORT_WATCHDOG_MS)) {
			RLock lock = rA.getLock(name);
			lock.lock();
			lock.lock();
			check(lock.getHoldCount() == 2, "Redisson getHoldCount() %d", lock.getHoldCount());
			Map<String, String> h = lockHash(name);
			check(h.size() == 1, "lock hash %s", h);
			String field = h.keySet().iterator().next();
			check(OWNER.matcher(field).matches() && h.get(field).equals("2")
				&& field.endsWith(":" + Thread.currentThread().getId()),
				"Redisson lock hash %s, expected {<uuid>:%d=2}", h, Thread.currentThread().getId());
			check(p.ask("locked", "locked") == 1, "hilock is_locked 0 while Redisson holds");
			check(p.ask("held", "held") == 0, "hilock is_held 1 while Redisson holds");
			check(p.ask("count", "count") == 0, "hilock hold_count not 0 while Redisson holds");
			long ttl = p.ask("ttl", "ttl");
			check(ttl > 0 && ttl <= 30_000, "hilock ttl %d of the Redisson hold", ttl);
			check(p.ask("acquire 0 -1", "acquired") == 0, "hilock acquired a Redisson-held lock");
			check(p.ask("acquire 300 -1", "acquired") == 0, "hilock acquired a Redisson-held lock (300 ms wait)");
			check(p.call("release").startsWith("err HL_ENOTHELD"), "hilock release of a Redisson hold was not HL_ENOTHELD");
			check(lock.getHoldCount() == 2, "hilock's failed release changed the Redisson hold");

			check(p.ask("force", "existed") == 1, "hilock force_unlock did not find the Redisson hold");
			check(!lock.isLocked() && !lock.isHeldByCurrentThread(), "Redisson still holds after hilock force_unlock");
			boolean threw = false;
			try {
				lock.unlock();
			} catch (IllegalMonitorStateException e) {
				threw = true;
			}
			check(threw, "Redisson unlock() after hilock force_unlock did not throw IllegalMonitorStateException");
			check(p.ask("acquire 0 -1", "acquired") == 1, "hilock could not take the force-unlocked lock");
			check(p.ask("release", "released") == 1, "hilock release");
			return "hilock saw Redisson's field " + field + "=2 as locked/not held; force_unlock freed it";
		}
	}

	/* ------------------------------------------------------------------
	 * d. Watchdog renewals keep the lock alive for the other side.
	 * ------------------------------------------------------------------ */
	static String hilockWatchdog() throws Exception {
		final String name = "interop:d:hilock-watchdog";
		final long holdMs = SHORT_WATCHDOG_MS * 3 + 1500;
		try (Peer p = new Peer(name, SHORT_WATCHDOG_MS)) {
			check(p.ask("acquire 0 -1", "acquired") == 1, "hilock could not take the free lock");
			RLock lock = rA.getLock(name);
			long t0 = System.nanoTime(), minTtl = Long.MAX_VALUE;
			int polls = 0;
			while (msSince(t0) < holdMs) {
				long ttl = lock.remainTimeToLive();
				check(ttl > 0 && ttl <= SHORT_WATCHDOG_MS,
					"Redisson remainTimeToLive %d after %d ms of hilock watchdog", ttl, msSince(t0));
				minTtl = Math.min(minTtl, ttl);
				check(!lock.tryLock(0, SECONDS), "Redisson tryLock(0) succeeded after %d ms", msSince(t0));
				polls++;
				Thread.sleep(200);
			}
			check(p.ask("held", "held") == 1 && p.ask("lost", "lost") == 0, "hilock no longer holds after the run");
			check(p.ask("release", "released") == 1, "hilock release");
			check(lock.tryLock(0, SECONDS), "Redisson tryLock(0) failed after hilock released");
			lock.unlock();
			return String.format("held %d ms (watchdog %d ms), %d Redisson polls, min remainTimeToLive %d ms",
				holdMs, SHORT_WATCHDOG_MS, polls, minTtl);
		}
	}

	static String redissonWatchdog() throws Exception {
		final String name = "interop:d:redisson-watchdog";
		final long holdMs = SHORT_WATCHDOG_MS * 3 + 1500;
		try (Peer p = new Peer(name, SHORT_WATCHDOG_MS)) {
			RLock lock = rShort.getLock(name);
			check(lock.tryLock(5, SECONDS), "Redisson could not take the free lock");
			long t0 = System.nanoTime(), minTtl = Long.MAX_VALUE;
			int polls = 0;
			while (msSince(t0) < holdMs) {
				long ttl = p.ask("ttl", "ttl");
				check(ttl > 0 && ttl <= SHORT_WATCHDOG_MS,
					"hilock ttl %d after %d ms of Redisson watchdog", ttl, msSince(t0));
				minTtl = Math.min(minTtl, ttl);
				check(p.ask("acquire 0 -1", "acquired") == 0, "hilock try-acquire succeeded after %d ms", msSince(t0));
				polls++;
				Thread.sleep(200);
			}
			check(lock.isHeldByCurrentThread(), "Redisson lost its hold");
			lock.unlock();
			check(p.ask("acquire 0 -1", "acquired") == 1, "hilock could not take the lock Redisson released");
			check(p.ask("release", "released") == 1, "hilock release");
			return String.format("held %d ms (Redisson watchdog %d ms), %d hilock polls, min ttl %d ms",
				holdMs, SHORT_WATCHDOG_MS, polls, minTtl);
		}
	}

	/* ------------------------------------------------------------------
	 * e. Fixed leases: the waiter on the other side sleeps for the holder's
	 *    remaining TTL (from the acquire script's reply) and gets the lock
	 *    when the lease runs out, with no unlock message at all.
	 * ------------------------------------------------------------------ */
	static final long LEASE_MS = 1_500;

	static String hilockLeaseExpires() throws Exception {
		final String name = "interop:e:hilock-lease";
		try (Peer p = new Peer(name, 30_000)) {
			long t0 = System.nanoTime();
			check(p.ask("acquire 0 " + LEASE_MS, "acquired") == 1, "hilock could not take the free lock");
			RLock lock = rA.getLock(name);
			long ttl = lock.remainTimeToLive();
			check(ttl > 0 && ttl <= LEASE_MS, "Redisson remainTimeToLive %d of a %d ms hilock lease", ttl, LEASE_MS);
			check(lock.tryLock(8, SECONDS), "Redisson tryLock(8 s) failed; the hilock lease was %d ms", LEASE_MS);
			long ms = msSince(t0);
			String late;
			try {
				check(ms >= LEASE_MS - 300 && ms < LEASE_MS + PROMPT_MS,
					"Redisson acquired %d ms after hilock took a %d ms lease", ms, LEASE_MS);
				Map<String, String> before = lockHash(name);
				// hilock.h: a release after the fixed lease ended is HL_ELOST
				// while the client still remembers the hold (as long again as
				// the lease), HL_ENOTHELD after that. Either way it must leave
				// Redisson's hold alone.
				late = p.call("release");
				check(late.startsWith("err HL_ELOST") || late.startsWith("err HL_ENOTHELD"),
					"hilock release after its lease ran out and Redisson took over: %s (want HL_ELOST or HL_ENOTHELD)",
					late);
				Map<String, String> after = lockHash(name);
				check(before.size() == 1 && !before.containsKey(p.owner) && after.equals(before),
					"lock hash %s before hilock's late release, %s after (want Redisson's field alone, unchanged)",
					before, after);
				check(lock.isHeldByCurrentThread() && lock.getHoldCount() == 1,
					"Redisson's hold changed after hilock's late release (hold count %d)", lock.getHoldCount());
			} finally {
				lock.unlock();
			}
			return String.format("Redisson took over %d ms after a %d ms hilock lease; hilock's late release: %s",
				ms, LEASE_MS, late.split(" ")[1]);
		}
	}

	static String redissonLeaseExpires() throws Exception {
		final String name = "interop:e:redisson-lease";
		try (Peer p = new Peer(name, 30_000)) {
			RLock lock = rA.getLock(name);
			long t0 = System.nanoTime();
			check(lock.tryLock(5_000, LEASE_MS, MILLISECONDS), "Redisson could not take the free lock");
			long ttl = p.ask("ttl", "ttl");
			check(ttl > 0 && ttl <= LEASE_MS, "hilock ttl %d of a %d ms Redisson lease", ttl, LEASE_MS);
			String reply = p.call("acquire 8000 -1", 12_000);
			long ms = msSince(t0);
			check(Peer.value(reply, "acquired", "hilock acquire") == 1,
				"hilock acquire (8 s) failed; the Redisson lease was %d ms: %s", LEASE_MS, reply);
			check(ms >= LEASE_MS - 300 && ms < LEASE_MS + PROMPT_MS,
				"hilock acquired %d ms after Redisson took a %d ms lease", ms, LEASE_MS);
			check(!lock.isHeldByCurrentThread(), "Redisson still thinks it holds");
			check(p.ask("release", "released") == 1, "hilock release");
			return String.format("hilock took over %d ms after a %d ms Redisson lease", ms, LEASE_MS);
		}
	}

	/* ------------------------------------------------------------------
	 * Sentinel and Cluster: the deployment comes from the launcher
	 * (topo-up.c, the C tests' harness_topo), driven over its stdin.
	 * ------------------------------------------------------------------ */
	static final class Launcher extends Child implements AutoCloseable {
		final Path log;
		final String up;
		final Map<String, String> fields = new LinkedHashMap<>();

		Launcher(String kind, Path log) throws Exception {
			super(kind + " launcher", builder(kind, log));
			this.log = log;
			String l = poll(90_000);
			check(l != null && l.startsWith("up " + kind + " "), "%s deployment did not start: %s%s", kind, l, logTail());
			up = l;
			String[] words = l.split(" ");
			for (int i = 3; i < words.length; i++) {
				int eq = words[i].indexOf('=');
				if (eq > 0)
					fields.put(words[i].substring(0, eq), words[i].substring(eq + 1));
			}
			url = words[2];
		}

		static ProcessBuilder builder(String kind, Path log) {
			ProcessBuilder pb = new ProcessBuilder(topoUpPath, kind);
			pb.redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()));
			return pb;
		}

		/** A command of the launcher; its "ok" reply, or a Fail. */
		String command(String line, long ms) throws InterruptedException {
			String r = call(line, ms);
			check(r.startsWith("ok "), "%s %s: %s%s", what, line, r, logTail());
			return r;
		}

		String logTail() {
			try {
				List<String> all = Files.readAllLines(log, UTF_8);
				return "\n--- last lines of " + log + " ---\n"
					+ String.join("\n", all.subList(Math.max(0, all.size() - 15), all.size()));
			} catch (IOException e) {
				return "";
			}
		}

		@Override
		public void close() throws Exception {
			try {
				in.println("quit");
				in.close();
			} catch (RuntimeException e) {
				// already gone
			}
			if (!proc.waitFor(30, SECONDS)) {
				proc.destroyForcibly();
				proc.waitFor(5, SECONDS);
			}
		}
	}

	/** Cluster: the port of the master serving the key's slot. */
	static int masterOf(String key) throws InterruptedException {
		return (int) Child.value(launcher.command("slot " + hex(key), 20_000), "port", "slot");
	}

	/** Cluster: from the candidates, names that land on every master
	 *  (the first candidates first); names returned in candidate order. */
	static List<String> spread(List<String> candidates) throws InterruptedException {
		List<String> masters = Arrays.asList(launcher.command("masters", 20_000)
			.replaceFirst("^ok masters=", "").split(","));
		Map<String, String> byMaster = new LinkedHashMap<>();
		for (String n : candidates) {
			String port = Integer.toString(masterOf(n));
			byMaster.putIfAbsent(port, n);
			if (byMaster.size() == masters.size())
				break;
		}
		check(byMaster.keySet().containsAll(masters), "candidate names cover masters %s of %s",
			byMaster.keySet(), masters);
		List<String> out = new ArrayList<>();
		for (String n : candidates)
			if (byMaster.containsValue(n))
				out.add(n);
		return out;
	}

	/** " (sharded pub/sub, master PORT)" in a cluster, "" elsewhere. */
	static String onWhat(String name) throws InterruptedException {
		return topology.equals("cluster") ? " (sharded pub/sub, master " + masterOf(name) + ")" : "";
	}

	/** Where a lock lives, for the scenario lines: "@master:PORT" in a
	 *  cluster, "" elsewhere. */
	static String where(String name) throws InterruptedException {
		return topology.equals("cluster") ? "@" + masterOf(name) : "";
	}

	/* The shared counter of the Sentinel and Cluster contention scenarios:
	 * a local file, so it survives a failover (a Redis counter could lose
	 * its last writes with the old master, which would prove nothing about
	 * the lock). A zero-padded decimal, read and written whole at offset
	 * 0, with a 1 ms sleep between the read and the write on both sides
	 * (peer.c's contend command): two holders at once lose increments. */
	static final int COUNTER_WIDTH = 20;

	static long counterRead(FileChannel ch) throws IOException {
		ByteBuffer b = ByteBuffer.allocate(COUNTER_WIDTH);
		while (b.hasRemaining())
			if (ch.read(b, b.position()) < 0)
				throw new IOException("short counter file");
		return Long.parseLong(new String(b.array(), UTF_8).trim());
	}

	static void counterWrite(FileChannel ch, long v) throws IOException {
		ByteBuffer b = ByteBuffer.wrap(String.format("%0" + COUNTER_WIDTH + "d", v).getBytes(UTF_8));
		while (b.hasRemaining())
			ch.write(b, b.position());
	}

	static Path counterFile(String tag) throws IOException {
		Path f = workDir.resolve("counter-" + topology + "-" + tag);
		try (FileChannel ch = FileChannel.open(f, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
			StandardOpenOption.TRUNCATE_EXISTING)) {
			counterWrite(ch, 0);
		}
		return f;
	}

	static long counterValue(Path f) throws IOException {
		try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ)) {
			return counterRead(ch);
		}
	}

	/** Hand-offs seen from the Redisson side: places where hilock
	 *  incremented between two Redisson holds (the counter values the
	 *  Redisson threads read, total the final counter). */
	static int handoffs(List<Long> seen, long total) {
		List<Long> v = new ArrayList<>(seen);
		v.sort(null);
		if (v.isEmpty())
			return 0;
		int h = v.get(0) > 0 ? 1 : 0;
		for (int i = 1; i < v.size(); i++)
			if (v.get(i) - v.get(i - 1) > 1)
				h++;
		if (v.get(v.size() - 1) + 1 < total)
			h++;
		return h;
	}

	/** What one Redisson contention thread went through. */
	static final class JavaWork {
		final List<Long> seen = new ArrayList<>();
		long retries, lost, leftovers, end;
		/** Unlocks answered by NoSyncedSlavesException (they ran), and
		 *  unlocks that failed in doubt and whose retry found the hold
		 *  gone (the first may have run). */
		long unsynced, doubtful;
		/** Each lost hold, each doubtful one: when, and what was said. */
		final StringBuilder why = new StringBuilder(), doubts = new StringBuilder();
	}

	/** Whether e or one of its causes is of the class named simple. */
	static boolean causedBy(Throwable e, String simple) {
		for (int i = 0; e != null && i < 10; e = e.getCause(), i++)
			if (e.getClass().getSimpleName().equals(simple))
				return true;
		return false;
	}

	/** One Redisson thread of the contention: iters times tryLock (20 s),
	 *  read the counter, sleep 1 ms, write it plus one, unlock. During a
	 *  failover a command may fail (RedisException): it is retried; an
	 *  unlock that finds the hold gone counts as lost; a hold left behind
	 *  by an acquire whose reply was lost is unlocked too (leftovers). */
	static JavaWork javaContend(RedissonClient rc, String name, Path file, int iters, CountDownLatch go)
		throws Exception {
		RLock lock = rc.getLock(name);
		JavaWork w = new JavaWork();
		go.await();
		long progress = System.nanoTime(), t0Round = progress;
		try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
			int done = 0;
			while (done < iters) {
				check(msSince(progress) < 60_000, "Redisson thread made no progress for 60 s on %s after %d of %d "
					+ "(retries %d)", name, done, iters, w.retries);
				boolean got;
				try {
					got = lock.tryLock(20, SECONDS);
				} catch (RuntimeException e) {
					w.retries++;
					continue;
				}
				if (!got) {
					w.retries++;
					continue;
				}
				long v = counterRead(ch);
				Thread.sleep(1);
				counterWrite(ch, v + 1);
				w.seen.add(v);
				done++;
				progress = System.nanoTime();
				String before = "";
				for (;;) {
					try {
						lock.unlock();
						break;
					} catch (IllegalMonitorStateException e) {
						String at = String.format("hold %d at %d ms", v, (System.nanoTime() - t0Round) / 1_000_000);
						if (before.isEmpty()) {
							w.lost++;
							w.why.append(" [").append(at).append(": the unlock found it gone]");
						} else {
							// The unlock before failed in doubt (no answer):
							// it may have run. Not counted as lost, reported.
							w.doubtful++;
							w.doubts.append(" [").append(at).append(": the unlock found it gone after").append(before)
								.append("]");
						}
						break;
					} catch (RuntimeException e) {
						check(msSince(progress) < 60_000, "Redisson unlock of %s failing for 60 s: %s", name, e);
						w.retries++;
						if (causedBy(e, "NoSyncedSlavesException")) {
							// Redisson 4.3.1 ran the unlock script, then its
							// WAIT for the replica count it had cached (the
							// old master's) came back short: the unlock did
							// happen (see README, "Redisson's stale replica
							// count"). The loop below unlocks again if not.
							w.unsynced++;
							break;
						}
						before += " " + e.getClass().getSimpleName() + ": " + e.getMessage() + ";";
					}
				}
				for (int k = 0; k < 5; k++) {
					try {
						if (!lock.isHeldByCurrentThread())
							break;
						lock.unlock();
						w.leftovers++;
					} catch (RuntimeException e) {
						w.retries++;
					}
				}
			}
		}
		w.end = System.nanoTime();
		return w;
	}

	/** The outcome of one contention round. */
	static final class Round {
		final StringBuilder per = new StringBuilder();
		/** Where holds were lost, for the failure message. */
		final StringBuilder lostWhere = new StringBuilder();
		long cRetries, cLost, cDoubtful, jRetries, jLost, jLeft, jUnsynced, jDoubtful;
		/** The doubtful Redisson unlocks, for the scenario line. */
		final StringBuilder doubts = new StringBuilder();
		/** The hilock releases in doubt (HL_EINDOUBT), likewise. */
		final StringBuilder cDoubts = new StringBuilder();
		String midway = "";

		String retries() {
			return String.format("retries: hilock %d, Redisson %d (+%d leftover holds unlocked)", cRetries, jRetries,
				jLeft) + (jUnsynced > 0 ? String.format("; Redisson unlocks answered NoSyncedSlavesException "
					+ "(stale replica count, they ran): %d", jUnsynced) : "")
				+ (jDoubtful > 0 ? String.format("; Redisson unlocks in doubt whose retry found the hold gone: "
					+ "%d:%s", jDoubtful, doubts) : "")
				+ (cDoubtful > 0 ? String.format("; hilock releases in doubt (HL_EINDOUBT: unconfirmed, ended by "
					+ "their lease): %d:%s", cDoubtful, cDoubts) : "");
		}
	}

	/**
	 * One contention round on several locks at once (one per master in a
	 * cluster): for each, 2 hilock peer processes x cIters and 4 Redisson
	 * threads (two per client, so two client UUIDs) x jIters increment the
	 * lock's own counter file. Every counter must be exact, every lock free
	 * at the end, no hold lost, and the two sides must have handed each
	 * lock to each other at least twice. midway, if not null, runs once the
	 * first lock's counter passed a quarter (the failover), while the round
	 * goes on; its result is in Round.midway.
	 */
	static Round contendRound(String tag, List<String> names, int cIters, int jIters, Callable<String> midway)
		throws Exception {
		final int cProcs = 2, jThreads = 4;
		final long perLock = (long) cProcs * cIters + (long) jThreads * jIters;
		Round round = new Round();
		List<Path> files = new ArrayList<>();
		List<Peer> peers = new ArrayList<>();
		ExecutorService pool = Executors.newFixedThreadPool(jThreads * names.size());
		CountDownLatch go = new CountDownLatch(1);
		List<List<Future<JavaWork>>> jWork = new ArrayList<>();
		List<String> wheres = new ArrayList<>();
		try {
			for (int l = 0; l < names.size(); l++) {
				String name = names.get(l);
				Path f = counterFile(tag + l);
				files.add(f);
				wheres.add(name + where(name));
				for (int i = 0; i < cProcs; i++)
					peers.add(new Peer(name, 30_000));
				List<Future<JavaWork>> ws = new ArrayList<>();
				for (int t = 0; t < jThreads; t++) {
					RedissonClient rc = t < 2 ? rA : rB;
					ws.add(pool.submit(() -> javaContend(rc, name, f, jIters, go)));
				}
				jWork.add(ws);
			}
			long t0 = System.nanoTime();
			for (int i = 0; i < peers.size(); i++)
				peers.get(i).send("contend " + cIters + " " + files.get(i / cProcs));
			go.countDown();

			if (midway != null) {
				long quarter = perLock / 4;
				while (counterValue(files.get(0)) < quarter) {
					check(msSince(t0) < 60_000, "the contention did not reach %d increments in 60 s", quarter);
					Thread.sleep(5);
				}
				long before = counterValue(files.get(0)), at = msSince(t0);
				round.midway = midway.call() + String.format(" (started %d ms into the round; counter %d of %d then, %d once done)",
					at, before, perLock, counterValue(files.get(0)));
			}

			long[] cEnd = new long[names.size()], jEnd = new long[names.size()];
			for (int i = 0; i < peers.size(); i++) {
				String r = peers.get(i).next(110_000);
				check(r.startsWith("ok done="), "hilock peer %d on %s: %s", i, names.get(i / cProcs), r);
				round.cRetries += Child.value(r, "retries", "contend");
				long doubtful = Child.value(r, "indoubt", "contend");
				round.cDoubtful += doubtful;
				if (doubtful > 0)
					round.cDoubts.append(String.format(" hilock peer %d on %s:%s;", i, wheres.get(i / cProcs),
						r.substring(Math.max(0, r.indexOf(" indoubtwhy=")))));
				long lost = Child.value(r, "lost", "contend");
				round.cLost += lost;
				if (lost > 0)
					round.lostWhere.append(String.format(" hilock peer %d on %s: %s;", i,
						wheres.get(i / cProcs), r));
				cEnd[i / cProcs] = Math.max(cEnd[i / cProcs], Child.value(r, "ms", "contend"));
			}
			for (int l = 0; l < names.size(); l++) {
				List<Long> seen = new ArrayList<>();
				for (Future<JavaWork> fw : jWork.get(l)) {
					JavaWork w = fw.get(Math.max(1, 110_000 - msSince(t0)), MILLISECONDS);
					seen.addAll(w.seen);
					round.jRetries += w.retries;
					round.jLost += w.lost;
					if (w.lost > 0)
						round.lostWhere.append(String.format(" a Redisson thread on %s: %d%s;", wheres.get(l),
							w.lost, w.why));
					round.jLeft += w.leftovers;
					round.jUnsynced += w.unsynced;
					round.jDoubtful += w.doubtful;
					if (w.doubtful > 0)
						round.doubts.append(String.format(" on %s%s;", wheres.get(l), w.doubts));
					jEnd[l] = Math.max(jEnd[l], (w.end - t0) / 1_000_000);
				}
				String ends = String.format("hilock procs done after %d ms, Redisson threads after %d ms", cEnd[l],
					jEnd[l]);
				long total = counterValue(files.get(l));
				check(total == perLock, "%s: counter %d, expected %d (%d hilock + %d Redisson increments; %s)%s",
					wheres.get(l), total, perLock, cProcs * cIters, jThreads * jIters, ends,
					midway != null ? "; " + round.midway : "");
				check(!rA.getLock(names.get(l)).isLocked(), "%s still locked at the end", names.get(l));
				int h = handoffs(seen, total);
				check(h >= 2, "%s: the sides did not interleave (%d hand-offs; %s); the run proves nothing",
					wheres.get(l), h, ends);
				round.per.append(round.per.length() > 0 ? ", " : "").append(wheres.get(l)).append(": ").append(total)
					.append(" exact, ").append(h).append(" hand-offs");
			}
			check(round.cLost == 0 && round.jLost == 0, "%sholds lost: hilock %d, Redisson %d:%s%s",
				tag.startsWith("f") ? "round " + tag + " " : "", round.cLost, round.jLost, round.lostWhere,
				midway != null ? " " + round.midway : "");
			round.per.append(String.format(" (%d hilock procs x %d + %d Redisson threads x %d per lock)", cProcs,
				cIters, jThreads, jIters));
			return round;
		} finally {
			go.countDown();
			pool.shutdownNow();
			for (Peer p : peers)
				try {
					p.close();
				} catch (Exception e) {
					// best effort
				}
		}
	}

	/** a (Sentinel, Cluster): one contention round. */
	static String contention(List<String> names) throws Exception {
		Round r = contendRound("a", names, 100, 50, null);
		return r.per + (r.cRetries + r.cDoubtful + r.jRetries + r.jLeft + r.jUnsynced + r.jDoubtful > 0
			? "; " + r.retries() : "");
	}

	/** The port of the master Redisson's connection manager uses now
	 *  (sentinel), or whether it counts port among its masters and not
	 *  old (cluster). */
	static boolean redissonSees(RedissonClient rc, int port, int old) {
		if (topology.equals("sentinel"))
			return rc.getRedisNodes(org.redisson.api.redisnode.RedisNodes.SENTINEL_MASTER_SLAVE).getMaster().getAddr()
				.getPort() == port;
		boolean now = false;
		for (var m : rc.getRedisNodes(org.redisson.api.redisnode.RedisNodes.CLUSTER).getMasters()) {
			int p = m.getAddr().getPort();
			if (p == old)
				return false;
			now |= p == port;
		}
		return now;
	}

	/**
	 * f: a failover in the middle of a contention round on the locks (kill
	 * -9 of the master under Sentinel; CLUSTER FAILOVER on the replica, or
	 * kill -9 of the master, of the first lock's master in a cluster): the
	 * round goes on, every counter exact, no hold lost. Afterwards, once
	 * Redisson's connection manager knows the new master (bounded; how long
	 * it took is reported), both sides still exclude each other: a second
	 * round with hand-offs, and prompt wake-ups both ways on the first lock.
	 */
	static String failoverDuringContention(List<String> names, String mode) throws Exception {
		int[] ports = new int[2];
		// When Redisson's two default clients list the new master, polled
		// from the moment the launcher saw the failover done.
		CompletableFuture<Long> seen = new CompletableFuture<>();
		Callable<String> failover = () -> {
			String reply, what;
			long tf = System.nanoTime();
			if (topology.equals("sentinel")) {
				reply = launcher.command("kill-master", 60_000);
				what = "kill -9 of the master";
			} else {
				int port = masterOf(names.get(0));
				reply = launcher.command((mode.equals("kill") ? "kill-master " : "failover ") + port, 60_000);
				what = (mode.equals("kill") ? "kill -9 of master " : "CLUSTER FAILOVER of master ") + port;
			}
			long at = System.nanoTime();
			ports[0] = (int) Child.value(reply, "old", "failover");
			ports[1] = (int) Child.value(reply, "new", "failover");
			Thread poll = new Thread(() -> {
				try {
					while (msSince(at) < 30_000) {
						if (redissonSees(rA, ports[1], ports[0]) && redissonSees(rB, ports[1], ports[0])) {
							seen.complete(msSince(at));
							return;
						}
						Thread.sleep(20);
					}
					seen.complete(-1L);
				} catch (Throwable x) {
					seen.completeExceptionally(x);
				}
			}, "redisson-sees");
			poll.setDaemon(true);
			poll.start();
			return String.format("%s: new master %d after %d ms", what, ports[1], msSince(tf));
		};
		Round r1 = contendRound("f1-", names, 200, 100, failover);
		long waited = seen.get(40, SECONDS);
		check(waited >= 0, "Redisson does not list the new master %d 30 s after the failover", ports[1]);
		Round r2 = contendRound("f2-", names, 50, 25, null);
		String wake1 = redissonWaitsForHilock(names.get(0)), wake2 = hilockWaitsForRedisson(names.get(0));
		return String.format("during: %s; %s; %s. Redisson listed the new master %d ms after the launcher saw it. "
			+ "After: %s; %s; %s",
			r1.midway, r1.per, r1.retries(), waited, r2.per, wake1, wake2);
	}

	/* ------------------------------------------------------------------ */

	static RedissonClient client(long watchdogMs) {
		return client(watchdogMs, false);
	}

	/** A client of the deployment under test; inspect: readMode MASTER. */
	static RedissonClient client(long watchdogMs, boolean inspect) {
		Config c = new Config();
		c.setLockWatchdogTimeout(watchdogMs);
		c.setThreads(4);
		c.setNettyThreads(4);
		switch (topology) {
		case "single":
			c.useSingleServer()
				.setAddress(url)
				.setConnectionMinimumIdleSize(2)
				.setConnectionPoolSize(8)
				.setSubscriptionConnectionMinimumIdleSize(1)
				.setSubscriptionConnectionPoolSize(4);
			break;
		case "sentinel": {
			// Redisson's defaults otherwise: readMode SLAVE, scanInterval
			// 1000, checkLockSyncedSlaves true (WAIT after lock scripts).
			var sc = c.useSentinelServers().setMasterName(launcher.fields.get("master"));
			for (String a : launcher.fields.get("sentinels").split(","))
				sc.addSentinelAddress("redis://" + a);
			sc.setMasterConnectionMinimumIdleSize(2)
				.setMasterConnectionPoolSize(16)
				.setSlaveConnectionMinimumIdleSize(1)
				.setSlaveConnectionPoolSize(8)
				.setSubscriptionConnectionMinimumIdleSize(1)
				.setSubscriptionConnectionPoolSize(4);
			if (inspect)
				sc.setReadMode(ReadMode.MASTER);
			break;
		}
		case "cluster": {
			// shardedSubscriptionMode left at AUTO: SSUBSCRIBE/SPUBLISH on
			// Redis 7 (checked in main).
			ClusterServersConfig cc = c.useClusterServers();
			for (String a : launcher.fields.get("nodes").split(","))
				cc.addNodeAddress("redis://" + a);
			cc.setMasterConnectionMinimumIdleSize(2)
				.setMasterConnectionPoolSize(16)
				.setSlaveConnectionMinimumIdleSize(1)
				.setSlaveConnectionPoolSize(8)
				.setSubscriptionConnectionMinimumIdleSize(1)
				.setSubscriptionConnectionPoolSize(4);
			if (inspect)
				cc.setReadMode(ReadMode.MASTER);
			break;
		}
		default:
			throw new IllegalArgumentException(topology);
		}
		return Redisson.create(c);
	}

	static void waitForPort(int port) throws Exception {
		long t0 = System.nanoTime();
		for (;;) {
			try (Socket s = new Socket()) {
				s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 500);
				return;
			} catch (IOException e) {
				if (msSince(t0) > 15_000)
					throw new Fail("redis-server is not listening on port " + port + " after 15 s");
				Thread.sleep(50);
			}
		}
	}

	interface Scenario {
		String run() throws Exception;
	}

	static final String[] B_NAMES = { "interop:b:plain", "{interop}:b:braces", "interop:b:\u00fcn\u00efc\u00f6de \u2713" };

	/** The scenarios of one topology, in order. */
	static Map<String, Scenario> scenarios() throws Exception {
		Map<String, Scenario> sc = new LinkedHashMap<>();
		List<String> bNames = new ArrayList<>(Arrays.asList(B_NAMES));
		List<String> aNames = List.of("interop:a:lock");
		if (topology.equals("single")) {
			sc.put("a mutual-exclusion", Interop::mutualExclusion);
		} else {
			if (topology.equals("cluster")) {
				// One lock per master (the first candidates that cover them),
				// and wake-ups on every master.
				List<String> cand = new ArrayList<>();
				for (int i = 0; i < 32; i++)
					cand.add("interop:a:lock" + i);
				aNames = spread(cand);
				List<String> bCand = new ArrayList<>(bNames);
				for (int i = 0; i < 32; i++)
					bCand.add("interop:b:n" + i);
				bNames = new ArrayList<>(bNames);
				for (String n : spread(bCand))
					if (!bNames.contains(n))
						bNames.add(n);
			}
			List<String> an = aNames;
			sc.put("a mutual-exclusion", () -> contention(an));
		}
		for (String n : bNames) {
			sc.put("b redisson-waits-for-hilock [" + n + "]", () -> redissonWaitsForHilock(n));
			sc.put("b hilock-waits-for-redisson [" + n + "]", () -> hilockWaitsForRedisson(n));
		}
		sc.put("c hilock-holds-redisson-looks", Interop::hilockHoldsRedissonLooks);
		sc.put("c redisson-holds-hilock-looks", Interop::redissonHoldsHilockLooks);
		sc.put("d hilock-watchdog", Interop::hilockWatchdog);
		sc.put("d redisson-watchdog", Interop::redissonWatchdog);
		sc.put("e hilock-lease-expires", Interop::hilockLeaseExpires);
		sc.put("e redisson-lease-expires", Interop::redissonLeaseExpires);
		Kinds.add(sc);
		if (!topology.equals("single")) {
			if (topology.equals("sentinel")) {
				sc.put("f kill-master-during-contention",
					() -> failoverDuringContention(List.of("interop:f:lock"), "kill"));
			} else {
				List<String> cand = new ArrayList<>(), cand2 = new ArrayList<>();
				for (int i = 0; i < 32; i++) {
					cand.add("interop:f:lock" + i);
					cand2.add("interop:g:lock" + i);
				}
				List<String> fNames = spread(cand);
				sc.put("f failover-during-contention", () -> failoverDuringContention(fNames, "failover"));
				// The names are spread again when the scenario starts: the
				// failover above moved a master.
				sc.put("f kill-master-during-contention", () -> failoverDuringContention(spread(cand2), "kill"));
			}
		}
		// The synchronizers (n, o, p): SyncScenarios.java.
		SyncScenarios.add(sc);
		return sc;
	}

	static int passed, failed;

	static void report(boolean ok, String name, String verdict, long t0) {
		System.out.printf("%s [%s] %s: %s (%.1f s)%n", ok ? "PASS" : "FAIL", topology, name, verdict,
			msSince(t0) / 1000.0);
		System.out.flush();
		if (ok)
			passed++;
		else
			failed++;
	}

	/** Run the scenarios of one topology (whose scenario name starts with
	 *  filter). */
	static void runTopology(String topo, int port, String filter) {
		topology = topo;
		long t0 = System.nanoTime();
		Map<String, Scenario> scenarios;
		try {
			if (topo.equals("single")) {
				check(port > 0, "no redis-server port given");
				url = "redis://127.0.0.1:" + port;
				waitForPort(port);
			} else {
				launcher = new Launcher(topo, workDir.resolve(topo + ".log"));
				System.out.printf("interop: %s up in %s ms: %s%n", topo, launcher.fields.get("ms"), url);
				System.out.flush();
			}
			rA = client(30_000);
			rB = client(30_000);
			rShort = client(SHORT_WATCHDOG_MS);
			rI = client(30_000, true);
			if (topo.equals("cluster")) {
				ShardedSubscriptionMode m = rA.getConfig().useClusterServers().getShardedSubscriptionMode();
				check(m == ShardedSubscriptionMode.AUTO, "Redisson shardedSubscriptionMode %s, expected AUTO", m);
			}
			// Warm up (connections, pub/sub, class loading) outside the timings.
			for (RedissonClient rc : List.of(rA, rB, rShort)) {
				RLock w = rc.getLock("interop:warmup");
				w.lock();
				w.unlock();
			}
			scenarios = scenarios();
		} catch (Throwable x) {
			report(false, "deployment", x instanceof Fail ? x.getMessage() : x.toString(), t0);
			shutdownTopology();
			return;
		}
		for (Map.Entry<String, Scenario> e : scenarios.entrySet()) {
			if (!filter.isEmpty() && !e.getKey().startsWith(filter))
				continue;
			long s0 = System.nanoTime();
			ExecutorService one = Executors.newSingleThreadExecutor();
			String verdict;
			boolean ok = false;
			try {
				Callable<String> task = () -> e.getValue().run();
				verdict = one.submit(task).get(SCENARIO_TIMEOUT_MS, MILLISECONDS);
				ok = true;
			} catch (ExecutionException x) {
				Throwable c = x.getCause();
				verdict = c instanceof Fail ? c.getMessage() : c.toString();
			} catch (TimeoutException x) {
				verdict = "did not finish within " + SCENARIO_TIMEOUT_MS + " ms";
			} catch (InterruptedException x) {
				verdict = "interrupted";
			} finally {
				one.shutdownNow();
			}
			report(ok, e.getKey(), verdict, s0);
		}
		shutdownTopology();
	}

	/** Netty logs through java.util.logging when a cluster client shuts
	 *  down while it reconnects; kept quiet (a strong reference). */
	static final java.util.logging.Logger NETTY_LOG = java.util.logging.Logger.getLogger("io.netty");

	static void shutdownTopology() {
		NETTY_LOG.setLevel(java.util.logging.Level.OFF);
		for (RedissonClient rc : Arrays.asList(rA, rB, rShort, rI))
			if (rc != null)
				try {
					rc.shutdown(0, 2, SECONDS);
				} catch (RuntimeException e) {
					// best effort
				}
		rA = rB = rShort = rI = null;
		if (launcher != null) {
			try {
				launcher.close();
			} catch (Exception e) {
				// best effort
			}
			launcher = null;
		}
	}

	public static void main(String[] args) throws Exception {
		Map<String, String> opt = new LinkedHashMap<>();
		for (int i = 1; i + 1 < args.length; i += 2)
			opt.put(args[i], args[i + 1]);
		if (args.length < 1 || !args[0].equals("run") || args.length % 2 != 1 || !opt.containsKey("--peer")
			|| !opt.containsKey("--contend") || !opt.containsKey("--work")) {
			System.err.println("usage: Interop run --peer PEER --contend CONTEND --work DIR [--topo-up LAUNCHER]"
				+ " [--port PORT] [--topologies single,sentinel,cluster] [--filter F]");
			System.exit(2);
		}
		peerPath = opt.get("--peer");
		contendPath = opt.get("--contend");
		topoUpPath = opt.getOrDefault("--topo-up", "");
		workDir = Path.of(opt.get("--work"));
		int port = Integer.parseInt(opt.getOrDefault("--port", "0"));
		String filter = opt.getOrDefault("--filter", "");
		System.out.println("interop: Redisson " + REDISSON_VERSION);
		for (String topo : opt.getOrDefault("--topologies", "single,sentinel,cluster").split(",")) {
			if (topo.isEmpty())
				continue;
			if (!List.of("single", "sentinel", "cluster").contains(topo)) {
				System.err.println("unknown topology " + topo);
				System.exit(2);
			}
			runTopology(topo, port, filter);
		}
		System.out.printf("%d passed, %d failed%n", passed, failed);
		System.out.flush();
		System.exit(failed == 0 && passed > 0 ? 0 : 1);
	}
}
