package hilock.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.redisson.api.RBatch;
import org.redisson.api.RBlockingQueue;
import org.redisson.api.RDelayedQueue;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

/**
 * The queues' Redisson rows (bench/grid_queue.py, {@code --only grid-queue}):
 * RBlockingQueue (offer, take) and RDelayedQueue (offer with a delay into
 * it), StringCodec, one RedissonClient, one thread per consumer. The
 * scenarios are bench/py/queue_bench.py's:
 *
 * <pre>
 *   URL queue-latency NAME N GAP_MS
 *   URL queue-drain NAME M CONSUMERS
 *   URL queue-delayed NAME N DELAY_MS SPACING_MS
 * </pre>
 */
final class QueueBench {
    private static final int WARM = 300; // the JIT: a JVM's first hand-offs are slow

    private QueueBench() {
    }

    private static double pct(List<Double> v, double p) {
        List<Double> s = new ArrayList<>(v);
        Collections.sort(s);
        return s.isEmpty() ? 0 : s.get((int) (p * (s.size() - 1) + 0.5));
    }

    /** Wall-clock ns, as the other drivers write them. */
    private static long wallNs() {
        java.time.Instant i = java.time.Instant.now();
        return i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }

    static void run(RedissonClient c, String scenario, String[] a) throws Exception {
        String name = a[0];
        RBlockingQueue<String> q = c.getBlockingQueue(name, StringCodec.INSTANCE);
        String version = org.redisson.Redisson.class.getPackage().getImplementationVersion();
        String head = String.format(Locale.ROOT, "{\"lib\": \"redisson\", \"version\": \"%s\", ",
                version == null ? "?" : version);
        if (scenario.equals("queue-latency")) {
            int n = Integer.parseInt(a[1]);
            long gapNs = (long) (Double.parseDouble(a[2]) * 1e6);
            q.delete();
            List<Double> lat = Collections.synchronizedList(new ArrayList<>());
            Semaphore got = new Semaphore(0);
            Thread t = new Thread(() -> {
                try {
                    for (int i = 0; i < n + WARM; i++) {
                        String v = q.take();
                        lat.add((wallNs() - Long.parseLong(v)) / 1e3);
                        got.release();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            t.setDaemon(true);
            t.start();
            for (int i = 0; i < n + WARM; i++) {
                Thread.sleep(gapNs / 1_000_000, (int) (gapNs % 1_000_000));
                q.offer(Long.toString(wallNs()));
                if (!got.tryAcquire(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("the consumer took nothing in 30 s");
                }
            }
            t.join();
            List<Double> s = lat.subList(WARM, lat.size());
            System.out.printf(Locale.ROOT, "%s\"n\": %d, \"p50_us\": %.1f, \"p99_us\": %.1f}%n",
                    head, s.size(), pct(s, 0.5), pct(s, 0.99));
        } else if (scenario.equals("queue-drain")) {
            int m = Integer.parseInt(a[1]);
            int cons = Integer.parseInt(a[2]);
            q.delete();
            for (int i = 0; i < m; i += 1000) {
                RBatch b = c.createBatch();
                var bq = b.<String>getQueue(name, StringCodec.INSTANCE);
                for (int j = i; j < i + 1000 && j < m; j++) {
                    bq.offerAsync(String.format(Locale.ROOT, "v%07d", j));
                }
                b.execute();
            }
            for (int i = 0; i < cons; i++) {
                q.offer("stop");
            }
            CyclicBarrier bar = new CyclicBarrier(cons + 1);
            AtomicLong taken = new AtomicLong();
            List<Thread> ts = new ArrayList<>();
            for (int i = 0; i < cons; i++) {
                Thread t = new Thread(() -> {
                    try {
                        bar.await();
                        long k = 0;
                        while (!q.take().equals("stop")) {
                            k++;
                        }
                        taken.addAndGet(k);
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                });
                t.start();
                ts.add(t);
            }
            bar.await();
            long t0 = System.nanoTime();
            for (Thread t : ts) {
                t.join();
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            if (taken.get() != m) {
                throw new IllegalStateException("took " + taken.get() + " of " + m);
            }
            System.out.printf(Locale.ROOT, "%s\"elements\": %d, \"consumers\": %d, \"secs\": %.3f, "
                    + "\"elements_per_s\": %.0f}%n", head, m, cons, secs, m / secs);
        } else if (scenario.equals("queue-delayed")) {
            int n = Integer.parseInt(a[1]);
            double delayMs = Double.parseDouble(a[2]);
            long spacingMs = (long) Double.parseDouble(a[3]);
            q.delete();
            @SuppressWarnings("deprecation")
            RDelayedQueue<String> dq = c.getDelayedQueue(q);
            List<Double> late = Collections.synchronizedList(new ArrayList<>());
            Thread t = new Thread(() -> {
                try {
                    for (int i = 0; i < n; i++) {
                        String v = q.take();
                        late.add((wallNs() - Long.parseLong(v)) / 1e6);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            t.setDaemon(true);
            t.start();
            for (int i = 0; i < n; i++) {
                long due = wallNs() + (long) (delayMs * 1e6);
                dq.offer(Long.toString(due), (long) delayMs, TimeUnit.MILLISECONDS);
                Thread.sleep(spacingMs);
            }
            t.join((long) delayMs + 60_000);
            if (late.size() < n) {
                throw new IllegalStateException(late.size() + " of " + n + " delayed elements arrived");
            }
            int early = 0;
            double min = late.get(0);
            for (double x : late) {
                early += x < 0 ? 1 : 0;
                min = Math.min(min, x);
            }
            dq.destroy();
            System.out.printf(Locale.ROOT, "%s\"n\": %d, \"p50_ms\": %.1f, \"p99_ms\": %.1f, "
                    + "\"min_ms\": %.1f, \"early\": %d}%n", head, n, pct(late, 0.5), pct(late, 0.99), min, early);
        } else {
            throw new IllegalArgumentException("unknown scenario " + scenario);
        }
    }
}
