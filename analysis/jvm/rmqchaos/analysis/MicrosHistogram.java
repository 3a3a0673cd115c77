package rmqchaos.analysis;

import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;

/** Spark aggregate: how many latencies (ms) fell on each whole microsecond (nulls skipped), as MicrosCounts. */
public class MicrosHistogram extends MicrosCountsAggregator<Double, MicrosCounts> {
    @Override
    public MicrosCounts reduce(MicrosCounts b, Double ms) {
        if (ms != null) {
            b.add(MicrosCounts.micros(ms));
        }
        return b;
    }

    @Override
    public MicrosCounts finish(MicrosCounts b) {
        return b;
    }

    @Override
    public Encoder<MicrosCounts> outputEncoder() {
        return Encoders.bean(MicrosCounts.class);
    }
}
