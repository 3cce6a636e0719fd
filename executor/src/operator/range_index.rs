//! The index of an inequality join's build side: its rows sorted by one key, so that each
//! probe row's matches under `key < v`, `key <= v`, `key > v`, `key >= v` (and any
//! intersection of them, a band such as `BETWEEN`) are one run of the sorted rows, found by
//! binary search. A join on `x.c > t.c` then costs its output plus a sort and a search per
//! probe row, not a test of every pair (the piecewise merge join DuckDB uses for one
//! inequality, with the probe side left in its order).
//!
//! The order is the comparison kernels' own ([`cmp_rows`]: NaN above every other DOUBLE,
//! -0.0 equal to 0.0, strings by their bytes), so a run holds exactly the rows for which
//! every bound is true. NULL keys are never in a run. Rows of equal keys keep build order,
//! and a probe row's matches come in key order: the same on any number of threads.

use std::cmp::Ordering;

use morsel_planner::BinaryOp;
use morsel_storage::{Batch, Column};

use super::par_sort::par_sort_by;
use crate::error::ExecResult;
use crate::expr::PhysExpr;
use crate::kernels::compare::cmp_rows;

/// One bound on the build key: `key op probe`, `probe` evaluated on the probe side.
pub struct RangeBound {
    pub op: BinaryOp,
    pub probe: PhysExpr,
}

/// The build rows with a non-NULL key, in key order.
pub struct RangeIndex {
    key: Column,
    sorted: Vec<u32>,
    bounds: Vec<RangeBound>,
}

impl RangeIndex {
    /// Sorts `build`'s rows by `key` on up to `threads` workers; `bounds` are the
    /// inequalities a probe row puts on it (at least one, each `<`, `<=`, `>` or `>=`,
    /// its probe expression of `key`'s type).
    pub fn new(
        build: &Batch,
        key: &PhysExpr,
        bounds: Vec<RangeBound>,
        threads: usize,
    ) -> ExecResult<Self> {
        let key = key.evaluate(build)?;
        let mut sorted: Vec<u32> = (0..build.num_rows() as u32)
            .filter(|&r| key.is_valid(r as usize))
            .collect();
        par_sort_by(&mut sorted, threads, |&a, &b| {
            cmp_rows(&key, a as usize, &key, b as usize).then(a.cmp(&b))
        });
        Ok(Self {
            key,
            sorted,
            bounds,
        })
    }

    /// How many build rows have a key (the others never match).
    pub fn keyed_rows(&self) -> usize {
        self.sorted.len()
    }

    /// The (probe row, build row) pairs of `probe`'s rows whose bounds all hold, appended
    /// to `p` and `b` in probe order, then key order; with `one_enough`, only the first
    /// pair of each probe row (a join that asks only whether there is one).
    pub fn candidates(
        &self,
        probe: &Batch,
        one_enough: bool,
        p: &mut Vec<u32>,
        b: &mut Vec<u32>,
    ) -> ExecResult<()> {
        let values = self
            .bounds
            .iter()
            .map(|bound| bound.probe.evaluate(probe))
            .collect::<ExecResult<Vec<_>>>()?;
        for i in 0..probe.num_rows() {
            let Some((lo, hi)) = self.run(&values, i) else {
                continue;
            };
            let hi = match one_enough {
                true => hi.min(lo + 1),
                false => hi,
            };
            for &r in &self.sorted[lo..hi] {
                p.push(i as u32);
                b.push(r);
            }
        }
        Ok(())
    }

    /// How many build rows every bound allows, for each of `probe`'s rows (a count join):
    /// the length of its run.
    pub fn match_counts(&self, probe: &Batch) -> ExecResult<Vec<i64>> {
        let values = self
            .bounds
            .iter()
            .map(|bound| bound.probe.evaluate(probe))
            .collect::<ExecResult<Vec<_>>>()?;
        Ok((0..probe.num_rows())
            .map(|i| self.run(&values, i).map_or(0, |(lo, hi)| (hi - lo) as i64))
            .collect())
    }

    /// The run of `sorted` where every bound holds for probe row `i` (`values` are the
    /// bounds' probe columns); `None` where it is empty or a probe value is NULL.
    fn run(&self, values: &[Column], i: usize) -> Option<(usize, usize)> {
        let (mut lo, mut hi) = (0, self.sorted.len());
        for (bound, v) in self.bounds.iter().zip(values) {
            if !v.is_valid(i) {
                return None;
            }
            // The first sorted position whose key is above `v` (`past_equal`), or not
            // below it.
            let first = |past_equal: bool| {
                self.sorted
                    .partition_point(|&r| match cmp_rows(&self.key, r as usize, v, i) {
                        Ordering::Less => true,
                        Ordering::Equal => past_equal,
                        Ordering::Greater => false,
                    })
            };
            match bound.op {
                BinaryOp::Lt => hi = hi.min(first(false)),
                BinaryOp::LtEq => hi = hi.min(first(true)),
                BinaryOp::Gt => lo = lo.max(first(true)),
                BinaryOp::GtEq => lo = lo.max(first(false)),
                _ => return None,
            }
            if lo >= hi {
                return None;
            }
        }
        Some((lo, hi))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use morsel_storage::test_rng::Rng;
    use morsel_storage::{DataType, Field, PrimitiveColumn, Schema};

    use super::*;

    fn batch(ty: DataType, col: Column) -> Batch {
        let n = col.len();
        let schema = Arc::new(Schema::new(vec![Field::new("k", ty, true)]));
        Batch::try_new(schema, vec![col], n).unwrap()
    }

    fn ints(v: &[Option<i64>]) -> Batch {
        batch(
            DataType::Int64,
            Column::Int64(PrimitiveColumn::from_options(v.iter().copied())),
        )
    }

    fn floats(v: &[Option<f64>]) -> Batch {
        batch(
            DataType::Float64,
            Column::Float64(PrimitiveColumn::from_options(v.iter().copied())),
        )
    }

    /// The pairs a test of every pair finds, as the comparison kernel decides `key op v`.
    fn every_pair(build: &Batch, probe: &Batch, ops: &[BinaryOp]) -> Vec<(u32, u32)> {
        let (k, v) = (build.column(0), probe.column(0));
        let mut pairs = Vec::new();
        for i in 0..probe.num_rows() {
            for r in 0..build.num_rows() {
                let holds = ops.iter().all(|&op| {
                    let (a, b) = (k.slice(r, 1), v.slice(i, 1));
                    let c = crate::kernels::compare::compare(op, &a, &b).unwrap();
                    c.get(0) == Some(true)
                });
                if holds {
                    pairs.push((i as u32, r as u32));
                }
            }
        }
        pairs
    }

    fn index(build: &Batch, ops: &[BinaryOp], threads: usize) -> RangeIndex {
        let bounds = ops
            .iter()
            .map(|&op| RangeBound {
                op,
                probe: PhysExpr::Column(0),
            })
            .collect();
        RangeIndex::new(build, &PhysExpr::Column(0), bounds, threads).unwrap()
    }

    fn found(build: &Batch, probe: &Batch, ops: &[BinaryOp], threads: usize) -> Vec<(u32, u32)> {
        let (mut p, mut b) = (Vec::new(), Vec::new());
        index(build, ops, threads)
            .candidates(probe, false, &mut p, &mut b)
            .unwrap();
        p.into_iter().zip(b).collect()
    }

    /// How many of `pairs` each of `rows` probe rows has.
    fn per_probe_row(pairs: &[(u32, u32)], rows: usize) -> Vec<i64> {
        let mut counts = vec![0; rows];
        pairs.iter().for_each(|&(i, _)| counts[i as usize] += 1);
        counts
    }

    const BANDS: [&[BinaryOp]; 6] = [
        &[BinaryOp::Lt],
        &[BinaryOp::LtEq],
        &[BinaryOp::Gt],
        &[BinaryOp::GtEq],
        &[BinaryOp::GtEq, BinaryOp::Lt],
        &[BinaryOp::Gt, BinaryOp::LtEq, BinaryOp::Lt],
    ];

    /// Every bound and band finds exactly the pairs a test of every pair finds, NULLs and
    /// duplicates included, and in the same order (probe, then key) on any thread count;
    /// the counts per probe row are theirs.
    #[test]
    fn runs_hold_the_pairs_a_nested_loop_finds() {
        let mut rng = Rng(7);
        for round in 0..40 {
            let n = 1 + (rng.below(60)) as usize;
            let mut keys = |n: usize| -> Vec<Option<i64>> {
                (0..n)
                    .map(|_| match rng.below(8) {
                        0 => None,
                        _ => Some(rng.below(20) as i64 - 10),
                    })
                    .collect()
            };
            let (build, probe) = (ints(&keys(n)), ints(&keys(n / 2 + 1)));
            for ops in BANDS {
                let mut want = every_pair(&build, &probe, ops);
                let got = found(&build, &probe, ops, 1);
                assert_eq!(got, found(&build, &probe, ops, 4), "round {round}");
                let mut sorted = got.clone();
                sorted.sort_unstable();
                want.sort_unstable();
                assert_eq!(sorted, want, "round {round} {ops:?}");
                // A count join's counts are the pairs' per probe row.
                let counts = index(&build, ops, 1).match_counts(&probe).unwrap();
                assert_eq!(
                    counts,
                    per_probe_row(&want, probe.num_rows()),
                    "round {round}"
                );
            }
        }
    }

    /// DOUBLE keys follow the kernels' order: NaN above infinity and equal to itself,
    /// -0.0 equal to 0.0.
    #[test]
    fn doubles_order_nan_and_signed_zero_as_the_kernels_do() {
        let values = [
            Some(f64::NAN),
            Some(-0.0),
            Some(0.0),
            Some(f64::INFINITY),
            Some(f64::NEG_INFINITY),
            None,
            Some(1.5),
            Some(-f64::NAN),
        ];
        let (build, probe) = (floats(&values), floats(&values));
        for ops in BANDS {
            let mut want = every_pair(&build, &probe, ops);
            let mut got = found(&build, &probe, ops, 1);
            want.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, want, "{ops:?}");
            let counts = index(&build, ops, 1).match_counts(&probe).unwrap();
            assert_eq!(counts, per_probe_row(&want, probe.num_rows()), "{ops:?}");
        }
    }
}
