// The delayed queue against the real Redisson's RDelayedQueue
// (tests/interop/grid/run.sh, with GridInterop's peer grid_peer.c, which
// keeps a delayed queue open between lines: its mover runs until "free"):
//
//   java DelayedInterop VERSION PEER TOPOLOGY ADDRESSES URL [FILTER]
//
// Checks, both ways, on the destination queue's StringCodec:
//   - Redisson offers with delays (and stops its own transfer task with
//     destroy()); hilock reads the waiting values (Redisson's member bytes)
//     and moves them: Redisson takes them in due order, none before its time;
//   - a producer gone, nothing moves; a hilock process that only opens the
//     delayed queue (no offer) moves them (Redisson #4481);
//   - hilock offers with delays and stops; Redisson reads them, its
//     transfer task moves them, Redisson takes them in due order;
//   - both movers running at once, both sides offering and taking: every
//     element arrives exactly once.
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.redisson.api.RBlockingQueue;
import org.redisson.api.RDelayedQueue;
import org.redisson.client.codec.StringCodec;

public class DelayedInterop extends GridInterop {

	/** hilock's list result "[b:HEX,...]" as strings. */
	static List<String> texts(String res) {
		List<String> out = new ArrayList<>();
		if (!res.startsWith("[") || res.equals("[]"))
			return out;
		for (String e : res.substring(1, res.length() - 1).split(","))
			out.add(e.startsWith("b:") ? new String(unhex(e.substring(2)), java.nio.charset.StandardCharsets.UTF_8) : e);
		return out;
	}

	static final String[] VALUES = {"a", "h\u00e9llo", "", "\u65e5\u672c", "x y", "\ud83d\ude00", "7", "eight",
	        "nine", "ten"};

	/** Redisson offers, hilock moves, Redisson takes (due order, not early). */
	static void javaOffers(String name) throws Exception {
		RBlockingQueue<String> q = r.getBlockingQueue(name, StringCodec.INSTANCE);
		RDelayedQueue<String> jd = r.getDelayedQueue(q);
		long t0 = System.currentTimeMillis();
		long[] due = new long[VALUES.length];
		// offered in reverse due order: the last offered is due first
		for (int k = VALUES.length - 1; k >= 0; k--) {
			long delay = 1200 + 60L * k;
			due[k] = System.currentTimeMillis() + delay;
			jd.offer(VALUES[k], delay, TimeUnit.MILLISECONDS);
		}
		jd.destroy(); // Redisson's transfer task stops: only hilock moves
		List<String> waiting = texts(hl("delayed_queue", name, "read_all"));
		List<String> want = new ArrayList<>();
		for (int k = VALUES.length - 1; k >= 0; k--)
			want.add(VALUES[k]);
		check("delayed: hilock reads Redisson's waiting members (insertion order)", want, waiting);
		check("delayed: hilock's size of Redisson's", "i:" + VALUES.length, hl("delayed_queue", name, "size"));
		check("delayed: nothing moved before its time", 0, q.size());
		List<String> got = new ArrayList<>();
		int early = 0;
		for (int k = 0; k < VALUES.length; k++) {
			String v = q.poll(10, TimeUnit.SECONDS);
			long at = System.currentTimeMillis();
			got.add(v);
			if (v != null && at < due[k])
				early++;
		}
		check("delayed: Redisson takes what hilock moved, in due order", List.of(VALUES), got);
		check("delayed: none arrived before its time", 0, early);
		checkTrue("delayed: moved promptly", System.currentTimeMillis() - t0 < 1200 + 60 * 9 + 3000,
		        (System.currentTimeMillis() - t0) + " ms");
		check("delayed: the waiting part is empty", 0, r.getScoredSortedSet("redisson_delay_queue_timeout:{" + name + "}").size());
		hl("delayed_queue", name, "size");
		call("free delayed_queue " + hex(name));
	}

	/** The producer is gone: nothing moves until a hilock consumer opens it. */
	static void consumerAlone(String name) throws Exception {
		RBlockingQueue<String> q = r.getBlockingQueue(name, StringCodec.INSTANCE);
		RDelayedQueue<String> jd = r.getDelayedQueue(q);
		for (int k = 0; k < 5; k++)
			jd.offer("c" + k, 100, TimeUnit.MILLISECONDS);
		jd.destroy();
		Thread.sleep(700);
		check("delayed: no mover, nothing moved", 0, q.size());
		long t0 = System.currentTimeMillis();
		hl("delayed_queue", name, "size"); // opens it: hilock's mover starts
		List<String> got = new ArrayList<>();
		for (int k = 0; k < 5; k++) {
			String v = q.poll(5, TimeUnit.SECONDS);
			if (v != null)
				got.add(v);
		}
		got.sort(null);
		check("delayed: a hilock consumer alone moved them", List.of("c0", "c1", "c2", "c3", "c4"), got);
		checkTrue("delayed: at once (not at the fallback poll)", System.currentTimeMillis() - t0 < 900,
		        (System.currentTimeMillis() - t0) + " ms");
		call("free delayed_queue " + hex(name));
	}

	/** hilock offers and stops; Redisson reads, moves and takes them. */
	static void hilockOffers(String name) throws Exception {
		long[] due = new long[VALUES.length];
		for (int k = VALUES.length - 1; k >= 0; k--) {
			long delay = 1200 + 60L * k;
			due[k] = System.currentTimeMillis() + delay;
			hl("delayed_queue", name, "offer", b(VALUES[k]), i(delay));
		}
		call("free delayed_queue " + hex(name)); // hilock's mover stops
		RBlockingQueue<String> q = r.getBlockingQueue(name, StringCodec.INSTANCE);
		RDelayedQueue<String> jd = r.getDelayedQueue(q);
		List<String> want = new ArrayList<>();
		for (int k = VALUES.length - 1; k >= 0; k--)
			want.add(VALUES[k]);
		check("delayed: Redisson reads hilock's waiting members", want, jd.readAll());
		check("delayed: Redisson's peek of hilock's", VALUES[VALUES.length - 1], jd.peek());
		check("delayed: Redisson finds hilock's value", true, jd.contains(VALUES[3]));
		List<String> got = new ArrayList<>();
		int early = 0;
		for (int k = 0; k < VALUES.length; k++) {
			String v = q.poll(10, TimeUnit.SECONDS);
			if (v != null && System.currentTimeMillis() < due[k])
				early++;
			got.add(v);
		}
		check("delayed: Redisson's task moved hilock's offers, in due order", List.of(VALUES), got);
		check("delayed: none arrived before its time", 0, early);
		jd.destroy();
	}

	/** Both movers at once, both sides offering and taking. */
	static void bothMovers(String name) throws Exception {
		RBlockingQueue<String> q = r.getBlockingQueue(name, StringCodec.INSTANCE);
		RDelayedQueue<String> jd = r.getDelayedQueue(q);
		hl("delayed_queue", name, "size"); // hilock's mover too
		final int n = 150;
		for (int k = 0; k < n; k++) {
			jd.offer("j" + k, (k * 37) % 700, TimeUnit.MILLISECONDS);
			hl("delayed_queue", name, "offer", b("h" + k), i((k * 53) % 700));
		}
		Map<String, Integer> seen = new HashMap<>();
		long end = System.currentTimeMillis() + 20000;
		int total = 0;
		while (total < 2 * n && System.currentTimeMillis() < end) {
			String v = (total % 2 == 0) ? q.poll(200, TimeUnit.MILLISECONDS) : null;
			if (v == null) {
				String h = hl("queue", name, "poll");
				if (h.startsWith("b:"))
					v = new String(unhex(h.substring(2)), java.nio.charset.StandardCharsets.UTF_8);
			}
			if (v != null) {
				seen.merge(v, 1, Integer::sum);
				total++;
			} else {
				Thread.sleep(10);
			}
		}
		Thread.sleep(500);
		int late = q.size();
		int twice = 0;
		for (int c : seen.values())
			if (c > 1)
				twice++;
		check("delayed: every element arrived (both movers)", 2 * n, seen.size());
		check("delayed: none twice", 0, twice);
		check("delayed: nothing more arrived", 0, late);
		check("delayed: the waiting part is empty", 0, jd.size());
		jd.destroy();
		call("free delayed_queue " + hex(name));
	}

	public static void main(String[] a) throws Exception {
		Process p = start(a);
		long t0 = System.nanoTime();
		scenario("delayed_java_offers", DelayedInterop::javaOffers);
		scenario("delayed_consumer_alone", DelayedInterop::consumerAlone);
		scenario("delayed_hilock_offers", DelayedInterop::hilockOffers);
		scenario("delayed_both_movers", DelayedInterop::bothMovers);
		finish(p, " delayed", t0);
	}
}
