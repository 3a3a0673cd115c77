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

    /** One linear merge of the two runs. */
    @Override
    public MicrosCounts merge(MicrosCounts a, MicrosCounts b) {
        return MicrosCounts.sum(a, b);
    }

    @Override
    public Encoder<MicrosCounts> bufferEncoder() {
        return Encoders.bean(MicrosCounts.class);
    }
}
