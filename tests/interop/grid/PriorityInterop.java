// The Redisson side of the priority queue interop (tests/interop/grid/run.sh):
// RPriorityQueue and RPriorityDeque (StringCodec) shared with a hilock
// process (collections_peer.c). One side adds, the other polls, in Java's
// String order (String.compareTo, UTF-16 code units) with duplicates; both
// sides add at once and keep one sorted list; hilock's writes wait while
// Redisson holds redisson_sortedset_lock:{name}; a comparator set by Java
// ({name}:redisson_sortedset_comparator) makes hilock refuse the queue;
// producers and consumers on both sides take every value exactly once; the
// blocking queue's takes on each side get the other side's adds.
//
//   java PriorityInterop VERSION PEER TOPOLOGY ADDRESSES URL [FILTER]
//
// As GridInterop (whose helpers this uses, through CollectionsInterop):
// "ok"/"FAIL" lines, then "VERSION TOPOLOGY priority: N passed, N failed";
// exits 1 when one failed. FILTER: scenarios starting with it (all of
// them start with "priority").
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.redisson.api.RLock;
import org.redisson.api.RPriorityDeque;
import org.redisson.api.RPriorityQueue;
import org.redisson.client.codec.StringCodec;

public class PriorityInterop extends CollectionsInterop {

	/* Java's order traps: supplementary characters (surrogates, 0xD800..)
	 * sort before U+E000..U+FFFF, which UTF-8 byte order puts first. */
	static final String[] VALUES = {"b", "a", "A", "ab", "\u00e9", "e", "\u65e5", "\ud83d\ude00", "\uff21",
	        "\ue000x", "\u007f", "", "a\u0000b", "\ud83d\ude01z", "\ufffd", "\udbff\udfff", "\uffff"};

	/** VALUES with every third one twice, shuffled. */
	static List<String> withDuplicates(long seed) {
		List<String> v = new ArrayList<>();
		for (int k = 0; k < VALUES.length; k++) {
			v.add(VALUES[k]);
			if (k % 3 == 0)
				v.add(VALUES[k]);
		}
		Collections.shuffle(v, new Random(seed));
		return v;
	}

	static List<String> sortedCopy(List<String> v) {
		List<String> s = new ArrayList<>(v);
		Collections.sort(s); // String.compareTo
		return s;
	}

	static List<String> readHl(String kind, String name) throws Exception {
		return strs(items(call("ranges " + kind + " " + hex(name) + " read_range 1000")));
	}

	static String pq(String name, String op, String... args) throws Exception {
		return hl("priority_queue", name, op, args);
	}

	/* Each side adds half (duplicates too); both read one list in Java's
	 * order; contains, peek and remove agree. */
	static void order(String name) throws Exception {
		RPriorityQueue<String> jq = r.getPriorityQueue(name, StringCodec.INSTANCE);
		List<String> all = withDuplicates(1);
		for (int k = 0; k < all.size(); k++) {
			if (k % 2 == 0)
				check("priority order: Redisson's add", true, jq.add(all.get(k)));
			else
				check("priority order: hilock's add", "i:1", pq(name, "add", b(all.get(k))));
		}
		List<String> want = sortedCopy(all);
		check("priority order: Redisson reads both sides' adds in Java's order", want, new ArrayList<>(jq.readAll()));
		check("priority order: hilock reads the same list", bs(want), readHl("priority_queue", name));
		check("priority order: hilock's size", i(want.size()), pq(name, "size"));
		check("priority order: hilock's peek is Redisson's", b(jq.peek()), pq(name, "peek"));
		check("priority order: hilock contains Redisson's", "i:1", pq(name, "contains", b("\ud83d\ude00")));
		check("priority order: Redisson contains hilock's", true, jq.contains("\ue000x"));
		check("priority order: hilock's remove of one \"b\"", "i:1", pq(name, "remove", b("b")));
		check("priority order: Redisson's remove of one \"a\"", true, jq.remove("a"));
		want.remove("b");
		want.remove("a");
		check("priority order: both read the order after the removes", want, new ArrayList<>(jq.readAll()));
	}

	/* Redisson adds, hilock polls them all in order; and the other way. */
	static void polls(String name) throws Exception {
		RPriorityQueue<String> jq = r.getPriorityQueue(name, StringCodec.INSTANCE);
		List<String> all = withDuplicates(2);
		for (String v : all)
			jq.add(v);
		List<String> got = new ArrayList<>();
		for (int k = 0; k < all.size(); k++)
			got.add(pq(name, "poll"));
		check("priority polls: hilock polls Redisson's adds in Java's order", bs(sortedCopy(all)), got);
		check("priority polls: hilock's poll of the empty queue", "nil", pq(name, "poll"));
		check("priority polls: Redisson's poll of the empty queue", null, jq.poll());
		for (String v : withDuplicates(3))
			pq(name, "offer", b(v));
		List<String> jgot = new ArrayList<>();
		for (String v; (v = jq.poll()) != null;)
			jgot.add(v);
		check("priority polls: Redisson polls hilock's adds in Java's order", sortedCopy(all), jgot);
		check("priority polls: the queue is gone", 0L, r.getKeys().countExists(name));
	}

	/* Both sides add at once (Redisson's threads under its lock, hilock's
	 * two threads' scripts): one list in order, nothing lost or doubled. */
	static void concurrent(String name) throws Exception {
		RPriorityQueue<String> jq = r.getPriorityQueue(name, StringCodec.INSTANCE);
		final int n = 150, th = 2;
		List<String> h = new ArrayList<>(), j = new ArrayList<>();
		for (int k = 0; k < n; k++) {
			String p = k % 5 == 0 ? "\ud83d\ude00" : k % 5 == 1 ? "\uff21" : "";
			h.add(p + "v" + (k * 37 % 41)); // duplicates on each side
			j.add(p + "v" + (k * 53 % 43));
		}
		send(line("multi spread " + th + " 1", "priority_queue", name, "add", bs(h)));
		threads(th, t -> {
			for (int k = t; k < j.size(); k += th)
				jq.add(j.get(k));
		});
		List<Object> res = list(reply());
		check("priority concurrent: hilock's " + n + " adds answered true", Collections.nCopies(n, "i:1"), strs(res));
		List<String> all = new ArrayList<>(h);
		all.addAll(j);
		List<String> want = sortedCopy(all);
		check("priority concurrent: Redisson reads " + want.size() + " values in Java's order", want,
		        new ArrayList<>(jq.readAll()));
		check("priority concurrent: hilock reads the same list", bs(want), readHl("priority_queue", name));
	}

	/* Redisson holds the queue's lock: hilock's add and poll wait; a poll
	 * of an empty queue answers nil at once (Redisson's LLEN first). */
	static void lock(String name) throws Exception {
		RPriorityQueue<String> jq = r.getPriorityQueue(name, StringCodec.INSTANCE);
		RLock lock = r.getLock("redisson_sortedset_lock:{" + name + "}");
		lock.lock();
		try {
			long t0 = System.currentTimeMillis();
			check("priority lock: hilock's poll of the empty queue while Redisson holds the lock", "nil",
			        pq(name, "poll"));
			checkTrue("priority lock: ... at once", System.currentTimeMillis() - t0 < 2000,
			        (System.currentTimeMillis() - t0) + " ms");
			send("call priority_queue " + hex(name) + " add " + b("during"));
			Thread.sleep(500);
			check("priority lock: hilock's add waits while Redisson holds the lock", 0, jq.size());
		} finally {
			lock.unlock();
		}
		check("priority lock: hilock's add went ahead after the unlock", "i:1", reply());
		check("priority lock: Redisson reads it", List.of("during"), new ArrayList<>(jq.readAll()));
		lock.lock();
		try {
			send("call priority_queue " + hex(name) + " poll");
			Thread.sleep(500);
			check("priority lock: hilock's poll waits while Redisson holds the lock", 1, jq.size());
		} finally {
			lock.unlock();
		}
		check("priority lock: hilock's poll took it after the unlock", b("during"), reply());
	}

	/* A comparator set by Java: hilock refuses to write, names the key and
	 * the class, and leaves the queue as it is. */
	static void comparator(String name) throws Exception {
		RPriorityQueue<String> jq = r.getPriorityQueue(name, StringCodec.INSTANCE);
		check("priority comparator: Redisson's trySetComparator(reverseOrder)", true,
		        jq.trySetComparator(Collections.reverseOrder()));
		jq.add("a");
		jq.add("c");
		String key = "{" + name + "}:redisson_sortedset_comparator";
		String res = peer("call priority_queue " + hex(name) + " add " + b("b"));
		checkTrue("priority comparator: hilock refuses, naming the key and the class",
		        res.startsWith("err HL_EINVAL") && res.contains(key)
		                && res.contains("java.util.Collections$ReverseComparator"),
		        res);
		check("priority comparator: the queue unchanged", List.of("c", "a"), new ArrayList<>(jq.readAll()));
		check("priority comparator: hilock still reads the head", b("c"), pq(name, "peek"));
	}

	/* The deque: both ends, both sides. */
	static void deque(String name) throws Exception {
		RPriorityDeque<String> jd = r.getPriorityDeque(name, StringCodec.INSTANCE);
		for (String v : List.of("m", "c", "x", "c", "\ud83d\ude00", "\uff21"))
			jd.add(v);
		check("priority deque: hilock's peek_last is Redisson's peekLast", b(jd.peekLast()),
		        hl("priority_deque", name, "peek_last"));
		check("priority deque: hilock's poll_last takes U+FF21 (after U+1F600 in Java's order)", b("\uff21"),
		        hl("priority_deque", name, "poll_last"));
		check("priority deque: Redisson's pollLast then takes U+1F600", "\ud83d\ude00", jd.pollLast());
		check("priority deque: hilock's poll_first", b("c"), hl("priority_deque", name, "poll_first"));
		check("priority deque: Redisson's pollFirst", "c", jd.pollFirst());
		hl("priority_deque", name, "add", b("a"));
		check("priority deque: Redisson reads hilock's add in place", List.of("a", "m", "x"),
		        new ArrayList<>(jd.readAll()));
	}

	/* Producers and consumers on both sides at once: every value taken
	 * exactly once, and each side took some. (Which side takes whose
	 * values is the order's business: the lowest go first.) */
	static void pc(String name) throws Exception {
		RPriorityQueue<String> jq = r.getPriorityQueue(name, StringCodec.INSTANCE);
		final int n = 400, jthreads = 2;
		java.util.concurrent.ConcurrentLinkedQueue<String> jgot = new java.util.concurrent.ConcurrentLinkedQueue<>();
		java.util.concurrent.atomic.AtomicInteger jleft = new java.util.concurrent.atomic.AtomicInteger(jthreads);
		List<String> hvals = new ArrayList<>(), produced = new ArrayList<>();
		for (int k = 0; k < n; k++) {
			// both sides' values interleave in Java's order
			String v = "v" + (k % 50) + (k % 10 == 0 ? "\u00e9" : "") + ":h" + k;
			hvals.add(v);
			produced.add(b(v));
		}
		for (int t = 0; t < jthreads; t++)
			for (int k = 0; k < n / 2; k++)
				produced.add(b("v" + (k % 50) + ":j" + t + ":" + k));
		send("pc 2 2 1000 add,offer poll priority_queue " + hex(name) + " " + args(bs(hvals)));
		threads(2 * jthreads, t -> {
			if (t < jthreads) {
				for (int k = 0; k < n / 2; k++)
					jq.add("v" + (k % 50) + ":j" + t + ":" + k);
				jleft.decrementAndGet();
				return;
			}
			long last = System.currentTimeMillis(), start = last;
			for (;;) {
				String v = jq.poll();
				long now = System.currentTimeMillis();
				if (v != null) {
					jgot.add(v);
					last = now;
					continue;
				}
				if ((jleft.get() == 0 && now - last > 1000) || now - start > 120000)
					break;
				Thread.sleep(1);
			}
		});
		String res = reply();
		String fails = res.substring(0, res.indexOf(' '));
		List<String> hgot = strs(list(res.substring(res.indexOf(' ') + 1)));
		List<String> all = new ArrayList<>(hgot);
		for (String v : jgot)
			all.add(b(v));
		for (String v; (v = jq.poll()) != null;)
			all.add(b(v));
		check("priority producers/consumers: hilock's calls all answered", "0", fails);
		check("priority producers/consumers: every value produced by either side taken exactly once ("
		        + produced.size() + ")", sorted(produced), sorted(all));
		checkTrue("priority producers/consumers: each side took some", !hgot.isEmpty() && !jgot.isEmpty(),
		        "hilock took " + hgot.size() + ", Redisson " + jgot.size());
	}

	/* The blocking queue: hilock's take gets Redisson's add (found by its
	 * back-off: Redisson publishes nothing), Redisson's take gets hilock's
	 * put. */
	static void blocking(String name) throws Exception {
		org.redisson.api.RPriorityBlockingQueue<String> jq = r.getPriorityBlockingQueue(name, StringCodec.INSTANCE);
		send("call priority_blocking_queue " + hex(name) + " take");
		Thread.sleep(300);
		long t0 = System.currentTimeMillis();
		jq.add("x");
		String got = reply();
		long took = System.currentTimeMillis() - t0;
		check("priority blocking: hilock's take gets Redisson's add", b("x"), got);
		checkTrue("priority blocking: ... within the back-off (under 1 s)", took < 1000, took + " ms");
		String[] jgot = new String[1];
		Thread th = new Thread(() -> {
			try {
				jgot[0] = jq.take();
			} catch (InterruptedException e) {
				jgot[0] = e.toString();
			}
		});
		th.start();
		Thread.sleep(300);
		check("priority blocking: hilock's put", "i:1", hl("priority_blocking_queue", name, "put", b("y")));
		th.join(10000);
		check("priority blocking: Redisson's take gets hilock's put", "y", jgot[0]);
		check("priority blocking: hilock's poll_timeout of the empty queue", "nil",
		        hl("priority_blocking_queue", name, "poll_timeout", i(200)));
	}

	/* The blocking deque: Redisson's pollLast and takeLast see hilock's
	 * order (the highest at the tail), hilock's take_last gets the highest
	 * of Redisson's adds and waits for the next (found by its back-off),
	 * Redisson's takeLast gets hilock's put. */
	static void blockingDeque(String name) throws Exception {
		org.redisson.api.RPriorityBlockingDeque<String> jq = r.getPriorityBlockingDeque(name, StringCodec.INSTANCE);
		for (String v : new String[] {"b", "\u00e9", "a", "c"})
			check("priority blocking deque: hilock's put " + v, "i:1", hl("priority_blocking_deque", name, "put", b(v)));
		check("priority blocking deque: Redisson's peekLast", "\u00e9", jq.peekLast());
		check("priority blocking deque: Redisson's pollLast of hilock's", "\u00e9", jq.pollLast());
		check("priority blocking deque: Redisson's pollLast(timeout)", "c",
		        jq.pollLast(1, java.util.concurrent.TimeUnit.SECONDS));
		check("priority blocking deque: Redisson's takeLast", "b", jq.takeLast());
		check("priority blocking deque: Redisson's pollFirst", "a", jq.pollFirst());
		jq.add("m");
		jq.add("n");
		check("priority blocking deque: hilock's take_last of Redisson's adds", b("n"),
		        hl("priority_blocking_deque", name, "take_last"));
		check("priority blocking deque: hilock's poll_first", b("m"), hl("priority_blocking_deque", name, "poll_first"));
		send("call priority_blocking_deque " + hex(name) + " take_last");
		Thread.sleep(300);
		long t0 = System.currentTimeMillis();
		jq.add("x");
		String got = reply();
		long took = System.currentTimeMillis() - t0;
		check("priority blocking deque: hilock's waiting take_last gets Redisson's add", b("x"), got);
		checkTrue("priority blocking deque: ... within the back-off (under 1 s)", took < 1000, took + " ms");
		String[] jgot = new String[1];
		Thread th = new Thread(() -> {
			try {
				jgot[0] = jq.takeLast();
			} catch (InterruptedException e) {
				jgot[0] = e.toString();
			}
		});
		th.start();
		Thread.sleep(300);
		check("priority blocking deque: hilock's put", "i:1", hl("priority_blocking_deque", name, "put", b("y")));
		th.join(10000);
		check("priority blocking deque: Redisson's takeLast gets hilock's put", "y", jgot[0]);
		check("priority blocking deque: hilock's poll_last_timeout of the empty deque", "nil",
		        hl("priority_blocking_deque", name, "poll_last_timeout", i(200)));
	}

	public static void main(String[] a) throws Exception {
		Process p = start(a);
		long t0 = System.nanoTime();
		scenario("priority_order", PriorityInterop::order);
		scenario("priority_polls", PriorityInterop::polls);
		scenario("priority_concurrent", PriorityInterop::concurrent);
		scenario("priority_lock", PriorityInterop::lock);
		scenario("priority_comparator", PriorityInterop::comparator);
		scenario("priority_deque", PriorityInterop::deque);
		scenario("priority_pc", PriorityInterop::pc);
		scenario("priority_blocking", PriorityInterop::blocking);
		scenario("priority_blocking_deque", PriorityInterop::blockingDeque);
		finish(p, " priority", t0);
	}
}
