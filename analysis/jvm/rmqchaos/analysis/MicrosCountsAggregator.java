package rmqchaos.analysis;

import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.expressions.Aggregator;

/** What MicrosHistogram and HistogramRanks share: a MicrosCounts buffer, empty at first, merged by summing. */
abstract class MicrosCountsAggregator<I, O> extends Aggregator<I, MicrosCounts, O> {
    @Override
    public MicrosCounts zero() {
        return new MicrosCounts();
    }

    @Override
    public MicrosCounts merge(MicrosCounts a, MicrosCounts b) {
        a.addAll(b);
        return a;
    }

    @Override
    public Encoder<MicrosCounts> bufferEncoder() {
        return Encoders.bean(MicrosCounts.class);
    }
}
