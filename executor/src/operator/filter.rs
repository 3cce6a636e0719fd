//! Filter: keeps the rows where the predicate is true (not false, not NULL). The predicate's
//! conjuncts run in order over the whole batch, their masks ANDed, until they have ruled out
//! half the rows (seven in eight when the next test is cheap: a column read whole streams
//! faster than read at scattered rows); from then on the survivors' positions are listed.
//! The last test's mask is kept as it is (gathering by it lists the survivors only where
//! few remain).
//! A conjunct comparing a column with a constant, with an IN list of constants or with
//! another column then reads its columns at those positions only and drops the ones that
//! fail; another cheap one (numbers, a comparison or two) is tested on the whole batch; any
//! other runs on the survivors gathered. The kept rows are gathered once at the end, or,
//! when the next operator reads selections (a join probe, a projection that picks columns),
//! handed on as they are: listed, or as the mask. When every row passes, the batch goes
//! through untouched. Comparisons of one integer-like column with constants (a date range),
//! or of one DOUBLE column with numbers (`BETWEEN`), run as one range test per row.
//!
//! A conjunct that fails over the whole batch runs again over the survivors of the ones
//! before it, so that only rows the predicate reaches can fail the query.
//!
//! A scan's filter can also test whether a column's value is a key of a hash join's built
//! side (see `physical::join`): rows it rules out would find no match in the join above.

use morsel_planner::BinaryOp;
use morsel_storage::{Batch, Bitmap, Column, DataType, ScalarValue};

use std::sync::Arc;

use crate::error::ExecResult;
use crate::expr::PhysExpr;
use crate::kernels::compare::FloatRange;
use crate::kernels::{boolean, compare, select};
use crate::operator::hash_join::JoinTable;
use crate::scheduler::Operator;
use crate::selected::{Live, Selected};

pub struct FilterOp {
    /// The conjuncts of `a AND b AND ...` (never empty), in order, ranges merged.
    steps: Vec<Step>,
}

/// One test of the filter.
enum Step {
    /// A conjunct, and whether it is cheap to test on every row (numbers, a comparison or
    /// two): once the survivors are listed, a cheap one is tested on the whole batch and the
    /// listed rows kept where it holds, where another has the survivors gathered first.
    Conjunct(PhysExpr, bool),
    /// Two or more comparisons of column `column` with constants of type `ty`, as
    /// `lo <= column <= hi`; `conjuncts` are the comparisons, run one by one instead where
    /// the column is not of `ty`'s integer kind.
    IntRange {
        column: usize,
        ty: DataType,
        lo: i64,
        hi: i64,
        conjuncts: Vec<PhysExpr>,
    },
    /// Two or more comparisons of DOUBLE column `column` with numbers, as one range;
    /// `conjuncts` are the comparisons, run one by one instead where the column is not a
    /// DOUBLE.
    FloatRange {
        column: usize,
        range: FloatRange,
        conjuncts: Vec<PhysExpr>,
    },
    /// Integer-like column `column`'s value is a key of `table` (which tests keys as
    /// cheaply as a comparison): NULLs and values without a build row are ruled out.
    JoinKeys {
        column: usize,
        table: Arc<JoinTable>,
    },
}

/// One test a filter is built from.
pub enum Test {
    /// A conjunct, with whether it is cheap to test on every row.
    Conjunct(PhysExpr, bool),
    /// Column `column` holds a key of `table` (see [`Step::JoinKeys`]).
    JoinKeys {
        column: usize,
        table: Arc<JoinTable>,
    },
}

impl FilterOp {
    /// A filter keeping the rows where all `tests` hold, in their order. Comparisons of one
    /// column with constants (integer-like, or numbers against a DOUBLE) merge into a range
    /// at the place of the first.
    pub fn new(tests: Vec<Test>) -> FilterOp {
        let mut steps: Vec<Step> = Vec::new();
        for t in tests {
            let (c, cheap) = match t {
                Test::Conjunct(c, cheap) => (c, cheap),
                Test::JoinKeys { column, table } => {
                    steps.push(Step::JoinKeys { column, table });
                    continue;
                }
            };
            if let Some((column, range)) = float_bounds(&c) {
                let same = steps.iter_mut().find_map(|s| match s {
                    Step::FloatRange {
                        column: k,
                        range,
                        conjuncts,
                    } if *k == column => Some((range, conjuncts)),
                    _ => None,
                });
                match same {
                    Some((r, cs)) => {
                        *r = r.and(range);
                        cs.push(c);
                    }
                    None => steps.push(Step::FloatRange {
                        column,
                        range,
                        conjuncts: vec![c],
                    }),
                }
                continue;
            }
            let Some((column, ty, lo, hi)) = int_bounds(&c) else {
                steps.push(Step::Conjunct(c, cheap));
                continue;
            };
            let same = steps.iter_mut().find_map(|s| match s {
                Step::IntRange {
                    column: k,
                    ty: t,
                    lo,
                    hi,
                    conjuncts,
                } if *k == column && *t == ty => Some((lo, hi, conjuncts)),
                _ => None,
            });
            match same {
                Some((l, h, cs)) => {
                    (*l, *h) = ((*l).max(lo), (*h).min(hi));
                    cs.push(c);
                }
                None => steps.push(Step::IntRange {
                    column,
                    ty,
                    lo,
                    hi,
                    conjuncts: vec![c],
                }),
            }
        }
        // A lone comparison stays a conjunct (its kernels cover it).
        let steps = steps
            .into_iter()
            .map(|s| match s {
                Step::IntRange { mut conjuncts, .. } | Step::FloatRange { mut conjuncts, .. }
                    if conjuncts.len() == 1 =>
                {
                    Step::Conjunct(conjuncts.remove(0), true)
                }
                s => s,
            })
            .collect();
        FilterOp { steps }
    }
}

impl Step {
    /// Whether testing every row costs about a comparison or two.
    fn is_cheap(&self) -> bool {
        match self {
            Step::Conjunct(_, cheap) => *cheap,
            Step::IntRange { .. } | Step::FloatRange { .. } => true,
            // A bit or slot read at each value's offset: not vectorized, about six
            // comparisons a row. Read at listed survivors, values ahead are hinted to the
            // cache (TPC-H Q20: its part keys after the ship date range, which keeps 16%,
            // 13.8 -> 9.0 ms for the scan's pipeline).
            Step::JoinKeys { .. } => false,
        }
    }
}

/// `column op constant` for an integer-like constant as the inclusive bounds it puts on the
/// column (`lo > hi`: none pass), with the column and the constant's type.
fn int_bounds(c: &PhysExpr) -> Option<(usize, DataType, i64, i64)> {
    let (column, op, value) = c.column_against_constant()?;
    let v = match value {
        ScalarValue::Int32(v) | ScalarValue::Date32(v) => i64::from(v),
        ScalarValue::Int64(v) | ScalarValue::Timestamp(v) => v,
        _ => return None,
    };
    const NONE: (i64, i64) = (i64::MAX, i64::MIN);
    let (lo, hi) = match op {
        BinaryOp::Eq => (v, v),
        BinaryOp::Lt => v.checked_sub(1).map_or(NONE, |h| (i64::MIN, h)),
        BinaryOp::LtEq => (i64::MIN, v),
        BinaryOp::Gt => v.checked_add(1).map_or(NONE, |l| (l, i64::MAX)),
        BinaryOp::GtEq => (v, i64::MAX),
        _ => return None,
    };
    Some((column, value.data_type(), lo, hi))
}

/// `column op number` against a DOUBLE constant as the bounds it puts on the column.
fn float_bounds(c: &PhysExpr) -> Option<(usize, FloatRange)> {
    let (column, op, value) = c.column_against_constant()?;
    let ScalarValue::Float64(v) = value else {
        return None;
    };
    Some((column, FloatRange::of(op, v)?))
}

/// Whether a column holds the integer kind of constants of type `ty` (as the comparison
/// kernels pair them).
fn same_kind(col: &Column, ty: DataType) -> bool {
    use DataType::*;
    matches!(
        (col.data_type(), ty),
        (Int32 | Date32, Int32 | Date32) | (Int64 | Timestamp, Int64 | Timestamp)
    )
}

/// Once the tests so far keep at most one row in this many, the survivors' positions are
/// listed and the next test, if it costs more than a comparison or two, reads its columns
/// at those rows only (TPC-H Q19: its ship mode IN list after an instruction test that
/// keeps 25%, run on the whole batch wherever a morsel kept a few rows more than a quarter).
const LIST_BELOW: usize = 2;

/// Before a cheap test, survivors are listed only once at most one row in this many is
/// left: the test runs on the whole batch until then. A column read whole streams at full
/// speed, where reading it at one row in four still touches most of its cache lines, one
/// row at a time (TPC-H Q6: its discount test after the date range, which keeps 16%,
/// 12.0-13.8 -> 10.9 ms).
const LIST_BELOW_BEFORE_CHEAP: usize = 8;

/// The rows of a batch that passed the tests so far.
struct Selection {
    batch: Batch,
    /// Passed, while many do.
    kept: Option<Bitmap>,
    /// Their positions in `batch`, once few remain.
    rows: Option<Vec<u32>>,
    /// Survivors are listed once at most one row in this many is left (`usize::MAX`: never).
    list_below: usize,
}

impl Selection {
    /// Tests conjunct `c` (`cheap`: testing every row costs about a comparison or two).
    fn conjunct(&mut self, c: &PhysExpr, cheap: bool) -> ExecResult<()> {
        if let Some(r) = &mut self.rows {
            if let Some((col, op, value)) = c.column_against_constant() {
                if compare::retain_scalar(op, self.batch.column(col), &value, r) {
                    return Ok(());
                }
            }
            if let Some((col, list, negated)) = c.column_in_constants() {
                if compare::retain_in_list(self.batch.column(col), &list, negated, r) {
                    return Ok(());
                }
            }
            if let Some((a, op, b)) = c.columns_compared() {
                let (a, b) = (self.batch.column(a), self.batch.column(b));
                if compare::retain_pair(op, a, b, r) {
                    return Ok(());
                }
            }
            if cheap {
                // Cheaper on every row than gathering every column at the listed ones (if
                // it fails there, it runs on the listed rows below).
                if let Ok(cond) = c.evaluate_predicate(&self.batch) {
                    let pass = boolean::as_boolean(&cond)?.true_mask();
                    compare::retain(r, |_| {}, |i| pass.get(i));
                    return Ok(());
                }
            }
            self.batch = select::take_batch(&self.batch, r)?;
            self.rows = None;
        }
        let cond = match c.evaluate_predicate(&self.batch) {
            Ok(cond) => cond,
            // A conjunct may fail only at rows an earlier one ruled out (`x > 0 AND 10 // x
            // = 5`): it runs again on the survivors alone, whose error is the query's.
            Err(_) if self.kept.is_some() => {
                let rows = self
                    .kept
                    .take()
                    .map(|k| k.set_positions())
                    .unwrap_or_default();
                self.batch = select::take_batch(&self.batch, &rows)?;
                c.evaluate_predicate(&self.batch)?
            }
            Err(e) => return Err(e),
        };
        self.and(boolean::as_boolean(&cond)?.true_mask());
        Ok(())
    }

    /// `lo <= column <= hi`, the column being integer-like.
    fn int_range(&mut self, column: usize, lo: i64, hi: i64) {
        let col = self.batch.column(column);
        if let Some(r) = &mut self.rows {
            compare::retain_int_range(col, lo, hi, r);
        } else if let Some(pass) = compare::int_range(col, lo, hi) {
            self.and(pass.true_mask());
        }
    }

    /// `column` passes `range`, the column being a DOUBLE.
    fn float_range(&mut self, column: usize, range: FloatRange) {
        let col = self.batch.column(column);
        if let Some(r) = &mut self.rows {
            compare::retain_float_range(col, range, r);
        } else if let Some(pass) = compare::float_range(col, range) {
            self.and(pass.true_mask());
        }
    }

    /// Column `column`'s value is a key of `table` (which tests keys cheaply: it is built
    /// so; were it not, the probe would still test every row).
    fn join_keys(&mut self, column: usize, table: &JoinTable) {
        let col = self.batch.column(column);
        if let Some(r) = &mut self.rows {
            table.retain_key_rows(col, r);
        } else if let Some(mask) = table.key_mask(col) {
            self.and(mask);
        }
    }

    fn and(&mut self, mask: Bitmap) {
        let mask = match self.kept.take() {
            Some(k) => k.and(&mask),
            None => mask,
        };
        if mask.count_ones().saturating_mul(self.list_below) <= self.batch.num_rows() {
            self.rows = Some(mask.set_positions());
        } else {
            self.kept = Some(mask);
        }
    }

    fn none_left(&self) -> bool {
        self.rows.as_ref().is_some_and(Vec::is_empty)
    }

    /// The batch and its survivors, as listed or as a mask.
    fn selected(self) -> Selected {
        let live = match (self.rows, self.kept) {
            (Some(r), _) => Live::Rows(r),
            (None, Some(mask)) => Live::Mask(mask),
            (None, None) => Live::All,
        };
        Selected {
            batch: self.batch,
            live,
        }
    }

    fn finish(self) -> ExecResult<Batch> {
        match (self.rows, self.kept) {
            (Some(r), _) => select::take_batch(&self.batch, &r),
            (None, Some(mask)) => select::filter_batch(&self.batch, &mask),
            (None, None) => Ok(self.batch),
        }
    }
}

impl Operator for FilterOp {
    fn name(&self) -> &'static str {
        "Filter"
    }

    fn execute(&self, batch: Batch) -> ExecResult<Batch> {
        self.run(batch)?.finish()
    }

    /// Leaves the survivors listed, not gathered, when the next operator reads them so.
    fn execute_selected(
        &self,
        input: Selected,
        next_takes_selection: bool,
    ) -> ExecResult<Selected> {
        let batch = input.gather()?;
        if !next_takes_selection {
            return Ok(Selected::all(self.execute(batch)?));
        }
        Ok(self.run(batch)?.selected())
    }
}

impl FilterOp {
    /// Runs the tests on `batch`.
    fn run(&self, batch: Batch) -> ExecResult<Selection> {
        let mut sel = Selection {
            batch,
            kept: None,
            rows: None,
            list_below: LIST_BELOW,
        };
        for (i, step) in self.steps.iter().enumerate() {
            sel.list_below = match self.steps.get(i + 1) {
                Some(next) if next.is_cheap() => LIST_BELOW_BEFORE_CHEAP,
                Some(_) => LIST_BELOW,
                // After the last test the mask is handed on: gathering by it lists the
                // survivors only where that is cheaper (`select::filter_batch`).
                None => usize::MAX,
            };
            match step {
                Step::IntRange {
                    column, ty, lo, hi, ..
                } if same_kind(sel.batch.column(*column), *ty) => sel.int_range(*column, *lo, *hi),
                Step::FloatRange { column, range, .. }
                    if matches!(sel.batch.column(*column), Column::Float64(_)) =>
                {
                    sel.float_range(*column, *range)
                }
                Step::IntRange { conjuncts, .. } | Step::FloatRange { conjuncts, .. } => {
                    for c in conjuncts {
                        sel.conjunct(c, true)?;
                    }
                }
                Step::Conjunct(c, cheap) => sel.conjunct(c, *cheap)?,
                Step::JoinKeys { column, table } => sel.join_keys(*column, table),
            }
            if sel.none_left() {
                break;
            }
        }
        Ok(sel)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use morsel_planner::BinaryOp;
    use morsel_storage::{Batch, Column, DataType, Field, PrimitiveColumn, ScalarValue, Schema};

    use super::{FilterOp, Test};
    use crate::expr::PhysExpr;
    use crate::operator::hash_join::JoinTable;
    use crate::scheduler::Operator;
    use crate::selected::{Live, Selected};

    /// A batch of `columns`, each named and nullable.
    fn batch_of(columns: Vec<(&str, Column)>) -> Batch {
        let n = columns[0].1.len();
        let fields = columns
            .iter()
            .map(|(name, c)| Field::new(*name, c.data_type(), true))
            .collect();
        let columns = columns.into_iter().map(|(_, c)| c).collect();
        Batch::try_new(Arc::new(Schema::new(fields)), columns, n).unwrap()
    }

    fn less_than(column: usize, value: i64) -> PhysExpr {
        compare(column, BinaryOp::Lt, ScalarValue::Int64(value))
    }

    fn compare(column: usize, op: BinaryOp, value: ScalarValue) -> PhysExpr {
        let ty = value.data_type();
        PhysExpr::Binary {
            left: Box::new(PhysExpr::Column(column)),
            op,
            right: Box::new(PhysExpr::Literal { value, ty }),
        }
    }

    /// Comparisons of integer-like columns with constants, merged into ranges or not, on
    /// the whole batch or on listed survivors, keep the rows that testing each comparison
    /// row by row keeps: bounds at the ends of the type, empty ranges, NULLs, a date column.
    #[test]
    fn merged_ranges_keep_the_rows_each_comparison_keeps() {
        use BinaryOp::*;
        let n = 2000usize;
        let mut rng = morsel_storage::test_rng::Rng(3);
        let x: Vec<Option<i32>> = (0..n)
            .map(|_| match rng.below(12) {
                0 => None,
                1 => Some(i32::MIN),
                2 => Some(i32::MAX),
                _ => Some(rng.below(100) as i32 - 50),
            })
            .collect();
        let y: Vec<Option<i64>> = (0..n)
            .map(|_| (rng.below(9) != 0).then(|| rng.below(1000) as i64 - 500))
            .collect();
        let batch = batch_of(vec![
            (
                "d",
                Column::Date32(PrimitiveColumn::from_options(x.clone())),
            ),
            ("y", Column::Int64(PrimitiveColumn::from_options(y.clone()))),
        ]);
        let d = |v: i32| ScalarValue::Date32(v);
        let i = ScalarValue::Int64;
        let cases: Vec<Vec<(usize, BinaryOp, ScalarValue)>> = vec![
            vec![(0, GtEq, d(-10)), (0, Lt, d(10))],
            vec![(0, Gt, d(-50)), (1, LtEq, i(0)), (0, LtEq, d(-40))],
            vec![(0, Lt, d(i32::MIN)), (0, GtEq, d(0))],
            vec![(0, Gt, d(i32::MAX)), (0, GtEq, d(i32::MIN))],
            vec![(0, GtEq, d(i32::MAX)), (0, LtEq, d(i32::MAX))],
            vec![(0, Eq, d(7)), (0, GtEq, d(7))],
            vec![
                (1, Lt, i(-400)),
                (1, Gt, i(-450)),
                (0, GtEq, d(-20)),
                (0, Lt, d(20)),
            ],
            vec![(1, Gt, i(i64::MAX)), (1, Lt, i(5))],
            vec![(1, GtEq, i(-480)), (1, LtEq, i(-470)), (1, NotEq, i(-475))],
        ];
        // Integer constants against the date column (the planner casts first): not merged
        // with the date bounds, and the comparisons' own error.
        let mixed = FilterOp::new(vec![
            Test::Conjunct(compare(0, GtEq, d(-30)), true),
            Test::Conjunct(compare(0, Lt, i(30)), true),
            Test::Conjunct(compare(0, Gt, i(-5)), true),
        ]);
        assert!(mixed.execute(batch.clone()).is_err());
        for case in cases {
            let op = FilterOp::new(
                case.iter()
                    .map(|(c, o, v)| Test::Conjunct(compare(*c, *o, v.clone()), true))
                    .collect(),
            );
            let out = op.execute(batch.clone()).unwrap();
            let holds = |row: usize, (c, o, v): &(usize, BinaryOp, ScalarValue)| {
                let have = if *c == 0 {
                    x[row].map(i64::from)
                } else {
                    y[row]
                };
                let want = match v {
                    ScalarValue::Date32(w) => i64::from(*w),
                    ScalarValue::Int64(w) => *w,
                    other => panic!("{other:?}"),
                };
                have.is_some_and(|h| o.holds(h.cmp(&want)))
            };
            let want: Vec<ScalarValue> = (0..n)
                .filter(|&row| case.iter().all(|t| holds(row, t)))
                .map(|row| batch.column(1).scalar_at(row))
                .collect();
            let got: Vec<ScalarValue> = (0..out.num_rows())
                .map(|row| out.column(1).scalar_at(row))
                .collect();
            assert_eq!(got, want, "{case:?}");
        }
    }

    /// Comparisons of a DOUBLE column with numbers, merged into one range, keep the rows
    /// that each comparison alone keeps, tested on the whole batch (first) and on listed
    /// survivors (after a selective integer range): NaN, signed zeros, infinities, NULLs,
    /// strict and inclusive bounds at equal values, `=`, only lower or only upper bounds,
    /// and a range no value is in. An integer column compared with a DOUBLE constant runs
    /// the comparisons one by one.
    #[test]
    fn merged_float_ranges_keep_the_rows_each_comparison_keeps() {
        use BinaryOp::*;
        let n = 3000usize;
        let mut rng = morsel_storage::test_rng::Rng(5);
        let special = [
            f64::NAN,
            -0.0,
            0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.5,
            -0.5,
        ];
        let x: Vec<Option<f64>> = (0..n)
            .map(|_| match rng.below(10) {
                0 => None,
                1 => Some(special[rng.below(special.len() as u64) as usize]),
                _ => Some(rng.below(200) as f64 / 100.0 - 1.0),
            })
            .collect();
        let k: Vec<i64> = (0..n).map(|_| rng.below(100) as i64).collect();
        let batch = batch_of(vec![
            ("x", Column::Float64(PrimitiveColumn::from_options(x))),
            ("k", Column::Int64(PrimitiveColumn::from_vec(k))),
        ]);
        let f = ScalarValue::Float64;
        let cases: Vec<Vec<(BinaryOp, f64)>> = vec![
            vec![(GtEq, -0.25), (LtEq, 0.25)],
            vec![(Gt, -0.0), (Lt, 0.5)],
            vec![(GtEq, 0.0), (Gt, -0.0), (LtEq, 0.5), (Lt, 0.5)],
            vec![(Gt, 0.0), (GtEq, 0.0), (Lt, 1.0)],
            vec![(Eq, 0.5), (GtEq, 0.5)],
            vec![(Eq, -0.0), (LtEq, 0.0)],
            vec![(Gt, -0.5), (GtEq, f64::NEG_INFINITY)],
            vec![(Lt, 0.5), (LtEq, f64::INFINITY)],
            vec![(GtEq, f64::INFINITY), (LtEq, f64::INFINITY)],
            vec![(Gt, 0.5), (Lt, -0.5)],
        ];
        // A selective first test lists the survivors before the range.
        let few = compare(1, Lt, ScalarValue::Int64(5));
        let few_too = compare(1, GtEq, ScalarValue::Int64(1));
        for case in &cases {
            for listed in [false, true] {
                let mut tests = Vec::new();
                if listed {
                    tests.push(Test::Conjunct(few.clone(), true));
                    tests.push(Test::Conjunct(few_too.clone(), true));
                }
                let conjuncts: Vec<PhysExpr> =
                    case.iter().map(|&(o, v)| compare(0, o, f(v))).collect();
                tests.extend(conjuncts.iter().map(|c| Test::Conjunct(c.clone(), true)));
                let op = FilterOp::new(tests);
                assert!(
                    op.steps
                        .iter()
                        .any(|s| matches!(s, super::Step::FloatRange { conjuncts, .. } if conjuncts.len() == case.len())),
                    "{case:?} merged"
                );
                let out = op.execute(batch.clone()).unwrap();
                // Each comparison alone, as the compare kernels answer it.
                let mut want = morsel_storage::Bitmap::new_filled(n, true);
                let mut alone = conjuncts.clone();
                if listed {
                    alone.extend([few.clone(), few_too.clone()]);
                }
                for c in &alone {
                    let v = c.evaluate(&batch).unwrap();
                    want = want.and(&crate::kernels::boolean::as_boolean(&v).unwrap().true_mask());
                }
                let want = crate::kernels::select::filter_batch(&batch, &want).unwrap();
                let bits = |b: &Batch| {
                    (0..b.num_rows())
                        .map(
                            |r| match (b.column(0).scalar_at(r), b.column(1).scalar_at(r)) {
                                (ScalarValue::Float64(v), k) => format!("{:x} {k:?}", v.to_bits()),
                                v => format!("{v:?}"),
                            },
                        )
                        .collect::<Vec<_>>()
                };
                assert!(want.num_rows() > 0 || case[0] == (Gt, 0.5), "{case:?}");
                assert_eq!(bits(&out), bits(&want), "{case:?} listed {listed}");
            }
        }
        // NaN as a bound is no range; an integer column against DOUBLE constants runs the
        // comparisons one by one (the planner casts first; the kernels' own answer).
        assert!(super::float_bounds(&compare(0, Lt, f(f64::NAN))).is_none());
        let ints = FilterOp::new(vec![
            Test::Conjunct(compare(1, GtEq, f(10.0)), true),
            Test::Conjunct(compare(1, Lt, f(20.0)), true),
        ]);
        let alone = FilterOp::new(vec![Test::Conjunct(compare(1, GtEq, f(10.0)), true)]);
        let (a, b) = (ints.execute(batch.clone()), alone.execute(batch.clone()));
        assert_eq!(a.is_err(), b.is_err());
    }

    /// Conjuncts run one after another (gathering the survivors of a selective one, ANDing
    /// the masks of the others) keep exactly the rows where all are true: not false, not NULL.
    #[test]
    fn conjuncts_keep_the_rows_where_all_are_true() {
        let n = 1000i64;
        let x: Vec<Option<i64>> = (0..n).map(|i| (i % 7 != 3).then_some(i)).collect();
        let y: Vec<Option<i64>> = (0..n).map(|i| (i % 5 != 1).then_some(i % 10)).collect();
        let batch = batch_of(vec![
            ("x", Column::Int64(PrimitiveColumn::from_options(x.clone()))),
            ("y", Column::Int64(PrimitiveColumn::from_options(y.clone()))),
        ]);
        // x < 100 keeps a tenth (gathered at once), y < 8 most, x < 900 most (ANDed masks).
        for (bounds, order) in [
            ([(0, 100), (1, 8), (0, 900)], "selective first"),
            ([(0, 900), (1, 8), (0, 100)], "selective last"),
            ([(0, 900), (1, 8), (0, -1)], "none survive"),
        ] {
            let op = FilterOp::new(
                bounds
                    .iter()
                    .enumerate()
                    .map(|(k, &(c, v))| Test::Conjunct(less_than(c, v), k % 2 == 0))
                    .collect(),
            );
            let out = op.execute(batch.clone()).unwrap();
            let want: Vec<i64> = (0..n as usize)
                .filter(|&i| {
                    let vals = [x[i], y[i]];
                    bounds.iter().all(|&(c, v)| vals[c].is_some_and(|a| a < v))
                })
                .map(|i| x[i].unwrap())
                .collect();
            let got: Vec<i64> = (0..out.num_rows())
                .map(|i| match out.column(0).scalar_at(i) {
                    ScalarValue::Int64(v) => v,
                    other => panic!("{other:?}"),
                })
                .collect();
            assert_eq!(got, want, "{order}");
        }
    }

    /// The last test hands its survivors on as a mask however few they are (gathering
    /// decides whether to list them); an earlier one lists them once few are left, and the
    /// next test reads the list.
    #[test]
    fn only_tests_before_the_last_list_their_survivors() {
        let n = 1000i64;
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", DataType::Int64, false),
            Field::new("y", DataType::Int64, false),
        ]));
        let x = Column::Int64(PrimitiveColumn::from_vec((0..n).collect()));
        let batch = Batch::try_new(schema, vec![x.clone(), x], n as usize).unwrap();
        // Tests `column < value`, in order (two columns: tests of one would merge into a
        // range, a single step).
        let run = |tests: &[(usize, i64)]| {
            let tests = tests
                .iter()
                .map(|&(c, v)| Test::Conjunct(less_than(c, v), true));
            let op = FilterOp::new(tests.collect());
            let out = op
                .execute_selected(Selected::all(batch.clone()), true)
                .unwrap();
            match out.live {
                Live::Mask(m) => ("mask", m.set_positions()),
                Live::Rows(r) => ("rows", r),
                _ => panic!("a filter hands on a mask or a list"),
            }
        };
        let upto = |k: u32| (0..k).collect::<Vec<u32>>();
        assert_eq!(run(&[(0, 300)]), ("mask", upto(300)));
        assert_eq!(run(&[(0, 20)]), ("mask", upto(20)));
        // x < 20 leaves 2%: listed, and y < 10 then reads the list.
        assert_eq!(run(&[(0, 20), (1, 10)]), ("rows", upto(10)));
        assert_eq!(run(&[(0, 300), (1, 10)]), ("mask", upto(10)));
        assert_eq!(run(&[(0, 0)]), ("rows", upto(0)));
    }

    /// A test of a join's keys keeps exactly the rows whose key the build side has (never a
    /// NULL), on the whole batch (first test) or on listed survivors (after a selective
    /// one), for every cheap index (an array, a bit per value, hashed with a bit per value)
    /// and for 32- and 64-bit probe columns.
    #[test]
    fn join_keys_keep_the_rows_whose_key_the_build_side_has() {
        let mut rng = morsel_storage::test_rng::Rng(11);
        let n = 3000usize;
        // Build keys spanning: a small range (array), a wide one (bits, ranked), a very
        // wide one over few keys (hashed, with a bit per value).
        for (keys, spread, kind) in [
            (500usize, 2_000i64, "an array"),
            (2_000, 400_000, "ranked"),
            (40, 1_000_000, "hashed by integer value, a bit per value"),
        ] {
            let build: Vec<Option<i64>> = (0..keys)
                .map(|_| (rng.below(20) != 0).then(|| rng.below(spread as u64) as i64))
                .collect();
            let build_schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true)]));
            let build_batch = Batch::try_new(
                build_schema,
                vec![Column::Int64(PrimitiveColumn::from_options(build.clone()))],
                keys,
            )
            .unwrap();
            let table =
                Arc::new(JoinTable::new(build_batch, &[PhysExpr::Column(0)], true, 1).unwrap());
            assert!(table.index_kind().contains(kind), "{}", table.index_kind());
            assert!(table.tests_keys_cheaply(), "{}", table.index_kind());
            let probe: Vec<Option<i64>> = (0..n)
                .map(|i| match i % 3 {
                    0 => build[rng.below(keys as u64) as usize],
                    1 => (rng.below(10) != 0).then(|| rng.below(spread as u64 * 2) as i64 - 5),
                    _ => None,
                })
                .collect();
            let filler: Vec<Option<i64>> = (0..n as i64).map(Some).collect();
            for wide in [false, true] {
                let key_column = match wide {
                    true => Column::Int64(PrimitiveColumn::from_options(probe.clone())),
                    false => Column::Int32(PrimitiveColumn::from_options(
                        probe.iter().map(|v| v.map(|v| v as i32)),
                    )),
                };
                let schema = Arc::new(Schema::new(vec![
                    Field::new("k", key_column.data_type(), true),
                    Field::new("i", DataType::Int64, true),
                ]));
                let batch = Batch::try_new(
                    schema,
                    vec![
                        key_column,
                        Column::Int64(PrimitiveColumn::from_options(filler.clone())),
                    ],
                    n,
                )
                .unwrap();
                let keys_test = || Test::JoinKeys {
                    column: 0,
                    table: table.clone(),
                };
                // Alone (whole batch), and after `i < n / 10` (survivors listed).
                for (tests, below) in [
                    (vec![keys_test()], n as i64),
                    (
                        vec![
                            Test::Conjunct(less_than(1, n as i64 / 10), true),
                            keys_test(),
                        ],
                        n as i64 / 10,
                    ),
                ] {
                    let out = FilterOp::new(tests).execute(batch.clone()).unwrap();
                    let want: Vec<ScalarValue> = (0..n)
                        .filter(|&i| {
                            (i as i64) < below && probe[i].is_some_and(|v| build.contains(&Some(v)))
                        })
                        .map(|i| ScalarValue::Int64(i as i64))
                        .collect();
                    let got: Vec<ScalarValue> = (0..out.num_rows())
                        .map(|r| out.column(1).scalar_at(r))
                        .collect();
                    assert_eq!(
                        got,
                        want,
                        "{} wide={wide} below={below}",
                        table.index_kind()
                    );
                }
            }
        }
    }
}
