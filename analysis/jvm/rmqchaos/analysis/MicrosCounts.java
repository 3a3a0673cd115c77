package rmqchaos.analysis;

import java.io.Serializable;
import java.util.Arrays;

/**
 * How many values fell on each whole microsecond: the buffer of MicrosHistogram and HistogramRanks. Values are
 * counted first in a small open-addressing table (at most HOT_KEYS distinct microseconds, so it stays within the
 * CPU's caches: a steady phase's latencies hit it almost always); values it has no room for go to a batch, which is
 * sorted and merged, when full, into one run of distinct microseconds in ascending order with their counts. A phase
 * of millions of distinct microseconds (a run that fell behind, 12 ms to 140 s) so costs sorts and sequential
 * merges, where a table of every distinct microsecond paid a cache miss per value; merging two buffers (Spark's
 * partial aggregates) is one linear pass. Its size grows with the distinct microseconds, not with the rows. A Java
 * bean (one array of microsecond, count pairs, ascending) so Spark can encode it: it is also what MicrosHistogram
 * returns and HistogramRanks takes.
 */
public class MicrosCounts implements Serializable {
    /** Values batched before a merge, at least: a batch this size sorts within the CPU's caches. */
    private static final int MIN_BATCH = 1 << 16;
    /** Distinct microseconds the small table holds at most (its slots: twice as many, 1 MiB of keys and counts). */
    private static final int HOT_KEYS = 1 << 15;
    private static final long MIX = 0x9E3779B97F4A7C15L;
    private long[] hotKeys = new long[16];
    private long[] hotCounts = new long[16];  // 0: a free slot
    private int hotSize;
    private long[] keys = new long[0];  // ascending, distinct
    private long[] counts = new long[0];
    private int size;
    private long[] batch = new long[16];
    private int batched;

    /** Whole microseconds of a latency in ms: ms rounded to the ns (Math.rint), then truncated to the µs, as
     * stats.micros() does in Spark SQL. */
    static long micros(double ms) {
        return (long) Math.floor(Math.rint(ms * 1_000_000.0) / 1000.0);
    }

    /** Counts one value: in the small table when it holds the value or has room, else in the batch. The batch
     * grows to the run's size (at least MIN_BATCH) before it is merged, so merging costs a constant number of
     * passes per value however many distinct microseconds there are. */
    void add(long key) {
        int i = hotFind(key);
        if (hotCounts[i] != 0) {
            hotCounts[i]++;
            return;
        }
        if (hotSize < HOT_KEYS) {
            if (2 * (hotSize + 1) > hotKeys.length) {
                growHot();
                add(key);
                return;
            }
            hotKeys[i] = key;
            hotCounts[i] = 1;
            hotSize++;
            return;
        }
        if (batched == batch.length) {
            if (batched < Math.max(MIN_BATCH, size)) {
                batch = Arrays.copyOf(batch, 2 * batched);
            } else {
                flushBatch();
            }
        }
        batch[batched++] = key;
    }

    /** First slot to probe in the small table: the top bits of a Fibonacci hash, as many as its size needs. */
    private int hotSlot(long key) {
        return (int) ((key * MIX) >>> (Long.numberOfLeadingZeros(hotKeys.length) + 1));
    }

    /** The small table's slot holding `key`, else the free slot where it would go (linear probing). */
    private int hotFind(long key) {
        int mask = hotKeys.length - 1;
        int i = hotSlot(key);
        while (hotCounts[i] != 0 && hotKeys[i] != key) {
            i = (i + 1) & mask;
        }
        return i;
    }

    private void growHot() {
        long[] k = hotKeys;
        long[] c = hotCounts;
        hotKeys = new long[2 * k.length];
        hotCounts = new long[2 * k.length];
        for (int j = 0; j < k.length; j++) {
            if (c[j] != 0) {
                int i = hotFind(k[j]);
                hotKeys[i] = k[j];
                hotCounts[i] = c[j];
            }
        }
    }

    /** Merges the small table and the batch into the run and empties both. */
    private void flush() {
        flushHot();
        flushBatch();
    }

    /** The small table's keys in ascending order with their counts, merged into the run; the table emptied. */
    private void flushHot() {
        if (hotSize == 0) {
            return;
        }
        long[] k = new long[hotSize];
        int n = 0;
        for (int i = 0; i < hotKeys.length; i++) {
            if (hotCounts[i] != 0) {
                k[n++] = hotKeys[i];
            }
        }
        Arrays.sort(k);
        long[] c = new long[n];
        for (int j = 0; j < n; j++) {
            c[j] = hotCounts[hotFind(k[j])];
        }
        Arrays.fill(hotCounts, 0);
        hotSize = 0;
        merge(k, c, n);
    }

    /** Sorts the batch, counts its equal values and merges them into the run. */
    private void flushBatch() {
        if (batched == 0) {
            return;
        }
        Arrays.sort(batch, 0, batched);
        long[] k = new long[batched];
        long[] c = new long[batched];
        int n = 0;
        for (int i = 0; i < batched; i++) {
            if (n > 0 && k[n - 1] == batch[i]) {
                c[n - 1]++;
            } else {
                k[n] = batch[i];
                c[n++] = 1;
            }
        }
        batched = 0;
        merge(k, c, n);
    }

    /** Adds a run of `n` ascending distinct keys with their counts into this one. */
    private void merge(long[] k, long[] c, int n) {
        long[] mk = new long[size + n];
        long[] mc = new long[size + n];
        int i = 0;
        int j = 0;
        int m = 0;
        while (i < size || j < n) {
            if (j == n || (i < size && keys[i] < k[j])) {
                mk[m] = keys[i];
                mc[m++] = counts[i++];
            } else if (i == size || k[j] < keys[i]) {
                mk[m] = k[j];
                mc[m++] = c[j++];
            } else {
                mk[m] = keys[i];
                mc[m++] = counts[i++] + c[j++];
            }
        }
        keys = mk;
        counts = mc;
        size = m;
    }

    /** a plus b, in a (b is left as it was, apart from its batch being counted). */
    static MicrosCounts sum(MicrosCounts a, MicrosCounts b) {
        a.flush();
        b.flush();
        a.merge(b.keys, b.counts, b.size);
        return a;
    }

    /** Nearest-rank p50, p90, p99, p99.9 in ms (µs / 1000), all null when nothing was counted. */
    Ranks ranks() {
        flush();
        Ranks r = new Ranks();
        if (size == 0) {
            return r;
        }
        long n = 0;
        for (int j = 0; j < size; j++) {
            n += counts[j];
        }
        double[] out = new double[NearestRanks.QUANTILES.length];
        long cum = 0;
        int q = 0;
        for (int j = 0; j < size && q < out.length; j++) {
            cum += counts[j];
            while (q < out.length && cum > NearestRanks.index(n, NearestRanks.QUANTILES[q])) {
                out[q++] = keys[j] / 1000.0;
            }
        }
        r.set(out);
        return r;
    }

    /** Bean property for Spark's encoders: microsecond, count, microsecond, count... ascending by microsecond. */
    public long[] getPairs() {
        flush();
        long[] out = new long[2 * size];
        for (int j = 0; j < size; j++) {
            out[2 * j] = keys[j];
            out[2 * j + 1] = counts[j];
        }
        return out;
    }

    /** The pairs getPairs gave (ascending, distinct microseconds); anything else is refused. */
    public void setPairs(long[] pairs) {
        int n = pairs.length / 2;
        keys = new long[n];
        counts = new long[n];
        for (int j = 0; j < n; j++) {
            keys[j] = pairs[2 * j];
            counts[j] = pairs[2 * j + 1];
            if (j > 0 && keys[j] <= keys[j - 1]) {
                throw new IllegalArgumentException("MicrosCounts pairs must ascend by microsecond: " + keys[j - 1]
                        + " then " + keys[j]);
            }
        }
        size = n;
        batched = 0;
        hotKeys = new long[16];
        hotCounts = new long[16];
        hotSize = 0;
    }
}
