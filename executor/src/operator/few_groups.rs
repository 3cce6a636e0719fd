//! Grouped sums and counts for batches whose rows fall into few groups (TPC-H Q1: four).
//!
//! Adding row by row into one slot per group makes every row wait for the previous row of
//! its group (a load, an add and a store in a chain): with few groups, consecutive rows
//! mostly share one. Here row i adds into lane `i % LANES` of its group, so LANES chains run
//! side by side, and the lanes are added together at the end of the batch, `(l0 + l1) +
//! (l2 + l3)`, then into the group's running value. The order depends on the batch's rows
//! only, so float sums stay the same at any thread count.

use morsel_storage::{Bitmap, Column, PrimitiveColumn};

use super::accumulator::Accumulator;
use crate::error::{ExecError, ExecResult};

/// Independent partial sums per group.
const LANES: usize = 4;

/// A batch takes this path when it has at least this many rows per group...
const MIN_ROWS_PER_GROUP: usize = 16;

/// ...and the state has at most this many groups (the lanes stay in the first-level cache).
const MAX_GROUPS: usize = 1024;

/// Per group, the sum of `value(i)` over its rows, row i added into lane `i % LANES`, the
/// lanes starting at `zero` and folded as `(l0 + l1) + (l2 + l3)`.
#[inline(always)]
fn lane_sums<A>(groups: &[u32], n: usize, zero: A, value: impl Fn(usize) -> A) -> Vec<A>
where
    A: Copy + std::ops::Add<Output = A>,
{
    let mut lanes = vec![[zero; LANES]; n];
    let mut chunks = groups.chunks_exact(LANES);
    let mut i = 0;
    for chunk in &mut chunks {
        for (l, &g) in chunk.iter().enumerate() {
            let slot = &mut lanes[g as usize][l];
            *slot = *slot + value(i + l);
        }
        i += LANES;
    }
    for (l, &g) in chunks.remainder().iter().enumerate() {
        let slot = &mut lanes[g as usize][l];
        *slot = *slot + value(i + l);
    }
    lanes
        .iter()
        .map(|l| (l[0] + l[1]) + (l[2] + l[3]))
        .collect()
}

/// A batch whose rows fall into few groups: its rows per group, counted once for all the
/// aggregates.
pub(super) struct FewGroups {
    rows: Vec<i64>,
}

impl FewGroups {
    /// `Some` when the batch's `groups` (ids below `n`) are few enough for lanes.
    pub(super) fn of(groups: &[u32], n: usize) -> Option<FewGroups> {
        (!Self::ruled_out(n, groups.len())).then(|| FewGroups {
            rows: lane_sums(groups, n, 0i64, |_| 1),
        })
    }

    /// Whether a batch of `rows` rows over at least `groups` groups is too many groups for
    /// lanes (so a table adds it row by row).
    pub(super) fn ruled_out(groups: usize, rows: usize) -> bool {
        groups > MAX_GROUPS || groups * MIN_ROWS_PER_GROUP > rows
    }

    /// Per group, how many rows of the batch are valid in `valid` (every row when `None`).
    fn counts(&self, groups: &[u32], valid: Option<&Bitmap>) -> Vec<i64> {
        match valid {
            None => self.rows.clone(),
            Some(v) => lane_sums(groups, self.rows.len(), 0i64, |i| i64::from(v.get(i))),
        }
    }
}

/// The value of row i of a float column, or `-0.0` (which leaves every sum unchanged, a
/// positive zero included) for a NULL row.
#[inline(always)]
fn float_or_identity(x: &PrimitiveColumn<f64>) -> impl Fn(usize) -> f64 + '_ {
    let values = x.values();
    let valid = x.validity();
    move |i| match valid {
        Some(v) if !v.get(i) => -0.0,
        _ => values[i],
    }
}

/// The value of row i of an integer column widened, or 0 for a NULL row.
#[inline(always)]
fn int_or_zero(x: &PrimitiveColumn<i64>) -> impl Fn(usize) -> i128 + '_ {
    let values = x.values();
    let valid = x.validity();
    move |i| match valid {
        Some(v) if !v.get(i) => 0,
        _ => i128::from(values[i]),
    }
}

/// Adds each group's batch total to its running value.
fn add_into<T: Copy + std::ops::AddAssign>(running: &mut [T], totals: &[T]) {
    running.iter_mut().zip(totals).for_each(|(r, &t)| *r += t);
}

/// Marks the groups with a valid row in the batch as having a value.
fn mark_seen(seen: &mut [bool], rows: &[i64]) {
    seen.iter_mut().zip(rows).for_each(|(s, &r)| *s |= r > 0);
}

impl Accumulator {
    /// Adds row i of `arg` to group `groups[i]` by lanes, for the states that sum or count;
    /// false for the others (also for argument types these states do not take), which the
    /// caller updates row by row. An integer sum is checked for overflow once per batch, on
    /// the batch's exact total.
    pub(super) fn update_few(
        &mut self,
        few: &FewGroups,
        groups: &[u32],
        arg: Option<&Column>,
    ) -> ExecResult<bool> {
        let n = few.rows.len();
        let valid = arg.and_then(Column::validity);
        // Each group's valid rows in the batch.
        let rows = || few.counts(groups, valid);
        match (self, arg) {
            (Accumulator::Count(c), _) => add_into(c, &rows()),
            (Accumulator::SumFloat { sums, seen }, Some(Column::Float64(x))) => {
                add_into(sums, &lane_sums(groups, n, -0.0, float_or_identity(x)));
                mark_seen(seen, &rows());
            }
            (Accumulator::AvgFloat { sums, counts }, Some(Column::Float64(x))) => {
                add_into(sums, &lane_sums(groups, n, -0.0, float_or_identity(x)));
                add_into(counts, &rows());
            }
            (Accumulator::SumInt { sums, seen }, Some(Column::Int64(x))) => {
                let totals = lane_sums(groups, n, 0i128, int_or_zero(x));
                for (s, t) in sums.iter_mut().zip(totals) {
                    *s = i64::try_from(i128::from(*s) + t).map_err(|_| ExecError::Overflow {
                        op: "sum()",
                        ty: morsel_storage::DataType::Int64,
                    })?;
                }
                mark_seen(seen, &rows());
            }
            (Accumulator::AvgInt { sums, counts }, Some(Column::Int64(x))) => {
                add_into(sums, &lane_sums(groups, n, 0i128, int_or_zero(x)));
                add_into(counts, &rows());
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use morsel_planner::AggFunc;
    use morsel_storage::{Column, DataType, PrimitiveColumn, ScalarValue};

    use super::FewGroups;
    use crate::operator::accumulator::Accumulator;
    use crate::operator::states::Args;

    /// Each state's result after one batch, by lanes and row by row.
    fn both(
        func: AggFunc,
        ty: DataType,
        groups: &[u32],
        n: usize,
        arg: Option<&Column>,
    ) -> [Column; 2] {
        let few = FewGroups::of(groups, n).expect("few groups");
        let mut lanes = Accumulator::new(func, ty, false, None, false).unwrap();
        let mut rows = Accumulator::new(func, ty, false, None, false).unwrap();
        lanes.resize(n);
        rows.resize(n);
        assert!(lanes.update_few(&few, groups, arg).unwrap());
        rows.update(groups, Args::one(arg)).unwrap();
        [lanes.finish().unwrap(), rows.finish().unwrap()]
    }

    /// Counts and integer sums and averages by lanes equal the row-by-row ones exactly; float
    /// sums agree to rounding; NULL rows count for nothing, groups with only NULLs give NULL,
    /// and a group's negative zero stays negative (the lanes start at -0.0).
    #[test]
    fn lanes_equal_row_by_row() {
        let rows = 1000;
        let n = 7;
        // Group 6 only ever sees NULLs; group 5 only sees -0.0.
        let groups: Vec<u32> = (0..rows).map(|i| ((i * 7919) % 7) as u32).collect();
        let ints: Vec<Option<i64>> = (0..rows)
            .map(|i| match groups[i] {
                6 => None,
                5 => Some(0),
                _ => (i % 11 != 0).then_some((i as i64).wrapping_mul(7_654_321) % 1_000_003),
            })
            .collect();
        let floats: Vec<Option<f64>> = (0..rows)
            .map(|i| match groups[i] {
                6 => None,
                5 => Some(-0.0),
                _ => (i % 13 != 0).then_some(i as f64 * 0.1),
            })
            .collect();
        let ints = Column::Int64(PrimitiveColumn::from_options(ints));
        let floats = Column::Float64(PrimitiveColumn::from_options(floats));
        for (func, ty, arg) in [
            (AggFunc::CountStar, DataType::Int64, None),
            (AggFunc::Count, DataType::Int64, Some(&ints)),
            (AggFunc::Sum, DataType::Int64, Some(&ints)),
            (AggFunc::Avg, DataType::Int64, Some(&ints)),
        ] {
            let [lanes, rows] = both(func, ty, &groups, n, arg);
            for g in 0..n {
                assert_eq!(lanes.scalar_at(g), rows.scalar_at(g), "{func:?} group {g}");
            }
        }
        for func in [AggFunc::Sum, AggFunc::Avg] {
            let [lanes, rows] = both(func, DataType::Float64, &groups, n, Some(&floats));
            for g in 0..n {
                match (lanes.scalar_at(g), rows.scalar_at(g)) {
                    (ScalarValue::Float64(a), ScalarValue::Float64(b)) => {
                        assert!((a - b).abs() <= 1e-9 * b.abs(), "{func:?} group {g}");
                        assert_eq!(a.is_sign_negative(), b.is_sign_negative(), "group {g}");
                    }
                    (a, b) => assert_eq!(a, b, "{func:?} group {g}"),
                }
            }
        }
    }

    /// An integer sum whose batch total leaves the 64-bit range is an overflow error.
    #[test]
    fn integer_sum_overflow_is_an_error() {
        let groups = vec![0u32; 32];
        let values = Column::Int64(PrimitiveColumn::from_vec(vec![i64::MAX / 16; 32]));
        let few = FewGroups::of(&groups, 1).unwrap();
        let mut acc = Accumulator::new(AggFunc::Sum, DataType::Int64, false, None, false).unwrap();
        acc.resize(1);
        assert!(acc.update_few(&few, &groups, Some(&values)).is_err());
    }

    /// Batches with too few rows per group take the row-by-row path.
    #[test]
    fn many_groups_take_the_row_path() {
        assert!(FewGroups::of(&[0, 1, 2, 3], 4).is_none());
        assert!(FewGroups::of(&vec![0; 1 << 20], 2048).is_none());
        assert!(FewGroups::of(&[0; 64], 4).is_some());
    }
}
