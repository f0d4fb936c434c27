// The Redisson side of the collections interop (tests/interop/grid/run.sh):
// maps, sets, scored sorted sets, sorted sets, lists, queues and deques
// shared by Redisson and a hilock process (collections_peer.c, grid_peer.c's
// line protocol and a few more lines for concurrent work and iteration).
// Each side writes and the other reads, byte for byte and in the same order;
// both sides race (put-if-absent, add), add concurrently (sorted sets keep
// their order), feed and drain queues at once (nothing lost or doubled),
// and iterate the same collection of more than 1000 elements.
//
//   java CollectionsInterop VERSION PEER TOPOLOGY ADDRESSES URL [FILTER]
//
// As GridInterop (whose helpers this uses): "ok"/"FAIL" lines, then
// "VERSION TOPOLOGY collections: N passed, N failed"; exits 1 when one failed.
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.redisson.api.RDeque;
import org.redisson.api.RList;
import org.redisson.api.RMap;
import org.redisson.api.RQueue;
import org.redisson.api.RScoredSortedSet;
import org.redisson.api.RSet;
import org.redisson.api.RSortedSet;
import org.redisson.client.codec.ByteArrayCodec;
import org.redisson.client.codec.StringCodec;
import org.redisson.client.protocol.ScoredEntry;

public class CollectionsInterop extends GridInterop {

	// ---- the peer's results ----

	/** A RESULT parsed: null (nil), a String ("i:1", "b:..", "d:..", "E:..") or a List. */
	static Object parse(String s) {
		int[] at = {0};
		Object v = parseAt(s, at);
		if (at[0] != s.length())
			throw new IllegalStateException("trailing text in " + cut(s));
		return v;
	}

	static Object parseAt(String s, int[] at) {
		if (s.charAt(at[0]) == '[') {
			List<Object> l = new ArrayList<>();
			at[0]++;
			if (s.charAt(at[0]) == ']') {
				at[0]++;
				return l;
			}
			for (;;) {
				l.add(parseAt(s, at));
				char c = s.charAt(at[0]++);
				if (c == ']')
					return l;
				if (c != ',')
					throw new IllegalStateException("bad list at " + at[0] + " in " + cut(s));
			}
		}
		int e = at[0];
		while (e < s.length() && s.charAt(e) != ',' && s.charAt(e) != ']')
			e++;
		String t = s.substring(at[0], e);
		at[0] = e;
		return t.equals("nil") ? null : t;
	}

	@SuppressWarnings("unchecked")
	static List<Object> list(String res) {
		Object v = parse(res);
		if (!(v instanceof List))
			throw new IllegalStateException("not a list: " + cut(res));
		return (List<Object>) v;
	}

	/** The items of an iter/ranges reply "PAGES [items]". */
	static List<Object> items(String res) {
		return list(res.substring(res.indexOf(' ') + 1));
	}

	static int pages(String res) {
		return Integer.parseInt(res.substring(0, res.indexOf(' ')));
	}

	/** Values as the peer prints them: "b:HEX". */
	static List<String> bs(Collection<String> vals) {
		List<String> l = new ArrayList<>();
		for (String v : vals)
			l.add(b(v));
		return l;
	}

	static List<String> bb(Collection<byte[]> vals) {
		List<String> l = new ArrayList<>();
		for (byte[] v : vals)
			l.add(b(v));
		return l;
	}

	static String args(Collection<String> a) {
		return String.join(" ", a);
	}

	static String line(String cmd, String kind, String name, String op, Collection<String> a) {
		return cmd + " " + kind + " " + hex(name) + " " + op + (a.isEmpty() ? "" : " " + args(a));
	}

	static String strOf(Object b) {
		String s = (String) b;
		if (!s.startsWith("b:"))
			throw new IllegalStateException("not bytes: " + s);
		return new String(unhex(s.substring(2)), StandardCharsets.UTF_8);
	}

	static List<String> sorted(Collection<String> c) {
		List<String> l = new ArrayList<>(c);
		Collections.sort(l);
		return l;
	}

	static List<String> strs(List<Object> l) {
		List<String> o = new ArrayList<>();
		for (Object x : l)
			o.add(String.valueOf(x));
		return o;
	}

	/** Sends a line the peer works on while this side's threads run; read it with reply(). */
	static void send(String line) throws Exception {
		pin.write(line + "\n");
		pin.flush();
	}

	static String reply() throws Exception {
		String reply = pout.readLine();
		if (reply == null || !reply.startsWith("ok "))
			throw new IllegalStateException("peer -> " + reply);
		return reply.substring(3);
	}

	interface Body {
		void run(int t) throws Exception;
	}

	static void threads(int n, Body body) throws Exception {
		List<Thread> ts = new ArrayList<>();
		final Throwable[] err = new Throwable[1];
		for (int k = 0; k < n; k++) {
			final int t = k;
			Thread th = new Thread(() -> {
				try {
					body.run(t);
				} catch (Throwable e) {
					err[0] = e;
				}
			});
			th.start();
			ts.add(th);
		}
		for (Thread th : ts)
			th.join();
		if (err[0] != null)
			throw new RuntimeException(err[0]);
	}

	// texts both sides must keep byte-exact: accents, CJK, RTL, emoji
	// (surrogate pairs in Java), a tab, an empty string
	static final String[] TEXTS = {"plain", "h\u00e9llo", "\u65e5\u672c\u8a9e", "\u05e9\u05dc\u05d5\u05dd",
	        "smile \ud83d\ude00", "tab\there", "", "\u0416\u0443\u043a", "\uff21\uff22", "z"};

	// bytes only ByteArrayCodec can carry: NULs, 0xff, lone UTF-8 lead bytes
	static byte[][] binaries() {
		return new byte[][] {{0}, {0, 0, 1}, {(byte) 0xff, (byte) 0xfe, 0}, {(byte) 0xc3}, {(byte) 0x80, 'a', 0, 'b'},
		        {}, {'x', 0}, {(byte) 0xed, (byte) 0xa0, (byte) 0x80}};
	}

	// ---- map ----

	static void mapText(String name) throws Exception {
		RMap<String, String> jm = r.getMap(name, StringCodec.INSTANCE);
		Map<String, String> want = new LinkedHashMap<>();
		for (int k = 0; k < TEXTS.length; k++)
			want.put("k" + TEXTS[k], TEXTS[(k + 3) % TEXTS.length]);
		jm.putAll(want);
		check("map: hilock's size of Redisson's putAll", i(want.size()), hl("map", name, "size"));
		int same = 0;
		for (Map.Entry<String, String> e : want.entrySet())
			same += hl("map", name, "get", b(e.getKey())).equals(b(e.getValue())) ? 1 : 0;
		check("map: hilock's get of each of Redisson's UTF-8 entries", want.size(), same);
		List<String> ask = new ArrayList<>(bs(want.keySet()));
		ask.add(b("missing"));
		List<Object> all = list(call(line("call", "map", name, "get_all", ask)));
		Map<String, String> got = new LinkedHashMap<>();
		for (int k = 0; k + 1 < all.size(); k += 2)
			got.put(strOf(all.get(k)), strOf(all.get(k + 1)));
		check("map: hilock's get_all = Redisson's readAllMap", new HashMap<>(jm.readAllMap()), new HashMap<>(got));
		check("map: hilock contains_key of Redisson's", "i:1", hl("map", name, "contains_key", b("k" + TEXTS[2])));
		check("map: hilock contains_key of a missing key", "i:0", hl("map", name, "contains_key", b("k?")));

		String k1 = "k" + TEXTS[1];
		check("map: hilock's put answers Redisson's value", b(want.get(k1)), hl("map", name, "put", b(k1), b("\u00fcber")));
		check("map: Redisson's put answers hilock's value", "\u00fcber", jm.put(k1, "w\u00f6rld"));
		check("map: hilock reads Redisson's put", b("w\u00f6rld"), hl("map", name, "get", b(k1)));
		check("map: hilock's put_if_absent on Redisson's key answers it", b("w\u00f6rld"),
		        hl("map", name, "put_if_absent", b(k1), b("no")));
		check("map: hilock's put_if_absent on a new key answers nil", "nil",
		        hl("map", name, "put_if_absent", b("hnew"), b("h\u00e9")));
		check("map: Redisson's putIfAbsent on hilock's key answers it", "h\u00e9", jm.putIfAbsent("hnew", "no"));
		check("map: hilock's fast_put of a new key answers true", "i:1", hl("map", name, "fast_put", b("hf"), b("1")));
		check("map: hilock's fast_put of Redisson's key answers false", "i:0",
		        hl("map", name, "fast_put", b(k1), b("x\u2713")));
		check("map: Redisson reads hilock's fast_put", "x\u2713", jm.get(k1));
		check("map: Redisson's fastPut of hilock's key answers false", false, jm.fastPut("hf", "2"));
		check("map: hilock's fast_put_if_absent refused on Redisson's key", "i:0",
		        hl("map", name, "fast_put_if_absent", b(k1), b("no")));
		check("map: Redisson's fastPutIfAbsent refused on hilock's key", false, jm.fastPutIfAbsent("hnew", "no"));
		check("map: hilock's fast_put_if_absent on a new key", "i:1",
		        hl("map", name, "fast_put_if_absent", b("hfa"), b("")));
		check("map: Redisson reads hilock's empty value", "", jm.get("hfa"));
		String k2 = "k" + TEXTS[2];
		check("map: hilock's remove answers Redisson's value", b(want.get(k2)), hl("map", name, "remove", b(k2)));
		check("map: Redisson sees it removed", false, jm.containsKey(k2));
		check("map: Redisson's remove answers hilock's value", "2", jm.remove("hf"));
		check("map: hilock's fast_remove of 2 present and 1 missing", "i:2", hl("map", name, "fast_remove",
		        b("k" + TEXTS[3]), b("k" + TEXTS[4]), b("k?")));
		check("map: Redisson sees both removed", false,
		        jm.containsKey("k" + TEXTS[3]) || jm.containsKey("k" + TEXTS[4]));
		check("map: Redisson's fastRemove of hilock's keys", 2L, jm.fastRemove("hnew", "hfa"));
		call("call map " + hex(name) + " put_all " + b("pa\u00e9") + " " + b("1") + " " + b("pb") + " " + b("\ud83d\ude00")
		        + " " + b("") + " " + b("empty key"));
		check("map: Redisson reads hilock's put_all", "1|\ud83d\ude00|empty key",
		        jm.get("pa\u00e9") + "|" + jm.get("pb") + "|" + jm.get(""));
		// add_and_get: a decimal string both sides count on
		RMap<String, Number> jn = r.getMap(name, StringCodec.INSTANCE);
		check("map: Redisson's addAndGet on a new key", "1.5", String.valueOf(jn.addAndGet("n", 1.5)));
		check("map: hilock adds -0.25 to Redisson's 1.5", 1.25, dval(hl("map", name, "add_and_get", b("n"), d(-0.25))));
		check("map: Redisson adds 1e10 to hilock's 1.25", "1.000000000125E10", String.valueOf(jn.addAndGet("n", 1e10)));
		check("map: hilock reads the stored number", 10000000001.25, dval(hl("map", name, "add_and_get", b("n"), d(0))));
		check("map: both read the same entries", new HashMap<>(jm.readAllMap()), readMapHl(name));
	}

	static Map<String, String> readMapHl(String name) throws Exception {
		List<Object> all = items(call("iter map " + hex(name) + " scan 100"));
		Map<String, String> got = new HashMap<>();
		for (int k = 0; k + 1 < all.size(); k += 2)
			got.put(strOf(all.get(k)), strOf(all.get(k + 1)));
		return got;
	}

	static void mapBytes(String name) throws Exception {
		RMap<byte[], byte[]> jm = r.getMap(name, ByteArrayCodec.INSTANCE);
		byte[][] bin = binaries();
		for (int k = 0; k < bin.length; k++)
			jm.put(bin[k], bin[(k + 1) % bin.length]);
		int same = 0;
		for (int k = 0; k < bin.length; k++)
			same += hl("map", name, "get", b(bin[k])).equals(b(bin[(k + 1) % bin.length])) ? 1 : 0;
		check("map bytes: hilock reads each of Redisson's binary entries (NUL keys, empty key and value)", bin.length,
		        same);
		for (int k = 0; k < bin.length; k++)
			hl("map", name, "put", b(bin[k]), b(bin[(k + 3) % bin.length]));
		same = 0;
		for (int k = 0; k < bin.length; k++)
			same += Arrays.equals(jm.get(bin[k]), bin[(k + 3) % bin.length]) ? 1 : 0;
		check("map bytes: Redisson reads each of hilock's binary values", bin.length, same);
		check("map bytes: Redisson's size", bin.length, jm.size());
		byte[] big = new byte[100000];
		for (int k = 0; k < big.length; k++)
			big[k] = (byte) (k * 7);
		check("map bytes: hilock's put of 100000 bytes answers Redisson's", b(bin[3]),
		        hl("map", name, "put", b(bin[0]), b(big)));
		check("map bytes: Redisson reads the 100000 bytes", big, jm.get(bin[0]));
		check("map bytes: Redisson's remove answers them", big, jm.remove(bin[0]));
		check("map bytes: hilock's contains_key after", "i:0", hl("map", name, "contains_key", b(bin[0])));
		check("map bytes: hilock's remove of a NUL key answers Redisson's value", b(jm.get(bin[1])),
		        hl("map", name, "remove", b(bin[1])));
	}

	static void mapRace(String name) throws Exception {
		final int rounds = 300, th = 3;
		RMap<String, String> jm = r.getMap(name, StringCodec.INSTANCE);
		List<String> a = new ArrayList<>();
		for (int k = 0; k < rounds; k++) {
			a.add(b("r" + k));
			a.add(b("hilock"));
		}
		String[][] jr = new String[rounds][th];
		// warm up (scripts loaded, connections open, the JIT): a cold JVM
		// falls behind the pace and never catches up
		threads(th, t -> {
			for (int k = 0; k < 100; k++) {
				jm.putIfAbsent("warm" + t, "w");
				jm.fastPutIfAbsent("warm" + t, "w");
			}
		});
		long t1 = System.currentTimeMillis() + 500;
		send(line("multi every:" + t1 + ":" + STEP + " " + th + " 2", "map", name, "put_if_absent", a));
		threads(th, t -> {
			for (int k = 0; k < rounds; k++) {
				pace(t1, k);
				jr[k][t] = String.valueOf(jm.putIfAbsent("r" + k, "redisson"));
			}
		});
		List<Object> hr = list(reply());
		raceCheck("map race", rounds, th, hr, jr, k -> jm.get("r" + k), "nil", "null", "hilock", "redisson");
		// fast_put_if_absent: a boolean winner
		a.clear();
		for (int k = 0; k < rounds; k++) {
			a.add(b("f" + k));
			a.add(b("hilock"));
		}
		long t2 = System.currentTimeMillis() + 500;
		send(line("multi every:" + t2 + ":" + STEP + " " + th + " 2", "map", name, "fast_put_if_absent", a));
		threads(th, t -> {
			for (int k = 0; k < rounds; k++) {
				pace(t2, k);
				jr[k][t] = jm.fastPutIfAbsent("f" + k, "redisson") ? "true" : "false";
			}
		});
		hr = list(reply());
		raceCheck("map fast race", rounds, th, hr, jr, k -> jm.get("f" + k), "i:1", "true", "hilock", "redisson");
	}

	// races: round k starts on both sides when the wall clock reads
	// start + k * STEP ms (the C threads would otherwise finish before
	// the JVM's have started)
	static final int STEP = 5;

	static void pace(long start, int k) throws InterruptedException {
		long due = start + (long) k * STEP, now;
		while ((now = System.currentTimeMillis()) < due)
			Thread.sleep(due - now);
	}

	static String str(Object o) {
		return o == null ? "nil" : o.toString();
	}

	interface Final {
		String get(int k) throws Exception;
	}

	/**
	 * Each round: exactly one winner of all threads of both sides; the
	 * stored value is the winner's; a losing put_if_absent answers it.
	 */
	@SuppressWarnings("unchecked")
	static void raceCheck(String what, int rounds, int th, List<Object> hr, String[][] jr, Final fin, String hwin,
	        String jwin, String hval, String jval) throws Exception {
		int bad = 0, hw = 0, jw = 0, wrongLoss = 0, errs = 0;
		String firstBad = "";
		for (int k = 0; k < rounds; k++) {
			List<Object> hk = (List<Object>) hr.get(k);
			int hwins = 0, jwins = 0;
			for (Object o : hk) {
				hwins += hwin.equals(str(o)) ? 1 : 0;
				errs += str(o).startsWith("E:") ? 1 : 0;
			}
			for (String s : jr[k])
				jwins += jwin.equals(s) ? 1 : 0;
			String stored = fin.get(k);
			String want = hwins == 1 ? hval : jval;
			if (hwins + jwins != 1 || !want.equals(stored)) {
				if (bad++ == 0)
					firstBad = "round " + k + ": hilock " + hk + ", Redisson " + Arrays.toString(jr[k]) + ", stored "
					        + stored;
			}
			hw += hwins;
			jw += jwins;
			// a losing put_if_absent answers the winner's value
			if (hwin.equals("nil")) {
				for (Object o : hk)
					if (o != null && !b(stored).equals(o))
						wrongLoss++;
				for (String s : jr[k])
					if (!s.equals("null") && !s.equals(stored))
						wrongLoss++;
			}
		}
		checkTrue(what + ": exactly one winner in each of " + rounds + " rounds (" + th + " threads a side)",
		        bad == 0 && errs == 0, "hilock won " + hw + ", Redisson " + jw + ", bad rounds " + bad
		                + (errs > 0 ? ", hilock errors " + errs : "") + (bad > 0 ? " (" + firstBad + ")" : ""));
		checkTrue(what + ": both sides won some rounds (they raced)", hw > 0 && jw > 0,
		        "hilock " + hw + ", Redisson " + jw);
		if (hwin.equals("nil"))
			check(what + ": every loser was answered the winner's value", 0, wrongLoss);
	}

	static void mapIter(String name) throws Exception {
		RMap<String, String> jm = r.getMap(name, StringCodec.INSTANCE);
		Map<String, String> half = new HashMap<>();
		List<String> a = new ArrayList<>();
		for (int k = 0; k < 1500; k++) {
			String key = "e" + k + (k % 9 == 0 ? "\u00e9\u65e5" : "");
			String val = "v" + (k * 7919 % 1000);
			if (k % 2 == 0) {
				half.put(key, val);
			} else {
				a.add(b(key));
				a.add(b(val));
			}
		}
		jm.putAll(half);
		call(line("call", "map", name, "put_all", a));
		List<String> hs = new ArrayList<>();
		String res = call("iter map " + hex(name) + " scan 100");
		List<Object> it = items(res);
		for (int k = 0; k + 1 < it.size(); k += 2)
			hs.add(it.get(k) + "=" + it.get(k + 1));
		List<String> js = new ArrayList<>();
		for (Map.Entry<String, String> e : jm.entrySet())
			js.add(b(e.getKey()) + "=" + b(e.getValue()));
		check("map iter: hilock's scan pages (" + pages(res) + ") and Redisson's iterator give the same 1500 entries",
		        sorted(js), sorted(hs));
		System.out.printf("# %s map iter: same order on both sides: %s%n", tag, js.equals(hs));
	}

	// ---- set ----

	static void setText(String name) throws Exception {
		RSet<String> js = r.getSet(name, StringCodec.INSTANCE);
		List<String> vals = Arrays.asList(TEXTS);
		check("set: Redisson's addAll", true, js.addAll(vals));
		check("set: hilock's size", i(vals.size()), hl("set", name, "size"));
		int found = 0;
		for (String v : vals)
			found += hl("set", name, "contains", b(v)).equals("i:1") ? 1 : 0;
		check("set: hilock contains each of Redisson's (empty string too)", vals.size(), found);
		check("set: hilock's scan = Redisson's readAll", sorted(bs(js.readAll())),
		        sorted(strs(items(call("iter set " + hex(name) + " scan 500")))));
		check("set: hilock's add of Redisson's member answers false", "i:0", hl("set", name, "add", b(TEXTS[1])));
		check("set: hilock's add of a new member", "i:1", hl("set", name, "add", b("n\u00e9u")));
		check("set: Redisson's add of hilock's member answers false", false, js.add("n\u00e9u"));
		check("set: Redisson contains hilock's", true, js.contains("n\u00e9u"));
		check("set: hilock's remove of Redisson's member", "i:1", hl("set", name, "remove", b(TEXTS[2])));
		check("set: Redisson sees it gone", false, js.contains(TEXTS[2]));
		check("set: Redisson's remove of hilock's member", true, js.remove("n\u00e9u"));
		check("set: hilock sees it gone", "i:0", hl("set", name, "contains", b("n\u00e9u")));
		check("set: hilock's add_all of 2 new and 1 of Redisson's", "i:2",
		        call("call set " + hex(name) + " add_all " + b("a1") + " " + b("a\u2713") + " " + b(TEXTS[0])));
		check("set: Redisson reads them", true, js.containsAll(List.of("a1", "a\u2713")));
		check("set: hilock's remove_all of 2 present and 1 missing", "i:2",
		        call("call set " + hex(name) + " remove_all " + b("a1") + " " + b(TEXTS[0]) + " " + b("none")));
		check("set: Redisson sees them gone", false, js.contains("a1") || js.contains(TEXTS[0]));
		String rnd = hl("set", name, "random");
		check("set: hilock's random is one of Redisson's", true, js.contains(strOf(rnd)));
		int before = js.size();
		String popped = hl("set", name, "remove_random");
		check("set: hilock's remove_random took one of Redisson's out", false, js.contains(strOf(popped)));
		check("set: Redisson's size after it", before - 1, js.size());
		String jp = js.removeRandom();
		check("set: Redisson's removeRandom took one out for hilock", "i:0", hl("set", name, "contains", b(jp)));
	}

	static void setBytes(String name) throws Exception {
		RSet<byte[]> js = r.getSet(name, ByteArrayCodec.INSTANCE);
		byte[][] bin = binaries();
		for (int k = 0; k < bin.length; k += 2)
			js.add(bin[k]);
		List<String> a = new ArrayList<>();
		for (int k = 1; k < bin.length; k += 2)
			a.add(b(bin[k]));
		check("set bytes: hilock's add_all of the other half", i(a.size()), call(line("call", "set", name, "add_all", a)));
		int found = 0;
		for (byte[] v : bin)
			found += hl("set", name, "contains", b(v)).equals("i:1") && js.contains(v) ? 1 : 0;
		check("set bytes: both sides contain every binary member", bin.length, found);
		check("set bytes: hilock's scan = Redisson's readAll", sorted(bb(js.readAll())),
		        sorted(strs(items(call("iter set " + hex(name) + " scan 500")))));
	}

	static void setRace(String name) throws Exception {
		final int rounds = 300, th = 3;
		RSet<String> js = r.getSet(name, StringCodec.INSTANCE);
		List<String> a = new ArrayList<>();
		for (int k = 0; k < rounds; k++)
			a.add(b("m" + k));
		String[][] jr = new String[rounds][th];
		threads(th, t -> {
			for (int k = 0; k < 100; k++)
				js.add("warm" + t);
		});
		js.delete();
		long t1 = System.currentTimeMillis() + 500;
		send(line("multi every:" + t1 + ":" + STEP + " " + th + " 1", "set", name, "add", a));
		threads(th, t -> {
			for (int k = 0; k < rounds; k++) {
				pace(t1, k);
				jr[k][t] = js.add("m" + k) ? "true" : "false";
			}
		});
		List<Object> hr = list(reply());
		raceCheck("set race (add)", rounds, th, hr, jr, k -> "x", "i:1", "true", "x", "x");
		check("set race: " + rounds + " members on both sides", i(rounds), hl("set", name, "size"));
	}

	static void setIter(String name) throws Exception {
		RSet<String> js = r.getSet(name, StringCodec.INSTANCE);
		List<String> mine = new ArrayList<>(), a = new ArrayList<>();
		for (int k = 0; k < 1500; k++) {
			String v = "s" + k + (k % 11 == 0 ? "\u0416" : "");
			if (k % 2 == 0)
				mine.add(v);
			else
				a.add(b(v));
		}
		js.addAll(mine);
		call(line("call", "set", name, "add_all", a));
		String res = call("iter set " + hex(name) + " scan 500");
		List<String> hs = strs(items(res));
		List<String> jl = new ArrayList<>();
		for (Iterator<String> it = js.iterator(); it.hasNext();)
			jl.add(b(it.next()));
		check("set iter: hilock's scan pages (" + pages(res) + ") and Redisson's iterator give the same 1500", sorted(jl),
		        sorted(hs));
		System.out.printf("# %s set iter: same order on both sides: %s%n", tag, jl.equals(hs));
	}

	// ---- scored sorted set ----

	static final double[] SCORES = {1.5, -2.25, 0, 1e-7, -1e-7, 123456789.123, 0.1, 0.30000000000000004, 1e15 + 0.5,
	        -9007199254740993.0, 1e300, -1e300, Double.MAX_VALUE, 4.9e-300, 42, 1.0 / 3};

	static void scored(String name) throws Exception {
		RScoredSortedSet<String> jz = r.getScoredSortedSet(name, StringCodec.INSTANCE);
		for (int k = 0; k < SCORES.length; k++) {
			String m = "m" + k + TEXTS[k % TEXTS.length];
			if (k % 2 == 0)
				jz.add(SCORES[k], m);
			else
				check("scored: hilock's add(" + SCORES[k] + ")", "i:1", hl("scored_sorted_set", name, "add", d(SCORES[k]), b(m)));
		}
		int same = 0, ranks = 0;
		String diff = "";
		for (int k = 0; k < SCORES.length; k++) {
			String m = "m" + k + TEXTS[k % TEXTS.length];
			double h = dval(hl("scored_sorted_set", name, "get_score", b(m)));
			Double j = jz.getScore(m);
			if (h == SCORES[k] && j != null && j == SCORES[k])
				same++;
			else
				diff += " " + SCORES[k] + ": hilock " + h + " Redisson " + j + ";";
			String hr = hl("scored_sorted_set", name, "rank", b(m)), hrr = hl("scored_sorted_set", name, "rev_rank", b(m));
			if (hr.equals(i(jz.rank(m))) && hrr.equals(i(jz.revRank(m))))
				ranks++;
			else
				diff += " rank of " + m + ": hilock " + hr + "/" + hrr + " Redisson " + jz.rank(m) + "/" + jz.revRank(m)
				        + ";";
		}
		checkTrue("scored: each score written by either side reads equal on both (fractional, negative, 1e300, MAX_VALUE)",
		        same == SCORES.length, same + " of " + SCORES.length + diff);
		check("scored: rank and rev_rank agree for every member", SCORES.length, ranks);
		check("scored: hilock's value_range(0, -1) = Redisson's valueRange, in order", bs(jz.valueRange(0, -1)),
		        strs(list(hl("scored_sorted_set", name, "value_range", i(0), i(-1)))));
		List<String> je = new ArrayList<>();
		for (ScoredEntry<String> e : jz.entryRange(0, -1))
			je.add(b(e.getValue()) + "@" + e.getScore());
		List<Object> he = list(hl("scored_sorted_set", name, "entry_range", i(0), i(-1)));
		List<String> hes = new ArrayList<>();
		for (int k = 0; k + 1 < he.size(); k += 2)
			hes.add(he.get(k) + "@" + dval((String) he.get(k + 1)));
		check("scored: hilock's entry_range = Redisson's entryRange (members, scores, order)", je, hes);
		check("scored: hilock's value_range(2, 4) = Redisson's", bs(jz.valueRange(2, 4)),
		        strs(list(hl("scored_sorted_set", name, "value_range", i(2), i(4)))));
		check("scored: hilock's value_range_by_score(-2.25, 1.5) = Redisson's valueRange(-2.25, true, 1.5, true)",
		        bs(jz.valueRange(-2.25, true, 1.5, true)),
		        strs(list(hl("scored_sorted_set", name, "value_range_by_score", d(-2.25), d(1.5)))));
		check("scored: exclusive ends (-1e300, 1e300) agree", bs(jz.valueRange(-1e300, false, 1e300, false)),
		        strs(list(hl("scored_sorted_set", name, "value_range_by_score", d(-1e300), d(1e300), "i:0", "i:0"))));
		check("scored: hilock's count(-inf, 0) = Redisson's count", i(jz.count(Double.NEGATIVE_INFINITY, true, 0, true)),
		        hl("scored_sorted_set", name, "count", d(Double.NEGATIVE_INFINITY), d(0)));
		check("scored: first agrees", b(jz.first()), hl("scored_sorted_set", name, "first"));
		check("scored: last agrees", b(jz.last()), hl("scored_sorted_set", name, "last"));
		check("scored: size agrees", i(jz.size()), hl("scored_sorted_set", name, "size"));
		String m0 = "m0" + TEXTS[0], m1 = "m1" + TEXTS[1];
		check("scored: hilock's add_score(-0.75) on Redisson's 1.5", 0.75,
		        dval(hl("scored_sorted_set", name, "add_score", b(m0), d(-0.75))));
		check("scored: Redisson reads it", 0.75, jz.getScore(m0));
		check("scored: Redisson's addScore(1e-7) on hilock's -2.25", -2.25 + 1e-7, jz.addScore(m1, 1e-7));
		check("scored: hilock reads it", -2.25 + 1e-7, dval(hl("scored_sorted_set", name, "get_score", b(m1))));
		check("scored: hilock's try_add refused on Redisson's member", "i:0",
		        hl("scored_sorted_set", name, "try_add", d(9), b(m0)));
		check("scored: Redisson's tryAdd refused on hilock's member", false, jz.tryAdd(9, m1));
		check("scored: hilock's add of an existing member answers false and moves it", "i:0",
		        hl("scored_sorted_set", name, "add", d(-5.5), b(m0)));
		check("scored: Redisson reads the new score", -5.5, jz.getScore(m0));
		String inf = peer("call scored_sorted_set " + hex(name) + " add d:Infinity " + b("inf"));
		checkTrue("scored: hilock refuses an infinite score, as Redisson's add does", inf.startsWith("err "), inf);
		check("scored: nothing added for it", false, jz.contains("inf"));
		check("scored: hilock's get_score of a missing member", "nil", hl("scored_sorted_set", name, "get_score", b("?")));
		check("scored: hilock's rank of a missing member", "nil", hl("scored_sorted_set", name, "rank", b("?")));
		String first = jz.first(), last = jz.last();
		check("scored: hilock's poll_first takes Redisson's first", b(first), hl("scored_sorted_set", name, "poll_first"));
		check("scored: hilock's poll_last takes Redisson's last", b(last), hl("scored_sorted_set", name, "poll_last"));
		check("scored: Redisson no longer has them", false, jz.contains(first) || jz.contains(last));
		String hf = hl("scored_sorted_set", name, "first");
		check("scored: Redisson's pollFirst takes hilock's first", hf, b(jz.pollFirst()));
		check("scored: hilock's remove of a Redisson member", "i:1", hl("scored_sorted_set", name, "remove", b("m4" + TEXTS[4])));
		check("scored: Redisson's remove of a hilock member", true, jz.remove("m5" + TEXTS[5]));
		check("scored: sizes agree after", i(jz.size()), hl("scored_sorted_set", name, "size"));
		// many at once from each end
		List<String> asc = new ArrayList<>(jz.valueRange(0, -1));
		check("scored: hilock's poll_first_many(2) takes Redisson's first two", bs(asc.subList(0, 2)),
		        strs(list(hl("scored_sorted_set", name, "poll_first_many", i(2)))));
		check("scored: Redisson's pollLast(2) takes what hilock calls last", strs(list(hl("scored_sorted_set", name,
		        "value_range", i(-2), i(-1)))), bs(new ArrayList<>(jz.pollLast(2))));
		// equal scores: both order by the member's bytes
		RScoredSortedSet<byte[]> jb = r.getScoredSortedSet(name + ":tie", ByteArrayCodec.INSTANCE);
		byte[][] bin = binaries();
		for (int k = 0; k < bin.length; k++)
			if (k % 2 == 0)
				jb.add(7, bin[k]);
			else
				hl("scored_sorted_set", name + ":tie", "add", d(7), b(bin[k]));
		check("scored: binary members of one score, same order on both", bb(jb.valueRange(0, -1)),
		        strs(list(hl("scored_sorted_set", name + ":tie", "value_range", i(0), i(-1)))));
	}

	static void scoredConcurrent(String name) throws Exception {
		RScoredSortedSet<String> jz = r.getScoredSortedSet(name, StringCodec.INSTANCE);
		final int n = 400, th = 3;
		List<String> a = new ArrayList<>();
		for (int k = 0; k < n; k++) {
			a.add(d((k % 37) * 0.5 - 7.25));
			a.add(b("h" + k));
		}
		send(line("multi spread " + th + " 2", "scored_sorted_set", name, "add", a));
		threads(th, t -> {
			for (int k = t; k < n; k += th)
				jz.add((k % 41) * 0.25 - 3.125, "j" + k);
		});
		List<Object> res = list(reply());
		check("scored concurrent: hilock's " + n + " adds answered true", Collections.nCopies(n, "i:1"), strs(res));
		check("scored concurrent: " + 2 * n + " members on both sides", i(2 * n), hl("scored_sorted_set", name, "size"));
		List<String> je = new ArrayList<>();
		for (ScoredEntry<String> e : jz.entryRange(0, -1))
			je.add(b(e.getValue()) + "@" + e.getScore());
		List<Object> he = list(hl("scored_sorted_set", name, "entry_range", i(0), i(-1)));
		List<String> hes = new ArrayList<>();
		for (int k = 0; k + 1 < he.size(); k += 2)
			hes.add(he.get(k) + "@" + dval((String) he.get(k + 1)));
		check("scored concurrent: the same entries in the same order on both", je, hes);
		// add_score on one member from both sides at once
		send("par " + th + " 100 scored_sorted_set " + hex(name) + " add_score " + b("hot") + " d:0.5");
		threads(th, t -> {
			for (int k = 0; k < 100; k++)
				jz.addScore("hot", 0.25);
		});
		check("scored concurrent: hilock's add_score calls all answered", "i:0", reply());
		check("scored concurrent: Redisson reads " + th * 75.0, th * 75.0, jz.getScore("hot"));
		check("scored concurrent: hilock reads " + th * 75.0, th * 75.0,
		        dval(hl("scored_sorted_set", name, "get_score", b("hot"))));
		check("scored concurrent: rank of hot agrees", i(jz.rank("hot")), hl("scored_sorted_set", name, "rank", b("hot")));
	}

	static void scoredIter(String name) throws Exception {
		RScoredSortedSet<String> jz = r.getScoredSortedSet(name, StringCodec.INSTANCE);
		Map<String, Double> mine = new HashMap<>();
		List<String> a = new ArrayList<>();
		for (int k = 0; k < 1500; k++) {
			double s = (k * 7919 % 1000) / 8.0 - 50;
			if (k % 2 == 0) {
				mine.put("z" + k, s);
			} else {
				a.add(d(s));
				a.add(b("z" + k));
			}
		}
		jz.addAll(mine);
		send(line("multi spread 2 2", "scored_sorted_set", name, "add", a));
		reply();
		String res = call("iter scored_sorted_set " + hex(name) + " scan 500");
		List<Object> it = items(res);
		List<String> hs = new ArrayList<>();
		for (int k = 0; k + 1 < it.size(); k += 2)
			hs.add(it.get(k) + "@" + dval((String) it.get(k + 1)));
		List<String> js = new ArrayList<>();
		for (Iterator<String> x = jz.iterator(); x.hasNext();)
			js.add(b(x.next()));
		List<String> hm = new ArrayList<>();
		for (int k = 0; k < it.size(); k += 2)
			hm.add((String) it.get(k));
		check("scored iter: hilock's scan pages (" + pages(res) + ") and Redisson's iterator give the same 1500 members",
		        sorted(js), sorted(hm));
		List<String> je = new ArrayList<>();
		for (ScoredEntry<String> e : jz.entryRange(0, -1))
			je.add(b(e.getValue()) + "@" + e.getScore());
		check("scored iter: hilock's scanned scores = Redisson's entryRange", sorted(je), sorted(hs));
	}

	// ---- sorted set (a sorted list under Redisson's lock) ----

	// Java's natural String order is UTF-16 order: a surrogate pair (U+1F600)
	// sorts before U+E000..U+FFFF, where UTF-8 bytes sort it after.
	static final String[] SORTED = {"b", "a", "A", "ab", "\u00e9", "e", "\u65e5", "\ud83d\ude00", "\uff21", "\ue000x",
	        "\u007f", "", "a\u0000b", "\ud83d\ude01z", "\ufffd"};

	static void sortedSet(String name) throws Exception {
		RSortedSet<String> jz = r.getSortedSet(name, StringCodec.INSTANCE);
		TreeSet<String> want = new TreeSet<>();
		for (int k = 0; k < SORTED.length; k++) {
			want.add(SORTED[k]);
			if (k % 2 == 0)
				jz.add(SORTED[k]);
			else
				check("sorted: hilock's add of \"" + SORTED[k] + "\"", "i:1", hl("sorted_set", name, "add", b(SORTED[k])));
		}
		List<String> jl = new ArrayList<>(jz.readAll());
		check("sorted: Redisson reads both sides' adds in Java's String order", new ArrayList<>(want), jl);
		check("sorted: hilock reads the same list in order", bs(want), readSortedHl(name));
		check("sorted: hilock's add of Redisson's value answers false", "i:0", hl("sorted_set", name, "add", b("b")));
		check("sorted: Redisson's add of hilock's value answers false", false, jz.add(SORTED[1]));
		check("sorted: no duplicate in the list", i(want.size()), hl("sorted_set", name, "size"));
		check("sorted: hilock contains Redisson's", "i:1", hl("sorted_set", name, "contains", b("\u65e5")));
		check("sorted: Redisson contains hilock's", true, jz.contains("\ue000x"));
		check("sorted: first agrees", b(jz.first()), hl("sorted_set", name, "first"));
		check("sorted: last agrees", b(jz.last()), hl("sorted_set", name, "last"));
		check("sorted: hilock's remove of Redisson's", "i:1", hl("sorted_set", name, "remove", b("\u00e9")));
		check("sorted: Redisson's remove of hilock's", true, jz.remove("ab"));
		want.remove("\u00e9");
		want.remove("ab");
		check("sorted: Redisson reads the order after both removes", new ArrayList<>(want), new ArrayList<>(jz.readAll()));
		check("sorted: hilock's poll_first takes the first", b(want.pollFirst()), hl("sorted_set", name, "poll_first"));
		check("sorted: hilock's poll_last takes the last", b(want.pollLast()), hl("sorted_set", name, "poll_last"));
		check("sorted: Redisson's order after hilock's polls", new ArrayList<>(want), new ArrayList<>(jz.readAll()));
		check("sorted: Redisson's pollFirst takes what hilock calls first", hl("sorted_set", name, "first"), b(jz.pollFirst()));
		// the lock is Redisson's: held by Redisson, hilock's add waits for it
		org.redisson.api.RLock lock = r.getLock("redisson_sortedset_lock:{" + name + "}");
		lock.lock();
		try {
			send("call sorted_set " + hex(name) + " add " + b("during"));
			Thread.sleep(500);
			check("sorted: hilock's add waits while Redisson holds the set's lock", false,
			        r.getList(name, StringCodec.INSTANCE).contains("during"));
		} finally {
			lock.unlock();
		}
		check("sorted: hilock's add went ahead after the unlock", "i:1", reply());
		check("sorted: Redisson reads it", true, jz.contains("during"));
	}

	static void sortedComparator(String name) throws Exception {
		// a set Redisson orders with a comparator: hilock must refuse to
		// write it (it cannot know the order), and leave it as it is
		r.getKeys().delete("redisson_sortedset_comparator:{" + name + "}",
		        "redisson_sortedset_comparator_instance:{" + name + "}");
		RSortedSet<String> jz = r.getSortedSet(name, StringCodec.INSTANCE);
		check("sorted comparator: Redisson's trySetComparator(reverseOrder)", true,
		        jz.trySetComparator(Collections.reverseOrder()));
		jz.add("a");
		jz.add("c");
		String reply = peer("call sorted_set " + hex(name) + " add " + b("b"));
		checkTrue("sorted comparator: hilock's add refused with an error naming the comparator",
		        reply.startsWith("err ") && reply.contains("omparator"), reply);
		check("sorted comparator: Redisson's list unchanged", List.of("c", "a"), new ArrayList<>(jz.readAll()));
		reply = peer("call sorted_set " + hex(name) + " remove " + b("a"));
		checkTrue("sorted comparator: hilock's remove refused too", reply.startsWith("err "), reply);
		check("sorted comparator: Redisson's list still unchanged", List.of("c", "a"), new ArrayList<>(jz.readAll()));
	}

	static List<String> readSortedHl(String name) throws Exception {
		return strs(items(call("ranges sorted_set " + hex(name) + " read_range 1000")));
	}

	static void sortedConcurrent(String name) throws Exception {
		RSortedSet<String> jz = r.getSortedSet(name, StringCodec.INSTANCE);
		final int n = 120, th = 2;
		TreeSet<String> want = new TreeSet<>();
		List<String> a = new ArrayList<>();
		for (int k = 0; k < n; k++) {
			String h = "v" + (k * 37 % 101) + "\u00e9" + k, j = "v" + (k * 53 % 103) + "\u65e5" + k;
			// every fifth one outside the BMP or in U+E000..U+FFFF
			if (k % 5 == 0) {
				h = (k % 10 == 0 ? "\ud83d\ude00" : "\uff21") + h;
				j = (k % 10 == 0 ? "\uff41" : "\ud83c\udf4e") + j;
			}
			want.add(h);
			want.add(j);
			a.add(b(h));
		}
		send(line("multi spread " + th + " 1", "sorted_set", name, "add", a));
		List<String> jv = new ArrayList<>();
		for (String s : want)
			if (!a.contains(b(s)))
				jv.add(s);
		threads(th, t -> {
			for (int k = t; k < jv.size(); k += th)
				jz.add(jv.get(k));
		});
		List<Object> res = list(reply());
		check("sorted concurrent: hilock's " + n + " adds answered true", Collections.nCopies(n, "i:1"), strs(res));
		List<String> jl = new ArrayList<>(jz.readAll());
		checkTrue("sorted concurrent: " + 2 * n + " values, no loss, no duplicate",
		        jl.size() == 2 * n && new TreeSet<>(jl).size() == jl.size(),
		        jl.size() + " values, " + new TreeSet<>(jl).size() + " distinct");
		check("sorted concurrent: Redisson reads them in Java's String order", new ArrayList<>(want), jl);
		check("sorted concurrent: hilock reads the same list", bs(want), readSortedHl(name));
	}

	static void sortedIter(String name) throws Exception {
		RSortedSet<String> jz = r.getSortedSet(name, StringCodec.INSTANCE);
		List<String> a = new ArrayList<>();
		TreeSet<String> want = new TreeSet<>();
		for (int k = 0; k < 1100; k++) {
			String v = String.format("i%05d", k * 7919 % 100000);
			want.add(v);
		}
		// Redisson adds one value per locked round trip: half each, the
		// hilock half in one line
		int k = 0;
		for (String v : want)
			if (k++ % 2 == 0)
				jz.add(v);
			else
				a.add(b(v));
		send(line("multi spread 1 1", "sorted_set", name, "add", a));
		reply();
		List<String> jl = new ArrayList<>();
		for (Iterator<String> it = jz.iterator(); it.hasNext();)
			jl.add(b(it.next()));
		String res = call("iter sorted_set " + hex(name) + " scan 1000");
		List<String> hl = strs(items(res));
		check("sorted iter: Redisson's iterator and hilock's scan pages (" + pages(res) + ") give the same 1100, in order",
		        jl, hl);
		check("sorted iter: in Java's order", bs(want), hl);
	}

	// ---- list ----

	static void listText(String name) throws Exception {
		RList<String> jl = r.getList(name, StringCodec.INSTANCE);
		List<String> want = new ArrayList<>(Arrays.asList(TEXTS));
		jl.addAll(want);
		check("list: hilock reads Redisson's addAll in order", bs(want),
		        strs(list(hl("list", name, "read_range", i(0), i(-1)))));
		int same = 0;
		for (int k = 0; k < want.size(); k++)
			same += hl("list", name, "get", i(k)).equals(b(want.get(k))) ? 1 : 0;
		check("list: hilock's get(i) of each", want.size(), same);
		check("list: hilock's get(-1) is the last", b(want.get(want.size() - 1)), hl("list", name, "get", i(-1)));
		check("list: hilock's get past the end", "nil", hl("list", name, "get", i(100)));
		check("list: hilock's size", i(want.size()), hl("list", name, "size"));
		check("list: hilock's index_of = Redisson's indexOf", i(jl.indexOf(TEXTS[3])), hl("list", name, "index_of", b(TEXTS[3])));
		check("list: hilock's index_of a missing value", "i:-1", hl("list", name, "index_of", b("none")));
		hl("list", name, "add", b("h1\u00e9"));
		call("call list " + hex(name) + " add_all " + b("h2") + " " + b("") + " " + b("h2"));
		want.addAll(List.of("h1\u00e9", "h2", "", "h2"));
		check("list: Redisson reads hilock's add and add_all in order", want, jl.readAll());
		check("list: hilock's set(1) answers Redisson's value", b(want.get(1)), hl("list", name, "set", i(1), b("S1")));
		want.set(1, "S1");
		check("list: Redisson's set(2) answers the value", want.get(2), jl.set(2, "S2\u2713"));
		want.set(2, "S2\u2713");
		check("list: hilock reads Redisson's set", b("S2\u2713"), hl("list", name, "get", i(2)));
		call("call list " + hex(name) + " fast_set i:3 " + b("F3"));
		want.set(3, "F3");
		check("list: Redisson reads hilock's fast_set", "F3", jl.get(3));
		hl("list", name, "insert", i(2), b("ins2"));
		want.add(2, "ins2");
		check("list: Redisson reads hilock's insert at 2", want, jl.readAll());
		jl.add(4, "jins4");
		want.add(4, "jins4");
		check("list: hilock reads Redisson's add(4, v)", bs(want), strs(list(hl("list", name, "read_range", i(0), i(-1)))));
		check("list: hilock's remove_at(5) answers the element", b(want.remove(5)), hl("list", name, "remove_at", i(5)));
		check("list: Redisson reads the list after it", want, jl.readAll());
		check("list: hilock's remove_at(0)", b(want.remove(0)), hl("list", name, "remove_at", i(0)));
		check("list: Redisson's remove(3) answers hilock's element", want.remove(3), jl.remove(3));
		check("list: hilock reads the list after it", bs(want), strs(list(hl("list", name, "read_range", i(0), i(-1)))));
		check("list: hilock's remove of Redisson's value", "i:1", hl("list", name, "remove", b("z")));
		want.remove("z");
		check("list: Redisson's remove of hilock's value (the first h2)", true, jl.remove("h2"));
		want.remove("h2");
		check("list: both read the same list at the end", bs(jl.readAll()),
		        strs(list(hl("list", name, "read_range", i(0), i(-1)))));
		check("list: and it is the expected one", want, jl.readAll());
		check("list: hilock's last_index_of = Redisson's", i(jl.lastIndexOf("h2")), hl("list", name, "last_index_of", b("h2")));
		// out of range: both refuse what Redis's LSET refuses, both append at size
		int n = jl.size();
		String e = peer("call list " + hex(name) + " insert " + i(n + 2) + " " + b("past"));
		boolean jrefused = false;
		try {
			jl.add(n + 2, "past");
		} catch (RuntimeException x) {
			jrefused = true;
		}
		checkTrue("list: an insert past the end refused by both (hilock, Redisson's add(index))",
		        e.startsWith("err ") && jrefused, e + " / Redisson refused: " + jrefused);
		e = peer("call list " + hex(name) + " set " + i(n + 5) + " " + b("q"));
		jrefused = false;
		try {
			jl.set(n + 5, "q");
		} catch (RuntimeException x) {
			jrefused = true;
		}
		checkTrue("list: a set past the end refused by both", e.startsWith("err ") && jrefused,
		        e + " / Redisson refused: " + jrefused);
		e = peer("call list " + hex(name) + " remove_at " + i(n + 5));
		jrefused = false;
		try {
			jl.remove(n + 5);
		} catch (RuntimeException x) {
			jrefused = true;
		}
		checkTrue("list: a remove_at past the end refused by both", e.startsWith("err ") && jrefused,
		        e + " / Redisson refused: " + jrefused);
		check("list: Redisson's get past the end is null too", null, jl.get(n + 5));
		check("list: nothing changed by the refusals", want, jl.readAll());
		hl("list", name, "insert", i(n), b("at end"));
		jl.add(n + 1, "at end 2");
		want.add("at end");
		want.add("at end 2");
		check("list: an insert at the size appends, on both sides", bs(want),
		        strs(list(hl("list", name, "read_range", i(0), i(-1)))));
		check("list: hilock's read_range(2, 4) = Redisson's range(2, 4)", bs(jl.range(2, 4)),
		        strs(list(hl("list", name, "read_range", i(2), i(4)))));
	}

	static void listBytes(String name) throws Exception {
		RList<byte[]> jl = r.getList(name, ByteArrayCodec.INSTANCE);
		byte[][] bin = binaries();
		jl.addAll(Arrays.asList(bin));
		check("list bytes: hilock reads Redisson's binary elements in order", bb(Arrays.asList(bin)),
		        strs(list(hl("list", name, "read_range", i(0), i(-1)))));
		List<String> a = new ArrayList<>();
		for (int k = bin.length - 1; k >= 0; k--)
			a.add(b(bin[k]));
		call(line("call", "list", name, "add_all", a));
		List<byte[]> all = jl.readAll();
		List<String> want = bb(Arrays.asList(bin));
		want.addAll(a);
		check("list bytes: Redisson reads hilock's binary elements in order", want, bb(all));
		check("list bytes: hilock's set(0) answers Redisson's NUL", b(bin[0]), hl("list", name, "set", i(0), b(bin[2])));
		check("list bytes: Redisson reads hilock's set", bin[2], jl.get(0));
		check("list bytes: hilock's index_of a binary value = Redisson's indexOf", i(jl.indexOf(bin[4])),
		        hl("list", name, "index_of", b(bin[4])));
		check("list bytes: hilock's remove_at answers the bytes", b(jl.get(3)), hl("list", name, "remove_at", i(3)));
		check("list bytes: the same list on both", bb(jl.readAll()), strs(list(hl("list", name, "read_range", i(0), i(-1)))));
	}

	static void listIndexConcurrent(String name) throws Exception {
		// index ops alternating sides, each checked against a local model
		RList<String> jl = r.getList(name, StringCodec.INSTANCE);
		List<String> want = new ArrayList<>();
		java.util.Random rnd = new java.util.Random(21);
		int bad = 0;
		String first = "";
		for (int k = 0; k < 200; k++) {
			boolean h = k % 2 == 0;
			int op = want.size() < 3 ? 0 : rnd.nextInt(4);
			String v = (h ? "h" : "j") + k + (k % 7 == 0 ? "\u00e9" : "");
			int ix = want.isEmpty() ? 0 : rnd.nextInt(want.size());
			String got, exp;
			switch (op) {
			case 0: // insert
				if (h)
					hl("list", name, "insert", i(ix), b(v));
				else
					jl.add(ix, v);
				want.add(ix, v);
				got = exp = "";
				break;
			case 1: // set
				exp = want.set(ix, v);
				got = h ? hl("list", name, "set", i(ix), b(v)) : b(jl.set(ix, v));
				exp = b(exp);
				break;
			case 2: // remove_at
				exp = b(want.remove(ix));
				got = h ? hl("list", name, "remove_at", i(ix)) : b(jl.remove(ix));
				break;
			default: // get
				exp = b(want.get(ix));
				got = h ? b(jl.get(ix)) : hl("list", name, "get", i(ix));
			}
			if (!exp.equals(got) && bad++ == 0)
				first = "step " + k + " op " + op + " at " + ix + ": expected " + exp + ", got " + got;
		}
		checkTrue("list index ops: 200 get/set/insert/remove_at alternating sides answer as a local list", bad == 0,
		        bad + " differ " + first);
		check("list index ops: Redisson reads the model's list", want, jl.readAll());
		check("list index ops: hilock reads the model's list", bs(want), strs(list(hl("list", name, "read_range", i(0), i(-1)))));
	}

	static void listIter(String name) throws Exception {
		RList<String> jl = r.getList(name, StringCodec.INSTANCE);
		List<String> want = new ArrayList<>(), a = new ArrayList<>();
		for (int k = 0; k < 1500; k++)
			want.add("l" + k + (k % 13 == 0 ? "\u05d0" : ""));
		jl.addAll(want.subList(0, 750));
		for (String v : want.subList(750, 1500))
			a.add(b(v));
		call(line("call", "list", name, "add_all", a));
		List<String> js = new ArrayList<>();
		for (String v : jl)
			js.add(b(v));
		String res = call("ranges list " + hex(name) + " read_range 1000");
		check("list iter: Redisson's iterator and hilock's pages (" + pages(res) + ") give the same 1500, in order", js,
		        strs(items(res)));
		check("list iter: the order written", bs(want), js);
	}

	// ---- queue and deque ----

	static void queue(String name) throws Exception {
		RQueue<String> jq = r.getQueue(name, StringCodec.INSTANCE);
		for (String v : TEXTS)
			jq.offer(v);
		check("queue: hilock's size", i(TEXTS.length), hl("queue", name, "size"));
		check("queue: hilock's peek is Redisson's head", b(TEXTS[0]), hl("queue", name, "peek"));
		StringBuilder got = new StringBuilder(), want = new StringBuilder();
		for (int k = 0; k < 5; k++) {
			got.append(hl("queue", name, "poll")).append(' ');
			want.append(b(TEXTS[k])).append(' ');
		}
		check("queue: hilock polls Redisson's offers in order", want.toString(), got.toString());
		check("queue: hilock's offer", "i:1", hl("queue", name, "offer", b("h\u00e9")));
		hl("queue", name, "add", b("h2"));
		List<String> rest = new ArrayList<>(Arrays.asList(TEXTS).subList(5, TEXTS.length));
		rest.add("h\u00e9");
		rest.add("h2");
		check("queue: Redisson reads the rest in order", rest, jq.readAll());
		check("queue: Redisson's peek", rest.get(0), jq.peek());
		List<String> polled = new ArrayList<>();
		for (String s; (s = jq.poll()) != null;)
			polled.add(s);
		check("queue: Redisson polls them all in order (hilock's last)", rest, polled);
		check("queue: hilock's poll of the empty queue", "nil", hl("queue", name, "poll"));
		for (String v : TEXTS)
			jq.offer(v);
		check("queue: hilock's poll_many(4) takes Redisson's first four in order", bs(Arrays.asList(TEXTS).subList(0, 4)),
		        strs(list(hl("queue", name, "poll_many", i(4)))));
		check("queue: Redisson's poll(3) takes the next three", Arrays.asList(TEXTS).subList(4, 7), jq.poll(3));
		hl("queue", name, "poll_many", i(100));
		check("queue: hilock's poll_many emptied it", 0, jq.size());
		check("queue: hilock's peek of the empty queue", "nil", hl("queue", name, "peek"));
		RQueue<byte[]> jb = r.getQueue(name + ":b", ByteArrayCodec.INSTANCE);
		byte[][] bin = binaries();
		for (byte[] v : bin)
			hl("queue", name + ":b", "offer", b(v));
		List<byte[]> bp = new ArrayList<>();
		for (byte[] v; (v = jb.poll()) != null;)
			bp.add(v);
		check("queue bytes: Redisson polls hilock's binary values in order", bb(Arrays.asList(bin)), bb(bp));
		for (byte[] v : bin)
			jb.offer(v);
		List<String> hp = new ArrayList<>();
		for (String s; !(s = hl("queue", name + ":b", "poll")).equals("nil");)
			hp.add(s);
		check("queue bytes: hilock polls Redisson's binary values in order", bb(Arrays.asList(bin)), hp);
	}

	static void deque(String name) throws Exception {
		RDeque<String> jd = r.getDeque(name, StringCodec.INSTANCE);
		java.util.ArrayDeque<String> want = new java.util.ArrayDeque<>();
		for (int k = 0; k < 12; k++) {
			String v = "d" + k + TEXTS[k % TEXTS.length];
			boolean h = k % 3 == 0, front = k % 2 == 0;
			if (front)
				want.addFirst(v);
			else
				want.addLast(v);
			if (h)
				hl("deque", name, front ? "add_first" : "add_last", b(v));
			else if (front)
				jd.addFirst(v);
			else
				jd.addLast(v);
		}
		check("deque: both sides' add_first/add_last read in order by Redisson", new ArrayList<>(want), jd.readAll());
		check("deque: hilock's peek_first", b(want.peekFirst()), hl("deque", name, "peek_first"));
		check("deque: hilock's peek_last", b(want.peekLast()), hl("deque", name, "peek_last"));
		check("deque: Redisson's peekFirst", want.peekFirst(), jd.peekFirst());
		check("deque: Redisson's peekLast", want.peekLast(), jd.peekLast());
		StringBuilder got = new StringBuilder(), exp = new StringBuilder();
		for (int k = 0; k < 12; k++) {
			boolean h = k % 2 == 1, front = k % 3 != 0;
			String e = front ? want.pollFirst() : want.pollLast();
			exp.append(b(e)).append(' ');
			if (h)
				got.append(hl("deque", name, front ? "poll_first" : "poll_last")).append(' ');
			else
				got.append(b(front ? jd.pollFirst() : jd.pollLast())).append(' ');
		}
		check("deque: poll_first/poll_last alternating sides take the expected ends", exp.toString(), got.toString());
		check("deque: hilock's poll_first of the empty deque", "nil", hl("deque", name, "poll_first"));
		check("deque: hilock's poll_last of the empty deque", "nil", hl("deque", name, "poll_last"));
		check("deque: hilock's peek_last of the empty deque", "nil", hl("deque", name, "peek_last"));
		RDeque<byte[]> jb = r.getDeque(name + ":b", ByteArrayCodec.INSTANCE);
		byte[][] bin = binaries();
		for (byte[] v : bin)
			hl("deque", name + ":b", "add_first", b(v));
		List<byte[]> bp = new ArrayList<>();
		for (byte[] v; (v = jb.pollLast()) != null;)
			bp.add(v);
		check("deque bytes: Redisson's pollLast takes hilock's add_first values in order", bb(Arrays.asList(bin)), bb(bp));
		for (byte[] v : bin)
			jb.addLast(v);
		List<String> hp = new ArrayList<>();
		for (String s; !(s = hl("deque", name + ":b", "poll_last")).equals("nil");)
			hp.add(s);
		Collections.reverse(hp);
		check("deque bytes: hilock's poll_last takes Redisson's addLast values", bb(Arrays.asList(bin)), hp);
	}

	/** Producers and consumers on both sides at once: nothing lost, nothing twice. */
	static void producersConsumers(String what, String kind, String name, String hpush, String hpop, Body jprod,
	        java.util.function.Supplier<String> jpoll, java.util.function.Supplier<String> jdrain, List<String> hvals,
	        int jthreads) throws Exception {
		ConcurrentLinkedQueue<String> jgot = new ConcurrentLinkedQueue<>();
		AtomicInteger jleft = new AtomicInteger(jthreads);
		List<String> a = bs(hvals);
		send("pc 2 2 1000 " + hpush + " " + hpop + " " + kind + " " + hex(name) + " " + args(a));
		threads(2 * jthreads, t -> {
			if (t < jthreads) {
				jprod.run(t);
				jleft.decrementAndGet();
				return;
			}
			long last = System.currentTimeMillis(), start = last;
			for (;;) {
				String v = jpoll.get();
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
		List<String> left = new ArrayList<>();
		for (String v; (v = jdrain.get()) != null;)
			left.add(v);
		List<String> all = new ArrayList<>(hgot);
		for (String v : jgot)
			all.add(b(v));
		for (String v : left)
			all.add(b(v));
		List<String> produced = new ArrayList<>(a);
		for (int t = 0; t < jthreads; t++)
			for (int k = 0; k < hvals.size() / 2; k++)
				produced.add(b("j" + t + ":" + k));
		check(what + ": hilock's calls all answered", "0", fails);
		check(what + ": every value produced by either side taken exactly once (" + produced.size() + ")",
		        sorted(produced), sorted(all));
		long hj = hgot.stream().filter(v -> strOf(v).startsWith("j")).count();
		long jh = jgot.stream().filter(v -> v.startsWith("h")).count();
		checkTrue(what + ": each side took some of the other's", hj > 0 && jh > 0,
		        "hilock took " + hgot.size() + " (" + hj + " Redisson's), Redisson " + jgot.size() + " (" + jh
		                + " hilock's), left " + left.size());
	}

	static List<String> pcValues(int n) {
		List<String> v = new ArrayList<>();
		for (int k = 0; k < n; k++)
			v.add("h" + k + (k % 10 == 0 ? "\u00e9" : ""));
		return v;
	}

	static void queuePc(String name) throws Exception {
		RQueue<String> jq = r.getQueue(name, StringCodec.INSTANCE);
		final int n = 1000;
		producersConsumers("queue producers/consumers", "queue", name, "offer,add", "poll", t -> {
			for (int k = 0; k < n / 2; k++)
				jq.offer("j" + t + ":" + k);
		}, jq::poll, jq::poll, pcValues(n), 2);
	}

	static void dequePc(String name) throws Exception {
		RDeque<String> jd = r.getDeque(name, StringCodec.INSTANCE);
		final int n = 1000;
		AtomicInteger flip = new AtomicInteger();
		producersConsumers("deque producers/consumers", "deque", name, "add_first,add_last", "poll_first,poll_last", t -> {
			for (int k = 0; k < n / 2; k++)
				if (t == 0)
					jd.addFirst("j" + t + ":" + k);
				else
					jd.addLast("j" + t + ":" + k);
		}, () -> flip.incrementAndGet() % 2 == 0 ? jd.pollFirst() : jd.pollLast(), jd::pollFirst, pcValues(n), 2);
	}

	public static void main(String[] a) throws Exception {
		Process p = start(a);
		long t0 = System.nanoTime();
		scenario("map_text", CollectionsInterop::mapText);
		scenario("map_bytes", CollectionsInterop::mapBytes);
		scenario("map_race", CollectionsInterop::mapRace);
		scenario("map_iter", CollectionsInterop::mapIter);
		scenario("set_text", CollectionsInterop::setText);
		scenario("set_bytes", CollectionsInterop::setBytes);
		scenario("set_race", CollectionsInterop::setRace);
		scenario("set_iter", CollectionsInterop::setIter);
		scenario("scored", CollectionsInterop::scored);
		scenario("scored_concurrent", CollectionsInterop::scoredConcurrent);
		scenario("scored_iter", CollectionsInterop::scoredIter);
		scenario("sorted", CollectionsInterop::sortedSet);
		scenario("sorted_comparator", CollectionsInterop::sortedComparator);
		scenario("sorted_concurrent", CollectionsInterop::sortedConcurrent);
		scenario("sorted_iter", CollectionsInterop::sortedIter);
		scenario("list_text", CollectionsInterop::listText);
		scenario("list_bytes", CollectionsInterop::listBytes);
		scenario("list_index", CollectionsInterop::listIndexConcurrent);
		scenario("list_iter", CollectionsInterop::listIter);
		scenario("queue", CollectionsInterop::queue);
		scenario("queue_pc", CollectionsInterop::queuePc);
		scenario("deque", CollectionsInterop::deque);
		scenario("deque_pc", CollectionsInterop::dequePc);
		finish(p, " collections", t0);
	}
}
