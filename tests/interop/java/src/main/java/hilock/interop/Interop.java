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
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
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
import org.redisson.config.Config;

/**
 * The Redisson side of `make interop`: hilock processes (the C peer,
 * tests/interop/peer.c, and the contend example) and Redisson RLocks
 * contend on the same lock names of one throwaway redis-server.
 *
 * <pre>
 *   java -jar hilock-interop-redisson.jar run PORT PEER_BINARY CONTEND_BINARY [FILTER]
 * </pre>
 *
 * One line per scenario ("PASS name: detail" or "FAIL name: why"), then
 * "N passed, N failed"; exit status 1 if any failed.
 */
public final class Interop {
	/** Upper bound of any one scenario, on top of each wait's own bound. */
	static final long SCENARIO_TIMEOUT_MS = 90_000;
	/** "Promptly": a wake-up by pub/sub, far below any lease in play. */
	static final long PROMPT_MS = 2_000;
	/** The short watchdog timeout of scenarios c and d (both sides). */
	static final long SHORT_WATCHDOG_MS = 3_000;
	static final Pattern OWNER = Pattern.compile(
		"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:[0-9]+");

	static String url;
	static String peerPath;
	static String contendPath;
	/** Two clients with Redisson's default 30 s watchdog (two UUIDs). */
	static RedissonClient rA, rB;
	/** A client whose watchdog timeout is SHORT_WATCHDOG_MS. */
	static RedissonClient rShort;

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

	/** The lock hash as Redis holds it (HGETALL), field -> value. */
	static Map<String, String> lockHash(String name) {
		return rA.<String, String>getMap(name, StringCodec.INSTANCE).readAllMap();
	}

	/** One hilock client in its own process, driven over stdin/stdout. */
	static final class Peer implements AutoCloseable {
		final Process proc;
		final PrintWriter in;
		final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
		final String owner;

		Peer(String name, long watchdogMs) throws Exception {
			ProcessBuilder pb = new ProcessBuilder(peerPath, url, hex(name),
				Long.toString(watchdogMs));
			pb.redirectError(ProcessBuilder.Redirect.INHERIT);
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
			}, "peer-reader");
			reader.setDaemon(true);
			reader.start();
			String ready = next(15_000);
			check(ready.startsWith("ready "), "hilock peer did not start: %s", ready);
			owner = ready.substring(6);
		}

		/** The next line, or null if none came within ms. */
		String poll(long ms) throws InterruptedException {
			return lines.poll(ms, MILLISECONDS);
		}

		String next(long ms) throws InterruptedException {
			String l = poll(ms);
			check(l != null, "hilock peer: no reply within %d ms", ms);
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
			return value(call(command), key, command);
		}

		static long value(String reply, String key, String command) {
			Matcher m = Pattern.compile("\\b" + key + "=(-?[0-9]+)").matcher(reply);
			check(reply.startsWith("ok ") && m.find(), "hilock %s: %s", command, reply);
			return Long.parseLong(m.group(1));
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
		RTopic topic = rB.getTopic(channel(name), LongCodec.INSTANCE);
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
			return "Redisson woke " + ms + " ms after hilock's release; heard \"0\" on " + channel(name);
		} finally {
			one.shutdownNow();
			topic.removeListener(listener);
		}
	}

	static String hilockWaitsForRedisson(String name) throws Exception {
		try (Peer p = new Peer(name, 30_000)) {
			RLock lock = rA.getLock(name);
			check(lock.tryLock(5, SECONDS), "Redisson could not take the free lock");
			RTopic topic = rB.getTopic(channel(name), LongCodec.INSTANCE);
			long before = topic.countSubscribers();
			p.send("acquire 10000 -1");
			String early = p.poll(800);
			check(early == null, "hilock acquire returned while Redisson holds: %s", early);
			long during = topic.countSubscribers();
			check(during > before, "PUBSUB NUMSUB %s is %d while hilock waits (%d before): not subscribed there",
				channel(name), during, before);
			long released = System.nanoTime();
			lock.unlock();
			String reply = p.next(15_000);
			long ms = msSince(released);
			check(Peer.value(reply, "acquired", "acquire") == 1,
				"hilock wait (10 s) ran out after Redisson unlocked (message not heard): %s", reply);
			check(ms < PROMPT_MS, "hilock acquired %d ms after the Redisson unlock (not woken by the message)", ms);
			check(lock.isLocked() && !lock.isHeldByCurrentThread(), "Redisson does not see the hilock hold");
			check(p.ask("release", "released") == 1, "hilock release did not free the lock");
			check(!lock.isLocked(), "lock still held after hilock's release");
			return "hilock woke " + ms + " ms after Redisson's unlock";
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
			check(Peer.value(reply, "lost", "waitlost") == 1,
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
			check(Peer.value(reply, "acquired", "acquire") == 1,
				"hilock acquire (8 s) failed; the Redisson lease was %d ms: %s", LEASE_MS, reply);
			check(ms >= LEASE_MS - 300 && ms < LEASE_MS + PROMPT_MS,
				"hilock acquired %d ms after Redisson took a %d ms lease", ms, LEASE_MS);
			check(!lock.isHeldByCurrentThread(), "Redisson still thinks it holds");
			check(p.ask("release", "released") == 1, "hilock release");
			return String.format("hilock took over %d ms after a %d ms Redisson lease", ms, LEASE_MS);
		}
	}

	/* ------------------------------------------------------------------ */

	static RedissonClient client(long watchdogMs) {
		Config c = new Config();
		c.setLockWatchdogTimeout(watchdogMs);
		c.setThreads(4);
		c.setNettyThreads(4);
		c.useSingleServer()
			.setAddress(url)
			.setConnectionMinimumIdleSize(2)
			.setConnectionPoolSize(8)
			.setSubscriptionConnectionMinimumIdleSize(1)
			.setSubscriptionConnectionPoolSize(4);
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

	public static void main(String[] args) throws Exception {
		if (args.length < 4 || !args[0].equals("run")) {
			System.err.println("usage: Interop run PORT PEER CONTEND [FILTER]");
			System.exit(2);
		}
		int port = Integer.parseInt(args[1]);
		url = "redis://127.0.0.1:" + port;
		peerPath = args[2];
		contendPath = args[3];
		String filter = args.length > 4 ? args[4] : "";
		waitForPort(port);

		rA = client(30_000);
		rB = client(30_000);
		rShort = client(SHORT_WATCHDOG_MS);
		// Warm up (connections, pub/sub, class loading) outside the timings.
		for (RedissonClient rc : List.of(rA, rB, rShort)) {
			RLock w = rc.getLock("interop:warmup");
			w.lock();
			w.unlock();
		}

		Map<String, Scenario> scenarios = new java.util.LinkedHashMap<>();
		scenarios.put("a mutual-exclusion", Interop::mutualExclusion);
		String[] names = { "interop:b:plain", "{interop}:b:braces", "interop:b:\u00fcn\u00efc\u00f6de \u2713" };
		for (String n : names) {
			scenarios.put("b redisson-waits-for-hilock [" + n + "]", () -> redissonWaitsForHilock(n));
			scenarios.put("b hilock-waits-for-redisson [" + n + "]", () -> hilockWaitsForRedisson(n));
		}
		scenarios.put("c hilock-holds-redisson-looks", Interop::hilockHoldsRedissonLooks);
		scenarios.put("c redisson-holds-hilock-looks", Interop::redissonHoldsHilockLooks);
		scenarios.put("d hilock-watchdog", Interop::hilockWatchdog);
		scenarios.put("d redisson-watchdog", Interop::redissonWatchdog);
		scenarios.put("e hilock-lease-expires", Interop::hilockLeaseExpires);
		scenarios.put("e redisson-lease-expires", Interop::redissonLeaseExpires);

		int passed = 0, failed = 0;
		for (Map.Entry<String, Scenario> e : scenarios.entrySet()) {
			if (!filter.isEmpty() && !e.getKey().startsWith(filter))
				continue;
			long t0 = System.nanoTime();
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
			} finally {
				one.shutdownNow();
			}
			System.out.printf("%s %s: %s (%.1f s)%n", ok ? "PASS" : "FAIL", e.getKey(), verdict,
				msSince(t0) / 1000.0);
			System.out.flush();
			if (ok)
				passed++;
			else
				failed++;
		}
		System.out.printf("%d passed, %d failed%n", passed, failed);
		System.out.flush();
		for (RedissonClient rc : List.of(rA, rB, rShort))
			rc.shutdown(0, 2, SECONDS);
		System.exit(failed == 0 && passed > 0 ? 0 : 1);
	}
}
