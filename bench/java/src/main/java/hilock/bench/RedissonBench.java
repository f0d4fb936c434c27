package hilock.bench;

import java.io.BufferedReader;
import java.io.FileWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.redisson.Redisson;
import org.redisson.api.RAtomicDouble;
import org.redisson.api.RAtomicLong;
import org.redisson.api.RBitSet;
import org.redisson.api.RBloomFilter;
import org.redisson.api.RBucket;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RLock;
import org.redisson.api.RMap;
import org.redisson.api.RRateLimiter;
import org.redisson.api.RSemaphore;
import org.redisson.api.RateType;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

/**
 * The Redisson side of `make bench`: RLock with its defaults (watchdog,
 * lock()/unlock()), one RedissonClient per JVM, one thread per worker.
 *
 * <pre>
 *   java -jar hilock-bench-redisson.jar URL uncontended SECONDS
 *   java -jar hilock-bench-redisson.jar URL contend SECONDS W threads CS_US [FILE [KIND]]
 *   java -jar hilock-bench-redisson.jar URL random SECONDS W MAX_HOLD_MS [WAIT_MS]
 *   java -jar hilock-bench-redisson.jar URL readers SECONDS R threads CS_US
 *   java -jar hilock-bench-redisson.jar URL failover PREFIX WAIT_MS
 *   java -jar hilock-bench-redisson.jar URL sem-uncontended SECONDS
 *   java -jar hilock-bench-redisson.jar URL sem-contend SECONDS W threads CS_US PERMITS
 *   java -jar hilock-bench-redisson.jar URL latch-wake ROUNDS WAITERS COUNT
 *   java -jar hilock-bench-redisson.jar URL grid SECONDS KIND NAME OP N ARG...
 *   java -jar hilock-bench-redisson.jar URL queue-latency|queue-drain|queue-delayed NAME ...
 * </pre>
 *
 * URL: redis://host:port[/db], or as hilock writes them,
 * redis-sentinel://h1:p1,h2:p2/master (useSentinelServers) and
 * redis-cluster://h1:p1,... (useClusterServers), every other setting
 * Redisson's default. Prints one JSON object with the fields of
 * bench/hlbench.c; failover is hlbench's failover scenario (see there).
 * KIND: reentrant (getLock, the default) or fair (getFairLock). readers:
 * R threads loop getReadWriteLock().readLock() lock(), CS_US, unlock(), as
 * hlbench's readers scenario. The synchronizers (getSemaphore,
 * getCountDownLatch): sem-uncontended loops acquire()/release() of one
 * permit; sem-contend is hlbench's (W threads, a semaphore of PERMITS);
 * latch-wake is hlbench's with every waiter a thread of this JVM (see
 * there). grid: one operation of a grid object (RBucket with StringCodec,
 * RAtomicLong, RAtomicDouble, RBitSet, RBloomFilter with StringCodec,
 * RRateLimiter) in a loop after a second of warm-up; the OP groups and ARG
 * as bench/hlbench.c's grid scenarios take them (the groups before the
 * last set up; one this class has no entry for is skipped). queue-*: the
 * blocking and delayed queues (QueueBench). random: W threads, each
 * its own waiter of one RLock, loop tryLock(WAIT_MS, ms) (the watchdog),
 * hold 0..MAX_HOLD_MS (uniform), unlock, as hlbench's random scenario
 * (every worker's waits and hold intervals, wall clock).
 *
 * HLBENCH_WINDOW in the environment (contend, sem-contend, random):
 * "#window start" once every worker is ready (after the warm-up) and
 * "#window end" once all are done, each waiting for a line on stdin
 * (bench/run.py reads INFO commandstats meanwhile), as hlbench does.
 */
public final class RedissonBench {
    private RedissonBench() {}

    private static long pct(List<Long> v, double p) {
        if (v.isEmpty()) {
            return 0;
        }
        return v.get((int) (p * (v.size() - 1) + 0.5));
    }

    private static final BufferedReader STDIN =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

    /** The measured window for bench/run.py (see the class comment). */
    /* The measured run: the window opens (HLBENCH_WINDOW), the workers,
     * waiting at start, go until end[0], t0 + durNs; the seconds it took,
     * once every worker ended and the window closed. */
    private static double runWindow(Thread[] threads, CyclicBarrier start, long[] end,
            long durNs) throws Exception {
        return runWindow(threads, start, end, durNs, edge -> { });
    }

    /* What a run samples just inside its window: at its start (edge 0) and
     * at its end (edge 1). */
    private interface AtEdge {
        void sample(int edge) throws Exception;
    }

    private static double runWindow(Thread[] threads, CyclicBarrier start, long[] end,
            long durNs, AtEdge at) throws Exception {
        windowMark("start");
        at.sample(0);
        long t0 = System.nanoTime();
        end[0] = t0 + durNs;
        start.await();
        for (Thread t : threads) {
            t.join();
        }
        double el = (System.nanoTime() - t0) / 1e9;
        at.sample(1);
        windowMark("end");
        return el;
    }

    private static void windowMark(String what) throws IOException {
        if (System.getenv("HLBENCH_WINDOW") == null) {
            return;
        }
        System.out.println("#window " + what);
        System.out.flush();
        if (STDIN.readLine() == null) {
            throw new IOException("window: stdin closed");
        }
    }

    private static Config config(String url) {
        Config cfg = new Config();
        if (url.startsWith("redis-sentinel://")) {
            String rest = url.substring("redis-sentinel://".length());
            String[] parts = rest.split("/");
            var s = cfg.useSentinelServers().setMasterName(parts[1]);
            for (String h : parts[0].split(",")) {
                s.addSentinelAddress("redis://" + h);
            }
        } else if (url.startsWith("redis-cluster://")) {
            var c = cfg.useClusterServers();
            for (String h : url.substring("redis-cluster://".length()).split(",")) {
                c.addNodeAddress("redis://" + h);
            }
        } else {
            cfg.useSingleServer().setAddress(url.replaceAll("/\\d+$", ""))
                    .setDatabase(url.matches(".*/\\d+$")
                            ? Integer.parseInt(url.replaceAll(".*/", "")) : 0)
                    .setConnectionPoolSize(64).setConnectionMinimumIdleSize(8);
        }
        return cfg;
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        String scenario = args[1];
        RedissonClient client = Redisson.create(config(url));
        try {
            if (scenario.equals("uncontended")) {
                long durNs = (long) (Double.parseDouble(args[2]) * 1e9);
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
                long durNs = (long) (Double.parseDouble(args[2]) * 1e9);
                contend(client, durNs, Integer.parseInt(args[3]), args[4],
                        Integer.parseInt(args[5]), args.length > 6 ? args[6] : null,
                        args.length > 7 ? args[7] : "reentrant");
            } else if (scenario.equals("random")) {
                random(client, (long) (Double.parseDouble(args[2]) * 1e9),
                        Integer.parseInt(args[3]), Integer.parseInt(args[4]),
                        args.length > 5 ? Long.parseLong(args[5]) : 20000L);
            } else if (scenario.equals("readers")) {
                long durNs = (long) (Double.parseDouble(args[2]) * 1e9);
                readers(client, durNs, Integer.parseInt(args[3]), args[4],
                        Integer.parseInt(args[5]));
            } else if (scenario.equals("failover")) {
                failover(client, args[2], Long.parseLong(args[3]));
            } else if (scenario.equals("sem-uncontended")) {
                semUncontended(client, (long) (Double.parseDouble(args[2]) * 1e9));
            } else if (scenario.equals("sem-contend")) {
                long durNs = (long) (Double.parseDouble(args[2]) * 1e9);
                semContend(client, url, durNs, Integer.parseInt(args[3]), args[4],
                        Integer.parseInt(args[5]), Integer.parseInt(args[6]));
            } else if (scenario.equals("grid")) {
                grid(client, (long) (Double.parseDouble(args[2]) * 1e9), args[3], args[4],
                        java.util.Arrays.copyOfRange(args, 5, args.length));
            } else if (scenario.startsWith("queue-")) {
                QueueBench.run(client, scenario, java.util.Arrays.copyOfRange(args, 2, args.length));
            } else if (scenario.equals("latch-wake")) {
                latchWake(client, url, Integer.parseInt(args[2]), Integer.parseInt(args[3]),
                        Integer.parseInt(args[4]));
            } else {
                throw new IllegalArgumentException("unknown scenario " + scenario);
            }
        } finally {
            client.shutdown();
        }
    }

    /**
     * hlbench's failover scenario, with RLock: tryLock(WAIT_MS, ms) (the
     * watchdog), unlock, 1 ms pause, each time a fresh lock PREFIX:n.
     * "ready" after the first acquisition; stdin "kill NS" gives the
     * CLOCK_MONOTONIC time of a master's kill -9 (System.nanoTime() reads
     * the same clock on Linux); then the first acquisition the new master
     * granted (begun after the kill, or returned more than 200 ms after
     * it) is reported, and the program ends.
     */
    private static void failover(RedissonClient client, String prefix, long waitMs)
            throws Exception {
        final AtomicLong kill = new AtomicLong();
        final AtomicInteger eof = new AtomicInteger();
        Thread in = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(System.in))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.startsWith("kill ")) {
                        kill.set(Long.parseLong(line.substring(5).trim()));
                    }
                }
            } catch (IOException e) {
                // end of input
            }
            eof.set(1);
        });
        in.setDaemon(true);
        in.start();
        long okBefore = 0;
        long failed = 0;
        long longestAcq = 0;
        long longestRel = 0;
        boolean ready = false;
        String err = "";
        for (long i = 0;; i++) {
            if (eof.get() != 0) {
                throw new IllegalStateException("stdin closed before a recovery");
            }
            RLock lock = client.getLock(prefix + ":" + i);
            boolean acquired = false;
            long t0 = System.nanoTime();
            try {
                acquired = lock.tryLock(waitMs, TimeUnit.MILLISECONDS);
                if (!acquired) {
                    err = "not acquired";
                }
            } catch (Exception e) {
                err = e.getClass().getSimpleName() + ": " + e.getMessage();
            }
            long t1 = System.nanoTime();
            // read after the call: it may have begun before the kill
            long k = kill.get();
            if (k != 0 && t1 > k && t1 - t0 > longestAcq) {
                longestAcq = t1 - t0;
            }
            if (acquired && k != 0 && (t0 >= k || t1 - k > 200_000_000L)) {
                System.out.printf(Locale.ROOT, "{\"scenario\":\"failover\",\"lib\":\"redisson\","
                        + "\"first_ok_ms\":%.1f,\"failed_after_kill\":%d,\"ok_before_kill\":%d,"
                        + "\"longest_acquire_ms\":%.1f,\"longest_release_ms\":%.1f,"
                        + "\"last_error\":\"%s\"}%n",
                        (t1 - k) / 1e6, failed, okBefore, longestAcq / 1e6, longestRel / 1e6,
                        err.replaceAll("[\"\\\\\\p{Cntrl}]", " "));
                System.out.flush();
                try {
                    lock.unlock();
                } catch (Exception e) {
                    // the result is out
                }
                return;
            }
            if (acquired) {
                if (k == 0) {
                    okBefore++;
                }
                if (!ready) {
                    System.out.println("ready");
                    System.out.flush();
                    ready = true;
                }
                long r0 = System.nanoTime();
                try {
                    lock.unlock();
                } catch (Exception e) {
                    // measured by the next acquisitions
                }
                long r1 = System.nanoTime();
                k = kill.get();
                if (k != 0 && r1 > k && r1 - r0 > longestRel) {
                    longestRel = r1 - r0;
                }
            } else if (k != 0) {
                failed++;
            }
            LockSupport.parkNanos(1_000_000L);
        }
    }

    private static RLock lockOfKind(RedissonClient client, String kind, String name) {
        switch (kind) {
            case "reentrant":
                return client.getLock(name);
            case "fair":
                return client.getFairLock(name);
            default:
                throw new IllegalArgumentException("unknown lock kind " + kind);
        }
    }

    private static void contend(RedissonClient client, long durNs, int w,
                                String mode, int csUs, String samples, String kind)
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
        // warm the JIT and the connections first (uncontended, a lock of
        // the same kind), as in uncontended
        RLock warm = lockOfKind(client, kind, "bench:java:contend:warm");
        long warmEnd = System.nanoTime() + 1_000_000_000L;
        while (System.nanoTime() < warmEnd) {
            warm.lock();
            warm.unlock();
        }
        for (int i = 0; i < w; i++) {
            waits.add(new ArrayList<>());
            hands.add(new ArrayList<>());
            final int me = i;
            threads[i] = new Thread(() -> {
                RLock lock = lockOfKind(client, kind, "bench:java:contend");
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
        double el = runWindow(threads, start, end, durNs);
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
                + "\"kind\":\"%s\",\"mode\":\"%s\",\"workers\":%d,\"cs_us\":%d,\"acq_per_s\":%.1f,"
                + "\"cs_mean_us\":%.1f,\"wait_p50_us\":%d,\"wait_p99_us\":%d,"
                + "\"wait_max_us\":%d,\"handoff_p50_us\":%d,\"handoff_p99_us\":%d,"
                + "\"fair_min\":%d,\"fair_max\":%d,\"violations\":%d,\"acquisitions\":%d}%n",
                kind, mode, w, csUs, total / el, total > 0 ? cs / 1000.0 / total : 0.0,
                pct(all, 0.5), pct(all, 0.99), all.isEmpty() ? 0 : all.get(all.size() - 1),
                pct(hs, 0.5), pct(hs, 0.99), mn, mx, violations.get(), total);
    }

    /**
     * hlbench's readers scenario: R threads, each its own reader of one
     * RReadWriteLock, loop readLock().lock(), CS_US, unlock(). How many
     * held at once: counted in the threads (mean: time held / elapsed; the
     * most at once) and seen in Redis (HLEN of the lock's hash less its
     * mode field, sampled every 2 ms by the main thread).
     */
    private static void readers(RedissonClient client, long durNs, int r,
                                String mode, int csUs) throws Exception {
        final String name = "bench:java:readers";
        final AtomicInteger holders = new AtomicInteger();
        final AtomicInteger maxHolders = new AtomicInteger();
        final CyclicBarrier start = new CyclicBarrier(r + 1);
        final long[] counts = new long[r];
        final long[] csSum = new long[r];
        final List<List<Long>> waits = new ArrayList<>();
        final long[] end = new long[1];
        Thread[] threads = new Thread[r];
        // warm the JIT and the connections first, as in uncontended
        RLock warm = client.getReadWriteLock(name).readLock();
        long warmEnd = System.nanoTime() + 1_000_000_000L;
        while (System.nanoTime() < warmEnd) {
            warm.lock();
            warm.unlock();
        }
        for (int i = 0; i < r; i++) {
            waits.add(new ArrayList<>());
            final int me = i;
            threads[i] = new Thread(() -> {
                RLock lock = client.getReadWriteLock(name).readLock();
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
                    int n = holders.incrementAndGet();
                    maxHolders.accumulateAndGet(n, Math::max);
                    waits.get(me).add((t1 - t0) / 1000);
                    LockSupport.parkNanos(csUs * 1000L);
                    csSum[me] += System.nanoTime() - t1;
                    counts[me]++;
                    holders.decrementAndGet();
                    lock.unlock();
                }
            });
            threads[i].start();
        }
        RMap<String, String> hash = client.getMap(name, StringCodec.INSTANCE);
        long t0 = System.nanoTime();
        end[0] = t0 + durNs;
        start.await();
        long hlenN = 0;
        long hlenSum = 0;
        long hlenMax = 0;
        while (System.nanoTime() < end[0]) {
            int n = hash.size();
            if (n > 0) {
                hlenSum += n - 1;
                hlenMax = Math.max(hlenMax, n - 1);
            }
            hlenN++;
            LockSupport.parkNanos(2_000_000L);
        }
        for (Thread t : threads) {
            t.join();
        }
        double el = (System.nanoTime() - t0) / 1e9;
        List<Long> all = new ArrayList<>();
        long total = 0;
        long cs = 0;
        long mn = Long.MAX_VALUE;
        long mx = 0;
        for (int i = 0; i < r; i++) {
            all.addAll(waits.get(i));
            total += counts[i];
            cs += csSum[i];
            mn = Math.min(mn, counts[i]);
            mx = Math.max(mx, counts[i]);
        }
        Collections.sort(all);
        System.out.printf(Locale.ROOT, "{\"scenario\":\"readers\",\"lang\":\"java\",\"lib\":\"redisson\","
                + "\"mode\":\"%s\",\"readers\":%d,\"cs_us\":%d,\"acq_per_s\":%.1f,"
                + "\"cs_mean_us\":%.1f,\"held_mean\":%.2f,\"held_max\":%d,"
                + "\"hlen_mean\":%.2f,\"hlen_max\":%d,\"hlen_samples\":%d,"
                + "\"wait_p50_us\":%d,\"wait_p99_us\":%d,\"wait_max_us\":%d,"
                + "\"fair_min\":%d,\"fair_max\":%d}%n",
                mode, r, csUs, total / el, total > 0 ? cs / 1000.0 / total : 0.0,
                cs / 1e9 / el, maxHolders.get(), hlenN > 0 ? (double) hlenSum / hlenN : 0.0,
                hlenMax, hlenN, pct(all, 0.5), pct(all, 0.99),
                all.isEmpty() ? 0 : all.get(all.size() - 1), mn, mx);
    }

    /** A semaphore of one permit: acquire(), release(), after a second of warm-up. */
    private static void semUncontended(RedissonClient client, long durNs) {
        RSemaphore sem = client.getSemaphore("bench:java:sem:uncontended");
        sem.delete();
        if (!sem.trySetPermits(1)) {
            throw new IllegalStateException("permits not set");
        }
        long warm = System.nanoTime() + 1_000_000_000L;
        try {
            while (System.nanoTime() < warm) {
                sem.acquire();
                sem.release();
            }
            long n = 0;
            long t0 = System.nanoTime();
            while (System.nanoTime() - t0 < durNs) {
                sem.acquire();
                sem.release();
                n++;
            }
            double el = (System.nanoTime() - t0) / 1e9;
            System.out.printf(Locale.ROOT, "{\"scenario\":\"sem-uncontended\",\"lang\":\"java\","
                    + "\"lib\":\"redisson\",\"pairs_per_s\":%.1f}%n", n / el);
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    /**
     * hlbench's sem-contend: W threads loop acquire() (no deadline), CS_US,
     * release() on one RSemaphore of PERMITS, after a second of
     * uncontended warm-up on another semaphore.
     */
    private static void semContend(RedissonClient client, String url, long durNs, int w,
                                   String mode, int csUs, int permits) throws Exception {
        final String name = "bench:java:sem";
        final AtomicInteger holders = new AtomicInteger();
        final AtomicInteger maxHolders = new AtomicInteger();
        final AtomicInteger violations = new AtomicInteger();
        final CyclicBarrier start = new CyclicBarrier(w + 1);
        final long[] counts = new long[w];
        final long[] csSum = new long[w];
        final List<List<Long>> waits = new ArrayList<>();
        final long[] end = new long[1];
        RSemaphore warm = client.getSemaphore(name + ":warm");
        warm.delete();
        warm.trySetPermits(1);
        long warmEnd = System.nanoTime() + 1_000_000_000L;
        while (System.nanoTime() < warmEnd) {
            warm.acquire();
            warm.release();
        }
        RSemaphore sem = client.getSemaphore(name);
        sem.delete();
        if (!sem.trySetPermits(permits)) {
            throw new IllegalStateException("permits not set");
        }
        Thread[] threads = new Thread[w];
        for (int i = 0; i < w; i++) {
            waits.add(new ArrayList<>());
            final int me = i;
            threads[i] = new Thread(() -> {
                RSemaphore s = client.getSemaphore(name);
                try {
                    start.await();
                    for (;;) {
                        long t0 = System.nanoTime();
                        if (t0 >= end[0]) {
                            break;
                        }
                        s.acquire();
                        long t1 = System.nanoTime();
                        int n = holders.incrementAndGet();
                        if (n > permits) {
                            violations.incrementAndGet();
                        }
                        maxHolders.accumulateAndGet(n, Math::max);
                        waits.get(me).add((t1 - t0) / 1000);
                        LockSupport.parkNanos(csUs * 1000L);
                        csSum[me] += System.nanoTime() - t1;
                        counts[me]++;
                        holders.decrementAndGet();
                        s.release();
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            threads[i].start();
        }
        final double[][] c = new double[2][];
        final long[] p = new long[2];
        double el = runWindow(threads, start, end, durNs, edge -> {
            c[edge] = serverCounters(url);
            p[edge] = processCpuNs();
        });
        double[] c0 = c[0];
        double[] c1 = c[1];
        long p0 = p[0];
        long p1 = p[1];
        List<Long> all = new ArrayList<>();
        long total = 0;
        long cs = 0;
        long mn = Long.MAX_VALUE;
        long mx = 0;
        for (int i = 0; i < w; i++) {
            all.addAll(waits.get(i));
            total += counts[i];
            cs += csSum[i];
            mn = Math.min(mn, counts[i]);
            mx = Math.max(mx, counts[i]);
        }
        Collections.sort(all);
        int left = sem.availablePermits();
        System.out.printf(Locale.ROOT, "{\"scenario\":\"sem-contend\",\"lang\":\"java\","
                + "\"lib\":\"redisson\",\"mode\":\"%s\",\"workers\":%d,\"permits\":%d,"
                + "\"cs_us\":%d,\"acq_per_s\":%.1f,\"cs_mean_us\":%.1f,\"held_mean\":%.2f,"
                + "\"held_max\":%d,\"wait_p50_us\":%d,\"wait_p99_us\":%d,\"wait_max_us\":%d,"
                + "\"fair_min\":%d,\"fair_max\":%d,\"violations\":%d,\"available_after\":%d,"
                + "\"scripts_per_acq\":%.2f,\"redis_cpu\":%.2f,\"client_cpu\":%.2f,"
                + "\"acquisitions\":%d}%n",
                mode, w, permits, csUs, total / el, total > 0 ? cs / 1000.0 / total : 0.0,
                cs / 1e9 / el, maxHolders.get(), pct(all, 0.5), pct(all, 0.99),
                all.isEmpty() ? 0 : all.get(all.size() - 1), mn, mx, violations.get(), left,
                total > 0 ? (c1[0] - c0[0]) / total : 0.0, (c1[1] - c0[1]) / el,
                (p1 - p0) / 1e9 / el, total);
    }

    private static long wallUs() {
        java.time.Instant t = java.time.Instant.now();
        return t.getEpochSecond() * 1_000_000L + t.getNano() / 1000;
    }

    /**
     * hlbench's random scenario with W threads of this JVM, each its own
     * waiter: tryLock(WAIT_MS, ms) with the watchdog, a hold drawn
     * uniformly in 0..MAX_HOLD_MS, unlock, for SECONDS (an acquire begun
     * before then is waited for). No warm-up: a new process as a user
     * starts it.
     */
    private static void random(RedissonClient client, long durNs, int w, int maxHoldMs,
                               long waitMs) throws Exception {
        final AtomicInteger holders = new AtomicInteger();
        final AtomicInteger violations = new AtomicInteger();
        final CyclicBarrier start = new CyclicBarrier(w + 1);
        final long[] acq = new long[w];
        final long[] timeouts = new long[w];
        final List<List<Long>> waits = new ArrayList<>();
        final List<List<long[]>> holds = new ArrayList<>();
        final long[] end = new long[1];
        Thread[] threads = new Thread[w];
        for (int i = 0; i < w; i++) {
            waits.add(new ArrayList<>());
            holds.add(new ArrayList<>());
            final int me = i;
            threads[i] = new Thread(() -> {
                RLock lock = client.getLock("bench:java:random");
                java.util.Random rnd = new java.util.Random(System.nanoTime() + me);
                try {
                    start.await();
                    for (;;) {
                        long t0 = System.nanoTime();
                        if (t0 >= end[0]) {
                            break;
                        }
                        boolean got = lock.tryLock(waitMs, TimeUnit.MILLISECONDS);
                        waits.get(me).add((System.nanoTime() - t0) / 1000);
                        if (!got) {
                            timeouts[me]++;
                            continue;
                        }
                        long a = wallUs();
                        if (holders.incrementAndGet() != 1) {
                            violations.incrementAndGet();
                        }
                        LockSupport.parkNanos(
                                (long) (rnd.nextDouble() * (maxHoldMs * 1000L + 1)) * 1000L);
                        acq[me]++;
                        holders.decrementAndGet();
                        holds.get(me).add(new long[] {a, wallUs()});
                        lock.unlock();
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            threads[i].start();
        }
        double el = runWindow(threads, start, end, durNs);
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "{\"scenario\":\"random\",\"lang\":\"java\","
                + "\"lib\":\"redisson\",\"mode\":\"threads\",\"workers\":%d,"
                + "\"max_hold_ms\":%d,\"wait_ms\":%d,\"elapsed_s\":%.3f,\"violations\":%d,"
                + "\"per_worker\":[", w, maxHoldMs, waitMs, el, violations.get()));
        for (int i = 0; i < w; i++) {
            sb.append(i > 0 ? "," : "").append("{\"acq\":").append(acq[i])
                    .append(",\"timeouts\":").append(timeouts[i]).append(",\"waits_us\":[");
            List<Long> wv = waits.get(i);
            for (int k = 0; k < wv.size(); k++) {
                sb.append(k > 0 ? "," : "").append(wv.get(k));
            }
            sb.append("],\"holds_us\":[");
            List<long[]> hv = holds.get(i);
            for (int k = 0; k < hv.size(); k++) {
                sb.append(k > 0 ? "," : "").append('[').append(hv.get(k)[0]).append(',')
                        .append(hv.get(k)[1]).append(']');
            }
            sb.append("]}");
        }
        sb.append("]}");
        System.out.println(sb);
    }

    /**
     * One command over a plain socket to the server of a redis://host:port
     * URL (the bench's side channel, not Redisson's): the reply's lines.
     */
    private static List<String> rawCommand(String url, String... args) throws IOException {
        String hp = url.substring("redis://".length()).replaceAll("/.*$", "");
        int colon = hp.lastIndexOf(':');
        try (Socket so = new Socket(hp.substring(0, colon),
                Integer.parseInt(hp.substring(colon + 1)))) {
            StringBuilder b = new StringBuilder("*" + args.length + "\r\n");
            for (String a : args) {
                b.append('$').append(a.getBytes(StandardCharsets.UTF_8).length).append("\r\n")
                        .append(a).append("\r\n");
            }
            OutputStream out = so.getOutputStream();
            out.write(b.toString().getBytes(StandardCharsets.UTF_8));
            out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(so.getInputStream(),
                    StandardCharsets.UTF_8));
            List<String> lines = new ArrayList<>();
            String first = in.readLine();
            lines.add(first);
            if (first.startsWith("$")) {
                // a bulk string (INFO): its bytes, then the final CRLF
                char[] body = new char[Integer.parseInt(first.substring(1)) + 2];
                int got = 0;
                while (got < body.length) {
                    int n = in.read(body, got, body.length - got);
                    if (n < 0) {
                        break;
                    }
                    got += n;
                }
                for (String l : new String(body, 0, got).split("\r\n")) {
                    lines.add(l);
                }
            } else if (first.startsWith("*")) {
                // PUBSUB NUMSUB of one channel: $len, channel, :n
                for (int i = 0; i < 3; i++) {
                    lines.add(in.readLine());
                }
            }
            return lines;
        }
    }

    /** This JVM's CPU time so far (all its threads, the JIT and GC too). */
    private static long processCpuNs() {
        var os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean) {
            return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime();
        }
        return 0;
    }

    /** GET calls so far (INFO commandstats). */
    private static double getCalls(String url) throws IOException {
        for (String l : rawCommand(url, "INFO", "commandstats")) {
            if (l.startsWith("cmdstat_get:calls=")) {
                return Double.parseDouble(l.replaceAll("^[^=]*=", "").replaceAll(",.*$", ""));
            }
        }
        return 0;
    }

    /** PUBSUB NUMSUB of one channel. */
    private static long numsub(String url, String channel) throws IOException {
        List<String> l = rawCommand(url, "PUBSUB", "NUMSUB", channel);
        return Long.parseLong(l.get(l.size() - 1).substring(1));
    }

    /** EVALSHA and EVAL calls so far, and the server's CPU seconds (INFO). */
    private static double[] serverCounters(String url) throws IOException {
        double[] v = new double[2];
        for (String l : rawCommand(url, "INFO", "commandstats")) {
            if (l.startsWith("cmdstat_evalsha:calls=") || l.startsWith("cmdstat_eval:calls=")) {
                v[0] += Double.parseDouble(l.replaceAll("^[^=]*=", "").replaceAll(",.*$", ""));
            }
        }
        for (String l : rawCommand(url, "INFO", "cpu")) {
            if (l.startsWith("used_cpu_sys:") || l.startsWith("used_cpu_user:")) {
                v[1] += Double.parseDouble(l.substring(l.indexOf(':') + 1));
            }
        }
        return v;
    }

    private static void waitFor(AtomicInteger v, int target, String what) {
        long end = System.nanoTime() + 60_000_000_000L;
        while (v.get() < target) {
            if (System.nanoTime() > end) {
                throw new IllegalStateException("latch: " + what + ": " + v.get() + " of " + target);
            }
            LockSupport.parkNanos(1_000_000L);
        }
    }

    /**
     * hlbench's latch-wake with Redisson: WAITERS threads of this JVM
     * await() an RCountDownLatch of COUNT; once all are in await() (and the
     * latch's channel has a subscriber, then 50 ms more), the main thread
     * counts it down COUNT times through the same client. Per round: the
     * time from the last countDown()'s return to the first, median and
     * last waiter's return. ROUNDS rounds after one to warm up.
     */
    private static void latchWake(RedissonClient client, String url, int rounds, int waiters,
                                  int count) throws Exception {
        final String name = "bench:java:latch";
        final String channel = "redisson_countdownlatch__channel__{" + name + "}";
        final int total = rounds + 1;
        final AtomicInteger round = new AtomicInteger();
        final AtomicInteger inWait = new AtomicInteger();
        final AtomicInteger woken = new AtomicInteger();
        final AtomicInteger failed = new AtomicInteger();
        final long[] wake = new long[waiters];
        RCountDownLatch latch = client.getCountDownLatch(name);
        latch.delete();
        Thread[] threads = new Thread[waiters];
        for (int i = 0; i < waiters; i++) {
            final int me = i;
            threads[i] = new Thread(() -> {
                RCountDownLatch l = client.getCountDownLatch(name);
                for (int r = 1; r <= total; r++) {
                    synchronized (round) {
                        while (round.get() < r) {
                            try {
                                round.wait();
                            } catch (InterruptedException e) {
                                throw new RuntimeException(e);
                            }
                        }
                    }
                    inWait.incrementAndGet();
                    boolean open = false;
                    try {
                        open = l.await(60, TimeUnit.SECONDS);
                    } catch (Exception e) {
                        System.err.println("latch await: " + e);
                    }
                    wake[me] = System.nanoTime();
                    if (!open) {
                        failed.incrementAndGet();
                    }
                    woken.incrementAndGet();
                }
            });
            threads[i].start();
        }
        double[][] res = new double[4][rounds];
        double gets = 0;
        long[] w = new long[waiters];
        for (int r = 1; r <= total; r++) {
            if (!latch.trySetCount(count)) {
                throw new IllegalStateException("latch: count not set in round " + r + " (count " + latch.getCount() + ")");
            }
            synchronized (round) {
                round.set(r);
                round.notifyAll();
            }
            waitFor(inWait, r * waiters, "waiters in await");
            for (int i = 0; numsub(url, channel) < 1; i++) {
                if (i > 60000) {
                    throw new IllegalStateException("latch: waiters did not subscribe");
                }
                LockSupport.parkNanos(1_000_000L);
            }
            LockSupport.parkNanos(50_000_000L);
            for (int i = 0; i < count - 1; i++) {
                latch.countDown();
            }
            double g0 = getCalls(url);
            long t0 = System.nanoTime();
            latch.countDown();
            long t1 = System.nanoTime();
            waitFor(woken, r * waiters, "waiters woken");
            if (r > 1) {
                gets += getCalls(url) - g0;
            }
            for (int i = 0; i < waiters; i++) {
                w[i] = wake[i] - t1;
            }
            java.util.Arrays.sort(w);
            if (r > 1) {
                res[0][r - 2] = w[waiters - 1] / 1e3;
                res[1][r - 2] = w[0] / 1e3;
                res[2][r - 2] = w[waiters / 2] / 1e3;
                res[3][r - 2] = (t1 - t0) / 1e3;
            }
        }
        for (Thread t : threads) {
            t.join();
        }
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "{\"scenario\":\"latch-wake\",\"lang\":\"java\","
                + "\"lib\":\"redisson\",\"mode\":\"threads\",\"waiters\":%d,\"procs\":1,"
                + "\"count\":%d,\"rounds\":%d,\"failed\":%d,\"gets_per_round\":%.1f", waiters,
                count, rounds, failed.get(), rounds > 0 ? gets / rounds : 0.0));
        String[] keys = {"last_us", "first_us", "median_us", "countdown_us"};
        for (int k = 0; k < 4; k++) {
            b.append(",\"").append(keys[k]).append("\":[");
            for (int r = 0; r < rounds; r++) {
                b.append(r > 0 ? "," : "").append(String.format(Locale.ROOT, "%.1f", res[k][r]));
            }
            b.append(']');
        }
        b.append('}');
        System.out.println(b);
    }

    /** A grid operation with its arguments (b:TEXT, i:N, f:X, m:MODE, s:SECONDS, -). */
    private static Runnable gridOp(RedissonClient c, String kind, String name, String op,
            String[] a) {
        switch (kind + "." + op) {
            case "bucket.get": {
                RBucket<String> b = c.getBucket(name, StringCodec.INSTANCE);
                return b::get;
            }
            case "bucket.set": {
                RBucket<String> b = c.getBucket(name, StringCodec.INSTANCE);
                String v = a[0].substring(2);
                return () -> b.set(v);
            }
            case "bucket.compare_and_set": {
                RBucket<String> b = c.getBucket(name, StringCodec.INSTANCE);
                String x = a[0].substring(2), v = a[1].substring(2);
                return () -> b.compareAndSet(x, v);
            }
            case "atomic_long.get":
                return c.getAtomicLong(name)::get;
            case "atomic_long.set": {
                RAtomicLong l = c.getAtomicLong(name);
                long v = Long.parseLong(a[0].substring(2));
                return () -> l.set(v);
            }
            case "atomic_long.increment_and_get":
                return c.getAtomicLong(name)::incrementAndGet;
            case "atomic_long.compare_and_set": {
                RAtomicLong l = c.getAtomicLong(name);
                long x = Long.parseLong(a[0].substring(2)), v = Long.parseLong(a[1].substring(2));
                return () -> l.compareAndSet(x, v);
            }
            case "atomic_double.add_and_get": {
                RAtomicDouble d = c.getAtomicDouble(name);
                double v = Double.parseDouble(a[0].substring(2));
                return () -> d.addAndGet(v);
            }
            case "bit_set.set": {
                RBitSet s = c.getBitSet(name);
                long i = Long.parseLong(a[0].substring(2));
                return () -> s.set(i);
            }
            case "bit_set.get": {
                RBitSet s = c.getBitSet(name);
                long i = Long.parseLong(a[0].substring(2));
                return () -> s.get(i);
            }
            case "bloom_filter.try_init": {
                RBloomFilter<String> f = c.getBloomFilter(name, StringCodec.INSTANCE);
                long n = Long.parseLong(a[0].substring(2));
                double p = Double.parseDouble(a[1].substring(2));
                return () -> f.tryInit(n, p);
            }
            case "bloom_filter.add": {
                RBloomFilter<String> f = c.getBloomFilter(name, StringCodec.INSTANCE);
                String v = a[0].substring(2);
                return () -> f.add(v);
            }
            case "bloom_filter.contains": {
                RBloomFilter<String> f = c.getBloomFilter(name, StringCodec.INSTANCE);
                String v = a[0].substring(2);
                return () -> f.contains(v);
            }
            case "bloom_filter.add_all": {
                RBloomFilter<String> f = c.getBloomFilter(name, StringCodec.INSTANCE);
                List<String> vs = new ArrayList<>();
                for (String x : a) {
                    vs.add(x.substring(2));
                }
                return () -> f.add(vs);
            }
            case "bloom_filter.contains_all": {
                RBloomFilter<String> f = c.getBloomFilter(name, StringCodec.INSTANCE);
                List<String> vs = new ArrayList<>();
                for (String x : a) {
                    vs.add(x.substring(2));
                }
                return () -> f.contains(vs);
            }
            case "rate_limiter.try_set_rate": {
                RRateLimiter r = c.getRateLimiter(name);
                long n = Long.parseLong(a[1].substring(2));
                long secs = Long.parseLong(a[2].substring(2));
                // m:overall or m:per_client; s:SECONDS
                RateType t = a[0].substring(2).equals("per_client") ? RateType.PER_CLIENT
                        : RateType.OVERALL;
                return () -> r.trySetRate(t, n, java.time.Duration.ofSeconds(secs));
            }
            case "rate_limiter.try_acquire":
                return c.getRateLimiter(name)::tryAcquire;
            default: // the collections (bench/grid_coll.py)
                return GridCollOps.op(c, kind, name, op, a);
        }
    }

    private static void grid(RedissonClient c, long durNs, String kind, String name,
            String[] groups) {
        Runnable measured = null;
        String op = null;
        for (int i = 0; i < groups.length;) {
            int n = Integer.parseInt(groups[i + 1]);
            String[] a = java.util.Arrays.copyOfRange(groups, i + 2, i + 2 + n);
            op = groups[i];
            i += 2 + n;
            Runnable r = gridOp(c, kind, name, op, a);
            if (i < groups.length) {
                if (r != null) {
                    r.run();
                }
            } else if (r == null) {
                throw new IllegalArgumentException("no Redisson entry for " + kind + "." + op);
            } else {
                measured = r;
            }
        }
        long warm = System.nanoTime() + 1_000_000_000L;
        while (System.nanoTime() < warm) {
            measured.run();
        }
        long n = 0;
        long t0 = System.nanoTime();
        while (System.nanoTime() - t0 < durNs) {
            measured.run();
            n++;
        }
        double el = (System.nanoTime() - t0) / 1e9;
        System.out.printf(Locale.ROOT, "{\"scenario\":\"grid\",\"lang\":\"java\","
                + "\"lib\":\"redisson\",\"kind\":\"%s\",\"op\":\"%s\","
                + "\"ops_per_s\":%.1f}%n", kind, op, n / el);
    }
}
