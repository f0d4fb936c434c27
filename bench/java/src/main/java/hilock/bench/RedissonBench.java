package hilock.bench;

import java.io.FileWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * The Redisson side of `make bench`: RLock with its defaults (watchdog,
 * lock()/unlock()), one RedissonClient per JVM, one thread per worker.
 *
 * <pre>
 *   java -jar hilock-bench-redisson.jar URL uncontended SECONDS
 *   java -jar hilock-bench-redisson.jar URL contend SECONDS W threads CS_US [FILE]
 * </pre>
 *
 * Prints one JSON object with the fields of bench/hlbench.c.
 */
public final class RedissonBench {
    private RedissonBench() {}

    private static long pct(List<Long> v, double p) {
        if (v.isEmpty()) {
            return 0;
        }
        return v.get((int) (p * (v.size() - 1) + 0.5));
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        String scenario = args[1];
        double secs = Double.parseDouble(args[2]);
        long durNs = (long) (secs * 1e9);
        Config cfg = new Config();
        cfg.useSingleServer().setAddress(url.replaceAll("/\\d+$", ""))
                .setDatabase(url.matches(".*/\\d+$")
                        ? Integer.parseInt(url.replaceAll(".*/", "")) : 0)
                .setConnectionPoolSize(64).setConnectionMinimumIdleSize(8);
        RedissonClient client = Redisson.create(cfg);
        try {
            if (scenario.equals("uncontended")) {
                RLock lock = client.getLock("bench:java:uncontended");
                // Warm the JIT for a second first: a JVM's first second is
                // not its steady state.
                long warm = System.nanoTime() + 1_000_000_000L;
                while (System.nanoTime() < warm) {
                    lock.lock();
                    lock.unlock();
                }
                long n = 0;
                long t0 = System.nanoTime();
                while (System.nanoTime() - t0 < durNs) {
                    lock.lock();
                    lock.unlock();
                    n++;
                }
                double el = (System.nanoTime() - t0) / 1e9;
                System.out.printf(Locale.ROOT, "{\"scenario\":\"uncontended\",\"lang\":\"java\","
                        + "\"lib\":\"redisson\",\"pairs_per_s\":%.1f}%n", n / el);
            } else if (scenario.equals("contend")) {
                contend(client, durNs, Integer.parseInt(args[3]), args[4],
                        Integer.parseInt(args[5]), args.length > 6 ? args[6] : null);
            } else {
                throw new IllegalArgumentException("unknown scenario " + scenario);
            }
        } finally {
            client.shutdown();
        }
    }

    private static void contend(RedissonClient client, long durNs, int w,
                                String mode, int csUs, String samples)
            throws Exception {
        final AtomicLong lastRelease = new AtomicLong();
        final AtomicInteger holders = new AtomicInteger();
        final AtomicInteger violations = new AtomicInteger();
        final CyclicBarrier start = new CyclicBarrier(w + 1);
        final long[] counts = new long[w];
        final long[] csSum = new long[w];
        final List<List<Long>> waits = new ArrayList<>();
        final List<List<Long>> hands = new ArrayList<>();
        final long[] end = new long[1];
        Thread[] threads = new Thread[w];
        for (int i = 0; i < w; i++) {
            waits.add(new ArrayList<>());
            hands.add(new ArrayList<>());
            final int me = i;
            threads[i] = new Thread(() -> {
                RLock lock = client.getLock("bench:java:contend");
                try {
                    start.await();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
                for (;;) {
                    long t0 = System.nanoTime();
                    if (t0 >= end[0]) {
                        break;
                    }
                    lock.lock();
                    long t1 = System.nanoTime();
                    if (holders.incrementAndGet() != 1) {
                        violations.incrementAndGet();
                    }
                    long rel = lastRelease.get();
                    waits.get(me).add((t1 - t0) / 1000);
                    if (rel > t0) {
                        hands.get(me).add((t1 - rel) / 1000);
                    }
                    LockSupport.parkNanos(csUs * 1000L);
                    csSum[me] += System.nanoTime() - t1;
                    counts[me]++;
                    holders.decrementAndGet();
                    lastRelease.set(System.nanoTime());
                    lock.unlock();
                }
            });
            threads[i].start();
        }
        long t0 = System.nanoTime();
        end[0] = t0 + durNs;
        start.await();
        for (Thread t : threads) {
            t.join();
        }
        double el = (System.nanoTime() - t0) / 1e9;
        List<Long> all = new ArrayList<>();
        List<Long> hs = new ArrayList<>();
        long total = 0;
        long cs = 0;
        long mn = Long.MAX_VALUE;
        long mx = 0;
        for (int i = 0; i < w; i++) {
            all.addAll(waits.get(i));
            hs.addAll(hands.get(i));
            total += counts[i];
            cs += csSum[i];
            mn = Math.min(mn, counts[i]);
            mx = Math.max(mx, counts[i]);
        }
        if (samples != null && !samples.isEmpty()) {
            try (PrintWriter pw = new PrintWriter(new FileWriter(samples))) {
                for (long v : all) {
                    pw.println(v);
                }
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        }
        Collections.sort(all);
        Collections.sort(hs);
        System.out.printf(Locale.ROOT, "{\"scenario\":\"contend\",\"lang\":\"java\",\"lib\":\"redisson\","
                + "\"mode\":\"%s\",\"workers\":%d,\"cs_us\":%d,\"acq_per_s\":%.1f,"
                + "\"cs_mean_us\":%.1f,\"wait_p50_us\":%d,\"wait_p99_us\":%d,"
                + "\"wait_max_us\":%d,\"handoff_p50_us\":%d,\"handoff_p99_us\":%d,"
                + "\"fair_min\":%d,\"fair_max\":%d,\"violations\":%d}%n",
                mode, w, csUs, total / el, total > 0 ? cs / 1000.0 / total : 0.0,
                pct(all, 0.5), pct(all, 0.99), all.isEmpty() ? 0 : all.get(all.size() - 1),
                pct(hs, 0.5), pct(hs, 0.99), mn, mx, violations.get());
    }
}
