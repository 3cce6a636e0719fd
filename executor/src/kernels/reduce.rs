//! Whole-column reductions for global aggregates (no GROUP BY): sums and extremes over a
//! column's values, nulls skipped a validity word at a time.
//!
//! Float sums run in [`LANES`] interleaved partial sums combined in a fixed order at the end:
//! the adds vectorize and the rounding error grows more slowly than in one running sum. The
//! order depends on the values' positions only, so the bits are the same at any thread count.

use std::cmp::Ordering;

use morsel_storage::cache_hint::prefetch_ahead;
use morsel_storage::{Bitmap, NativeType, PrimitiveColumn};

/// Independent partial sums of a float reduction.
pub const LANES: usize = 8;

/// The sum of the non-NULL values; `None` when there is none.
pub fn sum_f64(x: &PrimitiveColumn<f64>) -> Option<f64> {
    let values = x.values();
    let mut lanes = [-0.0f64; LANES];
    match x.validity() {
        None => {
            let mut chunks = values.chunks_exact(LANES);
            for (i, c) in (&mut chunks).enumerate() {
                prefetch_ahead(values, i * LANES, LANES);
                for (l, v) in lanes.iter_mut().zip(c) {
                    *l += v;
                }
            }
            for (l, v) in lanes.iter_mut().zip(chunks.remainder()) {
                *l += v;
            }
        }
        Some(valid) => {
            if valid.count_ones() == 0 {
                return None;
            }
            // A NULL row adds -0.0, which leaves every sum (even -0.0) unchanged. Full runs
            // of 64 rows pick each value or -0.0 by a mask per row (four rows' masks from a
            // nibble of the validity word), so the adds vectorize as in the path above.
            for_each_word(values, valid, |base, word, chunk| {
                if let Ok(rows) = <&[f64; 64]>::try_from(chunk) {
                    for (k, eight) in rows.chunks_exact(LANES).enumerate() {
                        let byte = word >> (8 * k);
                        let masks = [
                            NIBBLE_MASKS[(byte & 15) as usize],
                            NIBBLE_MASKS[((byte >> 4) & 15) as usize],
                        ];
                        for (j, (l, v)) in lanes.iter_mut().zip(eight).enumerate() {
                            let m = masks[j / 4][j % 4];
                            *l += f64::from_bits((v.to_bits() & m) | (NEG_ZERO & !m));
                        }
                    }
                } else {
                    for (j, v) in chunk.iter().enumerate() {
                        let keep = (word >> j) & 1 == 1;
                        lanes[(base + j) % LANES] += if keep { *v } else { -0.0 };
                    }
                }
            });
        }
    }
    if values.is_empty() {
        return None;
    }
    Some(combine(lanes))
}

/// The bits of -0.0.
const NEG_ZERO: u64 = 1 << 63;

/// For each 4-bit validity nibble, the four rows' masks: all ones where the row is valid.
const NIBBLE_MASKS: [[u64; 4]; 16] = {
    let mut t = [[0u64; 4]; 16];
    let mut n = 0;
    while n < 16 {
        let mut i = 0;
        while i < 4 {
            if (n >> i) & 1 == 1 {
                t[n][i] = u64::MAX;
            }
            i += 1;
        }
        n += 1;
    }
    t
};

/// Adds the lanes pairwise in a fixed order.
fn combine(l: [f64; LANES]) -> f64 {
    ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
}

/// The exact sum of the non-NULL values (128 bits cannot overflow for any column that fits
/// in memory) and how many there were.
pub fn sum_i64(x: &PrimitiveColumn<i64>) -> (i128, usize) {
    let values = x.values();
    match x.validity() {
        None => {
            let mut sum = 0i128;
            for (i, chunk) in values.chunks(64).enumerate() {
                prefetch_ahead(values, i * 64, 64);
                sum += chunk.iter().map(|&v| v as i128).sum::<i128>();
            }
            (sum, values.len())
        }
        Some(valid) => {
            let mut sum = 0i128;
            for_each_word(values, valid, |_, word, chunk| {
                for (j, &v) in chunk.iter().enumerate() {
                    sum += ((word >> j) & 1) as i128 * v as i128;
                }
            });
            (sum, valid.count_ones())
        }
    }
}

/// The row of the smallest (`min`) or largest non-NULL value, the first such row on ties,
/// under `cmp`; `None` when there is no non-NULL value.
pub fn extreme_row<T: NativeType>(
    x: &PrimitiveColumn<T>,
    min: bool,
    cmp: impl Fn(T, T) -> Ordering,
) -> Option<usize> {
    let want = if min {
        Ordering::Less
    } else {
        Ordering::Greater
    };
    let values = x.values();
    let mut best: Option<usize> = None;
    for i in 0..values.len() {
        if !x.is_valid(i) {
            continue;
        }
        if best.is_none_or(|b| cmp(values[i], values[b]) == want) {
            best = Some(i);
        }
    }
    best
}

/// Calls `f(first_row, validity_word, values)` for each run of up to 64 rows.
fn for_each_word<T>(values: &[T], valid: &Bitmap, mut f: impl FnMut(usize, u64, &[T])) {
    for (w, chunk) in values.chunks(64).enumerate() {
        prefetch_ahead(values, w * 64, 64);
        f(w * 64, valid.word(w), chunk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use morsel_storage::test_rng::Rng;

    fn column(n: usize, nulls: bool, r: &mut Rng) -> Vec<Option<f64>> {
        (0..n)
            .map(|_| {
                if nulls && r.below(4) == 0 {
                    None
                } else {
                    Some(r.below(1_000_000) as f64 / 7.0 - 50_000.0)
                }
            })
            .collect()
    }

    /// The lane order, written out row by row.
    fn reference_sum(values: &[Option<f64>]) -> Option<f64> {
        let mut lanes = [-0.0f64; LANES];
        for (i, v) in values.iter().enumerate() {
            if let Some(v) = v {
                lanes[i % LANES] += v;
            }
        }
        values.iter().any(Option::is_some).then(|| combine(lanes))
    }

    #[test]
    fn float_sums_follow_the_lane_order_with_and_without_nulls() {
        let mut r = Rng(7);
        for n in [0, 1, 7, 8, 9, 63, 64, 65, 1000] {
            for nulls in [false, true] {
                let v = column(n, nulls, &mut r);
                let col = PrimitiveColumn::from_options(v.iter().copied());
                let got = sum_f64(&col).map(f64::to_bits);
                assert_eq!(got, reference_sum(&v).map(f64::to_bits), "n={n}");
                // A window that starts inside a validity word.
                if n > 10 {
                    let s = col.slice(3, n - 5);
                    let want = reference_sum(&v[3..n - 2]).map(f64::to_bits);
                    assert_eq!(sum_f64(&s).map(f64::to_bits), want, "window n={n}");
                }
            }
        }
        let all_null = PrimitiveColumn::<f64>::from_options([None, None]);
        assert_eq!(sum_f64(&all_null), None);
        let negative_zeros = PrimitiveColumn::from_options([Some(-0.0), None, Some(-0.0)]);
        assert_eq!(
            sum_f64(&negative_zeros).map(f64::to_bits),
            Some((-0.0f64).to_bits())
        );
    }

    #[test]
    fn integer_sums_and_extremes_skip_nulls() {
        let col = PrimitiveColumn::from_options([Some(5i64), None, Some(i64::MAX), Some(-3), None]);
        assert_eq!(sum_i64(&col), (5 + i64::MAX as i128 - 3, 3));
        assert_eq!(extreme_row(&col, true, |a, b| a.cmp(&b)), Some(3));
        assert_eq!(extreme_row(&col, false, |a, b| a.cmp(&b)), Some(2));
        let ties = PrimitiveColumn::from_options([None, Some(2i64), Some(1), Some(1), Some(2)]);
        assert_eq!(extreme_row(&ties, true, |a, b| a.cmp(&b)), Some(2));
        assert_eq!(extreme_row(&ties, false, |a, b| a.cmp(&b)), Some(1));
        let none = PrimitiveColumn::<i64>::from_options([None]);
        assert_eq!(extreme_row(&none, true, |a, b| a.cmp(&b)), None);
        assert_eq!(sum_i64(&none), (0, 0));
    }
}
