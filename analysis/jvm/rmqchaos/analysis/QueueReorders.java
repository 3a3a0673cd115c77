package rmqchaos.analysis;

import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.expressions.Aggregator;
import scala.Tuple2;

/**
 * Spark aggregate of one consumer process's first deliveries from one queue, given as (delivered time, queue
 * offset): how many came after a higher offset of the same queue, in (time, offset) order. The same count as the
 * SQL fallback's window (analysis/consume_stats.py, `reordered`), without sorting Spark rows.
 */
public class QueueReorders extends Aggregator<Tuple2<Long, Long>, DeliveryOrder, Long> {
    @Override
    public DeliveryOrder zero() {
        return new DeliveryOrder();
    }

    @Override
    public DeliveryOrder reduce(DeliveryOrder b, Tuple2<Long, Long> v) {
        b.add(v._1(), v._2());
        return b;
    }

    @Override
    public DeliveryOrder merge(DeliveryOrder a, DeliveryOrder b) {
        a.addAll(b);
        return a;
    }

    @Override
    public Long finish(DeliveryOrder b) {
        return b.reordered();
    }

    @Override
    public Encoder<DeliveryOrder> bufferEncoder() {
        return Encoders.bean(DeliveryOrder.class);
    }

    @Override
    public Encoder<Long> outputEncoder() {
        return Encoders.LONG();
    }
}
