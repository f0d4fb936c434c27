// Redisson's own Bloom filter hash and filter, so that hilock's bit
// positions, sizing and number formats can be compared with the real
// thing: tests/test_grid_bloom.c holds what `hash`, `bits` and `fmt`
// printed for Redisson 4.3.1. tests/interop/grid/run.sh compiles it next
// to GridInterop for each version and checks that `hash` prints the same
// in all of them; run it by hand for new vectors:
//
//   java -cp BUILD/interop-grid/classes-V:$(cat BUILD/interop-grid/cp-V.txt) \
//        BloomVectors hash
//
//   java BloomVectors hash                       h1 h2 of fixed inputs
//   java BloomVectors fill  PORT NAME N P V...   tryInit(N, P), add each V
//   java BloomVectors check PORT NAME V...       contains of each V, count
//   java BloomVectors fmt   D...                 Double.toString of each D
//   java BloomVectors bits  PORT N P V...        each V alone in a filter:
//                                                its config and the bits set
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.redisson.Redisson;
import org.redisson.api.RBloomFilter;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;
import org.redisson.misc.Hash;

public class BloomVectors {
	static final String ALPHA =
	        "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	        + "!#$%&()*+,-./:;<=>?@[]^_{|}~";

	static String hex(byte[] b) {
		StringBuilder s = new StringBuilder();
		for (byte x : b)
			s.append(String.format("%02x", x & 0xff));
		return s.toString();
	}

	static void hash(byte[] b) {
		long[] h = Hash.hash128(Unpooled.wrappedBuffer(b));
		System.out.printf("%s %016x %016x%n", b.length == 0 ? "-" : hex(b), h[0], h[1]);
	}

	static RedissonClient client(String port) {
		Config c = new Config();
		c.useSingleServer().setAddress("redis://127.0.0.1:" + port);
		return Redisson.create(c);
	}

	public static void main(String[] a) {
		switch (a[0]) {
		case "hash":
			for (int n = 0; n <= ALPHA.length(); n++)
				hash(ALPHA.substring(0, n).getBytes(StandardCharsets.UTF_8));
			hash("h\u00e9llo w\u00f6rld \u65e5\u672c".getBytes(StandardCharsets.UTF_8));
			hash(new byte[] {0, 1, 0, (byte) 0xff, (byte) 0x80});
			byte[] big = new byte[1000];
			for (int i = 0; i < big.length; i++)
				big[i] = (byte) (i * 7 + 3);
			hash(big);
			break;
		case "fmt":
			for (int i = 1; i < a.length; i++)
				System.out.println(a[i] + " " + Double.toString(Double.parseDouble(a[i])));
			break;
		case "fill": {
			RedissonClient r = client(a[1]);
			RBloomFilter<String> f = r.getBloomFilter(a[2], StringCodec.INSTANCE);
			System.out.println("init " + f.tryInit(Long.parseLong(a[3]), Double.parseDouble(a[4])));
			long added = f.add(Arrays.asList(a).subList(5, a.length));
			System.out.println("added " + added + " size " + f.getSize() + " k " + f.getHashIterations()
			                   + " count " + f.count());
			r.shutdown();
			break;
		}
		case "check": {
			RedissonClient r = client(a[1]);
			RBloomFilter<String> f = r.getBloomFilter(a[2], StringCodec.INSTANCE);
			StringBuilder s = new StringBuilder("contains");
			for (int i = 3; i < a.length; i++)
				s.append(f.contains(a[i]) ? " 1" : " 0");
			System.out.println(s);
			System.out.println("count " + f.count() + " size " + f.getSize() + " k "
			                   + f.getHashIterations() + " n " + f.getExpectedInsertions() + " p "
			                   + f.getFalseProbability());
			r.shutdown();
			break;
		}
		case "bits": {
			RedissonClient r = client(a[1]);
			for (int i = 4; i < a.length; i++) {
				String name = "vec:" + i;
				RBloomFilter<String> f = r.getBloomFilter(name, StringCodec.INSTANCE);
				f.delete();
				f.tryInit(Long.parseLong(a[2]), Double.parseDouble(a[3]));
				f.add(a[i]);
				java.util.BitSet bs = r.getBitSet(name).asBitSet();
				StringBuilder s = new StringBuilder("bits " + a[i] + " :");
				for (int b = bs.nextSetBit(0); b >= 0; b = bs.nextSetBit(b + 1))
					s.append(" ").append(b);
				System.out.println(s);
				if (i == 4)
					System.out.println("config " + new java.util.TreeMap<>(
					        r.<String, String>getMap("{" + name + "}:config", StringCodec.INSTANCE)
					                .readAllMap()));
				f.delete();
			}
			r.shutdown();
			break;
		}
		default:
			throw new IllegalArgumentException(a[0]);
		}
	}
}
