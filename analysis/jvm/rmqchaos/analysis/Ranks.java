package rmqchaos.analysis;

import java.io.Serializable;

/** Nearest-rank p50, p90, p99 and p99.9 in ms, null when there was nothing to rank. A Java bean: Spark's struct. */
public class Ranks implements Serializable {
    private Double p50;
    private Double p90;
    private Double p99;
    private Double p999;

    void set(double[] r) {
        p50 = r[0];
        p90 = r[1];
        p99 = r[2];
        p999 = r[3];
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
