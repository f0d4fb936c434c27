// The Redisson side of the data grid interop (tests/interop/grid/run.sh):
// one JVM per Redisson version drives a hilock process (grid_peer.c, a
// line protocol on its stdin/stdout) and checks, object by object, that
// what one side writes the other reads, byte for byte and number for
// number, and that shared counters, adders, Bloom filters and rate
// limiters agree.
//
//   java GridInterop VERSION PEER TOPOLOGY ADDRESSES URL [FILTER]
//
// TOPOLOGY is single or cluster; ADDRESSES the Redis nodes (host:port,
// comma separated); URL the peer's hilock URL; FILTER runs only the
// scenarios whose name starts with it. Prints "ok"/"FAIL" lines and
// "VERSION TOPOLOGY: N passed, N failed"; exits 1 when one failed.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.redisson.Redisson;
import org.redisson.api.RAtomicDouble;
import org.redisson.api.RAtomicLong;
import org.redisson.api.RBitSet;
import org.redisson.api.RBloomFilter;
import org.redisson.api.RBucket;
import org.redisson.api.RDoubleAdder;
import org.redisson.api.RLongAdder;
import org.redisson.api.RRateLimiter;
import org.redisson.api.RateLimiterConfig;
import org.redisson.api.RateType;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.ByteArrayCodec;
import org.redisson.client.codec.LongCodec;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

public class GridInterop {
	static int passed, failed;
	static String tag, filter = "";
	static Writer pin;
	static BufferedReader pout;
	static RedissonClient r;

	// ---- the peer ----

	static synchronized String peer(String line) throws Exception {
		pin.write(line + "\n");
		pin.flush();
		String reply = pout.readLine();
		if (reply == null)
			throw new IllegalStateException("the peer exited");
		return reply;
	}

	/** The RESULT of an "ok" reply; throws on "err". */
	static String call(String line) throws Exception {
		String reply = peer(line);
		if (!reply.startsWith("ok "))
			throw new IllegalStateException(line + " -> " + reply);
		return reply.substring(3);
	}

	static String hex(byte[] b) {
		final String d = "0123456789abcdef";
		StringBuilder s = new StringBuilder(2 * b.length);
		for (byte x : b)
			s.append(d.charAt((x >> 4) & 15)).append(d.charAt(x & 15));
		return s.toString();
	}

	static String hex(String s) {
		return hex(s.getBytes(StandardCharsets.UTF_8));
	}

	static byte[] unhex(String h) {
		byte[] b = new byte[h.length() / 2];
		for (int i = 0; i < b.length; i++)
			b[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
		return b;
	}

	/** hilock's call on kind/name: "call KIND NAMEHEX OP ARGS". */
	static String hl(String kind, String name, String op, String... args) throws Exception {
		return call("call " + kind + " " + hex(name) + " " + op + (args.length == 0 ? "" : " " + String.join(" ", args)));
	}

	static String b(String s) { return "b:" + hex(s); }
	static String b(byte[] s) { return "b:" + hex(s); }
	static String i(long v) { return "i:" + v; }
	static String d(double v) { return "d:" + v; }

	static double dval(String res) {
		if (!res.startsWith("d:") && !res.startsWith("i:"))
			throw new IllegalStateException("not a number: " + res);
		return Double.parseDouble(res.substring(2));
	}

	static long ival(String res) {
		if (!res.startsWith("i:"))
			throw new IllegalStateException("not an integer: " + res);
		return Long.parseLong(res.substring(2));
	}

	// ---- checks ----

	static void check(String what, Object expected, Object got) {
		boolean ok = expected == null ? got == null
		        : (expected instanceof byte[] && got instanceof byte[])
		                ? Arrays.equals((byte[]) expected, (byte[]) got)
		                : expected.equals(got);
		String e = cut(expected instanceof byte[] ? hex((byte[]) expected) : String.valueOf(expected));
		String g = cut(got instanceof byte[] ? hex((byte[]) got) : String.valueOf(got));
		if (ok) {
			passed++;
			System.out.println("ok   " + tag + " " + what + ": " + g);
		} else {
			failed++;
			System.out.println("FAIL " + tag + " " + what + ": expected " + e + ", got " + g);
		}
	}

	static String cut(String s) {
		return s.length() <= 120 ? s : s.substring(0, 100) + "...(" + s.length() + " chars)";
	}

	static void checkTrue(String what, boolean cond, String detail) {
		if (cond) {
			passed++;
			System.out.println("ok   " + tag + " " + what + ": " + detail);
		} else {
			failed++;
			System.out.println("FAIL " + tag + " " + what + ": " + detail);
		}
	}

	interface Scenario {
		void run(String name) throws Exception;
	}

	static void scenario(String sname, Scenario s) {
		if (!sname.startsWith(filter))
			return;
		String name = "gi:" + tag.replace(' ', ':') + ":" + sname;
		long t0 = System.nanoTime();
		try {
			r.getKeys().deleteByPattern(name + "*");
			r.getKeys().deleteByPattern("{" + name + "*");
			s.run(name);
		} catch (Throwable t) {
			failed++;
			System.out.println("FAIL " + tag + " " + sname + ": " + t);
		}
		System.out.printf("# %s %s: %d ms%n", tag, sname, (System.nanoTime() - t0) / 1000000);
	}

	// ---- buckets ----

	static void bucketText(String name) throws Exception {
		String text = "h\u00e9llo w\u00f6rld \u65e5\u672c \u2713 \ud83d\ude00";
		RBucket<String> js = r.getBucket(name, StringCodec.INSTANCE);
		js.set(text);
		check("bucket: hilock reads Redisson's UTF-8 text", b(text), hl("bucket", name, "get"));
		String text2 = "\u00fcber \u00e7a \u0416 \u05d0 tab\there";
		hl("bucket", name, "set", b(text2), "n");
		check("bucket: Redisson (StringCodec) reads hilock's UTF-8 text", text2, js.get());
		check("bucket: sizes agree", js.size(), ival(hl("bucket", name, "size")));
		hl("bucket", name, "set", "b:", "n");
		check("bucket: Redisson reads hilock's empty value", "", js.get());
		js.set("");
		check("bucket: hilock reads Redisson's empty value", "b:", hl("bucket", name, "get"));
		js.delete();
		check("bucket: hilock reads an absent bucket as nil", "nil", hl("bucket", name, "get"));
	}

	static void bucketBytes(String name) throws Exception {
		RBucket<byte[]> jb = r.getBucket(name, ByteArrayCodec.INSTANCE);
		byte[] v = {0, 1, 0, (byte) 0xff, (byte) 0x80, 0, 'a', (byte) 0xc3, 0};
		jb.set(v);
		check("bucket: hilock reads Redisson's bytes with NULs", b(v), hl("bucket", name, "get"));
		byte[] w = new byte[70000];
		for (int k = 0; k < w.length; k++)
			w[k] = (byte) (k * 31 + 7);
		w[0] = 0;
		w[w.length - 1] = 0;
		hl("bucket", name, "set", b(w), "n");
		check("bucket: Redisson (ByteArrayCodec) reads hilock's 70000 bytes with NULs", w, jb.get());
		check("bucket: Redisson's get_and_set answers hilock's bytes", w, jb.getAndSet(new byte[] {0, 0}));
		check("bucket: hilock's get_and_delete answers Redisson's bytes", "b:0000",
		        hl("bucket", name, "get_and_delete"));
		check("bucket: Redisson sees the key gone", false, jb.isExists());
	}

	static void bucketCas(String name) throws Exception {
		RBucket<String> js = r.getBucket(name, StringCodec.INSTANCE);
		js.set("a");
		check("bucket cas: hilock a->b after Redisson set a", "i:1", hl("bucket", name, "compare_and_set", b("a"), b("b")));
		check("bucket cas: Redisson b->c after hilock's", true, js.compareAndSet("b", "c"));
		check("bucket cas: hilock b->x refused (it is c)", "i:0", hl("bucket", name, "compare_and_set", b("b"), b("x")));
		check("bucket cas: Redisson c->null deletes", true, js.compareAndSet("c", null));
		check("bucket cas: hilock sees it gone", "nil", hl("bucket", name, "get"));
		check("bucket cas: hilock absent->\"n\u00e9w\"", "i:1", hl("bucket", name, "compare_and_set", "n", b("n\u00e9w")));
		check("bucket cas: Redisson reads it", "n\u00e9w", js.get());
		check("bucket cas: Redisson null->z refused (it exists)", false, js.compareAndSet(null, "z"));
		check("bucket cas: hilock n\u00e9w->absent deletes", "i:1", hl("bucket", name, "compare_and_set", b("n\u00e9w"), "n"));
		check("bucket cas: Redisson sees it gone", false, js.isExists());
		check("bucket cas: Redisson null->y on the absent key", true, js.compareAndSet(null, "y"));
		check("bucket cas: hilock reads y", b("y"), hl("bucket", name, "get"));
		js.set("prefix");
		check("bucket cas: hilock compares whole values (prefix vs pre)", "i:0",
		        hl("bucket", name, "compare_and_set", b("pre"), b("q")));
	}

	static void bucketTtl(String name) throws Exception {
		RBucket<String> js = r.getBucket(name, StringCodec.INSTANCE);
		js.set("v", Duration.ofSeconds(60));
		long t = ival(call("ttl bucket " + hex(name)));
		checkTrue("bucket ttl: hilock sees Redisson's 60 s", t > 50000 && t <= 60000, t + " ms");
		hl("bucket", name, "set", b("w"), i(30000));
		t = js.remainTimeToLive();
		checkTrue("bucket ttl: Redisson sees hilock's 30 s", t > 20000 && t <= 30000, t + " ms");
		hl("bucket", name, "set_and_keep_ttl", b("w2"));
		t = js.remainTimeToLive();
		checkTrue("bucket ttl: hilock's set_and_keep_ttl keeps it for Redisson", t > 20000 && t <= 30000,
		        t + " ms, value " + js.get());
		js.setAndKeepTTL("w3");
		t = ival(call("ttl bucket " + hex(name)));
		checkTrue("bucket ttl: Redisson's setAndKeepTTL keeps it for hilock", t > 20000 && t <= 30000, t + " ms");
		hl("bucket", name, "set", b("x"), "n");
		check("bucket ttl: hilock's plain set drops it (Redisson's -1)", -1L, js.remainTimeToLive());
		js.set("y", Duration.ofSeconds(40));
		js.set("z");
		check("bucket ttl: Redisson's plain set drops it (hilock's -1)", "i:-1", call("ttl bucket " + hex(name)));
		check("bucket ttl: hilock's try_set refused on Redisson's key", "i:0", hl("bucket", name, "try_set", b("q"), i(5000)));
		js.delete();
		check("bucket ttl: hilock's try_set with ttl on the absent key", "i:1", hl("bucket", name, "try_set", b("q"), i(20000)));
		t = js.remainTimeToLive();
		checkTrue("bucket ttl: Redisson sees try_set's 20 s", t > 10000 && t <= 20000, t + " ms");
		check("bucket ttl: Redisson setIfAbsent refused", false, js.setIfAbsent("r", Duration.ofSeconds(9)));
		check("bucket ttl: Redisson setIfExists with 9 s", true, js.setIfExists("s", Duration.ofSeconds(9)));
		t = ival(call("ttl bucket " + hex(name)));
		checkTrue("bucket ttl: hilock sees setIfExists's 9 s", t > 4000 && t <= 9000, t + " ms");
		check("bucket ttl: hilock's get_and_set with ttl answers Redisson's", b("s"),
		        hl("bucket", name, "get_and_set", b("g"), i(50000)));
		t = js.remainTimeToLive();
		checkTrue("bucket ttl: Redisson sees get_and_set's 50 s", t > 40000 && t <= 50000, t + " ms");
		check("bucket ttl: hilock's compare_and_set drops it, as Redisson's", "i:1",
		        hl("bucket", name, "compare_and_set", b("g"), b("h")));
		check("bucket ttl: Redisson's -1 after hilock's compare_and_set", -1L, js.remainTimeToLive());
		js.set("k", Duration.ofSeconds(30));
		js.compareAndSet("k", "l");
		check("bucket ttl: hilock's -1 after Redisson's compareAndSet", "i:-1", call("ttl bucket " + hex(name)));
	}

	// ---- atomic long and double ----

	static void atomicLong(String name) throws Exception {
		RAtomicLong jl = r.getAtomicLong(name);
		RBucket<String> raw = r.getBucket(name, StringCodec.INSTANCE);
		check("atomic_long: hilock reads an absent key as 0", "i:0", hl("atomic_long", name, "get"));
		check("atomic_long: Redisson reads an absent key as 0", 0L, jl.get());
		long[] vals = {0, 1, -1, 42, Long.MAX_VALUE, Long.MIN_VALUE, 1234567890123L, -98765};
		for (long v : vals) {
			jl.set(v);
			String jraw = raw.get();
			check("atomic_long: hilock reads Redisson's " + v, "i:" + v, hl("atomic_long", name, "get"));
			hl("atomic_long", name, "set", i(v));
			check("atomic_long: Redisson reads hilock's " + v, v, jl.get());
			check("atomic_long: the stored form of " + v + " is the same", jraw, raw.get());
		}
		jl.set(5);
		check("atomic_long: hilock increments Redisson's 5", "i:6", hl("atomic_long", name, "increment_and_get"));
		check("atomic_long: Redisson adds 10 to hilock's 6", 16L, jl.addAndGet(10));
		check("atomic_long: hilock cas 16->7", "i:1", hl("atomic_long", name, "compare_and_set", i(16), i(7)));
		check("atomic_long: Redisson cas 7->9", true, jl.compareAndSet(7, 9));
		check("atomic_long: hilock cas 7->1 refused", "i:0", hl("atomic_long", name, "compare_and_set", i(7), i(1)));
		check("atomic_long: hilock get_and_set answers 9", "i:9", hl("atomic_long", name, "get_and_set", i(-3)));
		check("atomic_long: Redisson getAndDelete answers -3", -3L, jl.getAndDelete());
		check("atomic_long: hilock cas absent(0)->4", "i:1", hl("atomic_long", name, "compare_and_set", i(0), i(4)));
		check("atomic_long: Redisson reads 4", 4L, jl.get());
		r.getBucket(name, LongCodec.INSTANCE).set(-77L);
		check("atomic_long: hilock reads a LongCodec bucket's -77", "i:-77", hl("atomic_long", name, "get"));
		hl("atomic_long", name, "set", i(4));
		// LongCodec: a bucket of Redisson's numbers reads the counter.
		check("atomic_long: a LongCodec bucket reads hilock's counter", 4L,
		        r.getBucket(name, LongCodec.INSTANCE).get());
	}

	static void atomicDouble(String name) throws Exception {
		RAtomicDouble jd = r.getAtomicDouble(name);
		RBucket<String> raw = r.getBucket(name, StringCodec.INSTANCE);
		check("atomic_double: hilock reads an absent key as 0", 0.0, dval(hl("atomic_double", name, "get")));
		double[] vals = {0.0, 1.0, 1.5, -0.1, 1.0E10, 1e-7, 1e20, 123456789.125, 1.0 / 3, -2.5e-300,
		        Double.MAX_VALUE, Double.MIN_VALUE, 9007199254740993.0, 0.30000000000000004};
		for (double v : vals) {
			jd.set(v);
			String jraw = raw.get();
			check("atomic_double: hilock reads Redisson's " + v + " (stored " + jraw + ")", v,
			        dval(hl("atomic_double", name, "get")));
			hl("atomic_double", name, "set", d(v));
			String hraw = raw.get();
			check("atomic_double: Redisson reads hilock's " + v + " (stored " + hraw + ")", v, jd.get());
		}
		// Forms other writers leave: Java's, Redis's INCRBYFLOAT, C's.
		String[] forms = {"1.0E10", "1e+20", "1E5", "-0", "3", "2.5E-5", "100000000000000000000", "0.1"};
		double[] want = {1e10, 1e20, 1e5, -0.0, 3, 2.5e-5, 1e20, 0.1};
		for (int k = 0; k < forms.length; k++) {
			raw.set(forms[k]);
			check("atomic_double: hilock reads the form " + forms[k], want[k], dval(hl("atomic_double", name, "get")));
			check("atomic_double: Redisson reads the form " + forms[k], want[k], jd.get());
		}
		jd.set(0);
		check("atomic_double: Redisson adds 1e20 (INCRBYFLOAT)", 1e20, jd.addAndGet(1e20));
		check("atomic_double: hilock adds 0.5 to it", 1e20 + 0.5, dval(hl("atomic_double", name, "add_and_get", d(0.5))));
		jd.set(0.1);
		check("atomic_double: hilock cas 0.1->0.2 on Redisson's 0.1", "i:1",
		        hl("atomic_double", name, "compare_and_set", d(0.1), d(0.2)));
		check("atomic_double: Redisson cas 0.2->1.0E10 on hilock's 0.2", true, jd.compareAndSet(0.2, 1e10));
		check("atomic_double: hilock cas 1e10->-1.5", "i:1",
		        hl("atomic_double", name, "compare_and_set", d(1e10), d(-1.5)));
		check("atomic_double: Redisson reads -1.5", -1.5, jd.get());
		check("atomic_double: Redisson cas 0.2->1 refused", false, jd.compareAndSet(0.2, 1));
		check("atomic_double: hilock increments Redisson's -1.5", -0.5,
		        dval(hl("atomic_double", name, "increment_and_get")));
		check("atomic_double: Redisson getAndSet answers -0.5", -0.5, jd.getAndSet(2.25));
		check("atomic_double: hilock get_and_delete answers 2.25", 2.25,
		        dval(hl("atomic_double", name, "get_and_delete")));
		check("atomic_double: Redisson reads the absent key as 0", 0.0, jd.get());
	}

	// ---- bit set ----

	static void bitSet(String name) throws Exception {
		RBitSet jb = r.getBitSet(name);
		long[] on = {0, 7, 9, 100, 1000};
		for (long k : on)
			jb.set(k);
		check("bit_set: hilock's bytes = Redisson's toByteArray", b(jb.toByteArray()),
		        hl("bit_set", name, "to_byte_array"));
		for (long k : new long[] {0, 1, 7, 8, 9, 99, 100, 1000, 1001, 5000})
			check("bit_set: hilock's get(" + k + ") of Redisson's bits",
			        Arrays.binarySearch(on, k) >= 0 ? "i:1" : "i:0", hl("bit_set", name, "get", i(k)));
		check("bit_set: cardinality agrees", "i:" + jb.cardinality(), hl("bit_set", name, "cardinality"));
		check("bit_set: length agrees", "i:" + jb.length(), hl("bit_set", name, "length"));
		check("bit_set: size agrees", "i:" + jb.size(), hl("bit_set", name, "size"));
		jb.delete();
		BitSet want = new BitSet();
		for (long k : new long[] {3, 64, 65, 4095}) {
			hl("bit_set", name, "set", i(k), "i:1");
			want.set((int) k);
		}
		check("bit_set: Redisson's asBitSet of hilock's bits", want, jb.asBitSet());
		check("bit_set: Redisson's get(64) of hilock's", true, jb.get(64));
		check("bit_set: Redisson's get(63) of hilock's", false, jb.get(63));
		check("bit_set: Redisson's cardinality of hilock's", 4L, jb.cardinality());
		check("bit_set: Redisson's length of hilock's", 4096L, jb.length());
		hl("bit_set", name, "set_bytes", b(new byte[] {(byte) 0x80, 0x01, (byte) 0xff, 0}));
		check("bit_set: Redisson's toByteArray of hilock's raw bytes",
		        new byte[] {(byte) 0x80, 0x01, (byte) 0xff, 0}, jb.toByteArray());
		check("bit_set: bit 0 is the first byte's high bit (Redisson)", true, jb.get(0));
		check("bit_set: bit 15 is the second byte's low bit (Redisson)", true, jb.get(15));
		check("bit_set: bit 1 is clear (Redisson)", false, jb.get(1));
		BitSet js = new BitSet();
		js.set(1);
		js.set(10);
		js.set(17);
		jb.delete();
		jb.set(js);
		check("bit_set: hilock reads Redisson's set(BitSet)", b(jb.toByteArray()), hl("bit_set", name, "to_byte_array"));
		check("bit_set: hilock's get(10) of it", "i:1", hl("bit_set", name, "get", i(10)));
		check("bit_set: hilock's get(11) of it", "i:0", hl("bit_set", name, "get", i(11)));
		check("bit_set: hilock's clear(10) answers true", "i:1", hl("bit_set", name, "clear", i(10)));
		check("bit_set: Redisson sees 10 cleared", false, jb.get(10));
		hl("bit_set", name, "set_range", i(20), i(30), "i:1");
		check("bit_set: Redisson counts hilock's range 20..30", 12L, jb.cardinality());
		jb.clear(22, 25);
		check("bit_set: hilock counts after Redisson's clear(22, 25)", "i:9", hl("bit_set", name, "cardinality"));
		jb.set(40, 48, true);
		check("bit_set: hilock's bytes after Redisson's set(40, 48, true)", b(jb.toByteArray()),
		        hl("bit_set", name, "to_byte_array"));
		// BITOP needs its keys in one slot: {tag} names
		name = "{" + name + "}:a";
		String other = name.replace("}:a", "}:b");
		jb = r.getBitSet(name);
		jb.set(40, 48, true);
		RBitSet jo = r.getBitSet(other);
		jo.set(3);
		jo.set(41);
		hl("bit_set", name, "or_", b(other));
		check("bit_set: Redisson reads hilock's OR with Redisson's bits", true, jb.get(3) && jb.get(41) && jb.get(40));
		jo.xor(name);
		check("bit_set: hilock reads Redisson's XOR with hilock's bits", b(jo.toByteArray()),
		        hl("bit_set", other, "to_byte_array"));
		byte[] before = jo.toByteArray();
		hl("bit_set", other, "not_");
		byte[] flipped = before.clone();
		for (int k = 0; k < flipped.length; k++)
			flipped[k] = (byte) ~flipped[k];
		check("bit_set: Redisson reads hilock's not_ (every byte flipped)", flipped, jo.toByteArray());
		jo.not();
		check("bit_set: Redisson's not undoes hilock's not_", b(before), hl("bit_set", other, "to_byte_array"));
	}

	// ---- counters from both sides at once ----

	static void counters(String name) throws Exception {
		final int threads = 4, each = 500;
		RAtomicLong jl = r.getAtomicLong(name + ":long");
		RAtomicDouble jd = r.getAtomicDouble(name + ":double");
		jl.delete();
		jd.delete();
		long t0 = System.nanoTime();
		// the peer's threads run while this side's do
		pin.write("par " + threads + " " + each + " atomic_long " + hex(name + ":long") + " increment_and_get\n");
		pin.flush();
		runThreads(threads, () -> {
			for (int k = 0; k < each; k++)
				jl.incrementAndGet();
		});
		String reply = pout.readLine();
		check("counters: hilock's increments all answered", "ok i:0", reply);
		long want = 2L * threads * each;
		check("counters: atomic_long = " + want + " (Redisson reads)", want, jl.get());
		check("counters: atomic_long = " + want + " (hilock reads)", "i:" + want, hl("atomic_long", name + ":long", "get"));
		pin.write("par " + threads + " " + each + " atomic_double " + hex(name + ":double") + " add_and_get d:0.25\n");
		pin.flush();
		runThreads(threads, () -> {
			for (int k = 0; k < each; k++)
				jd.addAndGet(0.75);
		});
		reply = pout.readLine();
		check("counters: hilock's double adds all answered", "ok i:0", reply);
		double wantd = threads * each * (0.25 + 0.75);
		check("counters: atomic_double = " + wantd + " (Redisson reads)", wantd, jd.get());
		check("counters: atomic_double = " + wantd + " (hilock reads)", wantd,
		        dval(hl("atomic_double", name + ":double", "get")));
		System.out.printf("# %s counters: %d updates in %d ms%n", tag, 4 * threads * each,
		        (System.nanoTime() - t0) / 1000000);
	}

	static void runThreads(int n, Runnable body) throws Exception {
		List<Thread> ts = new ArrayList<>();
		final Throwable[] err = new Throwable[1];
		for (int k = 0; k < n; k++) {
			Thread t = new Thread(() -> {
				try {
					body.run();
				} catch (Throwable e) {
					err[0] = e;
				}
			});
			t.start();
			ts.add(t);
		}
		for (Thread t : ts)
			t.join();
		if (err[0] != null)
			throw new RuntimeException(err[0]);
	}

	// ---- adders ----

	static void adders(String name) throws Exception {
		String ln = name + ":long", dn = name + ":double";
		RLongAdder jl = r.getLongAdder(ln);
		RDoubleAdder jd = r.getDoubleAdder(dn);
		try {
			// the peer's adders subscribe on their first line
			call("par 4 1000 long_adder " + hex(ln) + " increment");
			runThreads(4, () -> {
				for (int k = 0; k < 1000; k++)
					jl.add(3);
			});
			hl("long_adder", ln, "add", i(-5));
			check("long_adder: Redisson's sum has both sides' adds", 15995L, jl.sum());
			check("long_adder: hilock's sum has both sides' adds", "i:15995", hl("long_adder", ln, "sum", i(10000)));
			jl.reset();
			check("long_adder: hilock's sum after Redisson's reset", "i:0", hl("long_adder", ln, "sum", i(10000)));
			jl.add(11);
			hl("long_adder", ln, "add", i(7));
			check("long_adder: Redisson's sum after new adds", 18L, jl.sum());
			hl("long_adder", ln, "reset", i(10000));
			check("long_adder: Redisson's sum after hilock's reset", 0L, jl.sum());
			jl.add(2);
			call("free long_adder " + hex(ln));
			check("long_adder: a freed hilock adder leaves the sum", 2L, jl.sum());

			call("par 2 100 double_adder " + hex(dn) + " add d:0.25");
			jd.add(1.5);
			jd.add(-0.125);
			hl("double_adder", dn, "add", d(1e-3));
			double want = 50 + 1.5 - 0.125 + 1e-3;
			check("double_adder: Redisson's sum has both sides' adds", want, jd.sum());
			check("double_adder: hilock's sum has both sides' adds", want,
			        dval(hl("double_adder", dn, "sum", i(10000))));
			hl("double_adder", dn, "reset", i(10000));
			check("double_adder: Redisson's sum after hilock's reset", 0.0, jd.sum());
			jd.add(0.5);
			hl("double_adder", dn, "add", d(2.25));
			check("double_adder: hilock's sum after new adds", 2.75, dval(hl("double_adder", dn, "sum", i(10000))));
			jd.reset();
			check("double_adder: hilock's sum after Redisson's reset", 0.0,
			        dval(hl("double_adder", dn, "sum", i(10000))));
			// what Redisson's sum makes of its own add (Redis's INCRBYFLOAT
			// in the sum keeps 17 digits after the point: tiny values are 0)
			for (double v : new double[] {1.0E-5, 1.0E21, -2.5E-300, 123456.789, Double.MIN_VALUE}) {
				jd.reset();
				jd.add(v);
				double own = jd.sum();
				check("double_adder: hilock's sum of Redisson's " + v + " = Redisson's " + own, own,
				        dval(hl("double_adder", dn, "sum", i(10000))));
				jd.reset();
				hl("double_adder", dn, "add", d(v));
				check("double_adder: Redisson's sum of hilock's " + v + " = Redisson's own", own, jd.sum());
			}
			jl.reset();
			jl.add(Long.MIN_VALUE + 1);
			check("long_adder: hilock's sum of Redisson's Long.MIN_VALUE + 1", "i:" + (Long.MIN_VALUE + 1),
			        hl("long_adder", ln, "sum", i(10000)));
		} finally {
			call("free long_adder " + hex(ln));
			call("free double_adder " + hex(dn));
			jl.destroy();
			jd.destroy();
		}
	}

	// ---- Bloom filter ----

	static void bloom(String name) throws Exception {
		List<String> vals = new ArrayList<>();
		for (int k = 0; k < 200; k++)
			vals.add("v" + k + (k % 7 == 0 ? "-\u00e9\u65e5" : ""));
		StringBuilder hv = new StringBuilder();
		for (String v : vals)
			hv.append(' ').append(b(v));
		String jn = name + ":j", hn = name + ":h";
		RBloomFilter<String> jf = r.getBloomFilter(jn, StringCodec.INSTANCE);
		check("bloom: Redisson tryInit", true, jf.tryInit(1000, 0.03));
		check("bloom: hilock's try_init refused on Redisson's filter", "i:0",
		        hl("bloom_filter", jn, "try_init", i(500), d(0.01)));
		jf.add(vals);
		check("bloom: hilock finds Redisson's 200", "i:200", call("call bloom_filter " + hex(jn) + " contains_all" + hv));
		check("bloom: hilock's count = Redisson's", "i:" + jf.count(), hl("bloom_filter", jn, "count"));
		check("bloom: hilock reads Redisson's size", "i:" + jf.getSize(), hl("bloom_filter", jn, "get_size"));
		check("bloom: hilock reads Redisson's hash iterations", "i:" + jf.getHashIterations(),
		        hl("bloom_filter", jn, "get_hash_iterations"));
		check("bloom: hilock reads Redisson's expected insertions", "i:1000",
		        hl("bloom_filter", jn, "get_expected_insertions"));
		check("bloom: hilock reads Redisson's false probability", 0.03,
		        dval(hl("bloom_filter", jn, "get_false_probability")));

		RBloomFilter<String> jh = r.getBloomFilter(hn, StringCodec.INSTANCE);
		check("bloom: hilock try_init", "i:1", hl("bloom_filter", hn, "try_init", i(1000), d(0.03)));
		// (a separate object: Redisson keeps a refused tryInit's sizes in
		// the object, and that one then hashes with them)
		check("bloom: Redisson's tryInit refused on hilock's filter", false,
		        r.getBloomFilter(hn, StringCodec.INSTANCE).tryInit(10, 0.5));
		call("call bloom_filter " + hex(hn) + " add_all" + hv);
		long one = 0;
		for (String v : vals)
			one += jh.contains(v) ? 1 : 0;
		check("bloom: Redisson finds hilock's 200 (contains each)", 200L, one);
		System.out.printf("# %s bloom: Redisson's contains(Collection): %d on its own filter, %d on hilock's%n",
		        tag, jf.contains(vals), jh.contains(vals));
		check("bloom: Redisson's count = hilock's", "i:" + jh.count(), hl("bloom_filter", hn, "count"));
		check("bloom: Redisson reads hilock's config", "7298 5 1000 0.03",
		        jh.getSize() + " " + jh.getHashIterations() + " " + jh.getExpectedInsertions() + " "
		                + jh.getFalseProbability());
		check("bloom: the two bitmaps are the same bytes",
		        hex(r.<byte[]>getBucket(jn, ByteArrayCodec.INSTANCE).get()),
		        hex(r.<byte[]>getBucket(hn, ByteArrayCodec.INSTANCE).get()));
		boolean jno = jh.contains("never-added");
		check("bloom: both agree on a value never added", jno ? "i:1" : "i:0",
		        hl("bloom_filter", hn, "contains", b("never-added")));

		// sizing: each side sizes a filter as the other does
		long[] ns = {1, 10, 12345, 1000000};
		double[] ps = {0.5, 0.1, 1e-7, 0.001};
		for (int k = 0; k < ns.length; k++) {
			String sj = name + ":sj" + k, sh = name + ":sh" + k;
			r.getBloomFilter(sj, StringCodec.INSTANCE).tryInit(ns[k], ps[k]);
			hl("bloom_filter", sh, "try_init", i(ns[k]), d(ps[k]));
			RBloomFilter<String> fh = r.getBloomFilter(sh, StringCodec.INSTANCE);
			RBloomFilter<String> fj = r.getBloomFilter(sj, StringCodec.INSTANCE);
			check("bloom: sizing of " + ns[k] + " at " + ps[k] + " (Redisson reads hilock's = hilock reads Redisson's)",
			        fj.getSize() + " " + fj.getHashIterations(),
			        ival(hl("bloom_filter", sj, "get_size")) + " " + ival(hl("bloom_filter", sj, "get_hash_iterations")));
			check("bloom: hilock sizes " + ns[k] + " at " + ps[k] + " as Redisson does",
			        fj.getSize() + " " + fj.getHashIterations(), fh.getSize() + " " + fh.getHashIterations());
			r.getKeys().delete(sj, sh);
			r.getKeys().delete("{" + sj + "}:config");
			r.getKeys().delete("{" + sh + "}:config");
		}

		// ByteArrayCodec: bytes with NULs hash the same on both sides
		String bn = name + ":bytes";
		RBloomFilter<byte[]> jbf = r.getBloomFilter(bn, ByteArrayCodec.INSTANCE);
		jbf.tryInit(100, 0.01);
		byte[] x = {0, 1, 0, (byte) 0xff, 0};
		jbf.add(x);
		check("bloom: hilock finds Redisson's bytes with NULs", "i:1", hl("bloom_filter", bn, "contains", b(x)));
		byte[] y = {0, 0, 0, 0, 0, 0, 7};
		hl("bloom_filter", bn, "add", b(y));
		check("bloom: Redisson finds hilock's bytes with NULs", true, jbf.contains(y));
	}

	// ---- rate limiter ----

	static void rate(String name) throws Exception {
		String cn = name + ":cfg";
		RRateLimiter jc = r.getRateLimiter(cn);
		check("rate: Redisson trySetRate", true, jc.trySetRate(RateType.OVERALL, 7, Duration.ofMillis(1500)));
		String cfg = hl("rate_limiter", cn, "get_config");
		checkTrue("rate: hilock reads Redisson's config [7, 1500 ms, overall]", cfg.startsWith("[i:7,i:1500,i:0"), cfg);
		check("rate: hilock's try_set_rate refused on Redisson's", "i:0",
		        hl("rate_limiter", cn, "try_set_rate", i(0), i(9), i(1000), "n"));
		String pn = name + ":cfg2";
		check("rate: hilock try_set_rate per client 5 / 2 s", "i:1",
		        hl("rate_limiter", pn, "try_set_rate", i(1), i(5), i(2000), "n"));
		RateLimiterConfig c = r.getRateLimiter(pn).getConfig();
		check("rate: Redisson reads hilock's config", "5 2000 PER_CLIENT",
		        c.getRate() + " " + c.getRateInterval() + " " + c.getRateType());
		check("rate: Redisson's trySetRate refused on hilock's", false,
		        r.getRateLimiter(pn).trySetRate(RateType.OVERALL, 1, Duration.ofSeconds(1)));

		// One rate, both sides taking as fast as they can.
		final int rate = 10;
		final long interval = 1000, runMs = 3200;
		RRateLimiter jr = r.getRateLimiter(name);
		jr.trySetRate(RateType.OVERALL, rate, Duration.ofMillis(interval));
		hl("rate_limiter", name, "get_config"); // the peer's object exists
		List<long[]> grants = Collections.synchronizedList(new ArrayList<>());
		AtomicLong jcount = new AtomicLong();
		long until = System.currentTimeMillis() + runMs;
		// both sides pace their attempts alike (a tight C loop would
		// otherwise take nearly every permit the moment it frees)
		pin.write("rate " + hex(name) + " 2 " + runMs + " 1000\n");
		pin.flush();
		runThreads(2, () -> {
			while (System.currentTimeMillis() < until) {
				long s = System.currentTimeMillis();
				boolean got = jr.tryAcquire();
				long e = System.currentTimeMillis();
				if (got) {
					grants.add(new long[] {s, e, 0});
					jcount.incrementAndGet();
				}
				try {
					Thread.sleep(1);
				} catch (InterruptedException x) {
					return;
				}
			}
		});
		String reply = pout.readLine();
		if (!reply.startsWith("ok "))
			throw new IllegalStateException("rate -> " + reply);
		String[] parts = reply.substring(3).split(" ");
		long hcount = Long.parseLong(parts[0]);
		for (int k = 1; k < parts.length; k++) {
			String[] se = parts[k].split(":");
			grants.add(new long[] {Long.parseLong(se[0]), Long.parseLong(se[1]), 1});
		}
		List<long[]> g = new ArrayList<>(grants);
		g.sort((p, q) -> Long.compare(p[0], q[0]));
		// rate + 1 grants whose latest possible span is under the interval
		// would certainly be too many in one window.
		int worst = 0;
		String where = "";
		for (int a = 0; a < g.size(); a++) {
			int certain = 0;
			for (int z = a; z < g.size(); z++)
				if (g.get(z)[1] - g.get(a)[0] < interval)
					certain++;
			if (certain > worst) {
				worst = certain;
				where = "from " + g.get(a)[0];
			}
		}
		System.out.printf("# %s rate: Redisson %d grants, hilock %d, most in one window %d (%s)%n", tag,
		        jcount.get(), hcount, worst, where);
		checkTrue("rate: never more than " + rate + " in any " + interval + " ms (both sides' grants)",
		        worst <= rate, "most " + worst);
		long total = jcount.get() + hcount;
		long max = rate * (runMs / interval + 1);
		checkTrue("rate: the total fits the rate (" + total + " <= " + max + ")", total <= max,
		        "Redisson " + jcount.get() + " + hilock " + hcount);
		checkTrue("rate: the limiter gave out its permits (" + total + " >= " + (rate * (runMs / interval)) + ")",
		        total >= rate * (runMs / interval), "Redisson " + jcount.get() + " + hilock " + hcount);
		checkTrue("rate: both sides were granted some", jcount.get() > 0 && hcount > 0,
		        "Redisson " + jcount.get() + ", hilock " + hcount);
		// once every grant left the window, both sides give all back
		Thread.sleep(interval + 100);
		check("rate: Redisson's available permits after a quiet interval", (long) rate, jr.availablePermits());
		check("rate: hilock's available permits after a quiet interval", "i:" + rate,
		        hl("rate_limiter", name, "available_permits"));
		check("rate: Redisson takes all " + rate + " at once", true, jr.tryAcquire(rate));
		check("rate: then hilock is refused", "i:0", hl("rate_limiter", name, "try_acquire", i(1), i(0)));
	}

	static void rateMore(String name) throws Exception {
		// per client: each side has its own quota on one limiter
		String pc = name + ":pc";
		RRateLimiter jp = r.getRateLimiter(pc);
		check("rate_more: hilock sets 3 per client per 10 s", "i:1",
		        hl("rate_limiter", pc, "try_set_rate", i(1), i(3), i(10000), "n"));
		int jg = 0, hg = 0;
		for (int k = 0; k < 4; k++) {
			jg += jp.tryAcquire() ? 1 : 0;
			hg += hl("rate_limiter", pc, "try_acquire", i(1), i(0)).equals("i:1") ? 1 : 0;
		}
		check("rate_more: per client, Redisson gets its own 3 of 4", 3, jg);
		check("rate_more: per client, hilock gets its own 3 of 4", 3, hg);
		check("rate_more: per client, Redisson has none left", 0L, jp.availablePermits());
		// permits taken in one go count against the other side
		String ov = name + ":ov";
		RRateLimiter jo = r.getRateLimiter(ov);
		jo.trySetRate(RateType.OVERALL, 5, Duration.ofSeconds(10), Duration.ofSeconds(30));
		String cfg = hl("rate_limiter", ov, "get_config");
		check("rate_more: hilock reads Redisson's keep-alive", "[i:5,i:10000,i:0,i:30000]", cfg);
		check("rate_more: Redisson takes 3 at once", true, jo.tryAcquire(3));
		check("rate_more: hilock sees 2 left", "i:2", hl("rate_limiter", ov, "available_permits"));
		check("rate_more: hilock cannot take 3", "i:0", hl("rate_limiter", ov, "try_acquire", i(3), i(0)));
		check("rate_more: hilock takes 2", "i:1", hl("rate_limiter", ov, "try_acquire", i(2), i(0)));
		check("rate_more: Redisson cannot take 1", false, jo.tryAcquire());
		jo.release(2);
		check("rate_more: hilock sees Redisson's release of 2", "i:2", hl("rate_limiter", ov, "available_permits"));
		hl("rate_limiter", ov, "release", i(1));
		check("rate_more: Redisson sees hilock's release of 1", 3L, jo.availablePermits());
		for (String k : new String[] {ov, "{" + ov + "}:value", "{" + ov + "}:permits"}) {
			long t = r.getKeys().remainTimeToLive(k);
			checkTrue("rate_more: keep-alive TTL of " + k + " after hilock's calls", t > 20000 && t <= 30000, t + " ms");
		}
		// a keep-alive hilock sets, Redisson's acquire keeps
		String hk = name + ":hk";
		hl("rate_limiter", hk, "try_set_rate", i(0), i(4), i(1000), i(20000));
		RRateLimiter jk = r.getRateLimiter(hk);
		check("rate_more: Redisson takes from hilock's limiter", true, jk.tryAcquire());
		for (String k : new String[] {hk, "{" + hk + "}:value", "{" + hk + "}:permits"}) {
			long t = r.getKeys().remainTimeToLive(k);
			checkTrue("rate_more: hilock's keep-alive TTL of " + k + " after Redisson's acquire",
			        t > 10000 && t <= 20000, t + " ms");
		}
		// Redisson replaces the rate: hilock follows
		jk.setRate(RateType.OVERALL, 2, Duration.ofSeconds(5));
		check("rate_more: hilock reads Redisson's new rate", "[i:2,i:5000,i:0,i:0]",
		        hl("rate_limiter", hk, "get_config"));
		String ap = hl("rate_limiter", hk, "available_permits");
		check("rate_more: both see the same permits after setRate", "i:" + jk.availablePermits(), ap);
	}

	/** Connects Redisson and starts the peer (CollectionsInterop too). */
	static Process start(String[] a) throws Exception {
		String version = a[0], peerPath = a[1], topo = a[2], addrs = a[3], url = a[4];
		if (a.length > 5)
			filter = a[5];
		tag = version + " " + topo;
		Config cfg = new Config();
		if (topo.equals("cluster")) {
			var cc = cfg.useClusterServers();
			for (String n : addrs.split(","))
				cc.addNodeAddress("redis://" + n);
			// Redisson reads from replicas by default: a value just
			// written may not be there yet. The checks are about the
			// wire, so read where hilock writes.
			cc.setReadMode(org.redisson.config.ReadMode.MASTER);
		} else {
			cfg.useSingleServer().setAddress("redis://" + addrs);
		}
		r = Redisson.create(cfg);
		Process p = new ProcessBuilder(peerPath, url).redirectError(ProcessBuilder.Redirect.INHERIT).start();
		pin = new OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8);
		pout = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
		String ready = pout.readLine();
		if (!"ready".equals(ready))
			throw new IllegalStateException("peer: " + ready);
		return p;
	}

	/** Stops the peer and Redisson, prints the summary line and exits. */
	static void finish(Process p, String what, long t0) throws Exception {
		pin.write("quit\n");
		pin.flush();
		p.waitFor();
		r.shutdown();
		System.out.printf("%s%s: %d passed, %d failed (%d ms)%n", tag, what, passed, failed,
		        (System.nanoTime() - t0) / 1000000);
		System.exit(failed == 0 ? 0 : 1);
	}

	public static void main(String[] a) throws Exception {
		Process p = start(a);
		long t0 = System.nanoTime();
		scenario("bucket_text", GridInterop::bucketText);
		scenario("bucket_bytes", GridInterop::bucketBytes);
		scenario("bucket_cas", GridInterop::bucketCas);
		scenario("bucket_ttl", GridInterop::bucketTtl);
		scenario("atomic_long", GridInterop::atomicLong);
		scenario("atomic_double", GridInterop::atomicDouble);
		scenario("bit_set", GridInterop::bitSet);
		scenario("counters", GridInterop::counters);
		scenario("adders", GridInterop::adders);
		scenario("bloom", GridInterop::bloom);
		scenario("rate", GridInterop::rate);
		scenario("rate_more", GridInterop::rateMore);
		finish(p, "", t0);
	}
}
