package rmqchaos.analysis;

/** A stable merge sort of parallel long arrays by (first, second), without boxing: runs already in order (one
 * consumer's deliveries mostly are) are merged without being split further. */
final class PairSort {
    private PairSort() {}

    static void sort(long[] a, long[] b, int n) {
        if (n < 2 || sorted(a, b, n)) {
            return;
        }
        long[] ta = new long[n];
        long[] tb = new long[n];
        for (int width = 1; width < n; width *= 2) {
            for (int lo = 0; lo < n - width; lo += 2 * width) {
                int mid = lo + width;
                int hi = Math.min(lo + 2 * width, n);
                if (!before(a, b, mid, mid - 1)) {
                    continue;  // the two halves are already in order
                }
                merge(a, b, ta, tb, lo, mid, hi);
            }
        }
    }

    private static boolean before(long[] a, long[] b, int i, int j) {
        return a[i] < a[j] || (a[i] == a[j] && b[i] < b[j]);
    }

    private static boolean sorted(long[] a, long[] b, int n) {
        for (int i = 1; i < n; i++) {
            if (before(a, b, i, i - 1)) {
                return false;
            }
        }
        return true;
    }

    private static void merge(long[] a, long[] b, long[] ta, long[] tb, int lo, int mid, int hi) {
        System.arraycopy(a, lo, ta, lo, hi - lo);
        System.arraycopy(b, lo, tb, lo, hi - lo);
        int i = lo;
        int j = mid;
        for (int k = lo; k < hi; k++) {
            if (j >= hi || (i < mid && !(ta[j] < ta[i] || (ta[j] == ta[i] && tb[j] < tb[i])))) {
                a[k] = ta[i];
                b[k] = tb[i++];
            } else {
                a[k] = ta[j];
                b[k] = tb[j++];
            }
        }
    }
}
