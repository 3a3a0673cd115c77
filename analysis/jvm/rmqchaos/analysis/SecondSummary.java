package rmqchaos.analysis;

/**
 * What SecondRanks returns for one second and one latency basis: rows (nulls included), the maximum and the
 * nearest-rank p50, p90, p99 and p99.9 (Ranks; null when the second has no latency). A Java bean: Spark's struct.
 */
public class SecondSummary extends Ranks {
    private long rows;
    private Double max;

    public long getRows() {
        return rows;
    }

    public void setRows(long v) {
        rows = v;
    }

    public Double getMax() {
        return max;
    }

    public void setMax(Double v) {
        max = v;
    }
}
