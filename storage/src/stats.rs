//! Statistics for planning, estimated from samples.

/// How often values occurred in a sample: the distinct values seen, and how many of them
/// were seen exactly once and exactly twice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleCounts {
    pub sampled: usize,
    pub distinct: usize,
    pub once: usize,
    pub twice: usize,
}

impl SampleCounts {
    /// Counts from per-value frequencies.
    pub fn from_frequencies(freqs: impl IntoIterator<Item = u32>) -> Self {
        let mut c = SampleCounts::default();
        for f in freqs {
            c.sampled += f as usize;
            c.distinct += 1;
            c.once += (f == 1) as usize;
            c.twice += (f == 2) as usize;
        }
        c
    }
}

/// The number of distinct values among `rows` rows, from a sample: Chao's estimator (the
/// values seen so far, plus an estimate of the unseen from how many were seen once and
/// twice; bias-corrected), at most `rows`. A column whose values all repeat in the sample
/// gets the sample's count; a key column whose values are all new gets `rows`.
pub fn estimate_distinct(c: SampleCounts, rows: f64) -> f64 {
    if c.sampled == 0 {
        return 0.0;
    }
    if c.sampled as f64 >= rows {
        return c.distinct as f64;
    }
    let (f1, f2) = (c.once as f64, c.twice as f64);
    let unseen = f1 * (f1 - 1.0).max(0.0) / (2.0 * (f2 + 1.0));
    (c.distinct as f64 + unseen)
        .min(rows)
        .max(c.distinct as f64)
}

#[cfg(test)]
mod tests {
    use super::{estimate_distinct, SampleCounts};

    /// Samples every `step`-th value of a column with `ndv` values cycling through `rows` rows
    /// (a deterministic stand-in for a random sample).
    fn sample(ndv: u64, rows: u64, n: u64) -> SampleCounts {
        let mut freq = std::collections::HashMap::new();
        let mut x: u64 = 12345;
        for _ in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            *freq.entry((x >> 33) % ndv.min(rows)).or_insert(0u32) += 1;
        }
        SampleCounts::from_frequencies(freq.into_values())
    }

    #[test]
    fn estimates_low_medium_and_key_cardinalities() {
        let rows = 6_000_000.0;
        let low = estimate_distinct(sample(25, 6_000_000, 4096), rows);
        assert_eq!(low, 25.0);
        let mid = estimate_distinct(sample(10_000, 6_000_000, 4096), rows);
        assert!((5_000.0..20_000.0).contains(&mid), "{mid}");
        let key = estimate_distinct(sample(u64::MAX, 6_000_000, 4096), rows);
        assert!(key > 1_000_000.0, "{key}");
    }
}
