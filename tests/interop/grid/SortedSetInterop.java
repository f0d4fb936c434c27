/*
 * The sorted set against the real Redisson (RSortedSet, StringCodec):
 * tests/interop/grid/sorted_set.sh runs it once per Redisson version as
 *
 *   java SortedSetInterop VERSION GRID_PEER REDIS_URL
 *
 * with GRID_PEER the hilock side (grid_peer.c, lines "call sorted_set
 * NAME OP ARG..."). Checks, one line each, then "VERSION sorted_set: N
 * passed, N failed":
 *   - values hilock adds read back in String.compareTo order by Redisson,
 *     which finds each (contains) and refuses it again (add: false);
 *   - values Redisson adds are found and refused again by hilock, and
 *     hilock's read_range is Redisson's order;
 *   - both sides adding at once (Redisson's threads under its lock,
 *     hilock's scripts) leave one sorted list without duplicates, each
 *     value answered "added" once;
 *   - while Redisson holds redisson_sortedset_lock:{name}, hilock's add
 *     waits, then lands after the unlock;
 *   - a comparator set by trySetComparator makes hilock refuse the set;
 *   - polls and removes from either side seen by the other.
 */
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;

import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RSortedSet;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

public class SortedSetInterop {
    static Process peer;
    static PrintWriter peerIn;
    static BufferedReader peerOut;
    static int passed, failed;

    static synchronized String peer(String line) throws Exception {
        peerIn.println(line);
        peerIn.flush();
        return peerOut.readLine();
    }

    static String hex(String s) {
        StringBuilder b = new StringBuilder();
        for (byte x : s.getBytes(StandardCharsets.UTF_8)) {
            b.append(String.format("%02x", x & 0xff));
        }
        return b.toString();
    }

    static String call(String name, String op, String... args) throws Exception {
        StringBuilder b = new StringBuilder("call sorted_set ").append(hex(name)).append(' ').append(op);
        for (String a : args) {
            b.append(' ').append(a);
        }
        return peer(b.toString());
    }

    static void check(String what, boolean ok, Object detail) {
        if (ok) {
            passed++;
            System.out.println("ok   " + what);
        } else {
            failed++;
            System.out.println("FAIL " + what + ": " + detail);
        }
    }

    /* Every UTF-16 trap: supplementary characters against U+E000..U+FFFF. */
    static final String[] VECTORS = {
        "", "\u0000", "\u0000z", "A", "AB", "a", "\u007f", "\u00e9", "\u0800", "\ud7ff",
        "\ud800\udc00", "\ud800\udc00a", "\ud83d\ude00", "\udbff\udfff", "\ue000",
        "\ue000\ud83d\ude00", "\ue000\uffff", "\uff21", "\uffff", "\uffff\u0000",
    };

    static String randomString(Random rnd) {
        StringBuilder b = new StringBuilder();
        int n = 1 + rnd.nextInt(4);
        for (int i = 0; i < n; i++) {
            switch (rnd.nextInt(4)) {
                case 0: b.append((char) ('a' + rnd.nextInt(26))); break;
                case 1: b.append((char) (0xE000 + rnd.nextInt(0x1FFE))); break;
                case 2: b.appendCodePoint(0x10000 + rnd.nextInt(0xFFFFF)); break;
                default: b.append((char) (0x0800 + rnd.nextInt(0xD000))); break;
            }
        }
        return b.toString();
    }

    public static void main(String[] a) throws Exception {
        String version = a[0];
        peer = new ProcessBuilder(a[1], a[2]).redirectErrorStream(true).start();
        peerIn = new PrintWriter(new OutputStreamWriter(peer.getOutputStream(), StandardCharsets.UTF_8));
        peerOut = new BufferedReader(new InputStreamReader(peer.getInputStream(), StandardCharsets.UTF_8));
        check("peer ready", "ready".equals(peerOut.readLine()), "");
        Config cfg = new Config();
        cfg.useSingleServer().setAddress(a[2]);
        RedissonClient r = Redisson.create(cfg);
        long t0 = System.currentTimeMillis();
        try {
            run(r);
        } finally {
            r.shutdown();
            peer.destroy();
        }
        System.out.println(version + " sorted_set: " + passed + " passed, " + failed + " failed ("
                + (System.currentTimeMillis() - t0) + " ms)");
        System.exit(failed == 0 ? 0 : 1);
    }

    static void run(RedissonClient r) throws Exception {
        TreeSet<String> sorted = new TreeSet<>();
        Collections.addAll(sorted, VECTORS);
        List<String> expect = new ArrayList<>(sorted);
        check("vectors are in String.compareTo order", expect.equals(List.of(VECTORS)), expect);
        List<String> shuffled = new ArrayList<>(expect);
        Collections.shuffle(shuffled, new Random(7));

        // hilock adds, Redisson reads, finds, refuses again
        String hname = "ss:vec:h";
        boolean allAdded = true;
        for (String v : shuffled) {
            allAdded &= "ok i:1".equals(call(hname, "add", "b:" + hex(v)));
        }
        check("hilock adds every vector", allAdded, "");
        RSortedSet<String> hs = r.getSortedSet(hname, StringCodec.INSTANCE);
        List<String> got = new ArrayList<>(hs.readAll());
        check("Redisson reads hilock's adds in its order", got.equals(expect), got);
        boolean found = true, refused = true;
        for (String v : expect) {
            found &= hs.contains(v);
            refused &= !hs.add(v);
        }
        check("Redisson's contains finds each", found, "");
        check("Redisson's add refuses each again", refused, "");
        check("Redisson's first/last", expect.get(0).equals(hs.first())
                && expect.get(expect.size() - 1).equals(hs.last()), hs.first() + " " + hs.last());

        // Redisson adds, hilock finds, refuses again, reads the same order
        String jname = "ss:vec:j";
        RSortedSet<String> js = r.getSortedSet(jname, StringCodec.INSTANCE);
        for (String v : shuffled) {
            js.add(v);
        }
        boolean hfound = true, hrefused = true;
        for (String v : expect) {
            hfound &= "ok i:1".equals(call(jname, "contains", "b:" + hex(v)));
            hrefused &= "ok i:0".equals(call(jname, "add", "b:" + hex(v)));
        }
        check("hilock's contains finds Redisson's adds", hfound, "");
        check("hilock's add refuses them again", hrefused, "");
        StringBuilder want = new StringBuilder("ok [");
        for (int i = 0; i < expect.size(); i++) {
            want.append(i > 0 ? "," : "").append("b:").append(hex(expect.get(i)));
        }
        want.append("]");
        String range = call(jname, "read_range", "i:0", "i:-1");
        check("hilock's read_range is Redisson's order", want.toString().equals(range), range);

        // both sides at once
        String mname = "ss:mix";
        RSortedSet<String> ms = r.getSortedSet(mname, StringCodec.INSTANCE);
        Random rnd = new Random(42);
        List<String> pool = new ArrayList<>();
        TreeSet<String> union = new TreeSet<>();
        while (pool.size() < 600) {
            String s = randomString(rnd);
            if (union.add(s)) {
                pool.add(s);
            }
        }
        AtomicInteger trues = new AtomicInteger();
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < 3; t++) {
            final int id = t;
            ts.add(new Thread(() -> {
                for (int i = id * 150; i < id * 150 + 200; i++) {  // overlaps the next
                    if (ms.add(pool.get(i))) {
                        trues.incrementAndGet();
                    }
                }
            }));
        }
        ts.add(new Thread(() -> {
            try {
                for (int i = 599; i >= 300; i--) {  // overlaps Redisson's
                    if ("ok i:1".equals(call(mname, "add", "b:" + hex(pool.get(i))))) {
                        trues.incrementAndGet();
                    }
                }
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }));
        for (Thread t : ts) {
            t.start();
        }
        for (Thread t : ts) {
            t.join(120000);
        }
        List<String> mixed = new ArrayList<>(ms.readAll());
        check("both sides at once: one sorted list, no duplicates",
                mixed.equals(new ArrayList<>(union)), mixed.size() + " of " + union.size());
        check("each value answered added once", trues.get() == union.size(), trues.get());

        // Redisson holds the set's lock: hilock waits, then adds
        String lname = "ss:lock";
        RSortedSet<String> ls = r.getSortedSet(lname, StringCodec.INSTANCE);
        ls.add("j");
        RLock lock = r.getLock("redisson_sortedset_lock:{" + lname + "}");
        lock.lock();
        String[] answer = new String[1];
        Thread h = new Thread(() -> {
            try {
                answer[0] = call(lname, "add", "b:" + hex("h"));
            } catch (Exception e) {
                answer[0] = e.toString();
            }
        });
        h.start();
        h.join(700);
        check("hilock waits while Redisson holds the lock", h.isAlive() && ls.size() == 1, answer[0]);
        lock.unlock();
        h.join(10000);
        check("then adds after the unlock", "ok i:1".equals(answer[0])
                && List.of("h", "j").equals(new ArrayList<>(ls.readAll())), answer[0]);

        // a comparator: refused
        String cname = "ss:cmp";
        RSortedSet<String> cs = r.getSortedSet(cname, StringCodec.INSTANCE);
        boolean set = cs.trySetComparator(Collections.reverseOrder());
        String ref = call(cname, "add", "b:" + hex("x"));
        check("a comparator set by Redisson: hilock refuses", set && ref.startsWith("err HL_EINVAL")
                && ref.contains("redisson_sortedset_comparator:{ss:cmp}")
                && ref.contains("java.util.Collections$ReverseComparator") && cs.isEmpty(), ref);

        // polls and removes across
        String pname = "ss:poll";
        RSortedSet<String> ps = r.getSortedSet(pname, StringCodec.INSTANCE);
        for (String v : List.of("c", "a", "d", "b")) {
            ps.add(v);
        }
        String p1 = call(pname, "poll_first");
        String p2 = ps.pollLast();
        String p3 = call(pname, "poll_last");
        check("polls from both ends, both sides", ("ok b:" + hex("a")).equals(p1) && "d".equals(p2)
                && ("ok b:" + hex("c")).equals(p3) && List.of("b").equals(new ArrayList<>(ps.readAll())),
                p1 + " " + p2 + " " + p3);
        String rm = call(pname, "remove", "b:" + hex("b"));
        ps.add("e");
        boolean jrm = ps.remove("e");
        check("removes from both sides", "ok i:1".equals(rm) && jrm && ps.isEmpty()
                && "ok i:0".equals(call(pname, "contains", "b:" + hex("e"))), rm);
    }
}
