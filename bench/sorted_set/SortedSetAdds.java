/*
 * Redisson's RSortedSet.add, N times (bench/sorted_set/run.sh): the same
 * values in the same order as sorted_set_adds.c and sorted_set_adds.py.
 *
 *   java SortedSetAdds REDIS_URL N NAME VERSION
 */
import org.redisson.Redisson;
import org.redisson.api.RSortedSet;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

public class SortedSetAdds {
    public static void main(String[] a) {
        int n = Integer.parseInt(a[1]);
        Config cfg = new Config();
        cfg.useSingleServer().setAddress(a[0]);
        RedissonClient r = Redisson.create(cfg);
        RSortedSet<String> s = r.getSortedSet(a[2], StringCodec.INSTANCE);
        s.delete();
        String[] vals = new String[n];
        for (int i = 0; i < n; i++) {
            vals[i] = String.format("v%010d", (i * 2654435761L) % 2147483647L);
        }
        long t0 = System.nanoTime();
        int added = 0;
        for (String v : vals) {
            if (s.add(v)) {
                added++;
            }
        }
        long ms = (System.nanoTime() - t0) / 1000000;
        System.out.println("redisson-" + a[3]
                + " adds=" + n + " added=" + added + " ms=" + ms + " size=" + s.size());
        r.shutdown();
    }
}
