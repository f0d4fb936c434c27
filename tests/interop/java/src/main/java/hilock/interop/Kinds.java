package hilock.interop;

import static hilock.interop.Interop.PROMPT_MS;
import static hilock.interop.Interop.SHORT_WATCHDOG_MS;
import static hilock.interop.Interop.channel;
import static hilock.interop.Interop.check;
import static hilock.interop.Interop.msSince;
import static hilock.interop.Interop.onWhat;
import static hilock.interop.Interop.topic;
import static hilock.interop.Interop.topology;
import static hilock.interop.Interop.where;
import static java.nio.charset.StandardCharsets.UTF_8;
import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.SECONDS;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;

import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RTopic;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

import hilock.interop.Interop.Child;
import hilock.interop.Interop.Fail;
import hilock.interop.Interop.Peer;
import hilock.interop.Interop.Scenario;

/**
 * The lock kinds against Redisson 4.3.1 (scenarios h to m of `make
 * interop`): fair lock, read-write lock, spin lock, fenced lock, the kinds
 * that share the reentrant lock's hash, and a contention round per kind
 * with every critical section recorded and checked for overlaps. The
 * hilock side is the C peer (peer.c) with a handle of the kind; the Java
 * side Redisson's getFairLock, getReadWriteLock, getSpinLock and
 * getFencedLock. The non-reentrant kinds (q, and their contention rounds
 * in m) are Redisson 4.4.0+ only: they run against 4.4.0 and newer.
 */
final class Kinds {
	private Kinds() {
	}

	/* ------------------------------------------------------------------
	 * Names and Redis state, as PROTOCOL.md section 0.2 derives them.
	 * ------------------------------------------------------------------ */

	/** prefixName(prefix, name): prefix:{name}, or prefix:name with braces. */
	static String prefixed(String prefix, String name) {
		return name.contains("{") ? prefix + ":" + name : prefix + ":{" + name + "}";
	}

	/** suffixName(name, suffix): {name}:suffix, or name:suffix with braces. */
	static String suffixed(String name, String suffix) {
		return name.contains("{") ? name + ":" + suffix : "{" + name + "}:" + suffix;
	}

	static String queueKey(String name) {
		return prefixed("redisson_lock_queue", name);
	}

	static String timeoutsKey(String name) {
		return prefixed("redisson_lock_timeout", name);
	}

	static String tokenKey(String name) {
		return prefixed("redisson_lock_token", name);
	}

	static String rwChannel(String name) {
		return prefixed("redisson_rwlock", name);
	}

	/** A fair-lock waiter's own channel. */
	static String waiterChannel(String name, String owner) {
		return channel(name) + ":" + owner;
	}

	/** The lease key of read hold k of owner. */
	static String readTimeoutKey(String name, String owner, int k) {
		return suffixed(name, owner + ":rwlock_timeout:" + k);
	}

	static List<String> queue(String name) {
		return Interop.rI.<String>getList(queueKey(name), StringCodec.INSTANCE).readAll();
	}

	/** The fair queue's deadline of owner (ms, client clock), or null. */
	static Double deadline(String name, String owner) {
		return Interop.rI.<String>getScoredSortedSet(timeoutsKey(name), StringCodec.INSTANCE).getScore(owner);
	}

	static int timeoutsSize(String name) {
		return Interop.rI.<String>getScoredSortedSet(timeoutsKey(name), StringCodec.INSTANCE).size();
	}

	static Map<String, String> hash(String name) {
		return Interop.rI.<String, String>getMap(name, StringCodec.INSTANCE).readAllMap();
	}

	/** PTTL of a key: -2 missing, -1 without expiry. */
	static long pttl(String key) {
		return Interop.rI.getKeys().remainTimeToLive(key);
	}

	static boolean exists(String key) {
		return Interop.rI.getKeys().countExists(key) == 1;
	}

	/** Wait until cond holds (polled every 10 ms), or fail after ms. */
	static void await(BooleanSupplier cond, long ms, String format, Object... args) throws InterruptedException {
		long t0 = System.nanoTime();
		while (!cond.getAsBoolean()) {
			check(msSince(t0) < ms, format, args);
			Thread.sleep(10);
		}
	}

	/** The Redisson lock of a kind ("reentrant", "fair", "read", "write",
	 *  "spin", "fenced"), as peer.c names them. */
	static RLock jlock(RedissonClient rc, String kind, String name) {
		switch (kind) {
		case "reentrant":
			return rc.getLock(name);
		case "fair":
			return rc.getFairLock(name);
		case "read":
			return rc.getReadWriteLock(name).readLock();
		case "write":
			return rc.getReadWriteLock(name).writeLock();
		case "spin":
			return rc.getSpinLock(name);
		case "fenced":
			return rc.getFencedLock(name);
		case "nonreentrant":
			return redisson44Lock(rc, "getNonReentrantLock", name);
		case "fair-nonreentrant":
			return redisson44Lock(rc, "getNonReentrantFairLock", name);
		default:
			throw new IllegalArgumentException(kind);
		}
	}

	/** A lock kind of Redisson 4.4.0+ (getNonReentrantLock,
	 *  getNonReentrantFairLock), called by name so that the driver still
	 *  builds against 4.3.1, which has no such method. */
	static RLock redisson44Lock(RedissonClient rc, String method, String name) {
		try {
			return (RLock) RedissonClient.class.getMethod(method, String.class).invoke(rc, name);
		} catch (ReflectiveOperationException e) {
			throw new IllegalStateException("Redisson " + Interop.REDISSON_VERSION + " has no " + method, e);
		}
	}

	/** One Java thread of its own (Redisson's owner is client + thread):
	 *  every call runs on it. */
	static final class JThread implements AutoCloseable {
		final ExecutorService ex;
		final long id;
		final RedissonClient rc;

		JThread(RedissonClient rc, String label) throws Exception {
			this.rc = rc;
			ex = Executors.newSingleThreadExecutor(r -> {
				Thread t = new Thread(r, label);
				t.setDaemon(true);
				return t;
			});
			id = ex.submit(() -> Thread.currentThread().getId()).get();
		}

		/** Redisson's owner string of this thread. */
		String owner() {
			return rc.getId() + ":" + id;
		}

		<T> Future<T> submit(Callable<T> c) {
			return ex.submit(c);
		}

		/** Run c on the thread, wait up to 15 s; a Fail or runtime
		 *  exception in it is rethrown here. */
		<T> T call(Callable<T> c) throws Exception {
			return result(submit(c), 15_000);
		}

		@Override
		public void close() {
			ex.shutdownNow();
		}
	}

	/** A future's value within ms, its exception rethrown as it was. */
	static <T> T result(Future<T> f, long ms) throws Exception {
		try {
			return f.get(ms, MILLISECONDS);
		} catch (ExecutionException e) {
			Throwable c = e.getCause();
			if (c instanceof Exception)
				throw (Exception) c;
			throw e;
		}
	}

	/** Check that f has not completed within ms (a waiter still blocked). */
	static void blocked(Future<?> f, long ms, String format, Object... args) throws Exception {
		try {
			f.get(ms, MILLISECONDS);
			throw new Fail(String.format(format, args));
		} catch (TimeoutException expected) {
			// still waiting, as it should be
		} catch (ExecutionException e) {
			throw new Fail(String.format(format, args) + ": " + e.getCause());
		}
	}

	/** A listener on a channel (sharded in a cluster) that keeps what it
	 *  hears. */
	static final class Ear implements AutoCloseable {
		final RTopic topic;
		final BlockingQueue<Long> heard = new LinkedBlockingQueue<>();
		final int id;
		final String channel;

		Ear(String channel) {
			this.channel = channel;
			topic = topic(Interop.rB, channel);
			id = topic.addListener(Long.class, (ch, msg) -> heard.add(msg));
		}

		/** The next message within ms, or null. */
		Long next(long ms) throws InterruptedException {
			return heard.poll(ms, MILLISECONDS);
		}

		@Override
		public void close() {
			topic.removeListener(id);
		}
	}

	/** PUBSUB NUMSUB (SHARDNUMSUB in a cluster) of a channel. */
	static long subscribers(String channel) {
		return topic(Interop.rI, channel).countSubscribers();
	}

	static String numsub() {
		return topology.equals("cluster") ? "SHARDNUMSUB" : "NUMSUB";
	}

	static void closeAll(List<? extends AutoCloseable> all) {
		for (AutoCloseable c : all)
			try {
				c.close();
			} catch (Exception e) {
				// best effort
			}
	}

	/* ------------------------------------------------------------------
	 * h. Fair lock: per-waiter channels, one FIFO queue for both sides,
	 *    a waiter that gives up leaves the queue clean.
	 * ------------------------------------------------------------------ */

	/** Fair deadlines: enqueued at about now + ttl + wait (client clocks). */
	static void checkDeadline(String name, String owner, long ttlMs, long waitMs) {
		Double d = deadline(name, owner);
		long now = System.currentTimeMillis();
		check(d != null, "no deadline for %s in %s", owner, timeoutsKey(name));
		long ahead = d.longValue() - now;
		check(ahead > ttlMs + waitMs - 3_000 && ahead <= ttlMs + waitMs + 1_000,
			"deadline of %s is %d ms ahead, expected about lease %d + wait %d", owner, ahead, ttlMs, waitMs);
	}

	static String fairRedissonWaitsForHilock(String name) throws Exception {
		try (Peer p = new Peer(name, 30_000, "fair"); JThread jt = new JThread(Interop.rA, "fair-waiter");
			Ear own = new Ear(waiterChannel(name, jt.owner()));
			Ear plain = new Ear(channel(name))) {
			check(p.ask("acquire 0 -1", "acquired") == 1, "hilock could not take the free fair lock");
			RLock lock = jlock(Interop.rA, "fair", name);
			Future<Boolean> f = jt.submit(() -> lock.tryLock(10, SECONDS));
			await(() -> queue(name).equals(List.of(jt.owner())), 5_000, "Redisson's waiter %s not queued in %s: %s",
				jt.owner(), queueKey(name), queue(name));
			// Redisson 4.3.1 (and HEAD) quirk: tryLock(w, unit) without a lease
			// passes w to the queue script in the lease's unit, ms, so
			// tryLock(10, SECONDS) queues with a wait of 10 ms, not 10 s
			// (its acquireFailed takes 10 s off those behind: README).
			checkDeadline(name, jt.owner(), 30_000, 10);
			blocked(f, 800, "Redisson fair tryLock returned while hilock holds");
			long released = System.nanoTime();
			check(p.ask("release", "released") == 1, "hilock release did not free the lock");
			check(result(f, 15_000), "Redisson tryLock(10 s) gave up after hilock released");
			long ms = msSince(released);
			check(ms < PROMPT_MS, "Redisson acquired %d ms after hilock's release (not woken on its channel)", ms);
			Long msg = own.next(PROMPT_MS);
			check(msg != null && msg == 0L, "on %s (the waiter's own channel) a listener heard %s, expected 0",
				own.channel, msg);
			Long stray = plain.next(200);
			check(stray == null, "hilock's fair release published %s on the plain lock channel %s", stray,
				channel(name));
			check(queue(name).isEmpty() && timeoutsSize(name) == 0, "queue %s / %d deadlines left after the hand-off",
				queue(name), timeoutsSize(name));
			check(hash(name).equals(Map.of(jt.owner(), "1")), "lock hash %s, expected {%s=1}", hash(name), jt.owner());
			check(p.ask("locked", "locked") == 1 && p.ask("held", "held") == 0, "hilock does not see Redisson's hold");
			jt.call(() -> {
				lock.unlock();
				return null;
			});
			return "Redisson woke " + ms + " ms after hilock's release; heard \"0\" on " + own.channel + onWhat(name);
		}
	}

	static String fairHilockWaitsForRedisson(String name) throws Exception {
		try (Peer p = new Peer(name, 30_000, "fair"); JThread jt = new JThread(Interop.rA, "fair-holder")) {
			RLock lock = jlock(Interop.rA, "fair", name);
			check(jt.call(() -> lock.tryLock(5, SECONDS)), "Redisson could not take the free fair lock");
			String own = waiterChannel(name, p.owner);
			long plainBefore = subscribers(channel(name));
			p.send("acquire 10000 -1");
			await(() -> queue(name).equals(List.of(p.owner)), 5_000, "hilock's waiter %s not queued in %s: %s",
				p.owner, queueKey(name), queue(name));
			checkDeadline(name, p.owner, 30_000, 10_000);
			String early = p.poll(800);
			check(early == null, "hilock acquire returned while Redisson holds: %s", early);
			long mine = subscribers(own), plain = subscribers(channel(name));
			check(mine == 1, "PUBSUB %s %s is %d while hilock waits: not subscribed on its own channel", numsub(),
				own, mine);
			check(plain == plainBefore, "hilock's fair waiter subscribed to the plain channel %s (%d -> %d)",
				channel(name), plainBefore, plain);
			long released = System.nanoTime();
			jt.call(() -> {
				lock.unlock();
				return null;
			});
			String reply = p.next(15_000);
			long ms = msSince(released);
			check(Child.value(reply, "acquired", "hilock acquire") == 1,
				"hilock's wait (10 s) ran out after Redisson unlocked: %s", reply);
			check(ms < PROMPT_MS, "hilock acquired %d ms after Redisson's unlock (not woken on its channel)", ms);
			check(queue(name).isEmpty() && timeoutsSize(name) == 0, "queue %s / %d deadlines left after the hand-off",
				queue(name), timeoutsSize(name));
			check(lock.isLocked() && !jt.call(() -> lock.isHeldByCurrentThread()), "Redisson does not see hilock's hold");
			check(p.ask("release", "released") == 1, "hilock release");
			check(!exists(name), "fair lock still held after hilock's release");
			return "hilock woke " + ms + " ms after Redisson's unlock, on " + own + onWhat(name);
		}
	}

	/** A hold in the FIFO scenario: who, when it got the lock, when it let go. */
	record Turn(String who, long acquired, long released) {
	}

	static final long FIFO_HOLD_MS = 150;

	/**
	 * Six waiters, Redisson and hilock mixed (Redisson A, hilock, Redisson
	 * B, hilock, hilock, Redisson A), join the queue of a Redisson-held
	 * fair lock one after another (each once the previous is in the queue);
	 * they get the lock in that order, each promptly after the previous
	 * one's release.
	 */
	static String fairFifo(String name) throws Exception {
		final String[] who = { "Redisson-A1", "hilock-1", "Redisson-B", "hilock-2", "hilock-3", "Redisson-A2" };
		List<AutoCloseable> owned = new ArrayList<>();
		ExecutorService pool = Executors.newCachedThreadPool();
		List<Turn> turns = Collections.synchronizedList(new ArrayList<>());
		try {
			JThread holder = new JThread(Interop.rA, "fair-holder");
			owned.add(holder);
			RLock hl = jlock(Interop.rA, "fair", name);
			holder.call(() -> {
				hl.lock();
				return null;
			});
			List<String> owners = new ArrayList<>();
			List<Future<?>> done = new ArrayList<>();
			for (String w : who) {
				String owner;
				if (w.startsWith("hilock")) {
					Peer p = new Peer(name, 30_000, "fair");
					owned.add(p);
					owner = p.owner;
					p.send("acquire 60000 -1");
					done.add(pool.submit(() -> {
						String r = p.next(70_000);
						long at = System.nanoTime();
						check(Child.value(r, "acquired", w + " acquire") == 1, "%s did not get the fair lock: %s", w, r);
						Thread.sleep(FIFO_HOLD_MS);
						long rel = System.nanoTime();
						turns.add(new Turn(w, at, rel));
						check(p.ask("release", "released") == 1, "%s release", w);
						return null;
					}));
				} else {
					JThread t = new JThread(w.startsWith("Redisson-A") ? Interop.rA : Interop.rB, w);
					owned.add(t);
					owner = t.owner();
					RLock l = jlock(t.rc, "fair", name);
					done.add(t.submit(() -> {
						check(l.tryLock(60, SECONDS), "%s tryLock(60 s) failed", w);
						long at = System.nanoTime();
						Thread.sleep(FIFO_HOLD_MS);
						long rel = System.nanoTime();
						turns.add(new Turn(w, at, rel));
						l.unlock();
						return null;
					}));
				}
				owners.add(owner);
				await(() -> queue(name).equals(owners), 5_000, "queue %s after %s joined, expected %s", queue(name), w,
					owners);
			}
			long start = System.nanoTime();
			holder.call(() -> {
				hl.unlock();
				return null;
			});
			for (Future<?> f : done)
				result(f, 90_000);
			List<Turn> order = new ArrayList<>(turns);
			order.sort((x, y) -> Long.compare(x.acquired(), y.acquired()));
			List<String> got = new ArrayList<>();
			long maxGap = 0, prev = start;
			for (Turn t : order) {
				got.add(t.who());
				maxGap = Math.max(maxGap, (t.acquired() - prev) / 1_000_000);
				prev = t.released();
			}
			check(got.equals(List.of(who)), "fair lock taken in the order %s, queued as %s", got, List.of(who));
			check(maxGap < PROMPT_MS, "a hand-off took %d ms (not woken on its channel)", maxGap);
			check(queue(name).isEmpty() && timeoutsSize(name) == 0 && !exists(name),
				"queue %s, %d deadlines, lock exists %b at the end", queue(name), timeoutsSize(name), exists(name));
			return String.format("queued and served in order %s; longest hand-off %d ms%s", String.join(", ", got), maxGap,
				onWhat(name));
		} finally {
			pool.shutdownNow();
			closeAll(owned);
		}
	}

	/** A hilock waiter behind a Redisson holder gives up (its wait runs
	 *  out) while a Redisson waiter queues behind it: it leaves the queue
	 *  and that waiter's deadline moves up by its wait; the Redisson
	 *  waiter is then woken by the holder's unlock. */
	static String fairHilockGivesUp(String name) throws Exception {
		final long wait = 1_500;
		try (Peer p = new Peer(name, 30_000, "fair"); JThread holder = new JThread(Interop.rA, "fair-holder");
			JThread jw = new JThread(Interop.rB, "fair-waiter")) {
			RLock hl = jlock(Interop.rA, "fair", name), wl = jlock(Interop.rB, "fair", name);
			check(holder.call(() -> hl.tryLock(5, SECONDS)), "Redisson could not take the free fair lock");
			long t0 = System.nanoTime();
			p.send("acquire " + wait + " -1");
			await(() -> queue(name).equals(List.of(p.owner)), 5_000, "hilock not queued: %s", queue(name));
			Future<Boolean> f = jw.submit(() -> wl.tryLock(20, SECONDS));
			await(() -> queue(name).equals(List.of(p.owner, jw.owner())), 5_000, "Redisson not queued after hilock: %s",
				queue(name));
			double before = deadline(name, jw.owner());
			String reply = p.next(wait + 5_000);
			long gaveUp = msSince(t0);
			check(Child.value(reply, "acquired", "hilock acquire") == 0, "hilock got a held fair lock: %s", reply);
			check(gaveUp >= wait - 100 && gaveUp < wait + PROMPT_MS, "hilock gave up after %d ms of a %d ms wait",
				gaveUp, wait);
			check(queue(name).equals(List.of(jw.owner())), "queue %s after hilock gave up, expected [%s]", queue(name),
				jw.owner());
			check(deadline(name, p.owner) == null, "hilock's deadline left in %s", timeoutsKey(name));
			double after = deadline(name, jw.owner());
			check(before - after == wait, "Redisson waiter's deadline moved by %.0f ms, expected %d (the give-up's wait)",
				before - after, wait);
			blocked(f, 200, "Redisson's waiter returned while the holder holds");
			long released = System.nanoTime();
			holder.call(() -> {
				hl.unlock();
				return null;
			});
			check(result(f, 15_000), "Redisson's waiter did not get the lock");
			long ms = msSince(released);
			check(ms < PROMPT_MS, "Redisson's waiter acquired %d ms after the unlock", ms);
			jw.call(() -> {
				wl.unlock();
				return null;
			});
			check(queue(name).isEmpty() && timeoutsSize(name) == 0, "queue %s, %d deadlines at the end", queue(name),
				timeoutsSize(name));
			return String.format("hilock left the queue after %d ms; the Redisson waiter behind moved up %d ms and "
				+ "woke %d ms after the unlock%s", gaveUp, wait, ms, onWhat(name));
		}
	}

	/** The mirror: a Redisson waiter gives up (tryLock(2, SECONDS) runs
	 *  out, acquireFailed) in front of a hilock waiter. Redisson queued
	 *  itself with a wait of 2 ms (the unit quirk of fairRedissonWaits-
	 *  ForHilock) but its acquireFailed takes 2 s off those behind: that
	 *  is what hilock's waiter must see. */
	static String fairRedissonGivesUp(String name) throws Exception {
		final long wait = 2_000;
		try (Peer holder = new Peer(name, 30_000, "fair"); Peer p = new Peer(name, 30_000, "fair");
			JThread jw = new JThread(Interop.rA, "fair-waiter")) {
			check(holder.ask("acquire 0 -1", "acquired") == 1, "hilock could not take the free fair lock");
			RLock wl = jlock(Interop.rA, "fair", name);
			long t0 = System.nanoTime();
			Future<Boolean> f = jw.submit(() -> wl.tryLock(wait / 1000, SECONDS));
			await(() -> queue(name).equals(List.of(jw.owner())), 5_000, "Redisson not queued: %s", queue(name));
			checkDeadline(name, jw.owner(), 30_000, wait / 1000);
			p.send("acquire 20000 -1");
			await(() -> queue(name).equals(List.of(jw.owner(), p.owner)), 5_000, "hilock not queued after Redisson: %s",
				queue(name));
			double before = deadline(name, p.owner);
			check(!result(f, wait + 5_000), "Redisson got a held fair lock");
			long gaveUp = msSince(t0);
			await(() -> queue(name).equals(List.of(p.owner)), 2_000, "queue %s after Redisson gave up, expected [%s]",
				queue(name), p.owner);
			check(deadline(name, jw.owner()) == null, "Redisson's deadline left in %s", timeoutsKey(name));
			double after = deadline(name, p.owner);
			check(before - after == wait, "hilock waiter's deadline moved by %.0f ms, expected %d (acquireFailed's wait, "
				+ "in the caller's unit)", before - after, wait);
			String early = p.poll(200);
			check(early == null, "hilock's waiter returned while the holder holds: %s", early);
			long released = System.nanoTime();
			check(holder.ask("release", "released") == 1, "hilock holder release");
			String reply = p.next(15_000);
			long ms = msSince(released);
			check(Child.value(reply, "acquired", "hilock acquire") == 1, "hilock's waiter did not get the lock: %s",
				reply);
			check(ms < PROMPT_MS, "hilock's waiter acquired %d ms after the release", ms);
			check(p.ask("release", "released") == 1, "hilock release");
			check(queue(name).isEmpty() && timeoutsSize(name) == 0 && !exists(name), "queue %s, %d deadlines at the end",
				queue(name), timeoutsSize(name));
			return String.format("Redisson (queued with a %d ms wait) left the queue after %d ms; the hilock waiter "
				+ "behind moved up %d ms and woke %d ms after the release%s", wait / 1000, gaveUp, wait, ms, onWhat(name));
		}
	}

	/* ------------------------------------------------------------------
	 * i. Read-write lock.
	 * ------------------------------------------------------------------ */

	static Map<String, String> mapOf(String... kv) {
		Map<String, String> m = new HashMap<>();
		for (int i = 0; i + 1 < kv.length; i += 2)
			m.put(kv[i], kv[i + 1]);
		return m;
	}

	static void lockOn(JThread t, RLock l) throws Exception {
		t.call(() -> {
			l.lock();
			return null;
		});
	}

	static void unlockOn(JThread t, RLock l) throws Exception {
		t.call(() -> {
			l.unlock();
			return null;
		});
	}

	static boolean tryOn(JThread t, RLock l) throws Exception {
		return t.call(() -> {
			boolean got = l.tryLock(0, SECONDS);
			if (got)
				l.unlock();
			return got;
		});
	}

	/** Redisson and hilock readers hold together (re-entrant reads too);
	 *  neither side's writer gets in; the lock lives until the last
	 *  reader, whichever side it is, lets go. */
	static String rwReadersShare(String name) throws Exception {
		try (Peer r = new Peer(name, 30_000, "read"); Peer w = new Peer(name, 30_000, "write");
			JThread jr = new JThread(Interop.rA, "reader"); JThread jw = new JThread(Interop.rB, "writer")) {
			RLock rl = jlock(Interop.rA, "read", name), wl = jlock(Interop.rB, "write", name);
			StringBuilder out = new StringBuilder();
			for (int round = 0; round < 2; round++) {
				int holds = round + 1;
				for (int k = 0; k < holds; k++) {
					lockOn(jr, rl);
					check(r.ask("acquire 0 -1", "acquired") == 1, "hilock reader could not join Redisson's reader");
				}
				Map<String, String> h = hash(name);
				check(h.equals(mapOf("mode", "read", jr.owner(), "" + holds, r.owner, "" + holds)),
					"rw hash %s, expected mode=read and both readers with %d holds", h, holds);
				for (int k = 1; k <= holds; k++)
					for (String o : List.of(jr.owner(), r.owner)) {
						long t = pttl(readTimeoutKey(name, o, k));
						check(t > 0 && t <= 30_000, "read hold %d of %s: %s has PTTL %d", k, o,
							readTimeoutKey(name, o, k), t);
					}
				check(rl.isLocked() && !wl.isLocked(), "Redisson: readLock().isLocked() %b, writeLock() %b", rl.isLocked(),
					wl.isLocked());
				check(r.ask("locked", "locked") == 1, "hilock's read half not locked");
				check(!tryOn(jw, wl), "Redisson's writer got in among readers");
				check(w.ask("acquire 0 -1", "acquired") == 0, "hilock's writer got in among readers");
				check(w.ask("locked", "locked") == 0, "hilock's write half locked among readers");
				// Round 0: Redisson's reader leaves first; round 1: hilock's.
				for (int k = 0; k < holds; k++) {
					if (round == 0)
						unlockOn(jr, rl);
					else
						check(r.ask("release", "released") == (k + 1 == holds ? 1 : 0), "hilock read release %d", k);
				}
				String left = round == 0 ? r.owner : jr.owner();
				h = hash(name);
				check(h.equals(mapOf("mode", "read", left, "" + holds)), "rw hash %s once one side left, expected %s=%d",
					h, left, holds);
				check(!tryOn(jw, wl) && w.ask("acquire 0 -1", "acquired") == 0, "a writer got in beside a reader");
				for (int k = 0; k < holds; k++) {
					if (round == 0)
						check(r.ask("release", "released") == (k + 1 == holds ? 1 : 0), "hilock read release %d", k);
					else
						unlockOn(jr, rl);
				}
				check(!exists(name), "rw hash %s left after the last reader", hash(name));
				out.append(round == 0 ? "" : "; ").append(String.format("%d+%d read holds, %s left last", holds, holds,
					round == 0 ? "hilock" : "Redisson"));
			}
			check(tryOn(jw, wl), "Redisson's writer could not take the free lock");
			return out.toString();
		}
	}

	/** hilock's writer waits for two Redisson readers; the first reader's
	 *  unlock does not let it in, the last one's "0" wakes it. */
	static String rwHilockWriterWaits(String name) throws Exception {
		try (Peer w = new Peer(name, 30_000, "write"); JThread j1 = new JThread(Interop.rA, "reader-A");
			JThread j2 = new JThread(Interop.rB, "reader-B"); Ear ear = new Ear(rwChannel(name))) {
			RLock r1 = jlock(Interop.rA, "read", name), r2 = jlock(Interop.rB, "read", name);
			lockOn(j1, r1);
			lockOn(j2, r2);
			long before = subscribers(rwChannel(name));
			w.send("acquire 10000 -1");
			String early = w.poll(800);
			check(early == null, "hilock's writer returned while Redisson reads: %s", early);
			long during = subscribers(rwChannel(name));
			check(during > before, "PUBSUB %s %s is %d while hilock's writer waits (%d before)", numsub(),
				rwChannel(name), during, before);
			unlockOn(j1, r1);
			early = w.poll(500);
			check(early == null, "hilock's writer got in while a Redisson reader still reads: %s", early);
			Long msg = ear.next(100);
			check(msg == null, "a read unlock that left a reader published %s", msg);
			long released = System.nanoTime();
			unlockOn(j2, r2);
			String reply = w.next(15_000);
			long ms = msSince(released);
			check(Child.value(reply, "acquired", "hilock write acquire") == 1, "hilock's writer: %s", reply);
			check(ms < PROMPT_MS, "hilock's writer acquired %d ms after the last reader left", ms);
			msg = ear.next(PROMPT_MS);
			check(msg != null && msg == 0L, "the last read unlock published %s on %s, expected 0", msg, rwChannel(name));
			check(hash(name).equals(mapOf("mode", "write", w.owner + ":write", "1")), "rw hash %s under hilock's writer",
				hash(name));
			check(!tryOn(j1, r1) && !tryOn(j2, jlock(Interop.rB, "write", name)), "Redisson got in beside hilock's writer");
			check(w.ask("release", "released") == 1, "hilock write release");
			msg = ear.next(PROMPT_MS);
			check(msg != null && msg == 1L, "hilock's write unlock published %s on %s, expected 1", msg, rwChannel(name));
			check(!exists(name), "rw hash left after the writer");
			return "hilock's writer woke " + ms + " ms after the last Redisson reader left (\"0\"); its unlock sent \"1\""
				+ onWhat(name);
		}
	}

	/** Redisson's writer waits for two hilock readers; hilock's last read
	 *  release ("0") wakes it. */
	static String rwRedissonWriterWaits(String name) throws Exception {
		try (Peer r1 = new Peer(name, 30_000, "read"); Peer r2 = new Peer(name, 30_000, "read");
			JThread jw = new JThread(Interop.rA, "writer"); Ear ear = new Ear(rwChannel(name))) {
			check(r1.ask("acquire 0 -1", "acquired") == 1 && r2.ask("acquire 0 -1", "acquired") == 1,
				"hilock readers could not take the free lock");
			RLock wl = jlock(Interop.rA, "write", name);
			Future<Boolean> f = jw.submit(() -> wl.tryLock(10, SECONDS));
			blocked(f, 800, "Redisson's writer got in among hilock readers");
			check(r1.ask("release", "released") == 1, "hilock reader 1 release");
			blocked(f, 500, "Redisson's writer got in while a hilock reader still reads");
			Long msg = ear.next(100);
			check(msg == null, "a read release that left a reader published %s", msg);
			long released = System.nanoTime();
			check(r2.ask("release", "released") == 1, "hilock reader 2 release");
			check(result(f, 15_000), "Redisson's writer did not get the lock");
			long ms = msSince(released);
			check(ms < PROMPT_MS, "Redisson's writer acquired %d ms after the last hilock reader left", ms);
			msg = ear.next(PROMPT_MS);
			check(msg != null && msg == 0L, "hilock's last read release published %s on %s, expected 0", msg,
				rwChannel(name));
			check(hash(name).equals(mapOf("mode", "write", jw.owner() + ":write", "1")), "rw hash %s under Redisson's writer",
				hash(name));
			check(r1.ask("acquire 0 -1", "acquired") == 0 && r1.ask("locked", "locked") == 0,
				"hilock's reader got in beside Redisson's writer (or its read half looks locked)");
			r1.call("use write");
			check(r1.ask("locked", "locked") == 1, "hilock's write half does not see Redisson's writer");
			unlockOn(jw, wl);
			return "Redisson's writer woke " + ms + " ms after the last hilock reader left (\"0\")" + onWhat(name);
		}
	}

	/** Two hilock readers wait for Redisson's writer; its unlock ("1")
	 *  wakes both, and they then read together. */
	static String rwHilockReadersWait(String name) throws Exception {
		try (Peer r1 = new Peer(name, 30_000, "read"); Peer r2 = new Peer(name, 30_000, "read");
			JThread jw = new JThread(Interop.rA, "writer"); Ear ear = new Ear(rwChannel(name))) {
			RLock wl = jlock(Interop.rA, "write", name);
			lockOn(jw, wl);
			r1.send("acquire 10000 -1");
			r2.send("acquire 10000 -1");
			String early = r1.poll(800);
			check(early == null, "hilock reader 1 returned beside Redisson's writer: %s", early);
			check((early = r2.poll(1)) == null, "hilock reader 2 returned beside Redisson's writer: %s", early);
			long released = System.nanoTime();
			unlockOn(jw, wl);
			long worst = 0;
			for (Peer r : List.of(r1, r2)) {
				String reply = r.next(15_000);
				long ms = msSince(released);
				check(Child.value(reply, "acquired", "hilock read acquire") == 1, "a hilock reader: %s", reply);
				worst = Math.max(worst, ms);
			}
			check(worst < PROMPT_MS, "the hilock readers acquired up to %d ms after Redisson's write unlock", worst);
			Long msg = ear.next(PROMPT_MS);
			check(msg != null && msg == 1L, "Redisson's write unlock published %s, expected 1", msg);
			check(hash(name).equals(mapOf("mode", "read", r1.owner, "1", r2.owner, "1")), "rw hash %s, expected both "
				+ "hilock readers", hash(name));
			check(r1.ask("release", "released") == 1 && r2.ask("release", "released") == 1, "hilock read releases");
			check(!exists(name), "rw hash left after the readers");
			return "both hilock readers woke within " + worst + " ms of Redisson's write unlock (\"1\")" + onWhat(name);
		}
	}

	/** Three Redisson readers (two threads of one client, one of another)
	 *  wait for hilock's writer; its unlock must send "1" (wake all): "0"
	 *  would wake one thread per client and leave the other asleep. */
	static String rwRedissonReadersWait(String name) throws Exception {
		List<JThread> js = new ArrayList<>();
		try (Peer w = new Peer(name, 30_000, "write"); Ear ear = new Ear(rwChannel(name))) {
			check(w.ask("acquire 0 -1", "acquired") == 1, "hilock's writer could not take the free lock");
			js.add(new JThread(Interop.rA, "reader-A1"));
			js.add(new JThread(Interop.rA, "reader-A2"));
			js.add(new JThread(Interop.rB, "reader-B"));
			List<Future<Boolean>> fs = new ArrayList<>();
			List<Long> at = Collections.synchronizedList(new ArrayList<>());
			for (JThread j : js) {
				RLock rl = jlock(j.rc, "read", name);
				fs.add(j.submit(() -> {
					boolean got = rl.tryLock(10, SECONDS);
					at.add(System.nanoTime());
					return got;
				}));
			}
			for (Future<Boolean> f : fs)
				blocked(f, 300, "a Redisson reader got in beside hilock's writer");
			long released = System.nanoTime();
			check(w.ask("release", "released") == 1, "hilock write release");
			for (Future<Boolean> f : fs)
				check(result(f, 15_000), "a Redisson reader did not get the lock");
			long worst = 0;
			for (long t : at)
				worst = Math.max(worst, (t - released) / 1_000_000);
			check(worst < PROMPT_MS, "the Redisson readers acquired up to %d ms after hilock's write release", worst);
			Long msg = ear.next(PROMPT_MS);
			check(msg != null && msg == 1L, "hilock's write release published %s, expected 1", msg);
			Map<String, String> h = hash(name);
			check(h.size() == 4 && "read".equals(h.get("mode")), "rw hash %s, expected 3 readers", h);
			for (JThread j : js)
				unlockOn(j, jlock(j.rc, "read", name));
			check(!exists(name), "rw hash left after the readers");
			return "3 Redisson readers (2 threads of one client) woke within " + worst + " ms of hilock's write release "
				+ "(\"1\")" + onWhat(name);
		} finally {
			closeAll(js);
		}
	}

	/** hilock's writer takes a read hold too (one owner, both fields);
	 *  Redisson sees both halves locked; once the writer lets go of the
	 *  write lock the lock is a read lock that Redisson's readers join. */
	static String rwHilockWriterTakesRead(String name) throws Exception {
		try (Peer p = new Peer(name, 30_000, "write"); JThread jr = new JThread(Interop.rA, "reader");
			JThread jw = new JThread(Interop.rB, "writer")) {
			RLock rl = jlock(Interop.rA, "read", name), wl = jlock(Interop.rB, "write", name);
			check(p.ask("acquire 0 -1", "acquired") == 1, "hilock's writer could not take the free lock");
			p.call("use read");
			check(p.ask("acquire 0 -1", "acquired") == 1, "hilock's writer could not take a read hold");
			check(hash(name).equals(mapOf("mode", "write", p.owner + ":write", "1", p.owner, "1")),
				"rw hash %s, expected the writer's write and read fields", hash(name));
			check(pttl(readTimeoutKey(name, p.owner, 1)) > 0, "no lease key for the writer's read hold");
			check(rl.isLocked() && wl.isLocked(), "Redisson: read half locked %b, write half %b (both expected)",
				rl.isLocked(), wl.isLocked());
			check(!tryOn(jr, rl) && !tryOn(jw, wl), "Redisson got in beside hilock's writer");
			p.call("use write");
			check(p.ask("release", "released") == 1, "hilock write release");
			check(hash(name).equals(mapOf("mode", "read", p.owner, "1")), "rw hash %s once the write hold ended",
				hash(name));
			check(rl.isLocked() && !wl.isLocked(), "Redisson: read half locked %b, write half %b (read only expected)",
				rl.isLocked(), wl.isLocked());
			lockOn(jr, rl);
			check(!tryOn(jw, wl), "Redisson's writer got in beside two readers");
			unlockOn(jr, rl);
			p.call("use read");
			check(p.ask("release", "released") == 1, "hilock read release");
			check(!exists(name), "rw hash left");
			return "write+read fields under one owner; after the write release Redisson's reader joined";
		}
	}

	/** The mirror: Redisson's writer takes a read hold. */
	static String rwRedissonWriterTakesRead(String name) throws Exception {
		try (Peer p = new Peer(name, 30_000, "read"); JThread jt = new JThread(Interop.rA, "writer")) {
			RLock wl = jlock(Interop.rA, "write", name), rl = jlock(Interop.rA, "read", name);
			lockOn(jt, wl);
			lockOn(jt, rl);
			check(hash(name).equals(mapOf("mode", "write", jt.owner() + ":write", "1", jt.owner(), "1")),
				"rw hash %s, expected Redisson's write and read fields", hash(name));
			check(p.ask("locked", "locked") == 1, "hilock's read half does not see Redisson's writer's read hold");
			check(p.ask("acquire 0 -1", "acquired") == 0, "hilock's reader got in beside Redisson's writer");
			p.call("use write");
			check(p.ask("locked", "locked") == 1 && p.ask("acquire 0 -1", "acquired") == 0,
				"hilock's write half: not locked, or got in");
			unlockOn(jt, wl);
			check(hash(name).equals(mapOf("mode", "read", jt.owner(), "1")), "rw hash %s once Redisson's write hold ended",
				hash(name));
			check(p.ask("locked", "locked") == 0 && p.ask("acquire 0 -1", "acquired") == 0,
				"hilock's writer got in beside Redisson's read hold");
			p.call("use read");
			check(p.ask("acquire 0 -1", "acquired") == 1, "hilock's reader could not join Redisson's read hold");
			unlockOn(jt, rl);
			check(hash(name).equals(mapOf("mode", "read", p.owner, "1")), "rw hash %s", hash(name));
			check(p.ask("release", "released") == 1 && !exists(name), "hilock read release");
			return "write+read fields under Redisson's owner; after its write unlock hilock's reader joined";
		}
	}

	static final long RENEW_HOLD_MS = SHORT_WATCHDOG_MS * 3 + 1_500;

	/** hilock's reader (watchdog 3 s) holds for 10.5 s while Redisson's
	 *  writer waits all along: the hash and the read hold's lease key stay
	 *  renewed; the writer gets in promptly after the release. */
	static String rwHilockReadRenewal(String name) throws Exception {
		try (Peer r = new Peer(name, SHORT_WATCHDOG_MS, "read"); JThread jw = new JThread(Interop.rA, "writer")) {
			check(r.ask("acquire 0 -1", "acquired") == 1, "hilock's reader could not take the free lock");
			RLock wl = jlock(Interop.rA, "write", name);
			Future<Boolean> f = jw.submit(() -> wl.tryLock(30, SECONDS));
			String key = readTimeoutKey(name, r.owner, 1);
			long t0 = System.nanoTime(), minHash = Long.MAX_VALUE, minKey = Long.MAX_VALUE;
			int polls = 0;
			while (msSince(t0) < RENEW_HOLD_MS) {
				long th = pttl(name), tk = pttl(key);
				check(th > 0 && th <= SHORT_WATCHDOG_MS && tk > 0 && tk <= SHORT_WATCHDOG_MS,
					"after %d ms: PTTL of the hash %d, of %s %d (watchdog %d)", msSince(t0), th, key, tk,
					SHORT_WATCHDOG_MS);
				minHash = Math.min(minHash, th);
				minKey = Math.min(minKey, tk);
				check(!f.isDone(), "Redisson's writer returned after %d ms while hilock reads", msSince(t0));
				polls++;
				Thread.sleep(200);
			}
			check(r.ask("held", "held") == 1 && r.ask("lost", "lost") == 0, "hilock's reader lost its hold");
			long released = System.nanoTime();
			check(r.ask("release", "released") == 1, "hilock read release");
			check(result(f, 15_000), "Redisson's writer did not get the lock");
			long ms = msSince(released);
			check(ms < PROMPT_MS, "Redisson's writer acquired %d ms after the release", ms);
			unlockOn(jw, wl);
			return String.format("held %d ms (watchdog %d ms), %d polls, min PTTL hash %d / lease key %d ms; "
				+ "the waiting writer got in %d ms after the release", RENEW_HOLD_MS, SHORT_WATCHDOG_MS, polls, minHash,
				minKey, ms);
		}
	}

	/** The mirror: Redisson's reader (watchdog 3 s) holds 10.5 s while
	 *  hilock's writer waits all along. */
	static String rwRedissonReadRenewal(String name) throws Exception {
		try (Peer w = new Peer(name, 30_000, "write"); JThread jr = new JThread(Interop.rShort, "reader")) {
			RLock rl = jlock(Interop.rShort, "read", name);
			lockOn(jr, rl);
			w.send("acquire 30000 -1");
			String key = readTimeoutKey(name, jr.owner(), 1);
			long t0 = System.nanoTime(), minHash = Long.MAX_VALUE, minKey = Long.MAX_VALUE;
			int polls = 0;
			while (msSince(t0) < RENEW_HOLD_MS) {
				long th = pttl(name), tk = pttl(key);
				check(th > 0 && th <= SHORT_WATCHDOG_MS && tk > 0 && tk <= SHORT_WATCHDOG_MS,
					"after %d ms: PTTL of the hash %d, of %s %d (watchdog %d)", msSince(t0), th, key, tk,
					SHORT_WATCHDOG_MS);
				minHash = Math.min(minHash, th);
				minKey = Math.min(minKey, tk);
				String early = w.poll(200);
				check(early == null, "hilock's writer returned after %d ms while Redisson reads: %s", msSince(t0), early);
				polls++;
			}
			long released = System.nanoTime();
			unlockOn(jr, rl);
			String reply = w.next(15_000);
			long ms = msSince(released);
			check(Child.value(reply, "acquired", "hilock write acquire") == 1, "hilock's writer: %s", reply);
			check(ms < PROMPT_MS, "hilock's writer acquired %d ms after the unlock", ms);
			check(w.ask("release", "released") == 1, "hilock write release");
			return String.format("held %d ms (Redisson watchdog %d ms), %d polls, min PTTL hash %d / lease key %d ms; "
				+ "the waiting hilock writer got in %d ms after the unlock", RENEW_HOLD_MS, SHORT_WATCHDOG_MS, polls,
				minHash, minKey, ms);
		}
	}

	/**
	 * Redisson 4.3.1's read-lock renewal (PROTOCOL section 1): while a
	 * Redisson reader holds, it renews the lease keys of every reader of
	 * the lock, hilock's too. A hilock reader killed while holding (no
	 * release, no renewal of its own) therefore keeps its read hold as
	 * long as the Redisson reader holds; once that one unlocks, the dead
	 * reader's hold lasts out its last lease (at most the watchdog
	 * timeout) and a writer gets in when it ends. This asserts the 4.3.1
	 * behaviour (Redisson 4.4.0+ renews only its own readers).
	 */
	static String rwRedissonRenewsDeadHilockReader(String name) throws Exception {
		try (Peer r = new Peer(name, SHORT_WATCHDOG_MS, "read"); JThread jr = new JThread(Interop.rShort, "reader");
			JThread jw = new JThread(Interop.rA, "writer")) {
			RLock rl = jlock(Interop.rShort, "read", name), wl = jlock(Interop.rA, "write", name);
			lockOn(jr, rl);
			check(r.ask("acquire 0 -1", "acquired") == 1, "hilock's reader could not join");
			String key = readTimeoutKey(name, r.owner, 1);
			r.proc.destroyForcibly();
			check(r.proc.waitFor(10, SECONDS), "the hilock peer did not die");
			long t0 = System.nanoTime(), minKey = Long.MAX_VALUE;
			while (msSince(t0) < RENEW_HOLD_MS) {
				long tk = pttl(key);
				check(tk > 0 && tk <= SHORT_WATCHDOG_MS, "%d ms after the hilock reader died, PTTL of its lease key "
					+ "%s is %d: Redisson 4.3.1 no longer renews it", msSince(t0), key, tk);
				minKey = Math.min(minKey, tk);
				check(hash(name).containsKey(r.owner), "the dead reader's field left the hash after %d ms", msSince(t0));
				Thread.sleep(200);
			}
			long unlocked = System.nanoTime();
			unlockOn(jr, rl);
			Map<String, String> h = hash(name);
			long th = pttl(name);
			check(h.equals(mapOf("mode", "read", r.owner, "1")) && th > 0 && th <= SHORT_WATCHDOG_MS,
				"after Redisson's read unlock: rw hash %s with PTTL %d, expected the dead reader's field alone with at "
					+ "most its lease left", h, th);
			check(!tryOn(jw, wl), "Redisson's writer got in while the dead reader's lease runs");
			check(jw.call(() -> wl.tryLock(SHORT_WATCHDOG_MS + PROMPT_MS, MILLISECONDS)),
				"Redisson's writer did not get in when the dead reader's lease ended");
			long ms = msSince(unlocked);
			unlockOn(jw, wl);
			return String.format("the killed hilock reader's lease key stayed renewed by Redisson's reader for %d ms "
				+ "(min PTTL %d ms); after Redisson's unlock a writer got in %d ms later", RENEW_HOLD_MS, minKey, ms);
		}
	}

	/**
	 * Redisson 4.4.0+'s read-lock renewal (PROTOCOL section 1): a Redisson
	 * reader renews only its own client's read holds. A hilock reader
	 * killed while holding (no release, no renewal of its own) loses its
	 * lease key within its last lease while the Redisson reader holds on
	 * and keeps the hash alive; Redisson's read unlock then finds no live
	 * lease beside its own, clears the dead field and frees the lock, and
	 * a writer gets in at once. The mirror of the 4.3.1 scenario above.
	 */
	static String rwRedissonLeavesDeadHilockReader(String name) throws Exception {
		try (Peer r = new Peer(name, SHORT_WATCHDOG_MS, "read"); JThread jr = new JThread(Interop.rShort, "reader");
			JThread jw = new JThread(Interop.rA, "writer")) {
			RLock rl = jlock(Interop.rShort, "read", name), wl = jlock(Interop.rA, "write", name);
			lockOn(jr, rl);
			check(r.ask("acquire 0 -1", "acquired") == 1, "hilock's reader could not join");
			String key = readTimeoutKey(name, r.owner, 1), own = readTimeoutKey(name, jr.owner(), 1);
			r.proc.destroyForcibly();
			check(r.proc.waitFor(10, SECONDS), "the hilock peer did not die");
			long t0 = System.nanoTime();
			await(() -> pttl(key) == -2, SHORT_WATCHDOG_MS + PROMPT_MS,
				"the dead hilock reader's lease key %s still has PTTL %d: Redisson renews it", key, pttl(key));
			long gone = msSince(t0);
			Map<String, String> h = hash(name);
			check(h.equals(mapOf("mode", "read", jr.owner(), "1", r.owner, "1")),
				"rw hash %s, expected Redisson's reader beside the dead hilock field", h);
			// a renewal round later Redisson's own hold is still renewed
			Thread.sleep(SHORT_WATCHDOG_MS / 2);
			check(pttl(own) > 0 && pttl(name) > 0, "Redisson's reader lost its lease (PTTL %d, hash %d)", pttl(own),
				pttl(name));
			check(!tryOn(jw, wl), "Redisson's writer got in beside Redisson's reader");
			long unlocked = System.nanoTime();
			unlockOn(jr, rl);
			check(!exists(name), "rw hash %s left after Redisson's read unlock (the dead reader's field)", hash(name));
			check(tryOn(jw, wl), "Redisson's writer could not take the freed lock");
			long ms = msSince(unlocked);
			check(!exists(name), "rw hash %s left after the writer's unlock", hash(name));
			return String.format("the killed hilock reader's lease key expired %d ms after its death while Redisson's "
				+ "reader held on; Redisson's read unlock cleared its field, a writer got in %d ms later", gone, ms);
		}
	}

	/** hilock renews only its own read holds: a Redisson reader whose
	 *  client went away without unlocking loses its lease key within the
	 *  watchdog timeout while hilock's reader holds on; hilock's release
	 *  then clears the dead field and frees the lock. */
	static String rwHilockLeavesDeadRedissonReader(String name) throws Exception {
		RedissonClient rX = Interop.client(SHORT_WATCHDOG_MS);
		try (Peer r = new Peer(name, SHORT_WATCHDOG_MS, "read"); JThread jx = new JThread(rX, "doomed-reader");
			JThread jw = new JThread(Interop.rA, "writer")) {
			RLock xl = jlock(rX, "read", name), wl = jlock(Interop.rA, "write", name);
			lockOn(jx, xl);
			String dead = jx.owner(), key = readTimeoutKey(name, dead, 1);
			check(r.ask("acquire 0 -1", "acquired") == 1, "hilock's reader could not join");
			rX.shutdown(0, 2, SECONDS);
			long t0 = System.nanoTime();
			await(() -> pttl(key) == -2, SHORT_WATCHDOG_MS + PROMPT_MS,
				"the dead Redisson reader's lease key %s still has PTTL %d", key, pttl(key));
			long gone = msSince(t0);
			Map<String, String> h = hash(name);
			check(h.equals(mapOf("mode", "read", dead, "1", r.owner, "1")),
				"rw hash %s, expected the dead field beside hilock's reader", h);
			check(pttl(name) > 0, "the hash lost its lease while hilock reads");
			check(!tryOn(jw, wl), "Redisson's writer got in beside hilock's reader");
			check(r.ask("release", "released") == 1, "hilock's read release did not free the lock (dead field left)");
			check(!exists(name), "rw hash %s left after hilock's release", hash(name));
			check(tryOn(jw, wl), "Redisson's writer could not take the freed lock");
			return String.format("the dead Redisson reader's lease key expired %d ms after its client went away; "
				+ "hilock's release cleared its field and freed the lock", gone);
		} finally {
			if (!rX.isShutdown())
				rX.shutdown(0, 2, SECONDS);
		}
	}

	/* ------------------------------------------------------------------
	 * j. Spin lock: mutual exclusion both ways, no pub/sub at all.
	 * ------------------------------------------------------------------ */

	static String spinRedissonWaitsForHilock(String name) throws Exception {
		try (Peer p = new Peer(name, 30_000, "spin"); JThread jt = new JThread(Interop.rA, "spinner")) {
			check(p.ask("acquire 0 -1", "acquired") == 1, "hilock could not take the free spin lock");
			check(hash(name).equals(Map.of(p.owner, "1")), "spin lock hash %s", hash(name));
			RLock lock = jlock(Interop.rA, "spin", name);
			Future<Boolean> f = jt.submit(() -> lock.tryLock(10, SECONDS));
			blocked(f, 800, "Redisson's spin tryLock returned while hilock holds");
			long subs = subscribers(channel(name));
			check(subs == 0, "PUBSUB %s %s is %d with a spin lock held and waited for", numsub(), channel(name), subs);
			try (Ear ear = new Ear(channel(name))) {
				long released = System.nanoTime();
				check(p.ask("release", "released") == 1, "hilock release");
				check(result(f, 15_000), "Redisson's spin tryLock did not get the lock");
				long ms = msSince(released);
				check(ms < 1_000, "Redisson's spinner took %d ms to notice the release (back-off at most 128 ms)", ms);
				Long msg = ear.next(300);
				check(msg == null, "hilock's spin release published %s on %s", msg, channel(name));
				unlockOn(jt, lock);
				return "Redisson's spinner got in " + ms + " ms after hilock's release; nothing published, no subscriber";
			}
		}
	}

	static String spinHilockWaitsForRedisson(String name) throws Exception {
		try (Peer p = new Peer(name, 30_000, "spin"); JThread jt = new JThread(Interop.rA, "holder")) {
			RLock lock = jlock(Interop.rA, "spin", name);
			lockOn(jt, lock);
			check(hash(name).equals(Map.of(jt.owner(), "1")), "spin lock hash %s", hash(name));
			check(p.ask("acquire 0 -1", "acquired") == 0, "hilock got a Redisson-held spin lock");
			p.send("acquire 10000 -1");
			String early = p.poll(800);
			check(early == null, "hilock's spin acquire returned while Redisson holds: %s", early);
			long subs = subscribers(channel(name));
			check(subs == 0, "PUBSUB %s %s is %d while hilock spins", numsub(), channel(name), subs);
			long released = System.nanoTime();
			unlockOn(jt, lock);
			String reply = p.next(15_000);
			long ms = msSince(released);
			check(Child.value(reply, "acquired", "hilock acquire") == 1, "hilock's spin acquire: %s", reply);
			check(ms < 1_000, "hilock took %d ms to notice the release (back-off at most 128 ms)", ms);
			check(!tryOn(jt, lock), "Redisson got in beside hilock");
			check(p.ask("release", "released") == 1 && !exists(name), "hilock release");
			return "hilock's spinner got in " + ms + " ms after Redisson's unlock, no subscriber";
		}
	}

	/* ------------------------------------------------------------------
	 * k. Fenced lock: one token sequence for both sides.
	 * ------------------------------------------------------------------ */

	static long javaToken(RFencedLock l) {
		Long t = l.getToken();
		return t == null ? 0 : t;
	}

	/** hilock's token of its hold, its last token, and Redisson's
	 *  getToken() all agree. */
	static void tokensAgree(Peer p, RFencedLock l, long want, boolean hilockHolds) throws Exception {
		if (hilockHolds) {
			long mine = p.ask("token", "token");
			check(mine == want, "hl_lock_token %d, expected %d", mine, want);
		}
		long last = p.ask("lasttoken", "token"), java = javaToken(l);
		check(last == want && java == want, "hl_lock_last_token %d, Redisson getToken() %d, expected %d", last, java,
			want);
	}

	static String fencedTokens(String name) throws Exception {
		try (Peer p = new Peer(name, 30_000, "fenced"); JThread jt = new JThread(Interop.rA, "fenced")) {
			RFencedLock l = Interop.rA.getFencedLock(name);
			long t = p.ask("lasttoken", "token");
			check(t == javaToken(l), "last token: hilock %d, Redisson %d", t, javaToken(l));
			List<Long> seq = new ArrayList<>();
			// hilock: acquire and re-enter, one token each.
			for (int k = 0; k < 2; k++) {
				check(p.ask("acquire 0 -1", "acquired") == 1, "hilock fenced acquire %d", k);
				tokensAgree(p, l, ++t, true);
				seq.add(t);
			}
			check(hash(name).equals(Map.of(p.owner, "2")), "fenced hash %s", hash(name));
			check(!tryOn(jt, l), "Redisson got in beside hilock");
			tokensAgree(p, l, t, true); // a failed attempt takes no token
			check(p.ask("release", "released") == 0 && p.ask("release", "released") == 1, "hilock releases");
			// Redisson: lockAndGetToken, a plain lock() re-entry, tryLockAndGetToken re-entry.
			long a = jt.call(() -> l.lockAndGetToken());
			check(a == ++t, "Redisson lockAndGetToken() %d, expected %d", a, t);
			tokensAgree(p, l, t, false);
			seq.add(a);
			lockOn(jt, l);
			tokensAgree(p, l, ++t, false);
			seq.add(t);
			check(p.ask("acquire 0 -1", "acquired") == 0, "hilock got in beside Redisson");
			Long b = jt.call(() -> l.tryLockAndGetToken(1, SECONDS));
			check(b != null && b == ++t, "Redisson tryLockAndGetToken re-entry %s, expected %d", b, t);
			tokensAgree(p, l, t, false);
			seq.add(b);
			check(hash(name).equals(Map.of(jt.owner(), "3")), "fenced hash %s", hash(name));
			for (int k = 0; k < 3; k++)
				unlockOn(jt, l);
			// hilock again, then Redisson again.
			check(p.ask("acquire 0 -1", "acquired") == 1, "hilock fenced acquire after Redisson");
			tokensAgree(p, l, ++t, true);
			seq.add(t);
			check(p.ask("release", "released") == 1, "hilock release");
			Long c = jt.call(() -> {
				Long x = l.tryLockAndGetToken(1, SECONDS);
				if (x != null)
					l.unlock();
				return x;
			});
			check(c != null && c == ++t, "Redisson tryLockAndGetToken %s, expected %d", c, t);
			seq.add(c);
			check(p.ask("lasttoken", "token") == t, "hilock's last token behind Redisson's");
			check(!exists(name) && exists(tokenKey(name)), "fenced hash left, or the token key gone");
			return "tokens " + seq + " (hilock, hilock re-entry, Redisson x3, hilock, Redisson) strictly increasing; "
				+ "hl_lock_token, hl_lock_last_token and getToken() agree at each step" + onWhat(name);
		}
	}

	static String fencedRedissonWaitsForHilock(String name) throws Exception {
		try (Peer p = new Peer(name, 30_000, "fenced"); JThread jt = new JThread(Interop.rA, "fenced-waiter");
			Ear ear = new Ear(channel(name))) {
			RFencedLock l = Interop.rA.getFencedLock(name);
			check(p.ask("acquire 0 -1", "acquired") == 1, "hilock could not take the free fenced lock");
			long mine = p.ask("token", "token");
			Future<Long> f = jt.submit(() -> l.tryLockAndGetToken(10, SECONDS));
			blocked(f, 800, "Redisson's tryLockAndGetToken returned while hilock holds");
			long released = System.nanoTime();
			check(p.ask("release", "released") == 1, "hilock release");
			Long got = result(f, 15_000);
			long ms = msSince(released);
			check(got != null && got == mine + 1, "Redisson's token %s after hilock's %d", got, mine);
			check(ms < PROMPT_MS, "Redisson acquired %d ms after hilock's release", ms);
			Long msg = ear.next(PROMPT_MS);
			check(msg != null && msg == 0L, "hilock's fenced release published %s on %s, expected 0", msg, channel(name));
			check(p.ask("lasttoken", "token") == got, "hilock's last token is not Redisson's");
			unlockOn(jt, l);
			return String.format("Redisson woke %d ms after hilock's release (\"0\"), token %d after hilock's %d%s", ms,
				got, mine, onWhat(name));
		}
	}

	static String fencedHilockWaitsForRedisson(String name) throws Exception {
		try (Peer p = new Peer(name, 30_000, "fenced"); JThread jt = new JThread(Interop.rA, "fenced-holder")) {
			RFencedLock l = Interop.rA.getFencedLock(name);
			long theirs = jt.call(() -> l.lockAndGetToken());
			long before = subscribers(channel(name));
			p.send("acquire 10000 -1");
			String early = p.poll(800);
			check(early == null, "hilock acquire returned while Redisson holds: %s", early);
			check(subscribers(channel(name)) > before, "hilock's fenced waiter is not subscribed on %s", channel(name));
			long released = System.nanoTime();
			unlockOn(jt, l);
			String reply = p.next(15_000);
			long ms = msSince(released);
			check(Child.value(reply, "acquired", "hilock acquire") == 1, "hilock's fenced acquire: %s", reply);
			check(ms < PROMPT_MS, "hilock acquired %d ms after Redisson's unlock", ms);
			long mine = p.ask("token", "token");
			check(mine == theirs + 1 && javaToken(l) == mine, "hilock's token %d after Redisson's %d (getToken %d)", mine,
				theirs, javaToken(l));
			check(p.ask("release", "released") == 1, "hilock release");
			return String.format("hilock woke %d ms after Redisson's unlock, token %d after Redisson's %d%s", ms, mine,
				theirs, onWhat(name));
		}
	}

	/* ------------------------------------------------------------------
	 * l. Kinds that share the reentrant lock's hash exclude each other
	 *    across the two implementations.
	 * ------------------------------------------------------------------ */

	static final List<String> HASH_KINDS = List.of("reentrant", "fair", "spin", "fenced");

	static String crossKindExclusion(String name) throws Exception {
		try (Peer p = new Peer(name, 30_000); JThread jt = new JThread(Interop.rA, "cross")) {
			int pairs = 0;
			for (String jk : HASH_KINDS)
				for (String hk : HASH_KINDS) {
					if (jk.equals(hk))
						continue;
					RLock l = jlock(Interop.rA, jk, name);
					p.call("use " + hk);
					check(jt.call(() -> l.tryLock(5, SECONDS)), "Redisson %s could not take the free lock", jk);
					check(p.ask("acquire 0 -1", "acquired") == 0, "hilock %s got in beside Redisson %s", hk, jk);
					check(p.ask("acquire 200 -1", "acquired") == 0, "hilock %s (200 ms) got in beside Redisson %s", hk,
						jk);
					unlockOn(jt, l);
					check(queue(name).isEmpty() && timeoutsSize(name) == 0, "fair queue %s left by a hilock %s waiter",
						queue(name), hk);
					check(p.ask("acquire 0 -1", "acquired") == 1, "hilock %s could not take the free lock", hk);
					check(!tryOn(jt, l), "Redisson %s got in beside hilock %s", jk, hk);
					check(p.ask("release", "released") == 1, "hilock %s release", hk);
					check(!exists(name) && queue(name).isEmpty() && timeoutsSize(name) == 0,
						"lock or fair queue left after hilock %s and Redisson %s", hk, jk);
					pairs++;
				}
			return pairs + " ordered pairs of " + HASH_KINDS + " exclude each other both ways";
		}
	}

	/** The reentrant and fenced locks share the channel and message too:
	 *  each wakes the other's waiter. */
	static String crossKindWakeUps(String name) throws Exception {
		try (Peer p = new Peer(name, 30_000, "fenced"); JThread jt = new JThread(Interop.rA, "cross")) {
			RLock plain = jlock(Interop.rA, "reentrant", name);
			RFencedLock fenced = Interop.rA.getFencedLock(name);
			lockOn(jt, plain);
			p.send("acquire 10000 -1");
			String early = p.poll(800);
			check(early == null, "hilock fenced acquire returned beside Redisson's RLock: %s", early);
			long released = System.nanoTime();
			unlockOn(jt, plain);
			String reply = p.next(15_000);
			long ms1 = msSince(released);
			check(Child.value(reply, "acquired", "hilock acquire") == 1 && ms1 < PROMPT_MS,
				"hilock's fenced waiter after Redisson's RLock unlock: %s after %d ms", reply, ms1);
			check(p.ask("release", "released") == 1, "hilock release");
			p.call("use reentrant");
			check(p.ask("acquire 0 -1", "acquired") == 1, "hilock could not take the free lock");
			Future<Long> f = jt.submit(() -> fenced.tryLockAndGetToken(10, SECONDS));
			blocked(f, 800, "Redisson's fenced lock got in beside hilock's reentrant lock");
			released = System.nanoTime();
			check(p.ask("release", "released") == 1, "hilock release");
			Long tok = result(f, 15_000);
			long ms2 = msSince(released);
			check(tok != null && ms2 < PROMPT_MS, "Redisson's fenced waiter after hilock's release: token %s after %d ms",
				tok, ms2);
			unlockOn(jt, fenced);
			return String.format("hilock fenced woke %d ms after Redisson's RLock unlock; Redisson fenced woke %d ms "
				+ "after hilock's reentrant release", ms1, ms2);
		}
	}

	/* ------------------------------------------------------------------
	 * m. Contention per kind, every critical section recorded and checked
	 *    for overlaps.
	 * ------------------------------------------------------------------ */

	/** One line of the section record (peer.c's format): one write on an
	 *  O_APPEND channel. */
	static void csLine(FileChannel ch, String what, String tag) throws java.io.IOException {
		ByteBuffer b = ByteBuffer.wrap((what + " " + tag + "\n").getBytes(UTF_8));
		check(ch.write(b) == b.limit(), "short write of the section record");
	}

	/** What one Java contention thread went through. */
	static final class Work {
		long retries, lost, maxWait;
	}

	static Work javaContendKind(RedissonClient rc, String kind, String name, Path counter, Path cs, String tag,
		int iters, CountDownLatch go) throws Exception {
		RLock lock = jlock(rc, kind, name);
		boolean reader = kind.equals("read"), fenced = kind.equals("fenced");
		Work w = new Work();
		go.await();
		long progress = System.nanoTime();
		try (FileChannel ch = FileChannel.open(counter, StandardOpenOption.READ, StandardOpenOption.WRITE);
			FileChannel log = FileChannel.open(cs, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
				StandardOpenOption.APPEND)) {
			int done = 0;
			while (done < iters) {
				check(msSince(progress) < 60_000, "Redisson %s thread made no progress for 60 s after %d of %d", kind,
					done, iters);
				String t = tag;
				long tTry = System.nanoTime();
				try {
					if (fenced) {
						Long token = ((RFencedLock) lock).tryLockAndGetToken(20, SECONDS);
						if (token == null) {
							w.retries++;
							continue;
						}
						t = tag + "#" + token;
					} else if (!lock.tryLock(20, SECONDS)) {
						w.retries++;
						continue;
					}
				} catch (RuntimeException e) {
					w.retries++;
					continue;
				} finally {
					w.maxWait = Math.max(w.maxWait, msSince(tTry));
				}
				csLine(log, "enter", t);
				long v = Interop.counterRead(ch);
				Thread.sleep(reader ? 2 : 1);
				if (!reader)
					Interop.counterWrite(ch, v + 1);
				csLine(log, "leave", t);
				done++;
				progress = System.nanoTime();
				try {
					lock.unlock();
				} catch (IllegalMonitorStateException e) {
					w.lost++;
				}
				Thread.sleep(CONTEND_PAUSE_MS);
			}
		}
		return w;
	}

	/** The verdict on a section record. */
	static final class Sections {
		int count, handoffs, maxReaders, mixedReads;
		long firstToken = -1, lastToken = -1;
	}

	/**
	 * Check a section record: every "enter T" is followed by its "leave T"
	 * before any other enter, except that readers ("r:" tags) may overlap
	 * each other (never a writer). Tags starting "c" (after "r:"/"w:") are
	 * hilock's, "j" Redisson's; a fenced tag ends "#token", and tokens
	 * must strictly increase in the order of the enters.
	 */
	static Sections verify(Path cs) throws java.io.IOException {
		Sections s = new Sections();
		Set<String> active = new HashSet<>();
		String lastSide = null;
		int n = 0;
		for (String line : Files.readAllLines(cs, UTF_8)) {
			n++;
			String[] w = line.split(" ", 2);
			check(w.length == 2 && (w[0].equals("enter") || w[0].equals("leave")), "line %d of %s: \"%s\"", n, cs, line);
			String tag = w[1];
			boolean read = tag.startsWith("r:");
			String who = tag.replaceFirst("^[rw]:", "");
			String side = who.startsWith("c") ? "hilock" : "Redisson";
			if (w[0].equals("enter")) {
				check(!active.contains(tag), "line %d: %s entered twice", n, tag);
				for (String a : active)
					check(read && a.startsWith("r:"), "line %d: %s entered while %s holds (overlap)", n, tag, a);
				if (read)
					for (String a : active)
						if (!a.replaceFirst("^r:", "").substring(0, 1).equals(who.substring(0, 1))) {
							s.mixedReads++;
							break;
						}
				active.add(tag);
				s.maxReaders = Math.max(s.maxReaders, read ? active.size() : 0);
				int hash = who.indexOf('#');
				if (hash > 0) {
					long tok = Long.parseLong(who.substring(hash + 1));
					check(tok > s.lastToken, "line %d: token %d after %d (not increasing)", n, tok, s.lastToken);
					if (s.firstToken < 0)
						s.firstToken = tok;
					s.lastToken = tok;
				}
				if (lastSide != null && !lastSide.equals(side))
					s.handoffs++;
				lastSide = side;
			} else {
				check(active.remove(tag), "line %d: %s left without entering", n, tag);
				s.count++;
			}
		}
		check(active.isEmpty(), "%s still inside at the end of %s", active, cs);
		return s;
	}

	/**
	 * Two hilock peer processes (contend 100) and four Redisson threads
	 * (two per client) x 50 on one lock of the kind, each pausing 2 ms
	 * between its holds; each hold increments
	 * the shared counter file (a reader only reads it) and is recorded in
	 * a section file, checked by verify(). "rw": one hilock writer and one
	 * reader, Redisson writers and readers on both clients.
	 */
	static final long CONTEND_MAX_WAIT_MS = 5_000;
	/** Each contender's pause after a release, outside the lock, on both
	 *  sides: a spin lock is otherwise re-taken at once by its releaser
	 *  (nobody is told it is free), and a round could end with the sides
	 *  having taken turns only at its start and end. */
	static final long CONTEND_PAUSE_MS = 2;
	/** Hand-offs between the sides a round must show (of 400 holds; 49 to
	 *  270 measured). */
	static final int CONTEND_MIN_HANDOFFS = 20;

	static String kindContention(String kind, String name) throws Exception {
		final boolean rw = kind.equals("rw");
		final int cIters = 100, jIters = 50;
		Path counter = Interop.counterFile("m-" + kind);
		Path cs = Interop.workDir.resolve("sections-" + topology + "-" + kind);
		Files.deleteIfExists(cs);
		Files.createFile(cs);
		List<Peer> peers = new ArrayList<>();
		ExecutorService pool = Executors.newFixedThreadPool(4);
		CountDownLatch go = new CountDownLatch(1);
		try {
			long writes = 0;
			for (int i = 0; i < 2; i++) {
				String k = rw ? (i == 0 ? "write" : "read") : kind;
				peers.add(new Peer(name, 30_000, k));
				if (!k.equals("read"))
					writes += cIters;
			}
			List<Future<Work>> jw = new ArrayList<>();
			for (int t = 0; t < 4; t++) {
				RedissonClient rc = t < 2 ? Interop.rA : Interop.rB;
				String k = rw ? (t % 2 == 0 ? "write" : "read") : kind;
				String tag = (rw ? k.substring(0, 1) + ":" : "") + "j" + t;
				if (!k.equals("read"))
					writes += jIters;
				jw.add(pool.submit(() -> javaContendKind(rc, k, name, counter, cs, tag, jIters, go)));
			}
			long t0 = System.nanoTime();
			for (int i = 0; i < peers.size(); i++)
				peers.get(i).send("contend " + cIters + " " + counter + " " + cs + " "
					+ (rw ? (i == 0 ? "w:" : "r:") : "") + "c" + i + " " + CONTEND_PAUSE_MS);
			go.countDown();
			long cRetries = 0, jRetries = 0, lost = 0, cWait = 0, jWait = 0;
			for (Peer p : peers) {
				String r = p.next(110_000);
				check(r.startsWith("ok done="), "hilock %s peer: %s", kind, r);
				cRetries += Child.value(r, "retries", "contend");
				lost += Child.value(r, "lost", "contend");
				cWait = Math.max(cWait, Child.value(r, "maxwait", "contend"));
			}
			for (Future<Work> f : jw) {
				Work w = result(f, Math.max(1, 110_000 - msSince(t0)));
				jRetries += w.retries;
				lost += w.lost;
				jWait = Math.max(jWait, w.maxWait);
			}
			long ms = msSince(t0);
			long total = Interop.counterValue(counter);
			check(total == writes, "counter %d, expected %d", total, writes);
			check(lost == 0, "%d holds lost", lost);
			// A few holds of a few ms each stand before any waiter: a wait of
			// seconds means a waiter slept through its wake-up (on the 30 s
			// lease, or a time-out) while the lock was free.
			check(cWait < CONTEND_MAX_WAIT_MS && jWait < CONTEND_MAX_WAIT_MS,
				"longest wait for the lock: hilock %d ms, Redisson %d ms (a wake-up missed?)", cWait, jWait);
			Sections s = verify(cs);
			check(s.count == 2 * cIters + 4 * jIters, "%d sections recorded, expected %d", s.count,
				2 * cIters + 4 * jIters);
			check(s.handoffs >= CONTEND_MIN_HANDOFFS, "hilock and Redisson took turns only %d times (at least %d "
				+ "expected); the run proves little", s.handoffs, CONTEND_MIN_HANDOFFS);
			check(!exists(name), "%s still locked at the end", name);
			if (kind.equals("fair"))
				check(queue(name).isEmpty() && timeoutsSize(name) == 0, "fair queue %s, %d deadlines left", queue(name),
					timeoutsSize(name));
			StringBuilder out = new StringBuilder(String.format("%s%s: %d sections, no overlap, counter %d exact, "
				+ "%d hilock<->Redisson hand-offs", name, where(name), s.count, total, s.handoffs));
			if (rw) {
				check(s.mixedReads > 0, "no hilock reader ever read beside a Redisson reader; the run proves nothing");
				out.append(String.format(", up to %d readers at once, %d reads beside the other side's", s.maxReaders,
					s.mixedReads));
			}
			if (kind.equals("fenced"))
				out.append(String.format(", tokens %d..%d strictly increasing", s.firstToken, s.lastToken));
			out.append(String.format(", longest wait hilock %d / Redisson %d ms", cWait, jWait));
			if (cRetries + jRetries > 0)
				out.append(String.format(", attempts timed out: hilock %d, Redisson %d", cRetries, jRetries));
			return out.append(String.format(" (2 hilock procs x %d + 4 Redisson threads x %d; %.1f s)", cIters, jIters,
				ms / 1000.0)).toString();
		} finally {
			go.countDown();
			pool.shutdownNow();
			closeAll(peers);
		}
	}

	/* ------------------------------------------------------------------
	 * q. Non-reentrant locks (Redisson 4.4.0+): mutual exclusion and
	 *    wake-ups both ways, and a second acquire by the holder refused
	 *    on both sides without a second count in the hash.
	 * ------------------------------------------------------------------ */

	static String nrRedissonWaitsForHilock(String kind, String name) throws Exception {
		try (Peer p = new Peer(name, 30_000, kind); JThread jt = new JThread(Interop.rA, "nr-waiter")) {
			check(p.ask("acquire 0 -1", "acquired") == 1, "hilock could not take the free %s lock", kind);
			String again = p.call("acquire 0 -1");
			check(again.startsWith("err HL_EDEADLK"), "hilock's second acquire of its own %s lock: %s", kind, again);
			check(hash(name).equals(Map.of(p.owner, "1")), "%s lock hash %s after hilock's refused re-acquire", kind,
				hash(name));
			RLock lock = jlock(Interop.rA, kind, name);
			Future<Boolean> f = jt.submit(() -> lock.tryLock(10, SECONDS));
			blocked(f, 800, "Redisson's %s tryLock returned while hilock holds", kind);
			long released = System.nanoTime();
			check(p.ask("release", "released") == 1, "hilock release");
			check(result(f, 15_000), "Redisson's %s tryLock(10 s) gave up after hilock released", kind);
			long ms = msSince(released);
			check(ms < PROMPT_MS, "Redisson acquired %d ms after hilock's release (not woken)", ms);
			check(hash(name).equals(Map.of(jt.owner(), "1")), "%s lock hash %s with Redisson holding", kind, hash(name));
			String refused = jt.call(() -> {
				try {
					return lock.tryLock(0, SECONDS) ? "acquired again" : "returned false";
				} catch (RuntimeException e) {
					return e.getClass().getSimpleName();
				}
			});
			// PROTOCOL 2.1: the script's NON_REENTRANT_REACQUIRE error
			check(refused.equals("IllegalMonitorStateException") && hash(name).equals(Map.of(jt.owner(), "1")),
				"Redisson's second tryLock of its own %s lock: %s, hash %s", kind, refused, hash(name));
			check(p.ask("acquire 0 -1", "acquired") == 0, "hilock got in beside Redisson");
			unlockOn(jt, lock);
			check(!exists(name), "%s lock hash %s left after Redisson's unlock", kind, hash(name));
			return String.format("hilock's re-acquire refused (HL_EDEADLK), Redisson's too (%s); Redisson woke %d ms "
				+ "after hilock's release%s", refused, ms, onWhat(name));
		}
	}

	static String nrHilockWaitsForRedisson(String kind, String name) throws Exception {
		try (Peer p = new Peer(name, 30_000, kind); JThread jt = new JThread(Interop.rA, "nr-holder")) {
			RLock lock = jlock(Interop.rA, kind, name);
			lockOn(jt, lock);
			check(hash(name).equals(Map.of(jt.owner(), "1")), "%s lock hash %s", kind, hash(name));
			check(p.ask("acquire 0 -1", "acquired") == 0, "hilock got a Redisson-held %s lock", kind);
			p.send("acquire 10000 -1");
			String early = p.poll(800);
			check(early == null, "hilock's %s acquire returned while Redisson holds: %s", kind, early);
			long released = System.nanoTime();
			unlockOn(jt, lock);
			String reply = p.next(15_000);
			long ms = msSince(released);
			check(Child.value(reply, "acquired", "hilock acquire") == 1, "hilock's %s acquire: %s", kind, reply);
			check(ms < PROMPT_MS, "hilock acquired %d ms after Redisson's unlock", ms);
			check(!tryOn(jt, lock), "Redisson got in beside hilock");
			check(p.ask("release", "released") == 1 && !exists(name), "hilock release");
			return String.format("hilock woke %d ms after Redisson's unlock%s", ms, onWhat(name));
		}
	}

	/* ------------------------------------------------------------------ */

	/** Register the kinds' scenarios of the topology under test. */
	static void add(Map<String, Scenario> sc) {
		String n = "interop:";
		sc.put("h fair redisson-waits-for-hilock", () -> fairRedissonWaitsForHilock(n + "h:wait1"));
		sc.put("h fair hilock-waits-for-redisson", () -> fairHilockWaitsForRedisson(n + "h:wait2"));
		sc.put("h fair fifo-mixed-queue", () -> fairFifo(n + "h:fifo"));
		sc.put("h fair hilock-gives-up", () -> fairHilockGivesUp(n + "h:giveup1"));
		sc.put("h fair redisson-gives-up", () -> fairRedissonGivesUp(n + "h:giveup2"));
		sc.put("i rw readers-share", () -> rwReadersShare(n + "i:share"));
		sc.put("i rw hilock-writer-waits-for-redisson-readers", () -> rwHilockWriterWaits(n + "i:wait1"));
		sc.put("i rw redisson-writer-waits-for-hilock-readers", () -> rwRedissonWriterWaits(n + "i:wait2"));
		sc.put("i rw hilock-readers-wait-for-redisson-writer", () -> rwHilockReadersWait(n + "i:wait3"));
		sc.put("i rw redisson-readers-wait-for-hilock-writer", () -> rwRedissonReadersWait(n + "i:wait4"));
		sc.put("i rw hilock-writer-takes-read", () -> rwHilockWriterTakesRead(n + "i:wr1"));
		sc.put("i rw redisson-writer-takes-read", () -> rwRedissonWriterTakesRead(n + "i:wr2"));
		sc.put("i rw hilock-read-watchdog", () -> rwHilockReadRenewal(n + "i:renew1"));
		sc.put("i rw redisson-read-watchdog", () -> rwRedissonReadRenewal(n + "i:renew2"));
		// the one scenario whose outcome depends on the Redisson version
		if (Interop.redissonAtLeast(4, 4))
			sc.put("i rw redisson-leaves-dead-hilock-reader", () -> rwRedissonLeavesDeadHilockReader(n + "i:dead1"));
		else
			sc.put("i rw redisson-4.3.1-renews-dead-hilock-reader", () -> rwRedissonRenewsDeadHilockReader(n + "i:dead1"));
		sc.put("i rw hilock-leaves-dead-redisson-reader", () -> rwHilockLeavesDeadRedissonReader(n + "i:dead2"));
		sc.put("j spin redisson-waits-for-hilock", () -> spinRedissonWaitsForHilock(n + "j:wait1"));
		sc.put("j spin hilock-waits-for-redisson", () -> spinHilockWaitsForRedisson(n + "j:wait2"));
		sc.put("k fenced tokens", () -> fencedTokens(n + "k:tokens"));
		sc.put("k fenced redisson-waits-for-hilock", () -> fencedRedissonWaitsForHilock(n + "k:wait1"));
		sc.put("k fenced hilock-waits-for-redisson", () -> fencedHilockWaitsForRedisson(n + "k:wait2"));
		sc.put("l cross-kind exclusion", () -> crossKindExclusion(n + "l:cross"));
		sc.put("l cross-kind wake-ups", () -> crossKindWakeUps(n + "l:wake"));
		for (String k : List.of("fair", "spin", "fenced", "rw"))
			sc.put("m mutual-exclusion [" + k + "]", () -> kindContention(k, n + "m:" + k));
		if (Interop.redissonAtLeast(4, 4))
			for (String k : List.of("nonreentrant", "fair-nonreentrant")) {
				sc.put("m mutual-exclusion [" + k + "]", () -> kindContention(k, n + "m:" + k));
				sc.put("q " + k + " redisson-waits-for-hilock", () -> nrRedissonWaitsForHilock(k, n + "q:" + k + ":1"));
				sc.put("q " + k + " hilock-waits-for-redisson", () -> nrHilockWaitsForRedisson(k, n + "q:" + k + ":2"));
			}
	}
}
