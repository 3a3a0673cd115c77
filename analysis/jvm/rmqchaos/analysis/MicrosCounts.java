package rmqchaos.analysis;

import java.io.Serializable;
import java.util.Arrays;

/**
 * How many values fell on each whole microsecond: an open-addressing hash map of primitive longs, the buffer of
 * MicrosHistogram and HistogramRanks. Its size grows with the distinct microseconds, not with the rows. A Java
 * bean (one array of microsecond, count pairs) so Spark can encode it: it is also what MicrosHistogram returns and
 * HistogramRanks takes.
 */
public class MicrosCounts implements Serializable {
    private static final long MIX = 0x9E3779B97F4A7C15L;
    private long[] keys = new long[16];
    private long[] counts = new long[16];  // 0: free slot (every key held has a count of at least 1)
    private int size;

    /** Whole microseconds of a latency in ms: ms rounded to the ns (Math.rint), then truncated to the µs, as
     * stats.micros() does in Spark SQL. */
    static long micros(double ms) {
        return (long) Math.floor(Math.rint(ms * 1_000_000.0) / 1000.0);
    }

    void add(long key, long count) {
        if (2 * (size + 1) > keys.length) {
            grow();
        }
        int mask = keys.length - 1;
        int i = slot(key);
        while (counts[i] != 0 && keys[i] != key) {
            i = (i + 1) & mask;
        }
        if (counts[i] == 0) {
            keys[i] = key;
            size++;
        }
        counts[i] += count;
    }

    /** First slot to probe for a key: the top bits of a Fibonacci hash, as many as the table's size needs. */
    private int slot(long key) {
        return (int) ((key * MIX) >>> (Long.numberOfLeadingZeros(keys.length) + 1));
    }

    /**
     * Adds another map's counts. This map is first made at least as large as the other: its slots are visited in
     * order, and the same hash sends the keys of consecutive slots of a larger table to the same few slots of a
     * smaller one, where they would pile up into probe chains thousands of slots long (a merge that took minutes on
     * a million distinct microseconds). In a table at least as large, they land spread out as they were.
     */
    void addAll(MicrosCounts o) {
        reserve(Math.max(size + o.size, o.keys.length / 2));
        for (int i = 0; i < o.keys.length; i++) {
            if (o.counts[i] != 0) {
                add(o.keys[i], o.counts[i]);
            }
        }
    }

    private void grow() {
        resize(keys.length * 2);
    }

    /** Room for `n` keys without growing (the table at most half full). */
    private void reserve(int n) {
        int length = keys.length;
        while (length < 2 * n) {
            length *= 2;
        }
        if (length > keys.length) {
            resize(length);
        }
    }

    private void resize(int length) {
        long[] k = keys;
        long[] c = counts;
        keys = new long[length];
        counts = new long[length];
        size = 0;
        for (int i = 0; i < k.length; i++) {
            if (c[i] != 0) {
                add(k[i], c[i]);
            }
        }
    }

    /** Slot indices of the held keys, ascending by key. */
    private int[] order() {
        long[] packed = new long[size];
        int n = 0;
        for (int i = 0; i < keys.length; i++) {
            if (counts[i] != 0) {
                packed[n++] = keys[i];
            }
        }
        Arrays.sort(packed);
        int[] slots = new int[size];
        int mask = keys.length - 1;
        for (int j = 0; j < size; j++) {
            int i = slot(packed[j]);
            while (keys[i] != packed[j] || counts[i] == 0) {
                i = (i + 1) & mask;
            }
            slots[j] = i;
        }
        return slots;
    }

    /** Nearest-rank p50, p90, p99, p99.9 in ms (µs / 1000), all null when nothing was counted. */
    Ranks ranks() {
        Ranks r = new Ranks();
        if (size == 0) {
            return r;
        }
        int[] slots = order();
        long n = 0;
        for (int s : slots) {
            n += counts[s];
        }
        double[] out = new double[NearestRanks.QUANTILES.length];
        long cum = 0;
        int q = 0;
        for (int j = 0; j < slots.length && q < out.length; j++) {
            cum += counts[slots[j]];
            while (q < out.length && cum > NearestRanks.index(n, NearestRanks.QUANTILES[q])) {
                out[q++] = keys[slots[j]] / 1000.0;
            }
        }
        r.set(out);
        return r;
    }

    /** Bean property for Spark's encoders: microsecond, count, microsecond, count... ascending by microsecond. */
    public long[] getPairs() {
        int[] slots = order();
        long[] out = new long[2 * slots.length];
        for (int j = 0; j < slots.length; j++) {
            out[2 * j] = keys[slots[j]];
            out[2 * j + 1] = counts[slots[j]];
        }
        return out;
    }

    public void setPairs(long[] pairs) {
        keys = new long[16];
        counts = new long[16];
        size = 0;
        for (int j = 0; j + 1 < pairs.length; j += 2) {
            add(pairs[j], pairs[j + 1]);
        }
    }
}
