package rmqchaos.analysis;

import java.io.Serializable;
import java.util.Arrays;

/**
 * The aggregation buffer of QueueReorders: the (delivered time, queue offset) pairs of one consumer process's first
 * deliveries from one queue, as primitive longs. `reordered()` walks them in (time, offset) order and counts the
 * offsets below the highest delivered before. A Java bean, so Spark can encode it between its partial and final
 * aggregations.
 */
public class DeliveryOrder implements Serializable {
    private long[] times = new long[64];
    private long[] offsets = new long[64];
    private int size;

    void add(long time, long offset) {
        if (size == times.length) {
            times = Arrays.copyOf(times, size * 2);
            offsets = Arrays.copyOf(offsets, size * 2);
        }
        times[size] = time;
        offsets[size++] = offset;
    }

    void addAll(DeliveryOrder o) {
        if (size + o.size > times.length) {
            int n = Math.max(size + o.size, times.length * 2);
            times = Arrays.copyOf(times, n);
            offsets = Arrays.copyOf(offsets, n);
        }
        System.arraycopy(o.times, 0, times, size, o.size);
        System.arraycopy(o.offsets, 0, offsets, size, o.size);
        size += o.size;
    }

    /** Deliveries whose offset is below the highest of those before them in (time, offset) order. */
    long reordered() {
        PairSort.sort(times, offsets, size);
        long count = 0;
        long highest = Long.MIN_VALUE;
        for (int i = 0; i < size; i++) {
            if (i > 0 && offsets[i] < highest) {
                count++;
            }
            highest = Math.max(highest, offsets[i]);
        }
        return count;
    }

    // bean properties, for Spark's encoder only
    public long[] getTimes() {
        return Arrays.copyOf(times, size);
    }

    public void setTimes(long[] t) {
        times = t.length > 0 ? t : new long[64];
        size = t.length;
    }

    public long[] getOffsets() {
        return Arrays.copyOf(offsets, size);
    }

    public void setOffsets(long[] o) {
        offsets = o.length > 0 ? o : new long[64];
    }
}
