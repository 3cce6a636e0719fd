//! Aggregate states, one slot per group, updated a batch at a time with a group id per row.
//!
//! Float sums are added row by row in morsel order within a morsel's partial (a batch with
//! few groups by lanes, see `few_groups`; a global aggregate's in the fixed lane order of
//! `kernels::reduce`), and partials are merged in morsel order, so `SUM(double)` is the same
//! bit pattern at any thread count.

use hashbrown::HashSet;
use morsel_planner::AggFunc;
use morsel_storage::{
    Buffer, Column, ColumnBuilder, DataType, NativeType, PrimitiveBuilder, PrimitiveColumn,
    ScalarValue,
};

use super::states::{Args, State};
use crate::error::{ExecError, ExecResult};
use crate::kernels::compare::cmp_f64;
use crate::kernels::reduce;

#[derive(Debug)]
pub enum Accumulator {
    /// `count(x)` (non-NULL values) or `count(*)` (rows).
    Count(Vec<i64>),
    SumInt {
        sums: Vec<i64>,
        seen: Vec<bool>,
    },
    SumFloat {
        sums: Vec<f64>,
        seen: Vec<bool>,
    },
    AvgInt {
        sums: Vec<i128>,
        counts: Vec<i64>,
    },
    AvgFloat {
        sums: Vec<f64>,
        counts: Vec<i64>,
    },
    /// MIN / MAX of any type; `min` picks which. Values kept as scalars per group.
    Extreme {
        min: bool,
        ty: DataType,
        values: Vec<Option<ScalarValue>>,
    },
    /// Variances and standard deviations: count, mean and the sum of squared deviations per
    /// group (Welford's update; partials combined with Chan et al.'s pairwise formula).
    Moments {
        func: AggFunc,
        n: Vec<f64>,
        mean: Vec<f64>,
        m2: Vec<f64>,
    },
    /// MEDIAN / QUANTILE_CONT: every value of the group, sorted when finishing.
    Quantile {
        q: f64,
        values: Vec<Vec<f64>>,
    },
    /// STRING_AGG: the group's values in input order joined by `sep`.
    StringAgg {
        sep: String,
        values: Vec<Option<String>>,
    },
    /// BOOL_AND (`and`) / BOOL_OR.
    Bool {
        and: bool,
        values: Vec<Option<bool>>,
    },
    /// A scalar subquery's value: the only row of the group.
    Single {
        ty: DataType,
        values: Vec<Option<ScalarValue>>,
        rows: Vec<u32>,
    },
    /// `func(DISTINCT x)`: each group's distinct non-NULL values (encoded key and value) in
    /// first-seen order, fed to a plain `func` state when finishing.
    Distinct {
        func: AggFunc,
        ty: DataType,
        seen: Vec<HashSet<Box<[u8]>>>,
        values: Vec<Vec<(Box<[u8]>, ScalarValue)>>,
    },
    /// The states kept as plain structs behind [`super::states::GroupState`]: first, last,
    /// any_value, arg_min, arg_max, mode, product, and the two-column statistics.
    State(State),
}

fn int_values(c: &Column) -> ExecResult<&PrimitiveColumn<i64>> {
    match c {
        Column::Int64(x) => Ok(x),
        other => Err(ExecError::Internal(format!(
            "integer aggregate over {}",
            other.data_type()
        ))),
    }
}

fn float_values(c: &Column) -> ExecResult<&PrimitiveColumn<f64>> {
    match c {
        Column::Float64(x) => Ok(x),
        other => Err(ExecError::Internal(format!(
            "float aggregate over {}",
            other.data_type()
        ))),
    }
}

/// Pairs each state with its argument columns: `args` holds every state's in order, one
/// slot per argument column ([`Accumulator::inputs`] of them).
pub fn with_args<'a, 'b>(
    accs: &'a mut [Accumulator],
    args: &'b [Option<Column>],
) -> impl Iterator<Item = (&'a mut Accumulator, Args<'b>)> {
    accs.iter_mut().scan(0, move |at, acc| {
        let start = (*at).min(args.len());
        *at += acc.inputs();
        let end = (*at).min(args.len());
        Some((acc, Args::of(&args[start..end])))
    })
}

/// `a` replaces `b` as the running extreme.
pub(crate) fn better(min: bool, a: &ScalarValue, b: &ScalarValue) -> bool {
    use std::cmp::Ordering;
    let ord = match (a, b) {
        (ScalarValue::Int32(x), ScalarValue::Int32(y))
        | (ScalarValue::Date32(x), ScalarValue::Date32(y)) => x.cmp(y),
        (ScalarValue::Int64(x), ScalarValue::Int64(y))
        | (ScalarValue::Timestamp(x), ScalarValue::Timestamp(y)) => x.cmp(y),
        (ScalarValue::Float64(x), ScalarValue::Float64(y)) => cmp_f64(*x, *y),
        (ScalarValue::Utf8(x), ScalarValue::Utf8(y)) => x.as_bytes().cmp(y.as_bytes()),
        (ScalarValue::Boolean(x), ScalarValue::Boolean(y)) => x.cmp(y),
        _ => Ordering::Equal,
    };
    if min {
        ord == Ordering::Less
    } else {
        ord == Ordering::Greater
    }
}

impl Accumulator {
    /// Whether adding one row straight into a group's state gives the bits of adding it to
    /// a fresh state and merging that in, so that a group's only row in a morsel may skip
    /// the fresh state: counts, sums and averages (a float sum's state starts at 0.0 and so
    /// is never -0.0, and adding `0.0 + x` to anything else adds `x`), MIN and MAX. Not
    /// variances (Welford's update and Chan et al.'s merge round differently), nor the
    /// states that hold values.
    pub fn one_row_folds_exactly(&self) -> bool {
        matches!(
            self,
            Accumulator::Count(_)
                | Accumulator::SumInt { .. }
                | Accumulator::SumFloat { .. }
                | Accumulator::AvgInt { .. }
                | Accumulator::AvgFloat { .. }
                | Accumulator::Extreme { .. }
        )
    }

    /// Memory held by the per-group states (vector capacities plus the heap data of
    /// strings and value lists).
    pub fn heap_bytes(&self) -> usize {
        fn cap<T>(v: &Vec<T>) -> usize {
            v.capacity() * std::mem::size_of::<T>()
        }
        fn scalar(v: &ScalarValue) -> usize {
            match v {
                ScalarValue::Utf8(s) => s.capacity(),
                _ => 0,
            }
        }
        match self {
            Accumulator::Count(c) => cap(c),
            Accumulator::SumInt { sums, seen } => cap(sums) + cap(seen),
            Accumulator::SumFloat { sums, seen } => cap(sums) + cap(seen),
            Accumulator::AvgInt { sums, counts } => cap(sums) + cap(counts),
            Accumulator::AvgFloat { sums, counts } => cap(sums) + cap(counts),
            Accumulator::Extreme { values, .. } => {
                cap(values) + values.iter().flatten().map(scalar).sum::<usize>()
            }
            Accumulator::Moments { n, mean, m2, .. } => cap(n) + cap(mean) + cap(m2),
            Accumulator::Quantile { values, .. } => {
                cap(values) + values.iter().map(cap).sum::<usize>()
            }
            Accumulator::StringAgg { values, .. } => {
                cap(values) + values.iter().flatten().map(String::capacity).sum::<usize>()
            }
            Accumulator::Bool { values, .. } => cap(values),
            Accumulator::Single { values, rows, .. } => {
                cap(values) + cap(rows) + values.iter().flatten().map(scalar).sum::<usize>()
            }
            Accumulator::Distinct { seen, values, .. } => {
                let set_bytes: usize = seen
                    .iter()
                    .map(|s| {
                        s.capacity() * std::mem::size_of::<Box<[u8]>>()
                            + s.iter().map(|k| k.len()).sum::<usize>()
                    })
                    .sum();
                let value_bytes: usize = values
                    .iter()
                    .map(|v| cap(v) + v.iter().map(|(k, x)| k.len() + scalar(x)).sum::<usize>())
                    .sum();
                cap(seen) + set_bytes + cap(values) + value_bytes
            }
            Accumulator::State(s) => s.heap_bytes(),
        }
    }

    /// How many argument columns an update takes: one (unused by `count(*)`), or two for
    /// the aggregates that take a second column.
    pub fn inputs(&self) -> usize {
        match self {
            Accumulator::State(s) => s.inputs(),
            _ => 1,
        }
    }

    /// A state for `func` over arguments of type `arg` (ignored for `count(*)`); `constant`
    /// is the constant second argument (a quantile's fraction, string_agg's separator);
    /// `second`, whether a second argument column comes along (arg_min's key, the x of
    /// `corr(y, x)`, the FILTER mask of first / last).
    pub fn new(
        func: AggFunc,
        arg: DataType,
        distinct: bool,
        constant: Option<&ScalarValue>,
        second: bool,
    ) -> ExecResult<Self> {
        if distinct && second {
            return Err(ExecError::Internal(format!(
                "{}(DISTINCT ...) over two columns",
                func.name()
            )));
        }
        if distinct && func != AggFunc::CountStar {
            return Ok(Accumulator::Distinct {
                func,
                ty: arg,
                seen: Vec::new(),
                values: Vec::new(),
            });
        }
        if let Some(state) = State::new(func, arg, second) {
            return Ok(Accumulator::State(state));
        }
        Ok(match (func, arg) {
            (AggFunc::StddevSamp | AggFunc::StddevPop | AggFunc::VarSamp | AggFunc::VarPop, _) => {
                Accumulator::Moments {
                    func,
                    n: Vec::new(),
                    mean: Vec::new(),
                    m2: Vec::new(),
                }
            }
            (AggFunc::Median | AggFunc::QuantileCont, _) => Accumulator::Quantile {
                q: match constant {
                    Some(ScalarValue::Float64(q)) => *q,
                    _ => 0.5,
                },
                values: Vec::new(),
            },
            (AggFunc::StringAgg, _) => Accumulator::StringAgg {
                sep: match constant {
                    Some(ScalarValue::Utf8(s)) => s.clone(),
                    _ => ",".into(),
                },
                values: Vec::new(),
            },
            (AggFunc::BoolAnd | AggFunc::BoolOr, _) => Accumulator::Bool {
                and: func == AggFunc::BoolAnd,
                values: Vec::new(),
            },
            (AggFunc::Single, ty) => Accumulator::Single {
                ty,
                values: Vec::new(),
                rows: Vec::new(),
            },
            (AggFunc::Count | AggFunc::CountStar, _) => Accumulator::Count(Vec::new()),
            (AggFunc::Sum, DataType::Int64) => Accumulator::SumInt {
                sums: Vec::new(),
                seen: Vec::new(),
            },
            (AggFunc::Sum, DataType::Float64) => Accumulator::SumFloat {
                sums: Vec::new(),
                seen: Vec::new(),
            },
            (AggFunc::Avg, DataType::Int64) => Accumulator::AvgInt {
                sums: Vec::new(),
                counts: Vec::new(),
            },
            (AggFunc::Avg, DataType::Float64) => Accumulator::AvgFloat {
                sums: Vec::new(),
                counts: Vec::new(),
            },
            (AggFunc::Min | AggFunc::Max, ty) => Accumulator::Extreme {
                min: func == AggFunc::Min,
                ty,
                values: Vec::new(),
            },
            (f, t) => return Err(ExecError::Internal(format!("{}() over {t}", f.name()))),
        })
    }

    /// Makes room for `n` groups.
    pub fn resize(&mut self, n: usize) {
        match self {
            Accumulator::Count(c) => c.resize(n, 0),
            Accumulator::SumInt { sums, seen } => {
                sums.resize(n, 0);
                seen.resize(n, false);
            }
            Accumulator::SumFloat { sums, seen } => {
                sums.resize(n, 0.0);
                seen.resize(n, false);
            }
            Accumulator::AvgInt { sums, counts } => {
                sums.resize(n, 0);
                counts.resize(n, 0);
            }
            Accumulator::AvgFloat { sums, counts } => {
                sums.resize(n, 0.0);
                counts.resize(n, 0);
            }
            Accumulator::Extreme { values, .. } => values.resize(n, None),
            Accumulator::Moments { n: c, mean, m2, .. } => {
                c.resize(n, 0.0);
                mean.resize(n, 0.0);
                m2.resize(n, 0.0);
            }
            Accumulator::Quantile { values, .. } => values.resize_with(n, Vec::new),
            Accumulator::StringAgg { values, .. } => values.resize(n, None),
            Accumulator::Bool { values, .. } => values.resize(n, None),
            Accumulator::Single { values, rows, .. } => {
                values.resize(n, None);
                rows.resize(n, 0);
            }
            Accumulator::Distinct { seen, values, .. } => {
                seen.resize_with(n, HashSet::new);
                values.resize_with(n, Vec::new);
            }
            Accumulator::State(s) => s.resize(n),
        }
    }

    /// Adds row i of `args` to group `groups[i]` (no argument for `count(*)`).
    pub fn update(&mut self, groups: &[u32], args: Args<'_>) -> ExecResult<()> {
        if let Accumulator::State(s) = self {
            return s.update(groups, args);
        }
        let Some(arg) = args.first else {
            if let Accumulator::Count(c) = self {
                for &g in groups {
                    c[g as usize] += 1;
                }
            }
            return Ok(());
        };
        if self.update_more(groups, arg)? {
            return Ok(());
        }
        match self {
            Accumulator::Count(c) => {
                for (i, &g) in groups.iter().enumerate() {
                    c[g as usize] += arg.is_valid(i) as i64;
                }
            }
            Accumulator::SumInt { sums, seen } => {
                let x = int_values(arg)?;
                for (i, &g) in groups.iter().enumerate() {
                    if x.is_valid(i) {
                        let g = g as usize;
                        sums[g] = match sums[g].checked_add(x.values()[i]) {
                            Some(sum) => sum,
                            None => {
                                return Err(ExecError::Overflow {
                                    op: "sum()",
                                    ty: DataType::Int64,
                                })
                            }
                        };
                        seen[g] = true;
                    }
                }
            }
            Accumulator::SumFloat { sums, seen } => {
                let x = float_values(arg)?;
                each_valid(groups, x, |g, v| {
                    sums[g] += v;
                    seen[g] = true;
                });
            }
            Accumulator::AvgInt { sums, counts } => {
                let x = int_values(arg)?;
                each_valid(groups, x, |g, v| {
                    sums[g] += v as i128;
                    counts[g] += 1;
                });
            }
            Accumulator::AvgFloat { sums, counts } => {
                let x = float_values(arg)?;
                each_valid(groups, x, |g, v| {
                    sums[g] += v;
                    counts[g] += 1;
                });
            }
            Accumulator::Extreme { min, values, .. } => {
                for (i, &g) in groups.iter().enumerate() {
                    if !arg.is_valid(i) {
                        continue;
                    }
                    let v = arg.scalar_at(i);
                    let slot = &mut values[g as usize];
                    if slot.as_ref().is_none_or(|cur| better(*min, &v, cur)) {
                        *slot = Some(v);
                    }
                }
            }
            _ => return Err(ExecError::Internal("update of an unknown state".into())),
        }
        Ok(())
    }

    /// Adds row `rows[i]` of `args` to group `groups[i]` (no argument for `count(*)`):
    /// [`Self::update`] over the rows gathered, without gathering them for counts, float
    /// sums and float averages.
    pub fn update_at(&mut self, groups: &[u32], rows: &[u32], args: Args<'_>) -> ExecResult<()> {
        match (self, args.first) {
            (Accumulator::Count(c), None) => groups.iter().for_each(|&g| c[g as usize] += 1),
            (Accumulator::Count(c), Some(arg)) => {
                for (&g, &r) in groups.iter().zip(rows) {
                    c[g as usize] += arg.is_valid(r as usize) as i64;
                }
            }
            (Accumulator::SumFloat { sums, seen }, Some(Column::Float64(x))) => {
                each_valid_at(groups, rows, x, |g, v| {
                    sums[g] += v;
                    seen[g] = true;
                })
            }
            (Accumulator::AvgFloat { sums, counts }, Some(Column::Float64(x))) => {
                each_valid_at(groups, rows, x, |g, v| {
                    sums[g] += v;
                    counts[g] += 1;
                })
            }
            (acc, _) => {
                let first = args.first.map(|c| c.take(rows));
                let second = args.second.map(|c| c.take(rows));
                let gathered = Args {
                    first: first.as_ref(),
                    second: second.as_ref(),
                };
                return acc.update(groups, gathered);
            }
        }
        Ok(())
    }

    /// Adds all `rows` rows of `args` to group 0, the only group of a global aggregate (no
    /// argument for `count(*)`). Counts, sums, averages and numeric extremes reduce the
    /// whole column at once (float sums in the lane order of [`reduce::sum_f64`]); other
    /// states take the row-by-row path.
    pub fn update_global(&mut self, rows: usize, args: Args<'_>) -> ExecResult<()> {
        let arg = args.first;
        let overflow = || ExecError::Overflow {
            op: "sum()",
            ty: DataType::Int64,
        };
        match (&mut *self, arg) {
            (Accumulator::Count(c), None) => c[0] += rows as i64,
            (Accumulator::Count(c), Some(a)) => c[0] += (a.len() - a.null_count()) as i64,
            (Accumulator::SumFloat { sums, seen }, Some(Column::Float64(x))) => {
                if let Some(s) = reduce::sum_f64(x) {
                    sums[0] += s;
                    seen[0] = true;
                }
            }
            (Accumulator::AvgFloat { sums, counts }, Some(Column::Float64(x))) => {
                if let Some(s) = reduce::sum_f64(x) {
                    sums[0] += s;
                    counts[0] += (x.len() - x.null_count()) as i64;
                }
            }
            (Accumulator::SumInt { sums, seen }, Some(Column::Int64(x))) => {
                let (s, n) = reduce::sum_i64(x);
                if n > 0 {
                    let total = sums[0] as i128 + s;
                    sums[0] = i64::try_from(total).map_err(|_| overflow())?;
                    seen[0] = true;
                }
            }
            (Accumulator::AvgInt { sums, counts }, Some(Column::Int64(x))) => {
                let (s, n) = reduce::sum_i64(x);
                sums[0] += s;
                counts[0] += n as i64;
            }
            (Accumulator::Extreme { min, values, .. }, Some(col)) => {
                let min = *min;
                let row = match col {
                    Column::Int32(x) | Column::Date32(x) => {
                        reduce::extreme_row(x, min, |a, b| a.cmp(&b))
                    }
                    Column::Int64(x) | Column::Timestamp(x) => {
                        reduce::extreme_row(x, min, |a, b| a.cmp(&b))
                    }
                    Column::Float64(x) => reduce::extreme_row(x, min, cmp_f64),
                    _ => return self.update(&vec![0; rows], args),
                };
                if let Some(row) = row {
                    let v = col.scalar_at(row);
                    let slot = &mut values[0];
                    if slot.as_ref().is_none_or(|cur| better(min, &v, cur)) {
                        *slot = Some(v);
                    }
                }
            }
            _ => return self.update(&vec![0; rows], args),
        }
        Ok(())
    }

    /// Appends the states of groups `ids` (in that order) to `into`, a state of the same
    /// kind, leaving empty values behind; partials are dealt into hash partitions this way.
    pub fn move_groups(&mut self, ids: &[u32], into: &mut Accumulator) -> ExecResult<()> {
        fn copy<T: Copy>(from: &[T], ids: &[u32], to: &mut Vec<T>) {
            to.extend(ids.iter().map(|&g| from[g as usize]));
        }
        fn take<T: Default>(from: &mut [T], ids: &[u32], to: &mut Vec<T>) {
            to.extend(ids.iter().map(|&g| std::mem::take(&mut from[g as usize])));
        }
        use Accumulator as A;
        match (self, into) {
            (A::Count(a), A::Count(b)) => copy(a, ids, b),
            (A::SumInt { sums, seen }, A::SumInt { sums: s2, seen: n2 }) => {
                copy(sums, ids, s2);
                copy(seen, ids, n2);
            }
            (A::SumFloat { sums, seen }, A::SumFloat { sums: s2, seen: n2 }) => {
                copy(sums, ids, s2);
                copy(seen, ids, n2);
            }
            (
                A::AvgInt { sums, counts },
                A::AvgInt {
                    sums: s2,
                    counts: c2,
                },
            ) => {
                copy(sums, ids, s2);
                copy(counts, ids, c2);
            }
            (
                A::AvgFloat { sums, counts },
                A::AvgFloat {
                    sums: s2,
                    counts: c2,
                },
            ) => {
                copy(sums, ids, s2);
                copy(counts, ids, c2);
            }
            (A::Extreme { values, .. }, A::Extreme { values: v2, .. }) => take(values, ids, v2),
            (A::StringAgg { values, .. }, A::StringAgg { values: v2, .. }) => take(values, ids, v2),
            (
                A::Moments { n, mean, m2, .. },
                A::Moments {
                    n: n2,
                    mean: e2,
                    m2: q2,
                    ..
                },
            ) => {
                copy(n, ids, n2);
                copy(mean, ids, e2);
                copy(m2, ids, q2);
            }
            (A::Quantile { values, .. }, A::Quantile { values: v2, .. }) => take(values, ids, v2),
            (A::Bool { values, .. }, A::Bool { values: v2, .. }) => copy(values, ids, v2),
            (
                A::Single { values, rows, .. },
                A::Single {
                    values: v2,
                    rows: r2,
                    ..
                },
            ) => {
                take(values, ids, v2);
                copy(rows, ids, r2);
            }
            (
                A::Distinct { seen, values, .. },
                A::Distinct {
                    seen: s2,
                    values: v2,
                    ..
                },
            ) => {
                take(seen, ids, s2);
                take(values, ids, v2);
            }
            (A::State(a), A::State(b)) => a.move_groups(ids, b)?,
            _ => {
                return Err(ExecError::Internal(
                    "moving groups between different aggregate states".into(),
                ))
            }
        }
        Ok(())
    }

    /// Folds `other`'s group g into this state's group `mapping[g]`; values `other` holds
    /// (MIN / MAX) are moved out, so `other` is only fit to be reset (`resize(0)`) after.
    pub fn merge(&mut self, other: &mut Accumulator, mapping: &[u32]) -> ExecResult<()> {
        if let (Accumulator::State(a), Accumulator::State(b)) = (&mut *self, &mut *other) {
            return a.merge(b, mapping);
        }
        if self.merge_more(other, mapping)? {
            return Ok(());
        }
        let pairs = mapping.iter().enumerate().map(|(g, &m)| (g, m as usize));
        self.fold_pairs(other, pairs)
    }

    /// Folds each group `slots[i] + upper` into group `slots[i]`, as [`Self::merge`] folds
    /// one state's group into another's, and leaves the upper one fresh: a state twice as
    /// long holds a morsel's fresh states above the merge's, at the same offsets. For the
    /// states that take one row straight in ([`Self::one_row_folds_exactly`]).
    pub fn fold_upper(&mut self, upper: usize, slots: &[u32]) -> ExecResult<()> {
        let slots = slots.iter().map(|&s| s as usize);
        match self {
            Accumulator::Count(c) => {
                let (lo, hi) = c.split_at_mut(upper);
                slots.for_each(|s| lo[s] += std::mem::take(&mut hi[s]));
            }
            Accumulator::SumInt { sums, seen } => {
                fold_halves((sums, seen), upper, slots, fold_int_sum)?
            }
            Accumulator::SumFloat { sums, seen } => {
                fold_halves((sums, seen), upper, slots, |into, seen, sum, saw| {
                    fold_float_sum(into, seen, sum, saw);
                    Ok(())
                })?
            }
            Accumulator::AvgInt { sums, counts } => {
                fold_halves((sums, counts), upper, slots, |into, count, sum, n| {
                    *into += sum;
                    *count += n;
                    Ok(())
                })?
            }
            Accumulator::AvgFloat { sums, counts } => {
                fold_halves((sums, counts), upper, slots, |into, count, sum, n| {
                    fold_float_avg(into, count, sum, n);
                    Ok(())
                })?
            }
            Accumulator::Extreme { min, values, .. } => {
                let (lo, hi) = values.split_at_mut(upper);
                slots.for_each(|s| fold_extreme(*min, &mut lo[s], hi[s].take()));
            }
            _ => {
                return Err(ExecError::Internal(
                    "folding the upper groups of a state that holds values".into(),
                ))
            }
        }
        Ok(())
    }

    /// Folds `other`'s group `g` into this state's group `m` for each `(g, m)`: the states
    /// [`Self::merge_more`] does not take.
    fn fold_pairs(
        &mut self,
        other: &mut Accumulator,
        pairs: impl Iterator<Item = (usize, usize)>,
    ) -> ExecResult<()> {
        match (self, other) {
            (Accumulator::Count(a), Accumulator::Count(b)) => {
                pairs.for_each(|(g, m)| a[m] += b[g]);
            }
            (Accumulator::SumInt { sums, seen }, Accumulator::SumInt { sums: s2, seen: n2 }) => {
                for (g, m) in pairs {
                    fold_int_sum(&mut sums[m], &mut seen[m], s2[g], n2[g])?;
                }
            }
            (
                Accumulator::SumFloat { sums, seen },
                Accumulator::SumFloat { sums: s2, seen: n2 },
            ) => {
                for (g, m) in pairs {
                    fold_float_sum(&mut sums[m], &mut seen[m], s2[g], n2[g]);
                }
            }
            (
                Accumulator::AvgInt { sums, counts },
                Accumulator::AvgInt {
                    sums: s2,
                    counts: c2,
                },
            ) => {
                for (g, m) in pairs {
                    sums[m] += s2[g];
                    counts[m] += c2[g];
                }
            }
            (
                Accumulator::AvgFloat { sums, counts },
                Accumulator::AvgFloat {
                    sums: s2,
                    counts: c2,
                },
            ) => {
                for (g, m) in pairs {
                    fold_float_avg(&mut sums[m], &mut counts[m], s2[g], c2[g]);
                }
            }
            (Accumulator::Extreme { min, values, .. }, Accumulator::Extreme { values: v2, .. }) => {
                for (g, m) in pairs {
                    fold_extreme(*min, &mut values[m], v2[g].take());
                }
            }
            _ => {
                return Err(ExecError::Internal(
                    "merging different aggregate states".into(),
                ))
            }
        }
        Ok(())
    }

    /// The final value of every group.
    pub fn finish(self) -> ExecResult<Column> {
        Ok(match self {
            Accumulator::Count(c) => Column::Int64(PrimitiveColumn::new(Buffer::from_vec(c), None)),
            Accumulator::SumInt { sums, seen } => {
                let mut b = PrimitiveBuilder::with_capacity(sums.len());
                sums.iter()
                    .zip(&seen)
                    .for_each(|(s, ok)| b.push_option(ok.then_some(*s)));
                Column::Int64(b.finish())
            }
            Accumulator::SumFloat { sums, seen } => {
                let mut b = PrimitiveBuilder::with_capacity(sums.len());
                sums.iter()
                    .zip(&seen)
                    .for_each(|(s, ok)| b.push_option(ok.then_some(*s)));
                Column::Float64(b.finish())
            }
            Accumulator::AvgInt { sums, counts } => {
                let mut b = PrimitiveBuilder::with_capacity(sums.len());
                sums.iter()
                    .zip(&counts)
                    .for_each(|(s, c)| b.push_option((*c > 0).then(|| *s as f64 / *c as f64)));
                Column::Float64(b.finish())
            }
            Accumulator::AvgFloat { sums, counts } => {
                let mut b = PrimitiveBuilder::with_capacity(sums.len());
                sums.iter()
                    .zip(&counts)
                    .for_each(|(s, c)| b.push_option((*c > 0).then(|| s / *c as f64)));
                Column::Float64(b.finish())
            }
            Accumulator::Extreme { ty, values, .. } | Accumulator::Single { ty, values, .. } => {
                let mut b = ColumnBuilder::with_capacity(ty, values.len());
                for v in &values {
                    b.push_scalar(v.as_ref().unwrap_or(&ScalarValue::Null))?;
                }
                b.finish()
            }
            Accumulator::State(s) => s.finish()?,
            other => other.finish_more()?,
        })
    }
}

/// Folds the upper groups `slots` of a state held in two arrays (each twice as long, see
/// [`Accumulator::fold_upper`]) down with `fold(lower a, lower b, upper a, upper b)`,
/// leaving the upper ones fresh (their defaults).
fn fold_halves<A: Default, B: Default>(
    (a, b): (&mut [A], &mut [B]),
    upper: usize,
    slots: impl Iterator<Item = usize>,
    mut fold: impl FnMut(&mut A, &mut B, A, B) -> ExecResult<()>,
) -> ExecResult<()> {
    let ((lo_a, hi_a), (lo_b, hi_b)) = (a.split_at_mut(upper), b.split_at_mut(upper));
    for s in slots {
        let (x, y) = (std::mem::take(&mut hi_a[s]), std::mem::take(&mut hi_b[s]));
        fold(&mut lo_a[s], &mut lo_b[s], x, y)?;
    }
    Ok(())
}

/// Folds an integer sum's partial (`sum`, whether it saw a value) into a group's.
fn fold_int_sum(into: &mut i64, seen: &mut bool, sum: i64, saw: bool) -> ExecResult<()> {
    *into = into.checked_add(sum).ok_or(ExecError::Overflow {
        op: "sum()",
        ty: DataType::Int64,
    })?;
    *seen |= saw;
    Ok(())
}

/// Folds a float sum's partial into a group's: only one that saw a value (a partial that
/// saw none is 0.0 and would turn a -0.0 sum into 0.0).
fn fold_float_sum(into: &mut f64, seen: &mut bool, sum: f64, saw: bool) {
    if saw {
        *into += sum;
        *seen = true;
    }
}

/// Folds a float average's partial (sum and count) into a group's, as [`fold_float_sum`].
fn fold_float_avg(into: &mut f64, count: &mut i64, sum: f64, n: i64) {
    if n > 0 {
        *into += sum;
        *count += n;
    }
}

/// Folds a partial MIN (`min`) or MAX into a group's.
fn fold_extreme(min: bool, into: &mut Option<ScalarValue>, v: Option<ScalarValue>) {
    let Some(v) = v else { return };
    if into.as_ref().is_none_or(|cur| better(min, &v, cur)) {
        *into = Some(v);
    }
}

/// Calls `f(group, value)` for each `groups[i]` with row `rows[i]` of `x` where it is valid.
#[inline(always)]
fn each_valid_at<T: NativeType>(
    groups: &[u32],
    rows: &[u32],
    x: &PrimitiveColumn<T>,
    mut f: impl FnMut(usize, T),
) {
    let values = x.values();
    match x.validity() {
        None => groups
            .iter()
            .zip(rows)
            .for_each(|(&g, &r)| f(g as usize, values[r as usize])),
        Some(valid) => {
            for (&g, &r) in groups.iter().zip(rows) {
                if valid.get(r as usize) {
                    f(g as usize, values[r as usize]);
                }
            }
        }
    }
}

/// Calls `f(group, value)` for every valid row of `x`, in row order, `groups` giving each
/// row's group (a loop without a validity test per row when there are no NULLs).
#[inline(always)]
fn each_valid<T: NativeType>(groups: &[u32], x: &PrimitiveColumn<T>, mut f: impl FnMut(usize, T)) {
    let values = &x.values()[..groups.len()];
    match x.validity() {
        None => groups
            .iter()
            .zip(values)
            .for_each(|(&g, &v)| f(g as usize, v)),
        Some(valid) => {
            for (i, (&g, &v)) in groups.iter().zip(values).enumerate() {
                if valid.get(i) {
                    f(g as usize, v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn float_col(v: &[Option<f64>]) -> Column {
        Column::Float64(PrimitiveColumn::from_options(v.to_vec()))
    }

    fn int_col(v: &[Option<i64>]) -> Column {
        Column::Int64(PrimitiveColumn::from_options(v.to_vec()))
    }

    /// The functions whose states take one row straight in.
    const FOLDING: [AggFunc; 5] = [
        AggFunc::Sum,
        AggFunc::Avg,
        AggFunc::Min,
        AggFunc::Max,
        AggFunc::Count,
    ];

    /// Rows `rows` of a finished state, floats by their bits.
    fn bits(c: &Column, rows: std::ops::Range<usize>) -> Vec<String> {
        rows.map(|r| match c.scalar_at(r) {
            ScalarValue::Float64(x) => format!("{:x}", x.to_bits()),
            v => format!("{v:?}"),
        })
        .collect()
    }

    /// For every state that says so, one row added straight into a group's state (after
    /// other rows, in every order) gives the bits of that row added to a fresh state merged
    /// in: signed zeros, NaN, infinities, integer overflow, NULLs and text included.
    #[test]
    fn one_row_folds_exactly_where_it_says_so() {
        let floats = [
            0.0,
            -0.0,
            1.5,
            -2.25,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e308,
        ];
        let (f, i) = (float_col, int_col);
        let mut cases: Vec<(AggFunc, DataType, Vec<Column>)> = Vec::new();
        for func in FOLDING {
            let mut cols = Vec::new();
            for &a in &floats {
                for &b in &floats {
                    cols.push(f(&[Some(a), None, Some(b)]));
                }
            }
            cases.push((func, DataType::Float64, cols));
            let ints = [0, -1, 7, i64::MAX, i64::MIN];
            let cols = ints
                .iter()
                .flat_map(|&a| {
                    ints.iter().flat_map(move |&b| {
                        [i(&[Some(a), None, Some(b)]), i(&[Some(a), Some(b), None])]
                    })
                })
                .collect();
            cases.push((func, DataType::Int64, cols));
        }
        let texts = ["b", "a", ""]
            .map(|t| Column::Utf8(morsel_storage::Utf8Column::from_strs([Some(t), None])));
        cases.push((AggFunc::Min, DataType::Utf8, texts.to_vec()));
        cases.push((AggFunc::Max, DataType::Utf8, texts.to_vec()));
        for (func, ty, cols) in cases {
            let new = || Accumulator::new(func, ty, false, None, false).unwrap();
            assert!(new().one_row_folds_exactly(), "{func:?}");
            for col in &cols {
                let n = col.len();
                // All but the last row, then the last row one way or the other.
                let prefix = col.slice(0, n - 1);
                let last = col.slice(n - 1, 1);
                let mut straight = new();
                straight.resize(1);
                let mut folded = new();
                folded.resize(1);
                let rows = vec![0u32; n - 1];
                if straight.update(&rows, Args::one(Some(&prefix))).is_err() {
                    // The rows before overflow already.
                    continue;
                }
                folded.update(&rows, Args::one(Some(&prefix))).unwrap();
                let a = straight.update(&[0], Args::one(Some(&last)));
                let mut fresh = new();
                fresh.resize(1);
                let b = fresh
                    .update(&[0], Args::one(Some(&last)))
                    .and_then(|()| folded.merge(&mut fresh, &[0]));
                assert_eq!(a.is_err(), b.is_err(), "{func:?} {col:?}");
                if a.is_ok() {
                    let (straight, folded) = (straight.finish().unwrap(), folded.finish().unwrap());
                    assert_eq!(
                        bits(&straight, 0..straight.len()),
                        bits(&folded, 0..folded.len()),
                        "{func:?} {col:?}"
                    );
                }
            }
        }
        // Variances do not fold exactly.
        let moments = Accumulator::new(AggFunc::StddevSamp, DataType::Float64, false, None, false);
        assert!(!moments.unwrap().one_row_folds_exactly());
    }

    /// Folding a state's upper groups down (a morsel's fresh states held above the merge's)
    /// gives the bits of merging separate states, for every state that folds so: signed
    /// zeros, NaN, partials that saw no value and an integer sum that overflows included;
    /// the groups folded are left fresh above, a group not listed is left where it is.
    #[test]
    fn folding_upper_groups_equals_merging_separate_states() {
        let (f, i) = (float_col, int_col);
        // Rows of groups 0, 1, 2, 3, 0: before the morsel (the merge's states) and in it
        // (its partial); group 3 is not folded.
        let groups = [0u32, 1, 2, 3, 0];
        let cases = [
            (
                f(&[Some(-0.0), None, None, Some(f64::NAN), Some(2.0)]),
                f(&[Some(-0.0), None, Some(0.25), Some(1.0), Some(-3.0)]),
            ),
            (
                i(&[Some(5), Some(i64::MAX - 9), None, Some(-4), Some(1)]),
                i(&[Some(-5), Some(1), Some(2), None, Some(9)]),
            ),
            (
                i(&[Some(5), Some(i64::MAX), None, Some(-4), Some(1)]),
                i(&[Some(-5), Some(1), Some(2), None, Some(9)]),
            ),
        ];
        let upper = 4;
        for func in FOLDING.into_iter().chain([AggFunc::CountStar]) {
            for (before, partial) in &cases {
                let ty = before.data_type();
                let new = |n: usize| {
                    let mut acc = Accumulator::new(func, ty, false, None, false).unwrap();
                    acc.resize(n);
                    acc
                };
                let arg = |c: &Column| (func != AggFunc::CountStar).then(|| c.clone());
                let mut held = new(2 * upper);
                held.update(&groups, Args::one(arg(before).as_ref()))
                    .unwrap();
                let above: Vec<u32> = groups.iter().map(|&g| g + upper as u32).collect();
                held.update(&above, Args::one(arg(partial).as_ref()))
                    .unwrap();
                let folded = held.fold_upper(upper, &[0, 1, 2]);
                // The same rows in separate states, all but group 3's partial merged.
                let mut merged = new(upper);
                merged
                    .update(&groups, Args::one(arg(before).as_ref()))
                    .unwrap();
                let rows = [0u32, 1, 2, 4];
                let part: Vec<u32> = rows.iter().map(|&r| groups[r as usize]).collect();
                let mut fresh = new(upper);
                fresh
                    .update_at(&part, &rows, Args::one(arg(partial).as_ref()))
                    .unwrap();
                let merge = merged.merge(&mut fresh, &[0, 1, 2, 3]);
                assert_eq!(folded.is_err(), merge.is_err(), "{func:?} {ty:?}");
                if folded.is_err() {
                    continue;
                }
                let mut group_3 = new(upper);
                group_3
                    .update_at(&[3], &[3], Args::one(arg(partial).as_ref()))
                    .unwrap();
                let held = held.finish().unwrap();
                let merged = merged.finish().unwrap();
                let (group_3, empty) = (group_3.finish().unwrap(), new(upper).finish().unwrap());
                assert_eq!(bits(&held, 0..4), bits(&merged, 0..4), "{func:?} {ty:?}");
                assert_eq!(bits(&held, 4..7), bits(&empty, 0..3), "{func:?} {ty:?}");
                assert_eq!(bits(&held, 7..8), bits(&group_3, 3..4), "{func:?} {ty:?}");
            }
        }
        // States that hold values do not fold so.
        let mut median = Accumulator::new(AggFunc::Median, DataType::Float64, false, None, false);
        let median = median.as_mut().unwrap();
        median.resize(2);
        assert!(median.fold_upper(1, &[0]).is_err());
    }

    /// Rows read where they lie give the bits of the same rows gathered first, for every
    /// state (those read in place and those that gather), with NULLs and without, and
    /// `count(*)`.
    #[test]
    fn update_at_equals_update_over_the_rows_gathered() {
        let n = 40;
        let values = |nulls: bool| {
            (0..n).map(move |r| (!nulls || r % 3 != 1).then_some(r as f64 / 7.0 - 2.0))
        };
        let floats = |nulls| Column::Float64(PrimitiveColumn::from_options(values(nulls)));
        let ints = |nulls| {
            let v = values(nulls).map(|x| x.map(|x| (x * 7.0) as i64));
            Column::Int64(PrimitiveColumn::from_options(v))
        };
        let rows: Vec<u32> = (0..n as u32).rev().step_by(3).chain([5, 5, 0]).collect();
        let groups: Vec<u32> = (0..rows.len() as u32).map(|i| i % 4).collect();
        let mut cases = vec![(AggFunc::CountStar, DataType::Int64, None)];
        for nulls in [false, true] {
            for func in [AggFunc::Sum, AggFunc::Avg, AggFunc::Count, AggFunc::Min] {
                cases.push((func, DataType::Float64, Some(floats(nulls))));
                cases.push((func, DataType::Int64, Some(ints(nulls))));
            }
            cases.push((AggFunc::VarSamp, DataType::Float64, Some(floats(nulls))));
        }
        for (func, ty, arg) in cases {
            let new = || {
                let mut acc = Accumulator::new(func, ty, false, None, false).unwrap();
                acc.resize(4);
                acc
            };
            let (mut at, mut gathered) = (new(), new());
            at.update_at(&groups, &rows, Args::one(arg.as_ref()))
                .unwrap();
            let taken = arg.as_ref().map(|c| c.take(&rows));
            gathered.update(&groups, Args::one(taken.as_ref())).unwrap();
            let (a, b) = (at.finish().unwrap(), gathered.finish().unwrap());
            for g in 0..4 {
                assert_eq!(
                    bits(&a, g..g + 1),
                    bits(&b, g..g + 1),
                    "{func:?} {ty:?} group {g}"
                );
            }
        }
    }
}
