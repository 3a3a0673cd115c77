package rmqchaos.analysis;

import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;

/** Spark aggregate: the sum of MicrosHistogram results and its nearest-rank percentiles (ms). */
public class HistogramRanks extends MicrosCountsAggregator<MicrosCounts, Ranks> {
    @Override
    public MicrosCounts reduce(MicrosCounts b, MicrosCounts h) {
        return h == null ? b : MicrosCounts.sum(b, h);
    }

    @Override
    public Ranks finish(MicrosCounts b) {
        return b.ranks();
    }

    @Override
    public Encoder<Ranks> outputEncoder() {
        return Encoders.bean(Ranks.class);
    }
}
