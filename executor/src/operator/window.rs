//! Window functions over a materialized input.
//!
//! For each window call the rows are grouped into partitions (hashed keys, partitions in
//! order of first appearance), ordered within each partition by the ORDER BY keys (stable, so
//! ties keep input order), and every function is computed over that order: ranking and offset
//! functions from positions and peer groups, frame functions from each row's frame. Frame
//! aggregates use prefix sums (integers, exactly) or a segment tree (float sums, MIN/MAX), so
//! any frame costs O(log n). Partitions are independent and computed in parallel; results do
//! not depend on the number of workers. Output rows keep the input order. The work runs on
//! the shared pool's workers, as many as the query's thread count.

use morsel_planner::{AggFunc, FrameBound, FrameUnits, WindowExpr, WindowFrame, WindowFunc};
use morsel_storage::{Batch, Column, ColumnBuilder, DataType, PrimitiveBuilder, ScalarValue};

use super::keys::{hash_key, KeyInterner, RowKeys};
use super::par_sort::par_sort_by;
use super::sort::{cmp_keys, KeyColumn};
use crate::error::{ExecError, ExecResult};
use crate::expr::PhysExpr;
use crate::kernels::compare::cmp_rows;
use crate::kernels::select;
use crate::scheduler::parallel_map;

/// A window call compiled against the input schema.
pub struct WindowSpec {
    pub func: WindowFunc,
    pub args: Vec<PhysExpr>,
    pub partition_by: Vec<PhysExpr>,
    /// (key, ascending, nulls first)
    pub order_by: Vec<(PhysExpr, bool, bool)>,
    pub frame: WindowFrame,
    /// `IGNORE NULLS`: first_value, last_value and nth_value skip the frame's NULLs.
    pub ignore_nulls: bool,
    pub ty: DataType,
}

impl WindowSpec {
    pub fn from_expr(
        w: &WindowExpr,
        compile: impl Fn(&morsel_planner::Expr) -> ExecResult<PhysExpr>,
        ty: DataType,
    ) -> ExecResult<Self> {
        Ok(Self {
            func: w.func,
            args: w.args.iter().map(&compile).collect::<ExecResult<_>>()?,
            partition_by: w
                .partition_by
                .iter()
                .map(&compile)
                .collect::<ExecResult<_>>()?,
            order_by: w
                .order_by
                .iter()
                .map(|o| Ok((compile(&o.expr)?, o.asc, o.nulls_first)))
                .collect::<ExecResult<_>>()?,
            frame: w.frame,
            ignore_nulls: w.ignore_nulls,
            ty,
        })
    }
}

/// A segment tree over positions `0..n` combining values with `f` (a monoid with `None` as
/// identity).
struct SegmentTree<T: Copy> {
    size: usize,
    nodes: Vec<Option<T>>,
}

impl<T: Copy> SegmentTree<T> {
    fn new(leaves: Vec<Option<T>>, f: &impl Fn(T, T) -> T) -> Self {
        let size = leaves.len().next_power_of_two().max(1);
        let mut nodes = vec![None; 2 * size];
        for (i, v) in leaves.into_iter().enumerate() {
            nodes[size + i] = v;
        }
        for i in (1..size).rev() {
            nodes[i] = combine(nodes[2 * i], nodes[2 * i + 1], f);
        }
        Self { size, nodes }
    }

    /// Combination of positions `s..e`, left to right.
    fn query(&self, s: usize, e: usize, f: &impl Fn(T, T) -> T) -> Option<T> {
        let (mut lo, mut hi) = (s + self.size, e + self.size);
        let (mut left, mut right) = (None, None);
        while lo < hi {
            if lo & 1 == 1 {
                left = combine(left, self.nodes[lo], f);
                lo += 1;
            }
            if hi & 1 == 1 {
                hi -= 1;
                right = combine(self.nodes[hi], right, f);
            }
            lo /= 2;
            hi /= 2;
        }
        combine(left, right, f)
    }
}

fn combine<T: Copy>(a: Option<T>, b: Option<T>, f: &impl Fn(T, T) -> T) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(f(x, y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// The rows of one partition in window order, with peer-group starts.
struct Partition {
    /// Positions in the sorted order: `start..end`.
    start: usize,
    end: usize,
}

/// Evaluates `spec` over `batch` on up to `threads` workers; the result is in `batch`'s row
/// order.
pub fn evaluate(spec: &WindowSpec, batch: &Batch, threads: usize) -> ExecResult<Column> {
    let n = batch.num_rows();
    if n == 0 {
        return Ok(Column::new_null(spec.ty, 0));
    }
    let eval = |e: &PhysExpr| e.evaluate(batch);
    let args = spec.args.iter().map(eval).collect::<ExecResult<Vec<_>>>()?;
    let keys: Vec<KeyColumn> = spec
        .order_by
        .iter()
        .map(|(e, asc, nf)| Ok((eval(e)?, *asc, *nf)))
        .collect::<ExecResult<_>>()?;

    // Partition ids in order of first appearance, then a stable sort by (partition, keys).
    let mut part_of = vec![0u32; n];
    if !spec.partition_by.is_empty() {
        let cols = spec
            .partition_by
            .iter()
            .map(eval)
            .collect::<ExecResult<Vec<_>>>()?;
        let encoded = RowKeys::encode(&cols, n);
        let mut interner = KeyInterner::new();
        for (i, p) in part_of.iter_mut().enumerate() {
            let k = encoded.key(i);
            *p = interner.intern(k, hash_key(k)).0;
        }
    }
    let mut order: Vec<u32> = (0..n as u32).collect();
    // Ties broken by row: the order is total, and the sort stable.
    par_sort_by(&mut order, threads, |&a, &b| {
        part_of[a as usize]
            .cmp(&part_of[b as usize])
            .then_with(|| cmp_keys(&keys, a as usize, b as usize))
            .then(a.cmp(&b))
    });
    let mut parts = Vec::new();
    let mut s = 0;
    for k in 1..=n {
        if k == n || part_of[order[k] as usize] != part_of[order[s] as usize] {
            parts.push(Partition { start: s, end: k });
            s = k;
        }
    }
    let ctx = Ctx {
        spec,
        args: &args,
        keys: &keys,
        order: &order,
        threads,
    };
    let sorted = ctx.compute(&parts)?;
    // Back to input order.
    let mut inverse = vec![0u32; n];
    for (pos, &row) in order.iter().enumerate() {
        inverse[row as usize] = pos as u32;
    }
    Ok(sorted.take(&inverse))
}

struct Ctx<'a> {
    spec: &'a WindowSpec,
    args: &'a [Column],
    keys: &'a [KeyColumn],
    /// Row of each sorted position.
    order: &'a [u32],
    threads: usize,
}

impl Ctx<'_> {
    fn row(&self, pos: usize) -> usize {
        self.order[pos] as usize
    }

    /// `f` of every partition, in partition order, on up to `threads` workers; the
    /// partitions go out in runs (a million one-row partitions are not a million tasks). The
    /// first error in partition order wins.
    fn per_partition<T: Send>(
        &self,
        parts: &[Partition],
        f: impl Fn(&Partition) -> ExecResult<T> + Sync,
    ) -> ExecResult<Vec<T>> {
        let run = parts.len().div_ceil(self.threads * 8).max(1);
        let runs: Vec<&[Partition]> = parts.chunks(run).collect();
        let mut all = Vec::with_capacity(parts.len());
        for results in parallel_map(self.threads, runs, |_, ps| {
            ps.iter().map(&f).collect::<ExecResult<Vec<T>>>()
        }) {
            all.extend(results?);
        }
        Ok(all)
    }

    /// Start of the peer group of every sorted position, and its end.
    fn peers(&self, p: &Partition) -> (Vec<usize>, Vec<usize>) {
        let len = p.end - p.start;
        let mut starts = vec![p.start; len];
        for k in p.start + 1..p.end {
            starts[k - p.start] = if cmp_keys(self.keys, self.row(k - 1), self.row(k)).is_eq() {
                starts[k - 1 - p.start]
            } else {
                k
            };
        }
        let mut ends = vec![p.end; len];
        for k in (p.start..p.end.saturating_sub(1)).rev() {
            ends[k - p.start] = if starts[k + 1 - p.start] == starts[k - p.start] {
                ends[k + 1 - p.start]
            } else {
                k + 1
            };
        }
        (starts, ends)
    }

    /// The sorted-order column of results over every partition.
    fn compute(&self, parts: &[Partition]) -> ExecResult<Column> {
        let n = self.order.len();
        match self.spec.func {
            WindowFunc::RowNumber
            | WindowFunc::Rank
            | WindowFunc::DenseRank
            | WindowFunc::Ntile => {
                let chunks = self.per_partition(parts, |p| self.ranking(p))?;
                let mut b = PrimitiveBuilder::<i64>::with_capacity(n);
                chunks.iter().flatten().for_each(|v| b.push(*v));
                Ok(Column::Int64(b.finish()))
            }
            WindowFunc::Lag | WindowFunc::Lead => self.offset(parts),
            _ => self.framed(parts),
        }
    }

    fn ranking(&self, p: &Partition) -> ExecResult<Vec<i64>> {
        let len = p.end - p.start;
        Ok(match self.spec.func {
            WindowFunc::RowNumber => (1..=len as i64).collect(),
            WindowFunc::Rank => {
                let (starts, _) = self.peers(p);
                starts.iter().map(|s| (s - p.start) as i64 + 1).collect()
            }
            WindowFunc::DenseRank => {
                let (starts, _) = self.peers(p);
                let mut rank = 0;
                starts
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        if *s == p.start + i {
                            rank += 1;
                        }
                        rank
                    })
                    .collect()
            }
            _ => {
                // ntile(n): the first len % n buckets hold one row more.
                let arg = &self.args[0];
                let mut out = Vec::with_capacity(len);
                for i in 0..len {
                    let buckets = match arg.scalar_at(self.row(p.start + i)) {
                        ScalarValue::Int64(b) if b > 0 => b as usize,
                        ScalarValue::Null => {
                            return Err(ExecError::InvalidArgument(
                                "ntile() takes a positive number of buckets, got NULL".into(),
                            ))
                        }
                        other => {
                            return Err(ExecError::InvalidArgument(format!(
                                "ntile() takes a positive number of buckets, got {other}"
                            )))
                        }
                    };
                    let (q, r) = (len / buckets, len % buckets);
                    let big = r * (q + 1);
                    out.push(if i < big {
                        i / (q + 1) + 1
                    } else {
                        (i - big) / q.max(1) + r + 1
                    } as i64);
                }
                out
            }
        })
    }

    /// lag / lead: the value `offset` positions away within the partition, else the default.
    fn offset(&self, parts: &[Partition]) -> ExecResult<Column> {
        let n = self.order.len();
        let offset = match self.args.get(1).map(|c| c.scalar_at(0)) {
            Some(ScalarValue::Int64(o)) => o,
            Some(ScalarValue::Null) => {
                return Err(ExecError::InvalidArgument(
                    "the offset of lag()/lead() cannot be NULL".into(),
                ))
            }
            _ => 1,
        };
        let offset = if self.spec.func == WindowFunc::Lag {
            offset.saturating_neg()
        } else {
            offset
        };
        // Per sorted position: the row to read, or u32::MAX for the default.
        let mut source = vec![u32::MAX; n];
        // With IGNORE NULLS the offset counts non-NULL values only.
        let (valid, before) = self.valid_positions();
        for p in parts {
            for (k, slot) in source.iter_mut().enumerate().take(p.end).skip(p.start) {
                let t = if !self.spec.ignore_nulls {
                    let t = (k as i64).saturating_add(offset);
                    (t >= p.start as i64 && t < p.end as i64).then_some(t as usize)
                } else if offset == 0 {
                    Some(k)
                } else if offset < 0 {
                    let back = usize::try_from(offset.unsigned_abs()).unwrap_or(usize::MAX);
                    before[k]
                        .checked_sub(back)
                        .filter(|&i| i >= before[p.start])
                        .map(|i| valid[i])
                } else {
                    let ahead = usize::try_from(offset).unwrap_or(usize::MAX);
                    before[k + 1]
                        .checked_add(ahead - 1)
                        .filter(|&i| i < before[p.end])
                        .map(|i| valid[i])
                };
                if let Some(t) = t {
                    *slot = self.order[t];
                }
            }
        }
        let value = self.args[0].take(&source);
        match self.args.get(2) {
            None => Ok(value),
            Some(default) => {
                // The default is evaluated on the current row.
                let own = default.take(self.order);
                let choice: Vec<u32> = source.iter().map(|&s| (s == u32::MAX) as u32).collect();
                select::interleave(&[&value, &own], &choice, self.spec.ty)
            }
        }
    }

    /// Frame bounds `[s, e)` (sorted positions) of every position of partition `p`.
    fn frames(&self, p: &Partition) -> ExecResult<Vec<(usize, usize)>> {
        let (starts, ends) = self.peers(p);
        let f = self.spec.frame;
        let range_keys = if f.units == FrameUnits::Range
            && [f.start, f.end]
                .iter()
                .any(|b| matches!(b, FrameBound::Preceding(_) | FrameBound::Following(_)))
        {
            Some(self.range_values(p)?)
        } else {
            None
        };
        // For GROUPS: each position's peer group, and where each group starts and ends.
        let (group_of, group_starts, group_ends) = if f.units == FrameUnits::Groups {
            let mut group_of = Vec::with_capacity(p.end - p.start);
            let (mut gs, mut ge): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
            for i in 0..p.end - p.start {
                if gs.last() != Some(&starts[i]) {
                    gs.push(starts[i]);
                    ge.push(ends[i]);
                }
                group_of.push(gs.len() - 1);
            }
            (group_of, gs, ge)
        } else {
            (Vec::new(), Vec::new(), Vec::new())
        };
        // The start (or end) of the peer group `delta` groups from position k's, clamped to
        // the partition.
        let group_bound = |k: usize, delta: i64, is_start: bool| -> usize {
            let g = (group_of[k - p.start] as i64).saturating_add(delta);
            if g < 0 {
                p.start
            } else if g >= group_starts.len() as i64 {
                p.end
            } else if is_start {
                group_starts[g as usize]
            } else {
                group_ends[g as usize]
            }
        };
        let mut out = Vec::with_capacity(p.end - p.start);
        for k in p.start..p.end {
            let (qs, qe) = (starts[k - p.start], ends[k - p.start]);
            let bound = |b: FrameBound, is_start: bool| -> usize {
                match (f.units, b) {
                    (_, FrameBound::UnboundedPreceding) => p.start,
                    (_, FrameBound::UnboundedFollowing) => p.end,
                    (FrameUnits::Rows, FrameBound::CurrentRow) => k + !is_start as usize,
                    (FrameUnits::Groups, FrameBound::Preceding(v)) => {
                        group_bound(k, -(v.min(i64::MAX as f64) as i64), is_start)
                    }
                    (FrameUnits::Groups, FrameBound::Following(v)) => {
                        group_bound(k, v.min(i64::MAX as f64) as i64, is_start)
                    }
                    (FrameUnits::Range | FrameUnits::Groups, FrameBound::CurrentRow) => {
                        if is_start {
                            qs
                        } else {
                            qe
                        }
                    }
                    // Offsets reach up to i64::MAX rows: the arithmetic saturates, and
                    // the partition's ends clamp it.
                    (FrameUnits::Rows, FrameBound::Preceding(v)) => {
                        let t = (k as i64 + !is_start as i64).saturating_sub(v as i64);
                        t.clamp(p.start as i64, p.end as i64) as usize
                    }
                    (FrameUnits::Rows, FrameBound::Following(v)) => {
                        let t = (k as i64 + !is_start as i64).saturating_add(v as i64);
                        t.clamp(p.start as i64, p.end as i64) as usize
                    }
                    (FrameUnits::Range, b) => match &range_keys {
                        Some(rk) => rk.bound(k, b, is_start, qs, qe),
                        None => qs,
                    },
                }
            };
            let (s, e) = (bound(f.start, true), bound(f.end, false));
            out.push((s, e.max(s)));
        }
        Ok(out)
    }

    /// The ORDER BY values of a RANGE frame with offsets (one numeric or date key).
    fn range_values(&self, p: &Partition) -> ExecResult<RangeKeys> {
        let [(key, asc, _)] = self.keys else {
            return Err(ExecError::InvalidArgument(
                "RANGE frames with an offset need exactly one ORDER BY key".into(),
            ));
        };
        let value = |pos: usize| -> ExecResult<Option<f64>> {
            let r = self.row(pos);
            Ok(match key.scalar_at(r) {
                ScalarValue::Null => None,
                ScalarValue::Int32(v) | ScalarValue::Date32(v) => Some(v as f64),
                ScalarValue::Int64(v) => Some(v as f64),
                ScalarValue::Float64(v) => Some(v),
                other => {
                    return Err(ExecError::InvalidArgument(format!(
                        "RANGE frames with an offset need a numeric or date ORDER BY key, got {}",
                        other.data_type().sql_name()
                    )))
                }
            })
        };
        let values = (p.start..p.end)
            .map(value)
            .collect::<ExecResult<Vec<_>>>()?;
        // The non-NULL keys form one contiguous, sorted run.
        let first = values.iter().position(Option::is_some);
        let last = values.iter().rposition(Option::is_some);
        let (ns, ne) = match (first, last) {
            (Some(a), Some(b)) => (p.start + a, p.start + b + 1),
            _ => (p.start, p.start),
        };
        Ok(RangeKeys {
            base: p.start,
            values,
            asc: *asc,
            ns,
            ne,
        })
    }

    /// FIRST_VALUE, LAST_VALUE and aggregates over each row's frame.
    fn framed(&self, parts: &[Partition]) -> ExecResult<Column> {
        let frames: Vec<(usize, usize)> = self
            .per_partition(parts, |p| self.frames(p))?
            .into_iter()
            .flatten()
            .collect();
        let ty = self.spec.ty;
        match self.spec.func {
            WindowFunc::FirstValue | WindowFunc::LastValue | WindowFunc::NthValue => {
                let source = self.frame_positions(&frames)?;
                Ok(self.args[0].take(&source))
            }
            WindowFunc::Aggregate(AggFunc::CountStar) => {
                let mut b = PrimitiveBuilder::<i64>::with_capacity(frames.len());
                frames.iter().for_each(|(s, e)| b.push((e - s) as i64));
                Ok(Column::Int64(b.finish()))
            }
            WindowFunc::Aggregate(func) => self.aggregate(func, &frames, ty),
            other => Err(ExecError::Internal(format!(
                "{}() is not a frame function",
                other.name()
            ))),
        }
    }

    /// With IGNORE NULLS: the sorted positions whose first argument is not NULL, and how many
    /// of them come before each position (one more entry, for the end); empty otherwise.
    fn valid_positions(&self) -> (Vec<usize>, Vec<usize>) {
        if !self.spec.ignore_nulls {
            return (Vec::new(), Vec::new());
        }
        let arg = &self.args[0];
        let valid: Vec<usize> = (0..self.order.len())
            .filter(|&p| arg.is_valid(self.order[p] as usize))
            .collect();
        let mut before = vec![0usize; self.order.len() + 1];
        for p in 0..self.order.len() {
            before[p + 1] = before[p] + arg.is_valid(self.order[p] as usize) as usize;
        }
        (valid, before)
    }

    /// For first_value, last_value and nth_value: per sorted position, the row its frame
    /// reads (u32::MAX for NULL: an empty frame, or one without an n-th row). With IGNORE
    /// NULLS the frame's rows are its non-NULL values.
    fn frame_positions(&self, frames: &[(usize, usize)]) -> ExecResult<Vec<u32>> {
        let func = self.spec.func;
        // The n of nth_value, read on each row (1-based; below 1 is an error).
        let nth = |k: usize| -> ExecResult<Option<usize>> {
            if func != WindowFunc::NthValue {
                return Ok(Some(1));
            }
            let n = match self.args[1].scalar_at(self.order[k] as usize) {
                ScalarValue::Int64(n) => n,
                _ => return Ok(None),
            };
            if n < 1 {
                return Err(ExecError::InvalidArgument(format!(
                    "nth_value(): the position must be at least 1, got {n}"
                )));
            }
            Ok(usize::try_from(n).ok())
        };
        let (valid, before) = self.valid_positions();
        let mut source = Vec::with_capacity(frames.len());
        for (k, &(s, e)) in frames.iter().enumerate() {
            let pos = match (self.spec.ignore_nulls, func) {
                (_, _) if s >= e => None,
                (false, WindowFunc::LastValue) => Some(e - 1),
                (false, _) => nth(k)?
                    .and_then(|n| s.checked_add(n - 1))
                    .filter(|&p| p < e),
                (true, WindowFunc::LastValue) => {
                    (before[e] > before[s]).then(|| valid[before[e] - 1])
                }
                (true, _) => nth(k)?
                    .and_then(|n| before[s].checked_add(n - 1))
                    .filter(|&i| i < before[e])
                    .map(|i| valid[i]),
            };
            source.push(pos.map_or(u32::MAX, |p| self.order[p]));
        }
        Ok(source)
    }

    fn aggregate(
        &self,
        func: AggFunc,
        frames: &[(usize, usize)],
        ty: DataType,
    ) -> ExecResult<Column> {
        let n = self.order.len();
        let arg = self.args[0].take(self.order);
        // Valid values before each sorted position.
        let mut valid = vec![0i64; n + 1];
        for i in 0..n {
            valid[i + 1] = valid[i] + arg.is_valid(i) as i64;
        }
        let count = |s: usize, e: usize| valid[e] - valid[s];
        match (func, &arg) {
            (AggFunc::Count, _) => {
                let mut b = PrimitiveBuilder::<i64>::with_capacity(frames.len());
                frames.iter().for_each(|&(s, e)| b.push(count(s, e)));
                Ok(Column::Int64(b.finish()))
            }
            (AggFunc::Sum | AggFunc::Avg, Column::Int64(x)) => {
                let mut prefix = vec![0i128; n + 1];
                for i in 0..n {
                    prefix[i + 1] = prefix[i]
                        + if x.is_valid(i) {
                            x.values()[i] as i128
                        } else {
                            0
                        };
                }
                let mut out = ColumnBuilder::with_capacity(ty, frames.len());
                for &(s, e) in frames {
                    let c = count(s, e);
                    let sum = prefix[e] - prefix[s];
                    let v = if c == 0 {
                        ScalarValue::Null
                    } else if func == AggFunc::Avg {
                        ScalarValue::Float64(sum as f64 / c as f64)
                    } else {
                        ScalarValue::Int64(i64::try_from(sum).map_err(|_| ExecError::Overflow {
                            op: "sum()",
                            ty: DataType::Int64,
                        })?)
                    };
                    out.push_scalar(&v)?;
                }
                Ok(out.finish())
            }
            (AggFunc::Sum | AggFunc::Avg, Column::Float64(x)) => {
                let add = |a: f64, b: f64| a + b;
                let tree = SegmentTree::new(
                    (0..n)
                        .map(|i| x.is_valid(i).then(|| x.values()[i]))
                        .collect(),
                    &add,
                );
                let mut b = PrimitiveBuilder::<f64>::with_capacity(frames.len());
                for &(s, e) in frames {
                    let sum = tree.query(s, e, &add);
                    b.push_option(match (sum, func) {
                        (Some(v), AggFunc::Avg) => Some(v / count(s, e) as f64),
                        (v, _) => v,
                    });
                }
                Ok(Column::Float64(b.finish()))
            }
            (AggFunc::Min | AggFunc::Max, _) => {
                let min = func == AggFunc::Min;
                let pick = |a: u32, b: u32| {
                    let ord = cmp_rows(&arg, a as usize, &arg, b as usize);
                    let take_b = if min { ord.is_gt() } else { ord.is_lt() };
                    if take_b {
                        b
                    } else {
                        a
                    }
                };
                let tree = SegmentTree::new(
                    (0..n)
                        .map(|i| arg.is_valid(i).then_some(i as u32))
                        .collect(),
                    &pick,
                );
                let source: Vec<u32> = frames
                    .iter()
                    .map(|&(s, e)| tree.query(s, e, &pick).unwrap_or(u32::MAX))
                    .collect();
                Ok(arg.take(&source))
            }
            (f, c) => Err(ExecError::Internal(format!(
                "window {}() over {}",
                f.name(),
                c.data_type()
            ))),
        }
    }
}

/// ORDER BY values of one partition for RANGE offsets; `ns..ne` holds the non-NULL ones.
struct RangeKeys {
    base: usize,
    values: Vec<Option<f64>>,
    asc: bool,
    ns: usize,
    ne: usize,
}

impl RangeKeys {
    fn get(&self, pos: usize) -> f64 {
        self.values[pos - self.base].unwrap_or(f64::NAN)
    }

    /// First position in `ns..ne` whose value is past `t` (`strict`: beyond it) in the sort
    /// direction.
    fn search(&self, t: f64, strict: bool) -> usize {
        let (mut lo, mut hi) = (self.ns, self.ne);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let v = self.get(mid);
            let before = match (self.asc, strict) {
                (true, false) => v < t,
                (true, true) => v <= t,
                (false, false) => v > t,
                (false, true) => v >= t,
            };
            if before {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    fn bound(&self, k: usize, b: FrameBound, is_start: bool, qs: usize, qe: usize) -> usize {
        let Some(v) = self.values[k - self.base] else {
            // A NULL key's frame with offsets is its peers (the other NULLs).
            return if is_start { qs } else { qe };
        };
        let dir = if self.asc { 1.0 } else { -1.0 };
        let t = match b {
            FrameBound::Preceding(d) => v - dir * d,
            FrameBound::Following(d) => v + dir * d,
            _ => v,
        };
        self.search(t, !is_start)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use morsel_planner::FrameUnits;
    use morsel_storage::{Field, PrimitiveColumn, Schema};

    use super::*;

    const ROWS: usize = 100_000;

    /// Seven partitions (`k`), order keys with many ties (`v`), and values whose sums are exact
    /// in binary (`x`, eighths below 125), over enough rows for the parallel sort.
    fn table() -> (Vec<i64>, Vec<i64>, Vec<f64>, Batch) {
        let k: Vec<i64> = (0..ROWS as i64).map(|i| i % 7).collect();
        let v: Vec<i64> = (0..ROWS as i64).map(|i| (i * 37) % 100).collect();
        let x: Vec<f64> = (0..ROWS)
            .map(|i| ((i * 7919) % 1000) as f64 / 8.0)
            .collect();
        let fields = vec![
            Field::new("k", DataType::Int64, false),
            Field::new("v", DataType::Int64, false),
            Field::new("x", DataType::Float64, false),
        ];
        let columns = vec![
            Column::Int64(PrimitiveColumn::from_vec(k.clone())),
            Column::Int64(PrimitiveColumn::from_vec(v.clone())),
            Column::Float64(PrimitiveColumn::from_vec(x.clone())),
        ];
        let batch = Batch::try_new(Arc::new(Schema::new(fields)), columns, ROWS).unwrap();
        (k, v, x, batch)
    }

    /// `func(args) OVER (PARTITION BY k ORDER BY v <frame>)`.
    fn over_k_by_v(func: WindowFunc, args: Vec<PhysExpr>, frame: WindowFrame) -> WindowSpec {
        WindowSpec {
            func,
            args,
            partition_by: vec![PhysExpr::Column(0)],
            order_by: vec![(PhysExpr::Column(1), true, false)],
            frame,
            ignore_nulls: false,
            ty: match func {
                WindowFunc::RowNumber => DataType::Int64,
                _ => DataType::Float64,
            },
        }
    }

    #[test]
    fn ties_keep_input_order_and_results_match_at_any_thread_count() {
        let (k, v, x, batch) = table();
        // Reference: rows in (partition, key) order, ties in input order (a stable sort).
        let mut order: Vec<usize> = (0..ROWS).collect();
        order.sort_by_key(|&i| (k[i], v[i]));
        let (mut row_number, mut sum3) = (vec![0i64; ROWS], vec![0.0f64; ROWS]);
        let mut first = 0;
        for (pos, &row) in order.iter().enumerate() {
            if pos > 0 && k[order[pos - 1]] != k[row] {
                first = pos;
            }
            row_number[row] = (pos - first + 1) as i64;
            sum3[row] = (pos.saturating_sub(2).max(first)..=pos)
                .map(|p| x[order[p]])
                .sum();
        }
        let numbered = over_k_by_v(
            WindowFunc::RowNumber,
            vec![],
            WindowFrame::default_for(true),
        );
        let rows_frame = WindowFrame {
            units: FrameUnits::Rows,
            start: FrameBound::Preceding(2.0),
            end: FrameBound::CurrentRow,
        };
        let summed = over_k_by_v(
            WindowFunc::Aggregate(AggFunc::Sum),
            vec![PhysExpr::Column(2)],
            rows_frame,
        );
        for threads in [1, 2, 8] {
            let got = evaluate(&numbered, &batch, threads).unwrap();
            let Column::Int64(got) = got else {
                panic!("row_number() is BIGINT")
            };
            assert_eq!(
                got.values(),
                &row_number[..],
                "row_number at {threads} threads"
            );
            let got = evaluate(&summed, &batch, threads).unwrap();
            let Column::Float64(got) = got else {
                panic!("sum(DOUBLE) is DOUBLE")
            };
            assert_eq!(got.values(), &sum3[..], "framed sum at {threads} threads");
        }
    }
}
