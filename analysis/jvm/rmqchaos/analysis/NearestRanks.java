package rmqchaos.analysis;

/**
 * Nearest-rank percentiles of primitive values: rank ceil(q*n) (1-based) of the n values in ascending order, the
 * definition of DuckDB's quantile_disc and of the job's Spark SQL fallback (analysis/stats.py).
 *
 * Values are selected, not sorted: each rank is found by a quickselect over the part of the array above the
 * previous one, so four ranks cost about two passes over the values rather than a sort.
 */
final class NearestRanks {
    static final double[] QUANTILES = {0.5, 0.9, 0.99, 0.999};

    private NearestRanks() {}

    /** 0-based index of the nearest rank of fraction q among n values (n > 0; a long: a phase may count more
     * rows than an int holds). */
    static long index(long n, double q) {
        long rank = (long) Math.ceil(n * q);
        return Math.max(rank, 1) - 1;
    }

    /**
     * The value at each QUANTILES rank among `size` numbers (values[0, size), reordered in place) and `nans` NaNs,
     * which sort above every number as in Spark's ordering. At least one of the two is not zero.
     */
    static double[] select(double[] values, int size, long nans) {
        long n = size + nans;
        double[] out = new double[QUANTILES.length];
        int from = 0;
        for (int i = 0; i < QUANTILES.length; i++) {
            long rank = index(n, QUANTILES[i]);
            if (rank >= size) {
                out[i] = Double.NaN;
                continue;
            }
            int k = (int) rank;
            if (k >= from) {
                quickselect(values, from, size - 1, k);
                from = k;
            }
            out[i] = values[k];
        }
        return out;
    }

    /** Reorders a[lo..hi] so that a[k] holds the value it would hold sorted, none smaller after it. */
    private static void quickselect(double[] a, int lo, int hi, int k) {
        while (hi - lo > 16) {
            int mid = (lo + hi) >>> 1;
            if (a[mid] < a[lo]) swap(a, lo, mid);
            if (a[hi] < a[lo]) swap(a, lo, hi);
            if (a[hi] < a[mid]) swap(a, mid, hi);
            double pivot = a[mid];
            int i = lo;
            int j = hi;
            while (i <= j) {
                while (a[i] < pivot) i++;
                while (pivot < a[j]) j--;
                if (i <= j) {
                    swap(a, i, j);
                    i++;
                    j--;
                }
            }
            if (k <= j) {
                hi = j;
            } else if (k >= i) {
                lo = i;
            } else {
                return;
            }
        }
        for (int x = lo + 1; x <= hi; x++) {
            double v = a[x];
            int y = x - 1;
            while (y >= lo && v < a[y]) {
                a[y + 1] = a[y];
                y--;
            }
            a[y + 1] = v;
        }
    }

    private static void swap(double[] a, int i, int j) {
        double t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}
