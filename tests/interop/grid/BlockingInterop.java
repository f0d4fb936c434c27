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
 *   - no hilock key left once the takes ended.
 */
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
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
        RedissonClient r = Redisson.create(cfg);
        long t0 = System.currentTimeMillis();
        try {
            run(r, p1, p2);
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
}
