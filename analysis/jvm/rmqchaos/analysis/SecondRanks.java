package rmqchaos.analysis;

import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.expressions.Aggregator;

/**
 * Spark aggregate of one second's latencies (ms, one basis): its rows, maximum and exact nearest-rank
 * percentiles, from primitive values selected in place (the SQL fallback collects boxed values and sorts them).
 */
public class SecondRanks extends Aggregator<Double, SecondValues, SecondSummary> {
    @Override
    public SecondValues zero() {
        return new SecondValues();
    }

    @Override
    public SecondValues reduce(SecondValues b, Double v) {
        b.add(v);
        return b;
    }

    @Override
    public SecondValues merge(SecondValues a, SecondValues b) {
        a.addAll(b);
        return a;
    }

    @Override
    public SecondSummary finish(SecondValues b) {
        return b.summary();
    }

    @Override
    public Encoder<SecondValues> bufferEncoder() {
        return Encoders.bean(SecondValues.class);
    }

    @Override
    public Encoder<SecondSummary> outputEncoder() {
        return Encoders.bean(SecondSummary.class);
    }
}
