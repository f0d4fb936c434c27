/*
 * The blocking queue against the real Redisson (RBlockingQueue,
 * StringCodec): tests/interop/grid/blocking.sh runs it once per Redisson
 * version as
 *
 *   java BlockingInterop VERSION GRID_PEER REDIS_URL
 *
 * with GRID_PEER the hilock side (grid_peer.c, lines "call blocking_queue
 * NAME OP ARG..."; two peer processes, so that a hilock producer and a
 * hilock consumer run at once). Checks, one line each, then "VERSION
 * blocking_queue: N passed, N failed":
 *   - a hilock take waiting in Redis wakes on a Redisson offer, and a
 *     Redisson take wakes on a hilock offer;
 *   - Redisson producers, hilock consumers (two processes) and a Redisson
 *     consumer: every element taken exactly once;
 *   - a hilock producer, Redisson consumers and a hilock consumer: the
 *     same;
 *   - no hilock key left once the takes ended;
 *   - the bounded queue: a capacity set by Redisson respected by hilock's
 *     offers and the reverse; a Redisson put waiting for room wakes when
 *     a hilock take gives a unit back (published), and a hilock put when
 *     Redisson takes; producers on one side and consumers on the other
 *     leave the capacity where it began;
 *   - poll from several queues (hilock's poll_from_any, Redisson's
 *     pollFromAny, pollFromAnyWithName and pollLastFromAny, in both
 *     versions; Redisson has no takeFromAny): a hilock poll_from_any
 *     waiting on two queues wakes on a Redisson offer to the second and
 *     answers its name, Redisson's three wake on hilock offers; Redisson
 *     producers offering into three queues while hilock (two processes,
 *     five threads, grid_peer.c's pfa_start) and Redisson consumers poll
 *     from all three at once: every element taken exactly once, under
 *     the name of its queue, both sides taking some; no
 *     hilock_inflight or hilock_consumers key left.
 */
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.redisson.Redisson;
import org.redisson.api.RBlockingQueue;
import org.redisson.api.RBoundedBlockingQueue;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

public class BlockingInterop {
    static int passed, failed;

    static final class Peer {
        final Process p;
        final PrintWriter in;
        final BufferedReader out;

        Peer(String bin, String url) throws Exception {
            p = new ProcessBuilder(bin, url).redirectErrorStream(true).start();
            in = new PrintWriter(new OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8));
            out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        }

        synchronized String line(String l) throws Exception {
            in.println(l);
            in.flush();
            return out.readLine();
        }

        String call(String name, String op, String... args) throws Exception {
            StringBuilder b = new StringBuilder("call blocking_queue ").append(hex(name)).append(' ').append(op);
            for (String a : args) {
                b.append(' ').append(a);
            }
            return line(b.toString());
        }
    }

    static String hex(String s) {
        StringBuilder b = new StringBuilder();
        for (byte x : s.getBytes(StandardCharsets.UTF_8)) {
            b.append(String.format("%02x", x & 0xff));
        }
        return b.toString();
    }

    static String unhex(String h) {
        byte[] b = new byte[h.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
        }
        return new String(b, StandardCharsets.UTF_8);
    }

    /* "ok b:HEX" -> the string; "ok nil" -> null; anything else throws. */
    static String value(String answer) {
        if ("ok nil".equals(answer)) {
            return null;
        }
        if (answer != null && answer.startsWith("ok b:")) {
            return unhex(answer.substring(5));
        }
        throw new IllegalStateException("peer: " + answer);
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

    public static void main(String[] a) throws Exception {
        String version = a[0];
        Peer p1 = new Peer(a[1], a[2]), p2 = new Peer(a[1], a[2]);
        check("peers ready", "ready".equals(p1.out.readLine()) && "ready".equals(p2.out.readLine()), "");
        Config cfg = new Config();
        cfg.useSingleServer().setAddress(a[2]);
        // RBoundedBlockingQueue decodes take() with the global codec
        cfg.setCodec(StringCodec.INSTANCE);
        RedissonClient r = Redisson.create(cfg);
        long t0 = System.currentTimeMillis();
        try {
            run(r, p1, p2);
            bounded(r, p1, p2);
            fromAny(r, p1, p2, URI.create(a[2]));
        } finally {
            r.shutdown();
            p1.p.destroy();
            p2.p.destroy();
        }
        System.out.println(version + " blocking_queue: " + passed + " passed, " + failed + " failed ("
                + (System.currentTimeMillis() - t0) + " ms)");
        System.exit(failed == 0 ? 0 : 1);
    }

    /* Count each element taken; "twice" and "never" over 0..total-1. */
    static void tally(String what, Map<String, AtomicInteger> seen, int total, String prefix) {
        int twice = 0, never = 0, strange = 0;
        for (Map.Entry<String, AtomicInteger> e : seen.entrySet()) {
            if (!e.getKey().startsWith(prefix)) {
                strange++;
            } else if (e.getValue().get() > 1) {
                twice++;
            }
        }
        for (int i = 0; i < total; i++) {
            if (!seen.containsKey(prefix + i)) {
                never++;
            }
        }
        check(what + ": every element once", twice == 0 && never == 0 && strange == 0,
                "twice " + twice + ", never " + never + ", strange " + strange);
    }

    static String bcall(Peer p, String name, String op, String... args) throws Exception {
        StringBuilder b = new StringBuilder("call bounded_blocking_queue ").append(hex(name)).append(' ').append(op);
        for (String a : args) {
            b.append(' ').append(a);
        }
        return p.line(b.toString());
    }

    static void bounded(RedissonClient r, Peer p1, Peer p2) throws Exception {
        String name = "bbq:cap";
        RBoundedBlockingQueue<String> q = r.getBoundedBlockingQueue(name, StringCodec.INSTANCE);
        check("Redisson sets the capacity", q.trySetCapacity(3), "");
        check("hilock sees it set", "ok i:0".equals(bcall(p1, name, "try_set_capacity", "i:9")), "");
        boolean offered = true;
        for (int i = 0; i < 3; i++) {
            offered &= "ok i:1".equals(bcall(p1, name, "offer", "b:" + hex("h" + i)));
        }
        check("hilock offers up to the capacity", offered, "");
        check("hilock's offer to a full queue: false", "ok i:0".equals(bcall(p1, name, "offer", "b:" + hex("x"))), "");
        check("Redisson's offer to a full queue: false", !q.offer("x"), "");
        final long[] putMs = {-1};
        Thread put = new Thread(() -> {
            try {
                long t0 = System.currentTimeMillis();
                q.put("j0");
                putMs[0] = System.currentTimeMillis() - t0;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        put.start();
        Thread.sleep(500);
        String took = value(bcall(p2, name, "take"));
        put.join(10000);
        check("hilock's take: the head", "h0".equals(took), took);
        check("Redisson's waiting put wakes on hilock's give-back", putMs[0] >= 0 && putMs[0] < 4000, putMs[0]);
        // a hilock put waits; Redisson's take gives room
        final String[] hput = new String[1];
        Thread hp = new Thread(() -> {
            try {
                hput[0] = bcall(p2, name, "put", "b:" + hex("h3"));
            } catch (Exception e) {
                hput[0] = e.toString();
            }
        });
        hp.start();
        Thread.sleep(500);
        check("hilock's put waits on a full queue", hput[0] == null, hput[0]);
        String jt = q.take();
        hp.join(10000);
        check("Redisson's take: the head", "h1".equals(jt), jt);
        check("hilock's waiting put lands after Redisson's take", "ok nil".equals(hput[0]), hput[0]);
        check("the queue", List.of("h2", "j0", "h3").equals(q.readAll()), q.readAll());
        check("no room: capacity 0 on both sides", q.remainingCapacity() == 0
                && "ok i:0".equals(bcall(p1, name, "remaining_capacity")), q.remainingCapacity());
        // drain by hilock (poll_many), Redisson producers then, hilock consumers
        check("hilock's poll_many gives 3 units back", bcall(p1, name, "poll_many", "i:10").startsWith("ok [")
                && q.remainingCapacity() == 3, q.remainingCapacity());
        AtomicInteger got = new AtomicInteger();
        Thread cons = new Thread(() -> {
            try {
                while (got.get() < 200) {
                    if (value(bcall(p2, name, "poll_timeout", "i:2000")) == null) {
                        break;
                    }
                    got.incrementAndGet();
                }
            } catch (Exception e) {
                System.out.println("# hilock consumer: " + e);
            }
        });
        cons.start();
        for (int i = 0; i < 200; i++) {
            q.put("p" + i);
        }
        cons.join(60000);
        check("Redisson's puts through a 3-slot queue, hilock's takes: all 200", got.get() == 200, got.get());
        check("the capacity is back where it began", q.remainingCapacity() == 3 && q.isEmpty(),
                q.remainingCapacity());
    }

    static void run(RedissonClient r, Peer p1, Peer p2) throws Exception {
        // a hilock take woken by Redisson's offer
        String wname = "bq:wake";
        RBlockingQueue<String> wq = r.getBlockingQueue(wname, StringCodec.INSTANCE);
        Thread offer = new Thread(() -> {
            try {
                Thread.sleep(300);
                wq.offer("from-java");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        offer.start();
        String got = value(p1.call(wname, "take"));
        offer.join();
        check("a hilock take wakes on Redisson's offer", "from-java".equals(got), got);
        // a Redisson take woken by hilock's offer
        final String[] jgot = new String[1];
        Thread take = new Thread(() -> {
            try {
                jgot[0] = wq.poll(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        take.start();
        Thread.sleep(300);
        p1.call(wname, "offer", "b:" + hex("from-hilock"));
        take.join();
        check("a Redisson take wakes on hilock's offer", "from-hilock".equals(jgot[0]), jgot[0]);

        // Redisson producers; hilock consumers (two processes) and a Redisson consumer
        final int per = 400, producers = 2, total = per * producers;
        String name = "bq:j2h";
        RBlockingQueue<String> q = r.getBlockingQueue(name, StringCodec.INSTANCE);
        Map<String, AtomicInteger> seen = new ConcurrentHashMap<>();
        AtomicBoolean produced = new AtomicBoolean();
        AtomicInteger errors = new AtomicInteger();
        List<Thread> ts = new ArrayList<>();
        for (Peer p : new Peer[] {p1, p2}) {
            ts.add(new Thread(() -> {
                int empty = 0;
                try {
                    while (empty < 2) {
                        String v = value(p.call(name, "poll_timeout", "i:700"));
                        if (v == null) {
                            empty += produced.get() ? 1 : 0;
                        } else {
                            seen.computeIfAbsent(v, k -> new AtomicInteger()).incrementAndGet();
                            empty = 0;
                        }
                    }
                } catch (Exception e) {
                    errors.incrementAndGet();
                    System.out.println("# hilock consumer: " + e);
                }
            }));
        }
        ts.add(new Thread(() -> {
            int empty = 0;
            try {
                while (empty < 2) {
                    String v = q.poll(700, TimeUnit.MILLISECONDS);
                    if (v == null) {
                        empty += produced.get() ? 1 : 0;
                    } else {
                        seen.computeIfAbsent(v, k -> new AtomicInteger()).incrementAndGet();
                        empty = 0;
                    }
                }
            } catch (Exception e) {
                errors.incrementAndGet();
            }
        }));
        for (Thread t : ts) {
            t.start();
        }
        List<Thread> ps = new ArrayList<>();
        for (int k = 0; k < producers; k++) {
            final int id = k;
            ps.add(new Thread(() -> {
                for (int i = 0; i < per; i++) {
                    q.offer("e" + (id * per + i));
                }
            }));
        }
        for (Thread t : ps) {
            t.start();
        }
        for (Thread t : ps) {
            t.join();
        }
        produced.set(true);
        for (Thread t : ts) {
            t.join();
        }
        check("Redisson producers, hilock and Redisson consumers: no error", errors.get() == 0, errors.get());
        tally("Redisson producers, hilock and Redisson consumers", seen, total, "e");

        // a hilock producer; Redisson consumers and a hilock consumer
        String name2 = "bq:h2j";
        RBlockingQueue<String> q2 = r.getBlockingQueue(name2, StringCodec.INSTANCE);
        Map<String, AtomicInteger> seen2 = new ConcurrentHashMap<>();
        AtomicBoolean produced2 = new AtomicBoolean();
        List<Thread> cs = new ArrayList<>();
        for (int k = 0; k < 2; k++) {
            cs.add(new Thread(() -> {
                int empty = 0;
                try {
                    while (empty < 2) {
                        String v = q2.poll(700, TimeUnit.MILLISECONDS);
                        if (v == null) {
                            empty += produced2.get() ? 1 : 0;
                        } else {
                            seen2.computeIfAbsent(v, x -> new AtomicInteger()).incrementAndGet();
                            empty = 0;
                        }
                    }
                } catch (Exception e) {
                    errors.incrementAndGet();
                }
            }));
        }
        cs.add(new Thread(() -> {
            int empty = 0;
            try {
                while (empty < 2) {
                    String v = value(p2.call(name2, "poll_timeout", "i:700"));
                    if (v == null) {
                        empty += produced2.get() ? 1 : 0;
                    } else {
                        seen2.computeIfAbsent(v, x -> new AtomicInteger()).incrementAndGet();
                        empty = 0;
                    }
                }
            } catch (Exception e) {
                errors.incrementAndGet();
                System.out.println("# hilock consumer: " + e);
            }
        }));
        for (Thread t : cs) {
            t.start();
        }
        boolean puts = true;
        for (int i = 0; i < total; i++) {
            puts &= "ok nil".equals(p1.call(name2, "put", "b:" + hex("h" + i)));
        }
        produced2.set(true);
        for (Thread t : cs) {
            t.join();
        }
        check("hilock's puts", puts, "");
        check("a hilock producer, Redisson and hilock consumers: no error", errors.get() == 0, errors.get());
        tally("a hilock producer, Redisson and hilock consumers", seen2, total, "h");
        int left = 0;
        for (String k : r.getKeys().getKeysByPattern("hilock_*")) {
            left++;
        }
        check("no hilock key left", left == 0, left);
    }

    /* INFO clients' blocked_clients, over a socket of its own. */
    static int blocked(URI redis) throws Exception {
        try (Socket s = new Socket(redis.getHost(), redis.getPort())) {
            OutputStream o = s.getOutputStream();
            o.write("*2\r\n$4\r\nINFO\r\n$7\r\nclients\r\n".getBytes(StandardCharsets.US_ASCII));
            o.flush();
            InputStream in = s.getInputStream();
            StringBuilder b = new StringBuilder();
            int c;
            while ((c = in.read()) != '\n') { // "$LEN\r\n"
                b.append((char) c);
            }
            int len = Integer.parseInt(b.toString().substring(1).trim());
            byte[] body = in.readNBytes(len);
            for (String l : new String(body, StandardCharsets.US_ASCII).split("\r\n")) {
                if (l.startsWith("blocked_clients:")) {
                    return Integer.parseInt(l.substring(16).trim());
                }
            }
        }
        return -1;
    }

    /* Wait (10 s at most) until blocked_clients reaches n (up) or falls
     * to n (down); the count reached. */
    static int waitBlocked(URI redis, int n, boolean up) throws Exception {
        long end = System.currentTimeMillis() + 10000;
        int b = blocked(redis);
        while ((up ? b < n : b > n) && System.currentTimeMillis() < end) {
            Thread.sleep(10);
            b = blocked(redis);
        }
        return b;
    }

    /* The hilock_inflight and hilock_consumers keys, once none is left or
     * after 10 s: the pumps of the last polls end just after them. */
    static List<String> inflightKeys(RedissonClient r) throws Exception {
        long end = System.currentTimeMillis() + 10000;
        List<String> left = new ArrayList<>();
        do {
            left.clear();
            for (String pat : new String[] {"hilock_inflight:*", "hilock_consumers:*"}) {
                for (String k : r.getKeys().getKeysByPattern(pat)) {
                    left.add(k);
                }
            }
            if (!left.isEmpty()) {
                Thread.sleep(50);
            }
        } while (!left.isEmpty() && System.currentTimeMillis() < end);
        return left;
    }

    static String pfaLine(String kind, long ms, String... names) {
        StringBuilder b = new StringBuilder(kind).append(' ').append(ms).append(" blocking_queue");
        for (String n : names) {
            b.append(' ').append(hex(n));
        }
        return b.toString();
    }

    static void fromAny(RedissonClient r, Peer p1, Peer p2, URI redis) throws Exception {
        final String a = "bq:any:a", b = "bq:any:b", c = "bq:any:c";
        RBlockingQueue<String> qa = r.getBlockingQueue(a, StringCodec.INSTANCE);
        RBlockingQueue<String> qb = r.getBlockingQueue(b, StringCodec.INSTANCE);
        RBlockingQueue<String> qc = r.getBlockingQueue(c, StringCodec.INSTANCE);

        // a hilock poll_from_any waiting on a and b, served by Redisson's offer to b
        int base = waitBlocked(redis, 0, false);
        final String[] hgot = new String[1];
        final long[] hdone = new long[1];
        Thread h = new Thread(() -> {
            try {
                hgot[0] = p1.line(pfaLine("pfa", 10000, a, b));
            } catch (Exception e) {
                hgot[0] = e.toString();
            }
            hdone[0] = System.currentTimeMillis();
        });
        h.start();
        // one BLMOVE per queue (the client's pump of each)
        int up = waitBlocked(redis, base + 2, true);
        long t = System.currentTimeMillis();
        qb.offer("to-b");
        h.join(15000);
        check("a hilock poll_from_any waits on both queues", up >= base + 2, "blocked_clients " + up);
        check("a hilock poll_from_any (a, b) wakes on Redisson's offer to b: [b, element]",
                ("ok [b:" + hex(b) + ",b:" + hex("to-b") + "]").equals(hgot[0]), hgot[0]);
        check("... at once", hdone[0] > 0 && hdone[0] - t < 2000, (hdone[0] - t) + " ms");
        check("... nothing left in a or b", qa.isEmpty() && qb.isEmpty(), qa.readAll() + " " + qb.readAll());

        // Redisson's forms waiting, each served by a hilock offer to one of its queues
        waitBlocked(redis, 0, false);
        final Object[] jgot = new Object[3];
        final long[] jdone = new long[3];
        List<Thread> js = List.of(new Thread(() -> {
            try {
                jgot[0] = qa.pollFromAny(10, TimeUnit.SECONDS, b);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            jdone[0] = System.currentTimeMillis();
        }), new Thread(() -> {
            try {
                org.redisson.api.Entry<String, String> e = qa.pollFromAnyWithName(Duration.ofSeconds(10), c);
                jgot[1] = e == null ? null : e.getKey() + "=" + e.getValue();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            jdone[1] = System.currentTimeMillis();
        }), new Thread(() -> {
            try {
                jgot[2] = String.valueOf(qb.pollLastFromAny(Duration.ofSeconds(10), 2, c));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            jdone[2] = System.currentTimeMillis();
        }));
        String[] forms = {"pollFromAny (a, b)", "pollFromAnyWithName (a, c)", "pollLastFromAny (b, c)"};
        String[][] offers = {{b, "h-to-b"}, {c, "h-to-c"}, {c, "h-to-c2"}};
        String[] want = {"h-to-b", c + "=h-to-c", "{" + c + "=[h-to-c2]}"};
        for (int i = 0; i < 3; i++) {
            Thread jt = js.get(i);
            jt.start();
            up = waitBlocked(redis, 1, true);
            t = System.currentTimeMillis();
            String off = p1.call(offers[i][0], "offer", "b:" + hex(offers[i][1]));
            jt.join(15000);
            check("Redisson's " + forms[i] + " wakes on hilock's offer to " + offers[i][0],
                    up >= 1 && "ok i:1".equals(off) && want[i].equals(jgot[i]),
                    jgot[i] + " (blocked " + up + ", offer " + off + ")");
            check("... at once", jdone[i] > 0 && jdone[i] - t < 2000, (jdone[i] - t) + " ms");
            waitBlocked(redis, 0, false);
        }

        // Redisson producers into a, b and c; hilock and Redisson consumers of all three
        final String[] qs = {a, b, c};
        final int producers = 3, per = 300, total = producers * per;
        Map<String, AtomicInteger> seen = new ConcurrentHashMap<>();
        AtomicInteger byHilock = new AtomicInteger(), byJava = new AtomicInteger(), misnamed = new AtomicInteger();
        AtomicInteger errors = new AtomicInteger();
        AtomicBoolean produced = new AtomicBoolean();
        base = waitBlocked(redis, 0, false);
        String s1 = p1.line(pfaLine("pfa_start 3", 700, a, b, c));
        String s2 = p2.line(pfaLine("pfa_start 2", 700, c, a, b));
        check("hilock's poll_from_any threads start", "ok nil".equals(s1) && "ok nil".equals(s2), s1 + " " + s2);
        List<Thread> cs = new ArrayList<>();
        for (int k = 0; k < 3; k++) {
            final int form = k;
            cs.add(new Thread(() -> {
                int empty = 0;
                try {
                    while (empty < 2) {
                        List<String[]> got = new ArrayList<>(); // {queue or null, element}
                        if (form == 0) {
                            String v = qa.pollFromAny(700, TimeUnit.MILLISECONDS, b, c);
                            if (v != null) {
                                got.add(new String[] {null, v});
                            }
                        } else if (form == 1) {
                            org.redisson.api.Entry<String, String> e =
                                    qb.pollFromAnyWithName(Duration.ofMillis(700), c, a);
                            if (e != null) {
                                got.add(new String[] {e.getKey(), e.getValue()});
                            }
                        } else {
                            // the async form: 4.3.1's pollLastFromAny throws a
                            // ClassCastException when its time runs out (its
                            // answer is then an empty List, not a Map)
                            Object m = qc.pollLastFromAnyAsync(Duration.ofMillis(700), 2, a, b).get();
                            if (m instanceof Map) {
                                for (Map.Entry<?, ?> e : ((Map<?, ?>) m).entrySet()) {
                                    for (Object v : (List<?>) e.getValue()) {
                                        got.add(new String[] {(String) e.getKey(), (String) v});
                                    }
                                }
                            } else if (m != null && !(m instanceof List && ((List<?>) m).isEmpty())) {
                                throw new IllegalStateException("pollLastFromAny answered " + m);
                            }
                        }
                        if (got.isEmpty()) {
                            empty += produced.get() ? 1 : 0;
                            continue;
                        }
                        empty = 0;
                        for (String[] g : got) {
                            seen.computeIfAbsent(g[1], x -> new AtomicInteger()).incrementAndGet();
                            byJava.incrementAndGet();
                            if (g[0] != null && !g[0].equals(queueOf(qs, g[1]))) {
                                misnamed.incrementAndGet();
                            }
                        }
                    }
                } catch (Exception e) {
                    errors.incrementAndGet();
                    System.out.println("# Redisson consumer: " + e);
                }
            }));
        }
        for (Thread x : cs) {
            x.start();
        }
        // all waiting: 3 pumps in each hilock process, 3 Redisson consumers
        up = waitBlocked(redis, base + 9, true);
        List<Thread> ps = new ArrayList<>();
        for (int k = 0; k < producers; k++) {
            final int id = k;
            ps.add(new Thread(() -> {
                for (int i = 0; i < per; i++) {
                    int n = id * per + i;
                    r.<String>getBlockingQueue(qs[n % 3], StringCodec.INSTANCE).offer("x" + n);
                }
            }));
        }
        runAll(ps, 0);
        produced.set(true);
        runAll(cs, 60000);
        long hfails = 0;
        for (Peer p : new Peer[] {p1, p2}) {
            String j = p.line("pfa_join");
            String[] f = j == null ? new String[0] : j.split(" ");
            if (f.length < 2 || !"ok".equals(f[0])) {
                errors.incrementAndGet();
                System.out.println("# pfa_join: " + j);
                continue;
            }
            hfails += Long.parseLong(f[1]);
            for (int i = 2; i < f.length; i++) {
                String[] ne = f[i].split(":", 2);
                String v = unhex(ne[1]);
                seen.computeIfAbsent(v, x -> new AtomicInteger()).incrementAndGet();
                byHilock.incrementAndGet();
                if (!unhex(ne[0]).equals(queueOf(qs, v))) {
                    misnamed.incrementAndGet();
                }
            }
        }
        check("poll from any: all 9 waiting before the offers", up >= base + 9, "blocked_clients " + up);
        check("poll from any: no error on either side", errors.get() == 0 && hfails == 0,
                "Redisson " + errors.get() + ", hilock " + hfails);
        tally("poll from any, Redisson producers, hilock and Redisson consumers", seen, total, "x");
        check("poll from any: both sides took some (hilock " + byHilock.get() + ", Redisson " + byJava.get() + ")",
                byHilock.get() > 0 && byJava.get() > 0, "");
        check("poll from any: every element answered with its queue's name", misnamed.get() == 0,
                misnamed.get() + " misnamed");
        check("poll from any: a, b and c empty", qa.isEmpty() && qb.isEmpty() && qc.isEmpty(),
                qa.size() + " " + qb.size() + " " + qc.size());
        List<String> left = inflightKeys(r);
        check("poll from any: no hilock_inflight or hilock_consumers key left", left.isEmpty(), left);
    }

    /* Start the threads not started yet, then join them all (each
     * waited for ms at most; 0: until it ends). */
    static void runAll(List<Thread> ts, long ms) throws InterruptedException {
        for (Thread x : ts) {
            if (x.getState() == Thread.State.NEW) {
                x.start();
            }
        }
        for (Thread x : ts) {
            x.join(ms);
        }
    }

    static String queueOf(String[] qs, String v) {
        return qs[Integer.parseInt(v.substring(1)) % 3];
    }
}
