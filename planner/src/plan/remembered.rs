//! What a table source remembers of the planner's estimates over it.
//!
//! Join ordering estimates every candidate join in a memo of its own (plans are built
//! between the steps, so node addresses cannot name estimates across them), and each
//! estimate of a filtered scan measures its filters on the source's sample again. A source
//! keeps those measurements, bounded: a table that lives long meets many filters, and what
//! it keeps is searched one entry at a time.

use std::sync::Mutex;

use crate::expr::Expr;

/// Entries of each kind a source keeps at most; past that it forgets them all.
const REMEMBERED: usize = 256;

/// Adds `entry` to what `memory` holds, forgetting everything first when it is full.
pub(crate) fn remember<T>(memory: &Mutex<Vec<T>>, entry: T) {
    let mut held = memory.lock().expect("remembered estimates");
    if held.len() >= REMEMBERED {
        held.clear();
    }
    held.push(entry);
}

/// A scan's projection and filters, and the fraction of rows they were estimated to keep.
type ScanSelectivity = (Option<Vec<usize>>, Vec<Expr>, f64);

/// Scans' selectivities, by the scan's projection and filters.
#[derive(Debug, Default)]
pub(crate) struct ScanSelectivities(Mutex<Vec<ScanSelectivity>>);

impl ScanSelectivities {
    /// The selectivity of a scan with `projection` and `filters`, as `measure` gives it the
    /// first time.
    pub fn get(
        &self,
        projection: Option<&[usize]>,
        filters: &[Expr],
        measure: impl FnOnce() -> f64,
    ) -> f64 {
        let known = self.0.lock().expect("remembered estimates");
        let same = |(p, f, _): &&ScanSelectivity| p.as_deref() == projection && f == filters;
        if let Some((.., s)) = known.iter().find(same) {
            return *s;
        }
        drop(known);
        let s = measure();
        let entry = (projection.map(<[usize]>::to_vec), filters.to_vec(), s);
        remember(&self.0, entry);
        s
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::{ScanSelectivities, REMEMBERED};
    use crate::expr::{col, lit, Expr};

    /// A scan's selectivity is measured once per projection and filters, and what is kept
    /// stays bounded while answers stay right.
    #[test]
    fn selectivities_are_measured_once_per_scan_and_kept_bounded() {
        let known = ScanSelectivities::default();
        let measured = Cell::new(0);
        let filter = |v: i64| vec![col("a").gt(lit(v))];
        let get = |projection: Option<&[usize]>, filters: &[Expr], s: f64| {
            known.get(projection, filters, || {
                measured.set(measured.get() + 1);
                s
            })
        };
        assert_eq!(get(None, &filter(1), 0.5), 0.5);
        assert_eq!(get(None, &filter(1), 0.9), 0.5);
        assert_eq!(measured.get(), 1);
        assert_eq!(get(Some(&[0]), &filter(1), 0.25), 0.25);
        assert_eq!(get(None, &filter(2), 0.75), 0.75);
        assert_eq!(measured.get(), 3);
        for v in 0..3 * REMEMBERED as i64 {
            assert_eq!(get(None, &filter(100 + v), v as f64), v as f64);
        }
        assert!(known.0.lock().unwrap().len() <= REMEMBERED);
        assert_eq!(get(None, &filter(99), 0.125), 0.125);
    }
}
