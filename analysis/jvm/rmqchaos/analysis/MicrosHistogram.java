package rmqchaos.analysis;

import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.expressions.Aggregator;

/** Spark aggregate: how many latencies (ms) fell on each whole microsecond (nulls skipped), as MicrosCounts. */
public class MicrosHistogram extends Aggregator<Double, MicrosCounts, MicrosCounts> {
    @Override
    public MicrosCounts zero() {
        return new MicrosCounts();
    }

    @Override
    public MicrosCounts reduce(MicrosCounts b, Double ms) {
        if (ms != null) {
            b.add(MicrosCounts.micros(ms), 1);
        }
        return b;
    }

    @Override
    public MicrosCounts merge(MicrosCounts a, MicrosCounts b) {
        a.addAll(b);
        return a;
    }

    @Override
    public MicrosCounts finish(MicrosCounts b) {
        return b;
    }

    @Override
    public Encoder<MicrosCounts> bufferEncoder() {
        return Encoders.bean(MicrosCounts.class);
    }

    @Override
    public Encoder<MicrosCounts> outputEncoder() {
        return Encoders.bean(MicrosCounts.class);
    }
}
