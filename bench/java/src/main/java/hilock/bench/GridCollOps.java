package hilock.bench;

import java.util.LinkedHashSet;
import java.util.Set;

import org.redisson.api.RDeque;
import org.redisson.api.RList;
import org.redisson.api.RMap;
import org.redisson.api.RQueue;
import org.redisson.api.RScoredSortedSet;
import org.redisson.api.RSet;
import org.redisson.api.RSortedSet;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

/**
 * The collections' rows of the data grid's bench (bench/grid_coll.py,
 * {@code --only grid-coll}): Redisson's RMap, RSet, RScoredSortedSet,
 * RSortedSet, RList, RQueue and RDeque with StringCodec, on the objects the
 * driver filled before the run. Arguments as RedissonBench.gridOp takes
 * them (b:TEXT, i:N, f:X).
 */
final class GridCollOps {
    private GridCollOps() {
    }

    private static String s(String a) {
        return a.substring(2);
    }

    static Runnable op(RedissonClient c, String kind, String name, String op, String[] a) {
        switch (kind + "." + op) {
            case "map.get": {
                RMap<String, String> m = c.getMap(name, StringCodec.INSTANCE);
                String k = s(a[0]);
                return () -> m.get(k);
            }
            case "map.put": {
                RMap<String, String> m = c.getMap(name, StringCodec.INSTANCE);
                String k = s(a[0]), v = s(a[1]);
                return () -> m.put(k, v);
            }
            case "map.fast_put": {
                RMap<String, String> m = c.getMap(name, StringCodec.INSTANCE);
                String k = s(a[0]), v = s(a[1]);
                return () -> m.fastPut(k, v);
            }
            case "map.get_all": {
                RMap<String, String> m = c.getMap(name, StringCodec.INSTANCE);
                Set<String> ks = new LinkedHashSet<>();
                for (String x : a) {
                    ks.add(s(x));
                }
                return () -> m.getAll(ks);
            }
            case "set.add": {
                RSet<String> st = c.getSet(name, StringCodec.INSTANCE);
                String v = s(a[0]);
                return () -> st.add(v);
            }
            case "set.contains": {
                RSet<String> st = c.getSet(name, StringCodec.INSTANCE);
                String v = s(a[0]);
                return () -> st.contains(v);
            }
            case "scored_sorted_set.add": {
                RScoredSortedSet<String> z = c.getScoredSortedSet(name, StringCodec.INSTANCE);
                double sc = Double.parseDouble(s(a[0]));
                String v = s(a[1]);
                return () -> z.add(sc, v);
            }
            case "scored_sorted_set.rank": {
                RScoredSortedSet<String> z = c.getScoredSortedSet(name, StringCodec.INSTANCE);
                String v = s(a[0]);
                return () -> z.rank(v);
            }
            case "sorted_set.add": {
                RSortedSet<String> z = c.getSortedSet(name, StringCodec.INSTANCE);
                String v = s(a[0]);
                return () -> z.add(v);
            }
            case "list.add": {
                RList<String> l = c.getList(name, StringCodec.INSTANCE);
                String v = s(a[0]);
                return () -> l.add(v);
            }
            case "list.get": {
                RList<String> l = c.getList(name, StringCodec.INSTANCE);
                int i = Integer.parseInt(s(a[0]));
                return () -> l.get(i);
            }
            case "queue.offer": {
                RQueue<String> q = c.getQueue(name, StringCodec.INSTANCE);
                String v = s(a[0]);
                return () -> q.offer(v);
            }
            case "queue.poll": {
                RQueue<String> q = c.getQueue(name, StringCodec.INSTANCE);
                return q::poll;
            }
            case "deque.poll_last": {
                RDeque<String> q = c.getDeque(name, StringCodec.INSTANCE);
                return q::pollLast;
            }
            default:
                return null;
        }
    }
}
