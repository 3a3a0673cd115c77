package rmqchaos.analysis;

import java.io.Serializable;

/**
 * What SecondRanks returns for one second and one latency basis: rows (nulls included), the maximum and the
 * nearest-rank p50, p90, p99 and p99.9 (null when the second has no latency). A Java bean: Spark's struct.
 */
public class SecondSummary implements Serializable {
    private long rows;
    private Double max;
    private Double p50;
    private Double p90;
    private Double p99;
    private Double p999;

    void ranks(double[] r) {
        p50 = r[0];
        p90 = r[1];
        p99 = r[2];
        p999 = r[3];
    }

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

    public Double getP50() {
        return p50;
    }

    public void setP50(Double v) {
        p50 = v;
    }

    public Double getP90() {
        return p90;
    }

    public void setP90(Double v) {
        p90 = v;
    }

    public Double getP99() {
        return p99;
    }

    public void setP99(Double v) {
        p99 = v;
    }

    public Double getP999() {
        return p999;
    }

    public void setP999(Double v) {
        p999 = v;
    }
}
