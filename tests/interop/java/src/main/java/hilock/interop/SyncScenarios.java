package hilock.interop;

import static hilock.interop.Interop.PROMPT_MS;
import static hilock.interop.Interop.check;
import static hilock.interop.Interop.msSince;
import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.SECONDS;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeoutException;

import org.redisson.api.RAtomicLong;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;
import org.redisson.api.RTopic;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.LongCodec;
import org.redisson.client.codec.StringCodec;

/**
 * The synchronizers' scenarios of `make interop` (n, o, p): hilock's
 * hl_semaphore, hl_expsem and hl_latch (through the peer's sem_, xs_ and
 * la_ commands) against Redisson 4.3.1's RSemaphore,
 * RPermitExpirableSemaphore and RCountDownLatch on the same names.
 */
final class SyncScenarios {
	private SyncScenarios() {
	}

	/** Add the scenarios of the topology under test to sc. */
	static void add(Map<String, Interop.Scenario> sc) {
		sc.put("n semaphore-hilock-waits-for-redisson", SyncScenarios::semHilockWaits);
		sc.put("n semaphore-redisson-waits-for-hilock", SyncScenarios::semRedissonWaits);
		sc.put("n semaphore-contention", SyncScenarios::semContention);
		sc.put("o expsem-hilock-waits-for-redisson-lease", SyncScenarios::xsHilockWaits);
		sc.put("o expsem-redisson-waits-for-hilock-lease", SyncScenarios::xsRedissonWaits);
		sc.put("p latch-count-down-both", SyncScenarios::latchCountDownBoth);
		sc.put("p latch-delete", SyncScenarios::latchDelete);
	}

	/** Redisson's semaphore channel: prefixName("redisson_sc", name). */
	static String semChannel(String name) {
		return name.contains("{") ? "redisson_sc:" + name : "redisson_sc:{" + name + "}";
	}

	static String latchChannel(String name) {
		return "redisson_countdownlatch__channel__{" + name + "}";
	}

	/** A listener's view of a channel: sharded in a cluster (Redisson 4.3.1
	 *  publishes there with SPUBLISH on Redis 7, as for the locks). */
	static RTopic topic(String channel, org.redisson.client.codec.Codec codec) {
		return Interop.topology.equals("cluster") ? Interop.rB.getShardedTopic(channel, codec)
			: Interop.rB.getTopic(channel, codec);
	}

	static void clean(String... keys) {
		Interop.rA.getKeys().delete(keys);
	}

	/** The reply of a command sent earlier, which must not have come yet
	 *  (the peer is blocked in a wait): null after ms. */
	static void stillBlocked(Interop.Peer p, long ms, String what) throws InterruptedException {
		String early = p.poll(ms);
		check(early == null, "%s returned while it should wait: %s", what, early);
	}

	/* ------------------------------------------------------------------
	 * n. Semaphore (RSemaphore): the counter <name>, channel
	 *    redisson_sc:{name}, payload the new count.
	 * ------------------------------------------------------------------ */
	static String semHilockWaits() throws Exception {
		final String name = "interop:n:sem1";
		clean(name, name + ":inuse");
		BlockingQueue<Long> heard = new LinkedBlockingQueue<>();
		RTopic topic = topic(semChannel(name), LongCodec.INSTANCE);
		int listener = topic.addListener(Long.class, (ch, msg) -> heard.add(msg));
		try (Interop.Peer p = new Interop.Peer(name, 30_000)) {
			RSemaphore sem = Interop.rA.getSemaphore(name);
			check(sem.trySetPermits(2), "Redisson trySetPermits(2) on a fresh name failed");
			check(p.ask("sem_set 5", "set") == 0, "hilock set the permits of an existing semaphore");
			check(p.ask("sem_avail", "available") == 2, "hilock does not see Redisson's 2 permits");
			check(sem.tryAcquire(2), "Redisson could not take the 2 permits");
			check(p.ask("sem_acquire 1 0", "acquired") == 0, "hilock took a permit of an empty semaphore");
			heard.clear();
			p.send("sem_acquire 1 10000");
			stillBlocked(p, 800, "hilock sem_acquire");
			long released = System.nanoTime();
			sem.release(1);
			String r = p.next(15_000);
			long woke = msSince(released);
			check(Interop.Child.value(r, "acquired", "sem_acquire") == 1, "hilock did not get the released permit: %s", r);
			check(woke < PROMPT_MS, "hilock acquired %d ms after Redisson's release (not woken by the message)", woke);
			Long msg = heard.poll(5, SECONDS);
			check(msg != null && msg == 1, "heard %s on %s after Redisson's release, expected 1", msg, semChannel(name));
			check(sem.availablePermits() == 0 && p.ask("sem_avail", "available") == 0,
				"available after the hand-off: Redisson %d, hilock %d", sem.availablePermits(), p.ask("sem_avail", "available"));
			String over = p.call("sem_release 2");
			check(over.startsWith("err HL_ENOTHELD"), "hilock released 2 permits holding 1: %s", over);
			check(p.ask("sem_release 1", "released") == 1, "hilock release 1");
			sem.release(1);
			check(sem.availablePermits() == 2 && p.ask("sem_avail", "available") == 2, "not back to 2 permits");
			return String.format("hilock woke %d ms after Redisson's release; heard 1 on %s; hilock's release of 2 "
				+ "while holding 1: HL_ENOTHELD", woke, semChannel(name));
		} finally {
			topic.removeListener(listener);
		}
	}

	static String semRedissonWaits() throws Exception {
		final String name = "interop:n:sem2";
		clean(name, name + ":inuse");
		BlockingQueue<Long> heard = new LinkedBlockingQueue<>();
		RTopic topic = topic(semChannel(name), LongCodec.INSTANCE);
		int listener = topic.addListener(Long.class, (ch, msg) -> heard.add(msg));
		ExecutorService one = Executors.newSingleThreadExecutor();
		try (Interop.Peer p = new Interop.Peer(name, 30_000)) {
			RSemaphore sem = Interop.rA.getSemaphore(name);
			check(p.ask("sem_set 2", "set") == 1, "hilock could not set the permits of a fresh semaphore");
			check(!sem.trySetPermits(7), "Redisson set the permits of an existing semaphore");
			check(sem.availablePermits() == 2, "Redisson sees %d permits, expected 2", sem.availablePermits());
			Long set = heard.poll(5, SECONDS);
			check(set != null && set == 2, "heard %s after hilock's trySetPermits(2), expected 2", set);
			check(p.ask("sem_acquire 2 0", "acquired") == 1, "hilock could not take the 2 permits");
			check(!sem.tryAcquire(1), "Redisson took a permit while hilock holds both");
			Future<Long> f = one.submit(() -> sem.tryAcquire(1, 10, SECONDS) ? System.nanoTime() : -1L);
			try {
				f.get(800, MILLISECONDS);
				throw new Interop.Fail("Redisson tryAcquire returned while hilock holds both permits");
			} catch (TimeoutException expectedBlock) {
				// blocked, as it should be
			}
			heard.clear();
			long released = System.nanoTime();
			check(p.ask("sem_release 1", "released") == 1, "hilock release 1");
			long at = f.get(15, SECONDS);
			check(at > 0, "Redisson tryAcquire(10 s) gave up after hilock released");
			long woke = (at - released) / 1_000_000;
			check(woke < PROMPT_MS, "Redisson acquired %d ms after hilock's release (not woken by the message)", woke);
			Long msg = heard.poll(5, SECONDS);
			check(msg != null && msg == 1, "heard %s after hilock's release, expected the new count 1", msg);
			check(sem.availablePermits() == 0 && p.ask("sem_avail", "available") == 0, "available not 0 after the hand-off");
			sem.release(1);
			check(p.ask("sem_release 1", "released") == 1, "hilock release of its second permit");
			check(sem.availablePermits() == 2 && p.ask("sem_avail", "available") == 2, "not back to 2 permits");
			return String.format("Redisson woke %d ms after hilock's release; heard 2 (set) and 1 (release) on %s", woke,
				semChannel(name));
		} finally {
			one.shutdownNow();
			topic.removeListener(listener);
		}
	}

	/** Both sides take and give back permits of a semaphore of 2; each
	 *  holder adds 1 to NAME:inuse while it holds, and nobody may see more
	 *  than 2 there. */
	static String semContention() throws Exception {
		final String name = "interop:n:sem3", inuseName = name + ":inuse";
		final int cProcs = 2, cIters = 100, jThreads = 2, jIters = 100;
		clean(name, inuseName);
		check(Interop.rA.getSemaphore(name).trySetPermits(2), "Redisson trySetPermits(2)");
		List<Interop.Peer> peers = new ArrayList<>();
		ExecutorService pool = Executors.newFixedThreadPool(jThreads);
		CountDownLatch go = new CountDownLatch(1);
		try {
			for (int i = 0; i < cProcs; i++)
				peers.add(new Interop.Peer(name, 30_000));
			List<Future<Long>> ws = new ArrayList<>();
			for (int w = 0; w < jThreads; w++) {
				final RedissonClient rc = w == 0 ? Interop.rA : Interop.rB;
				ws.add(pool.submit(() -> {
					RSemaphore sem = rc.getSemaphore(name);
					RAtomicLong inuse = rc.getAtomicLong(inuseName);
					long max = 0;
					go.await();
					for (int i = 0; i < jIters; i++) {
						check(sem.tryAcquire(1, 20, SECONDS), "Redisson tryAcquire(20 s) timed out");
						long v = inuse.incrementAndGet();
						max = Math.max(max, v);
						Thread.sleep(1);
						inuse.decrementAndGet();
						sem.release(1);
					}
					return max;
				}));
			}
			for (Interop.Peer p : peers)
				p.send("sem_contend " + cIters);
			go.countDown();
			long max = 0, hMax = 0, jMax = 0;
			for (Future<Long> f : ws)
				jMax = Math.max(jMax, f.get(100, SECONDS));
			for (Interop.Peer p : peers) {
				String r = p.next(100_000);
				check(Interop.Child.value(r, "done", "sem_contend") == cIters, "hilock sem_contend: %s", r);
				hMax = Math.max(hMax, Interop.Child.value(r, "max", "sem_contend"));
			}
			max = Math.max(hMax, jMax);
			check(max <= 2, "%d holders at once of a semaphore of 2 (hilock saw %d, Redisson %d)", max, hMax, jMax);
			check(max == 2, "never 2 holders at once: the run proves nothing");
			long avail = Interop.rA.getSemaphore(name).availablePermits();
			long inuse = Interop.rA.getAtomicLong(inuseName).get();
			check(avail == 2 && inuse == 0, "at the end: %d permits available (expected 2), %d in use (expected 0)",
				avail, inuse);
			check(peers.get(0).ask("sem_avail", "available") == 2, "hilock does not see 2 permits at the end");
			return String.format("%d hilock procs x %d + %d Redisson threads x %d acquisitions, at most %d holders "
				+ "(hilock saw %d, Redisson %d), 2 permits at the end", cProcs, cIters, jThreads, jIters, max, hMax, jMax);
		} finally {
			pool.shutdownNow();
			for (Interop.Peer p : peers)
				p.close();
		}
	}

	/* ------------------------------------------------------------------
	 * o. Permit-expirable semaphore (RPermitExpirableSemaphore): <name>
	 *    and the zset {name}:timeout of the permits out.
	 * ------------------------------------------------------------------ */
	static final long LEASE_MS = 1500;

	static String xsKeys(String name) {
		return "{" + name + "}:timeout";
	}

	static void xsCounts(Interop.Peer p, RPermitExpirableSemaphore sem, long avail, long out, String when)
		throws InterruptedException {
		long ja = sem.availablePermits(), jo = sem.acquiredPermits(), jp = sem.getPermits();
		long ha = p.ask("xs_avail", "available"), ho = p.ask("xs_acquired", "acquired"),
			hp = p.ask("xs_permits", "permits");
		check(ja == avail && ha == avail && jo == out && ho == out && jp == avail + out && hp == avail + out,
			"%s: Redisson available/acquired/permits %d/%d/%d, hilock %d/%d/%d, expected %d/%d/%d", when, ja, jo, jp,
			ha, ho, hp, avail, out, avail + out);
	}

	static String xsHilockWaits() throws Exception {
		final String name = "interop:o:xs1";
		clean(name, xsKeys(name));
		try (Interop.Peer p = new Interop.Peer(name, 30_000)) {
			RPermitExpirableSemaphore sem = Interop.rA.getPermitExpirableSemaphore(name);
			check(sem.trySetPermits(1), "Redisson trySetPermits(1) on a fresh name failed");
			check(p.ask("xs_set 3", "set") == 0, "hilock set the permits of an existing semaphore");
			String jId = sem.tryAcquire(0, LEASE_MS, MILLISECONDS);
			long t0 = System.nanoTime();
			check(jId != null, "Redisson could not take the free permit");
			xsCounts(p, sem, 0, 1, "while Redisson holds");
			check(p.ask("xs_acquire 0 -1", "acquired") == 0, "hilock took the permit Redisson holds");
			p.send("xs_acquire 8000 -1");
			String r = p.next(15_000);
			long after = msSince(t0);
			Map.Entry<Long, String> got = acquired(r);
			check(got.getKey() == 1, "hilock did not get the permit when Redisson's lease ended: %s", r);
			check(after >= LEASE_MS - 300 && after < LEASE_MS + 2000,
				"hilock acquired %d ms after a %d ms Redisson lease", after, LEASE_MS);
			String hId = got.getValue();
			xsCounts(p, sem, 0, 1, "after hilock's acquire");
			check(!sem.tryRelease(jId), "Redisson released its own permit after its lease ended and it was reclaimed");
			String again = p.call("xs_release " + jId);
			check(again.startsWith("err HL_ENOTHELD"), "hilock release of Redisson's reclaimed permit: %s", again);
			// Ids are bearer tokens on both sides: Redisson releases hilock's
			// permit by its id, and hilock's own release then finds none.
			sem.release(hId);
			xsCounts(p, sem, 1, 0, "after Redisson released hilock's permit");
			String twice = p.call("xs_release " + hId);
			check(twice.startsWith("err HL_ENOTHELD"), "hilock release after Redisson released its permit: %s", twice);
			return String.format("hilock took over %d ms after a %d ms Redisson lease; Redisson's tryRelease of its "
				+ "reclaimed permit: false; Redisson release(hilock's id) accepted, hilock's own release then "
				+ "HL_ENOTHELD; counts agree", after, LEASE_MS);
		}
	}

	static String xsRedissonWaits() throws Exception {
		final String name = "interop:o:xs2";
		clean(name, xsKeys(name));
		ExecutorService one = Executors.newSingleThreadExecutor();
		try (Interop.Peer p = new Interop.Peer(name, 30_000)) {
			RPermitExpirableSemaphore sem = Interop.rA.getPermitExpirableSemaphore(name);
			check(p.ask("xs_set 1", "set") == 1, "hilock could not set the permits of a fresh semaphore");
			check(!sem.trySetPermits(4), "Redisson set the permits of an existing semaphore");
			String r = p.call("xs_acquire 0 " + LEASE_MS);
			long t0 = System.nanoTime();
			Map.Entry<Long, String> got = acquired(r);
			check(got.getKey() == 1, "hilock could not take the free permit: %s", r);
			String hId = got.getValue();
			xsCounts(p, sem, 0, 1, "while hilock holds");
			check(sem.getLeaseTime(hId) > 0 && sem.getLeaseTime(hId) <= LEASE_MS,
				"Redisson getLeaseTime(hilock's id) %d, expected (0, %d]", sem.getLeaseTime(hId), LEASE_MS);
			check(sem.tryAcquire(0, -1, MILLISECONDS) == null, "Redisson took the permit hilock holds");
			Future<String> f = one.submit(() -> sem.tryAcquire(8000, -1, MILLISECONDS));
			String jId = f.get(15, SECONDS);
			long after = msSince(t0);
			check(jId != null, "Redisson tryAcquire(8 s) did not get the permit when hilock's lease ended");
			check(after >= LEASE_MS - 300 && after < LEASE_MS + 2000,
				"Redisson acquired %d ms after a %d ms hilock lease", after, LEASE_MS);
			xsCounts(p, sem, 0, 1, "after Redisson's acquire");
			String late = p.call("xs_release " + hId);
			check(late.startsWith("err HL_ENOTHELD"), "hilock's release of its reclaimed permit: %s", late);
			xsCounts(p, sem, 0, 1, "after hilock's late release");
			// hilock releases Redisson's permit by its id.
			check(p.ask("xs_release " + jId, "released") == 1, "hilock could not release Redisson's permit by id");
			xsCounts(p, sem, 1, 0, "after hilock released Redisson's permit");
			check(!sem.tryRelease(jId), "Redisson released its permit twice");
			return String.format("Redisson took over %d ms after a %d ms hilock lease; hilock's late release: "
				+ "HL_ENOTHELD; hilock release(Redisson's id) accepted, Redisson's tryRelease then false; counts "
				+ "agree", after, LEASE_MS);
		} finally {
			one.shutdownNow();
		}
	}

	/** "ok acquired=A ms=M id=ID" -> (A, ID). */
	static Map.Entry<Long, String> acquired(String r) {
		long a = Interop.Child.value(r, "acquired", "xs_acquire");
		int at = r.indexOf(" id=");
		check(at > 0, "xs_acquire: no id in %s", r);
		String id = r.substring(at + 4).trim();
		check(a == 0 || id.matches("[0-9a-f]{32}"), "xs_acquire: id %s is not 32 hex digits", id);
		return Map.entry(a, id);
	}

	/* ------------------------------------------------------------------
	 * p. Count-down latch (RCountDownLatch): the counter <name>, channel
	 *    redisson_countdownlatch__channel__{name}, "0" open, "1" set or
	 *    deleted.
	 * ------------------------------------------------------------------ */
	static String latchCountDownBoth() throws Exception {
		final String name = "interop:p:latch1";
		clean(name);
		BlockingQueue<String> heard = new LinkedBlockingQueue<>();
		RTopic topic = topic(latchChannel(name), StringCodec.INSTANCE);
		int listener = topic.addListener(String.class, (ch, msg) -> heard.add(msg));
		ExecutorService one = Executors.newSingleThreadExecutor();
		StringBuilder out = new StringBuilder();
		try (Interop.Peer waiter = new Interop.Peer(name, 30_000);
			Interop.Peer downer = new Interop.Peer(name, 30_000)) {
			RCountDownLatch latch = Interop.rA.getCountDownLatch(name);
			// Round 1: Redisson sets 2, hilock counts down, Redisson opens it.
			// Round 2: hilock sets 2, Redisson counts down, hilock opens it.
			for (int round = 1; round <= 2; round++) {
				heard.clear();
				if (round == 1) {
					check(latch.trySetCount(2), "Redisson trySetCount(2) on a fresh latch failed");
					check(downer.ask("la_set 9", "set") == 0, "hilock set the count of a set latch");
				} else {
					check(downer.ask("la_set 2", "set") == 1, "hilock could not set the opened latch again");
					check(!latch.trySetCount(9), "Redisson set the count of a set latch");
				}
				String set = heard.poll(5, SECONDS);
				check("1".equals(set), "round %d: heard %s after trySetCount, expected \"1\"", round, set);
				check(latch.getCount() == 2 && downer.ask("la_count", "count") == 2, "round %d: count not 2", round);
				waiter.send("la_wait 10000");
				Future<Long> jw = one.submit(() -> latch.await(10, SECONDS) ? System.nanoTime() : -1L);
				if (round == 1)
					check(downer.ask("la_down", "left") == 1, "hilock countDown did not leave 1");
				else
					latch.countDown();
				check(latch.getCount() == 1 && downer.ask("la_count", "count") == 1, "round %d: count not 1", round);
				stillBlocked(waiter, 800, "hilock la_wait at count 1");
				check(!jw.isDone(), "round %d: Redisson await returned at count 1", round);
				long opened = System.nanoTime();
				if (round == 1)
					latch.countDown();
				else
					check(downer.ask("la_down", "left") == 0, "hilock's last countDown did not leave 0");
				String r = waiter.next(15_000);
				long hWoke = msSince(opened);
				check(Interop.Child.value(r, "open", "la_wait") == 1, "round %d: hilock waiter: %s", round, r);
				long at = jw.get(15, SECONDS);
				check(at > 0, "round %d: Redisson await(10 s) ran out", round);
				long jWoke = (at - opened) / 1_000_000;
				check(hWoke < PROMPT_MS && jWoke < PROMPT_MS, "round %d: waiters woke %d (hilock) and %d ms (Redisson) "
					+ "after the count reached 0", round, hWoke, jWoke);
				String zero = heard.poll(5, SECONDS);
				check("0".equals(zero), "round %d: heard %s at zero, expected \"0\"", round, zero);
				check(latch.getCount() == 0 && downer.ask("la_count", "count") == 0 && !Interop.rA.getBucket(name).isExists(),
					"round %d: the opened latch is not gone", round);
				out.append(String.format("%s%s opened it: hilock waiter woke %d ms, Redisson's %d ms after",
					round == 1 ? "" : "; ", round == 1 ? "Redisson (set by Redisson, hilock counted 2->1)"
						: "hilock (set by hilock, Redisson counted 2->1)", hWoke, jWoke));
			}
			return out.append("; heard \"1\" at each set and \"0\" at each opening").toString();
		} finally {
			one.shutdownNow();
			topic.removeListener(listener);
		}
	}

	static String latchDelete() throws Exception {
		final String name = "interop:p:latch2";
		clean(name);
		BlockingQueue<String> heard = new LinkedBlockingQueue<>();
		RTopic topic = topic(latchChannel(name), StringCodec.INSTANCE);
		int listener = topic.addListener(String.class, (ch, msg) -> heard.add(msg));
		try (Interop.Peer p = new Interop.Peer(name, 30_000)) {
			RCountDownLatch latch = Interop.rA.getCountDownLatch(name);
			check(latch.trySetCount(3), "Redisson trySetCount(3)");
			check("1".equals(heard.poll(5, SECONDS)), "no \"1\" after Redisson's trySetCount");
			check(p.ask("la_delete", "existed") == 1, "hilock did not find Redisson's latch to delete");
			String del = heard.poll(5, SECONDS);
			check("1".equals(del), "heard %s after hilock's delete, expected \"1\"", del);
			check(latch.getCount() == 0, "Redisson count %d after hilock's delete", latch.getCount());
			check(p.ask("la_delete", "existed") == 0, "hilock deleted a missing latch");
			check(heard.poll(300, MILLISECONDS) == null, "a message after deleting a missing latch");
			check(p.ask("la_set 2", "set") == 1, "hilock could not set the deleted latch again");
			check("1".equals(heard.poll(5, SECONDS)), "no \"1\" after hilock's la_set");
			check(latch.delete(), "Redisson did not find hilock's latch to delete");
			String jdel = heard.poll(5, SECONDS);
			check("1".equals(jdel), "heard %s after Redisson's delete, expected \"1\"", jdel);
			check(p.ask("la_count", "count") == 0, "hilock count not 0 after Redisson's delete");
			return "hilock's delete of Redisson's latch and Redisson's of hilock's both published \"1\"; "
				+ "a second delete: existed=0, no message";
		} finally {
			topic.removeListener(listener);
		}
	}
}
