package rmqchaos.analysis;

import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;

/** Registers the job's aggregates in a Spark session under the names analysis/jvm.py calls them by. */
public final class Functions {
    // the same names as analysis/jvm.py
    public static final String SECOND_RANKS = "rmq_second_ranks";
    public static final String MICROS_HISTOGRAM = "rmq_micros_histogram";
    public static final String HISTOGRAM_RANKS = "rmq_histogram_ranks";
    public static final String QUEUE_REORDERS = "rmq_queue_reorders";

    private Functions() {}

    public static void register(SparkSession spark) {
        spark.udf().register(SECOND_RANKS, functions.udaf(new SecondRanks(), Encoders.DOUBLE()));
        spark.udf().register(MICROS_HISTOGRAM, functions.udaf(new MicrosHistogram(), Encoders.DOUBLE()));
        spark.udf().register(HISTOGRAM_RANKS,
                functions.udaf(new HistogramRanks(), Encoders.bean(MicrosCounts.class)));
        spark.udf().register(QUEUE_REORDERS,
                functions.udaf(new QueueReorders(), Encoders.tuple(Encoders.LONG(), Encoders.LONG())));
    }
}
