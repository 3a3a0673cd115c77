package rmqchaos.analysis;

import java.io.Serializable;
import java.util.Arrays;

/**
 * The aggregation buffer of SecondRanks: one second's latencies as primitive doubles (NaN counted apart, nulls
 * only counted), its row count and maximum. A Java bean, so Spark can encode it between its partial and final
 * aggregations.
 */
public class SecondValues implements Serializable {
    private double[] values = new double[64];
    private int size;
    private long rows;
    private long nans;
    private double max = Double.NEGATIVE_INFINITY;

    void add(Double v) {
        rows++;
        if (v == null) {
            return;
        }
        double d = v + 0.0;  // -0.0 becomes 0.0: Spark's ordering does not tell them apart
        if (Double.isNaN(d)) {
            nans++;
            return;
        }
        if (size == values.length) {
            values = Arrays.copyOf(values, size * 2);
        }
        values[size++] = d;
        if (d > max) {
            max = d;
        }
    }

    void addAll(SecondValues o) {
        if (size + o.size > values.length) {
            values = Arrays.copyOf(values, Math.max(size + o.size, values.length * 2));
        }
        System.arraycopy(o.values, 0, values, size, o.size);
        size += o.size;
        rows += o.rows;
        nans += o.nans;
        max = Math.max(max, o.max);
    }

    SecondSummary summary() {
        SecondSummary s = new SecondSummary();
        s.setRows(rows);
        long n = size + nans;
        if (n == 0) {
            return s;
        }
        s.setMax(nans > 0 ? Double.NaN : max);
        s.set(NearestRanks.select(values, size, nans));
        return s;
    }

    // bean properties, for Spark's encoder only
    public double[] getValues() {
        return Arrays.copyOf(values, size);
    }

    public void setValues(double[] v) {
        values = v.length > 0 ? v : new double[64];
        size = v.length;
    }

    public long getRows() {
        return rows;
    }

    public void setRows(long r) {
        rows = r;
    }

    public long getNans() {
        return nans;
    }

    public void setNans(long n) {
        nans = n;
    }

    public double getMax() {
        return max;
    }

    public void setMax(double m) {
        max = m;
    }
}
