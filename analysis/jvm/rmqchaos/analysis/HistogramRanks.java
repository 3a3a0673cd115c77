package rmqchaos.analysis;

import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.expressions.Aggregator;

/** Spark aggregate: the sum of MicrosHistogram results and its nearest-rank percentiles (ms). */
public class HistogramRanks extends Aggregator<MicrosCounts, MicrosCounts, Ranks> {
    @Override
    public MicrosCounts zero() {
        return new MicrosCounts();
    }

    @Override
    public MicrosCounts reduce(MicrosCounts b, MicrosCounts h) {
        if (h != null) {
            b.addAll(h);
        }
        return b;
    }

    @Override
    public MicrosCounts merge(MicrosCounts a, MicrosCounts b) {
        a.addAll(b);
        return a;
    }

    @Override
    public Ranks finish(MicrosCounts b) {
        return b.ranks();
    }

    @Override
    public Encoder<MicrosCounts> bufferEncoder() {
        return Encoders.bean(MicrosCounts.class);
    }

    @Override
    public Encoder<Ranks> outputEncoder() {
        return Encoders.bean(Ranks.class);
    }
}
