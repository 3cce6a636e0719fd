//! Row-count estimates for planning: exact counts for in-memory tables, file size over the
//! sampled record width for CSV files, distinct-value counts from the CSV inference sample,
//! the fraction of sampled values a CSV scan's comparisons with constants keep (all the
//! comparisons on one column evaluated together, so `BETWEEN` is not two independent
//! halves), and fixed selectivities for other predicate shapes (the textbook guesses). An equi-join of `l`
//! and `r` rows on keys with `d` distinct values is estimated at `l * r / d`; without
//! statistics for a key, as a foreign-key join (the larger side's rows); a semi join keeps
//! the share of left keys the right side has. A memory table's distinct counts and filter
//! fractions come from its sample rows (`plan::MemTable`, `sample_filter`). Estimates depend
//! only on the data, so plans are the same for any thread count.

use std::cell::RefCell;
use std::collections::HashMap;

use foldhash::fast::FixedState;

use crate::expr::{BinaryOp, ColumnRef, Expr};
use morsel_storage::ScalarValue;

use crate::plan::{CsvFiles, JoinKind, LogicalPlan, Scan, TableSource};

/// The estimated number of rows `plan` produces.
pub fn estimate_rows(plan: &LogicalPlan) -> f64 {
    let key = plan as *const LogicalPlan as usize;
    let pinned = PINNED.with(|p| p.borrow().as_ref().and_then(|m| m.get(&key).copied()));
    if let Some(Some(rows)) = pinned {
        return rows;
    }
    let rows = memoized(|| {
        if let Some(rows) =
            MEMO.with(|m| m.borrow().as_ref().and_then(|m| m.rows.get(&key).copied()))
        {
            return rows;
        }
        let rows = compute_rows(plan);
        MEMO.with(|m| m.borrow_mut().as_mut().map(|m| m.rows.insert(key, rows)));
        rows
    });
    if pinned.is_some() {
        PINNED.with(|p| p.borrow_mut().as_mut().map(|m| m.insert(key, Some(rows))));
    }
    rows
}

/// A map keyed by plan node addresses: hashed with foldhash, not SipHash (planning a
/// 64-table join asks these maps hundreds of thousands of times; the keys are not chosen
/// by anyone who could make them collide).
type ByAddress<K, V> = HashMap<K, V, FixedState>;

/// Estimates by plan node address, while an outermost estimate runs.
#[derive(Default)]
struct Memo {
    rows: ByAddress<usize, f64>,
    /// Distinct values by (node address, output column).
    distinct: ByAddress<(usize, usize), Option<f64>>,
}

thread_local! {
    static MEMO: RefCell<Option<Memo>> = const { RefCell::new(None) };
    /// The nodes of a plan its holder keeps unchanged (see [`with_estimates_of`]), by
    /// address, with their estimates once asked for.
    static PINNED: RefCell<Option<ByAddress<usize, Option<f64>>>> = const { RefCell::new(None) };
}

/// Runs `f` with the estimates of `root`'s nodes remembered for its whole length: for a
/// caller that asks for many of them while it holds the plan unchanged (the executor as it
/// builds pipelines and labels every stage). Other plans (temporaries) are estimated as
/// usual.
pub fn with_estimates_of<R>(root: &LogicalPlan, f: impl FnOnce() -> R) -> R {
    fn pin(plan: &LogicalPlan, nodes: &mut ByAddress<usize, Option<f64>>) {
        nodes.insert(plan as *const LogicalPlan as usize, None);
        plan.children().into_iter().for_each(|c| pin(c, nodes));
    }
    struct Restore(Option<ByAddress<usize, Option<f64>>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let outer = self.0.take();
            PINNED.with(|p| *p.borrow_mut() = outer);
        }
    }
    let mut nodes = ByAddress::default();
    pin(root, &mut nodes);
    let _restore = Restore(PINNED.with(|p| p.borrow_mut().replace(nodes)));
    f()
}

/// Runs `f` with row and distinct-value estimates remembered by plan node address. Nested
/// calls share the outermost call's memo, which ends with it: the plans it estimates stay
/// borrowed and unchanged throughout, and nothing in here (nor in a caller's `f`) builds
/// plans, so an address names one node.
/// (Every node's estimate reads its inputs' and, through distinct counts, its inputs'
/// inputs' estimates: without the memo a join tree's estimate is quadratic or worse.)
pub(crate) fn memoized<R>(f: impl FnOnce() -> R) -> R {
    struct Outermost;
    impl Drop for Outermost {
        fn drop(&mut self) {
            MEMO.with(|m| *m.borrow_mut() = None);
        }
    }
    let started = MEMO.with(|m| {
        let mut m = m.borrow_mut();
        m.is_none().then(|| *m = Some(Memo::default())).is_some()
    });
    // (Not `then_some`: its argument is built, and dropped, even where the memo was
    // already there, which would end the outer call's memo.)
    let _guard = if started { Some(Outermost) } else { None };
    f()
}

fn compute_rows(plan: &LogicalPlan) -> f64 {
    match plan {
        LogicalPlan::Scan(s) => {
            let rows = match &s.source {
                TableSource::Csv(files) => files.readers().iter().map(|r| r.estimated_rows()).sum(),
                TableSource::Memory(m) => m.num_rows() as f64,
            };
            rows * scan_selectivity(s)
        }
        LogicalPlan::Filter { input, predicate } => estimate_rows(input) * selectivity(predicate),
        LogicalPlan::Projection { input, .. }
        | LogicalPlan::Sort { input, .. }
        | LogicalPlan::Window { input, .. }
        | LogicalPlan::SubqueryAlias { input, .. } => estimate_rows(input),
        LogicalPlan::Aggregate { input, group, .. } => {
            let rows = estimate_rows(input);
            if group.is_empty() {
                return 1.0;
            }
            // Groups: the product of the keys' distinct counts, at most the input's rows;
            // without statistics, a tenth of the rows.
            let distinct: Option<f64> = group.iter().map(|g| expr_distinct(g, input)).product();
            distinct.map_or(rows / 10.0, |d| d.min(rows)).max(1.0)
        }
        LogicalPlan::Distinct { input } => (estimate_rows(input) / 2.0).max(1.0),
        LogicalPlan::Limit { input, skip, fetch } => {
            let rows = (estimate_rows(input) - *skip as f64).max(0.0);
            fetch.map_or(rows, |f| rows.min(f as f64))
        }
        LogicalPlan::Union { inputs, .. } => inputs.iter().map(estimate_rows).sum(),
        LogicalPlan::Values { rows, .. } => rows.len() as f64,
        LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            filter,
            ..
        } => join_rows(left, right, kind, on, filter.as_ref()),
    }
}

/// The estimated rows of a join of `left` and `right` (as [`estimate_rows`] gives for the
/// join node), for a join not built yet.
pub fn join_rows(
    left: &LogicalPlan,
    right: &LogicalPlan,
    kind: &JoinKind,
    on: &[(Expr, Expr)],
    filter: Option<&Expr>,
) -> f64 {
    let (l, r) = (estimate_rows(left), estimate_rows(right));
    let sides = Sides { left, right, l, r };
    let keys = on.iter().map(|(a, b)| (a, b));
    let inner = keyed_join_rows(l, r, !on.is_empty(), sides.key_distinct(keys))
        * filter.map_or(1.0, selectivity);
    match kind {
        JoinKind::Inner => inner,
        JoinKind::Left => inner.max(l),
        JoinKind::Right => inner.max(r),
        JoinKind::Full => inner.max(l + r),
        JoinKind::Semi => l * sides.semi_fraction(on, filter),
        JoinKind::Anti { .. } => l * (1.0 - sides.semi_fraction(on, filter)).max(ANTI_MIN),
        JoinKind::Mark { .. } | JoinKind::Count => l,
    }
}

/// The estimated rows of an inner join of `left` and `right` on `keys` whose residual filter
/// is the conjunction of `filter`: what [`join_rows`] gives for it, for a candidate join
/// whose keys and filter are not built (a join order search estimates thousands).
pub fn inner_join_rows<'a>(
    left: &LogicalPlan,
    right: &LogicalPlan,
    keys: impl Iterator<Item = (&'a Expr, &'a Expr)> + Clone,
    filter: impl Iterator<Item = &'a Expr>,
) -> f64 {
    let (l, r) = (estimate_rows(left), estimate_rows(right));
    let sides = Sides { left, right, l, r };
    let keyed = keys.clone().next().is_some();
    // A conjunction's selectivity is its parts' product, in the same order.
    let kept: f64 = filter.map(selectivity).product();
    keyed_join_rows(l, r, keyed, sides.key_distinct(keys)) * kept
}

/// An anti join is taken to keep at least this share of its left rows (when every left key
/// seems to have a match, a filter or skew usually leaves some without).
const ANTI_MIN: f64 = 0.1;

/// A join's two inputs with their estimated rows.
struct Sides<'a> {
    left: &'a LogicalPlan,
    right: &'a LogicalPlan,
    l: f64,
    r: f64,
}

impl Sides<'_> {
    /// The most selective key's distinct count (the larger of its two sides' counts).
    fn key_distinct<'a>(&self, on: impl Iterator<Item = (&'a Expr, &'a Expr)>) -> Option<f64> {
        on.filter_map(|(l, r)| {
            let dl = expr_distinct(l, self.left)?;
            let dr = expr_distinct(r, self.right)?;
            Some(dl.max(dr))
        })
        .reduce(f64::max)
    }

    /// The share of left rows a semi join keeps: with keys whose distinct counts are known
    /// on both sides, the right side's count over the left's (at most 1; each side's count
    /// the product over its key columns, at most its rows), times the residual filter's
    /// selectivity; a half otherwise.
    fn semi_fraction(&self, on: &[(Expr, Expr)], filter: Option<&Expr>) -> f64 {
        let side = |plan: &LogicalPlan, rows: f64, exprs: &mut dyn Iterator<Item = &Expr>| {
            let d: Option<f64> = exprs.map(|e| expr_distinct(e, plan)).product();
            d.map(|d| d.min(rows).max(1.0))
        };
        let keyed = match on.is_empty() {
            true => None,
            false => side(self.left, self.l, &mut on.iter().map(|(l, _)| l)).zip(side(
                self.right,
                self.r,
                &mut on.iter().map(|(_, r)| r),
            )),
        };
        let keys = keyed.map_or(0.5, |(dl, dr)| (dr / dl).min(1.0));
        keys * filter.map_or(1.0, selectivity)
    }
}

/// Rows of an inner join of `l` and `r` rows: with keys of `distinct` values, `l * r /
/// distinct`; with keys but no statistics, each row of the larger side is assumed to find one
/// match (a foreign key into the smaller side); without keys, the product.
pub fn keyed_join_rows(l: f64, r: f64, keyed: bool, distinct: Option<f64>) -> f64 {
    match (keyed, distinct) {
        (false, _) => l * r,
        (true, Some(d)) if d >= 1.0 => l * r / d,
        (true, _) => l.max(r),
    }
}

/// The most selective key's distinct count (the larger of its two sides' counts).
pub fn key_distinct(on: &[(Expr, Expr)], left: &LogicalPlan, right: &LogicalPlan) -> Option<f64> {
    Sides {
        left,
        right,
        l: estimate_rows(left),
        r: estimate_rows(right),
    }
    .key_distinct(on.iter().map(|(a, b)| (a, b)))
}

/// Distinct values of `e` (a column, or a cast or alias of one) of `plan`'s output.
pub fn expr_distinct(e: &Expr, plan: &LogicalPlan) -> Option<f64> {
    match e {
        Expr::Column(c) => distinct_values(plan, c),
        Expr::Cast { expr, .. } | Expr::Alias { expr, .. } => expr_distinct(expr, plan),
        _ => None,
    }
}

/// Estimated distinct values of column `c` of `plan`'s output (never more than its rows).
pub fn distinct_values(plan: &LogicalPlan, c: &ColumnRef) -> Option<f64> {
    distinct_at(plan, plan.schema().position(c)?)
}

/// Estimated distinct values of output column `i` of `plan` (never more than its rows).
fn distinct_at(plan: &LogicalPlan, i: usize) -> Option<f64> {
    let key = (plan as *const LogicalPlan as usize, i);
    memoized(|| {
        let known = MEMO.with(|m| {
            m.borrow()
                .as_ref()
                .and_then(|m| m.distinct.get(&key).copied())
        });
        if let Some(d) = known {
            return d;
        }
        let d = source_distinct(plan, i).map(|d| d.min(estimate_rows(plan)).max(1.0));
        MEMO.with(|m| m.borrow_mut().as_mut().map(|m| m.distinct.insert(key, d)));
        d
    })
}

/// Distinct values of output column `i` where it comes from, capped by each node's rows
/// below.
fn source_distinct(plan: &LogicalPlan, i: usize) -> Option<f64> {
    match plan {
        LogicalPlan::Scan(s) => {
            let col = s.projection.as_ref().map_or(i, |p| p[i]);
            let d = match &s.source {
                TableSource::Csv(files) => files
                    .readers()
                    .iter()
                    .map(|r| r.estimated_distinct(col))
                    .sum::<Option<f64>>()?,
                TableSource::Memory(m) => m.estimated_distinct(col)?,
            };
            Some(d)
        }
        LogicalPlan::Filter { input, .. }
        | LogicalPlan::Sort { input, .. }
        | LogicalPlan::Limit { input, .. }
        | LogicalPlan::Distinct { input }
        | LogicalPlan::SubqueryAlias { input, .. } => distinct_at(input, i),
        LogicalPlan::Window { input, .. } if i < input.schema().len() => distinct_at(input, i),
        LogicalPlan::Projection { input, exprs, .. } => expr_distinct(&exprs[i], input),
        LogicalPlan::Aggregate { input, group, .. } if i < group.len() => {
            expr_distinct(&group[i], input)
        }
        LogicalPlan::Join { left, right, .. } => {
            let nl = left.schema().len();
            if i < nl {
                distinct_at(left, i)
            } else if right.schema().len() > i - nl {
                distinct_at(right, i - nl)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// The fraction of a scan's rows its filters keep: comparisons of a CSV column with a
/// constant by the inference sample (per column, all such comparisons at once), the rest by
/// [`selectivity`]; a memory table's one-column conjuncts by its sample rows (see
/// `sample_filter`); columns are taken as independent. Remembered by the source.
fn scan_selectivity(scan: &Scan) -> f64 {
    let measure = || match &scan.source {
        TableSource::Csv(files) => csv_scan_selectivity(scan, files),
        TableSource::Memory(table) => {
            super::sample_filter::memory_scan_selectivity(scan, table, selectivity)
        }
    };
    let remembered = scan.source.scan_selectivities();
    remembered.get(scan.projection.as_deref(), &scan.filters, measure)
}

/// [`scan_selectivity`] of a scan of CSV files.
fn csv_scan_selectivity(scan: &Scan, files: &CsvFiles) -> f64 {
    let reader = &files.readers()[0];
    // (file column, comparison, constant) of every `column op constant` conjunct.
    let mut ranges: Vec<(usize, BinaryOp, f64)> = Vec::new();
    let mut other = 1.0;
    for f in &scan.filters {
        match column_comparison(f, scan) {
            Some(r) => ranges.push(r),
            None => other *= selectivity(f),
        }
    }
    let mut columns: Vec<usize> = ranges.iter().map(|r| r.0).collect();
    columns.sort_unstable();
    columns.dedup();
    let mut sampled = 1.0;
    for c in columns {
        let on_c: Vec<(BinaryOp, f64)> = ranges
            .iter()
            .filter(|r| r.0 == c)
            .map(|r| (r.1, r.2))
            .collect();
        let fraction = reader.sample_fraction(c, |x| {
            on_c.iter().all(|&(op, v)| match op {
                BinaryOp::Lt => x < v,
                BinaryOp::LtEq => x <= v,
                BinaryOp::Gt => x > v,
                BinaryOp::GtEq => x >= v,
                BinaryOp::Eq => x == v,
                _ => x != v,
            })
        });
        sampled *= fraction.unwrap_or_else(|| {
            on_c.iter()
                .map(|(op, _)| match op {
                    BinaryOp::Eq => 0.1,
                    BinaryOp::NotEq => 0.9,
                    _ => 0.33,
                })
                .product()
        });
    }
    other * sampled
}

/// `column op constant` (either way round) over a scan's file column, with a numeric, date
/// or timestamp constant as a double (as the inference sample holds them).
fn column_comparison(e: &Expr, scan: &Scan) -> Option<(usize, BinaryOp, f64)> {
    let Expr::Binary { left, op, right } = e else {
        return None;
    };
    if !op.is_comparison() {
        return None;
    }
    let (c, v, op) = match (left.as_ref(), right.as_ref()) {
        (Expr::Column(c), Expr::Literal(v)) => (c, v, *op),
        (Expr::Literal(v), Expr::Column(c)) => (c, v, op.swap()),
        _ => return None,
    };
    let value = match v {
        ScalarValue::Int32(x) | ScalarValue::Date32(x) => f64::from(*x),
        ScalarValue::Int64(x) | ScalarValue::Timestamp(x) => *x as f64,
        ScalarValue::Float64(x) => *x,
        _ => return None,
    };
    let i = scan.schema.position(c)?;
    let file_col = scan.projection.as_ref().map_or(i, |p| p[i]);
    Some((file_col, op, value))
}

/// The fraction of rows a predicate keeps (a guess by its shape).
pub fn selectivity(e: &Expr) -> f64 {
    match e {
        Expr::Binary {
            left,
            op: BinaryOp::And,
            right,
        } => selectivity(left) * selectivity(right),
        Expr::Binary {
            left,
            op: BinaryOp::Or,
            right,
        } => {
            let (a, b) = (selectivity(left), selectivity(right));
            a + b - a * b
        }
        Expr::Not(inner) => 1.0 - selectivity(inner),
        Expr::Binary {
            op: BinaryOp::Eq, ..
        } => 0.1,
        Expr::Binary {
            op: BinaryOp::NotEq,
            ..
        } => 0.9,
        Expr::Binary { op, .. } if op.is_comparison() => 0.33,
        Expr::Between { negated, .. } => {
            if *negated {
                0.75
            } else {
                0.25
            }
        }
        Expr::Like { negated, .. } => {
            if *negated {
                0.9
            } else {
                0.25
            }
        }
        Expr::InList { list, negated, .. } => {
            let s = (0.1 * list.len() as f64).min(0.5);
            if *negated {
                1.0 - s
            } else {
                s
            }
        }
        Expr::IsNull(_) => 0.1,
        Expr::IsNotNull(_) => 0.9,
        Expr::Alias { expr, .. } => selectivity(expr),
        _ => 0.5,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use morsel_storage::{Batch, Column, DataType, Field, PrimitiveColumn, Schema};

    use super::{estimate_rows, with_estimates_of};
    use crate::expr::{col, lit};
    use crate::plan::{JoinKind, LogicalPlan, MemTable, PlanBuilder, TableSource};

    /// A memory table with column `k`: `rows` rows drawing from `0..distinct` in no order
    /// (a cycle would line up with the evenly spaced sample).
    fn table(name: &str, k: &str, rows: i64, distinct: i64) -> PlanBuilder {
        let schema = Arc::new(Schema::new(vec![Field::new(k, DataType::Int64, false)]));
        let draw = |i: i64| ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) as i64;
        let values = Column::Int64(PrimitiveColumn::from_vec(
            (0..rows).map(|i| draw(i) % distinct).collect(),
        ));
        let batch = Batch::try_new(schema.clone(), vec![values], rows as usize).expect("batch");
        let source = TableSource::Memory(Arc::new(MemTable::new(schema, vec![batch])));
        PlanBuilder::scan(name, name, source)
    }

    fn join(kind: JoinKind, right_distinct: i64) -> LogicalPlan {
        table("l", "a", 10_000, 1000)
            .join(
                table("r", "b", 2000, right_distinct),
                kind,
                vec![(col("a"), col("b"))],
                None,
            )
            .expect("join")
            .build()
    }

    /// A semi join keeps the share of left keys the right side has (at most all); an anti
    /// join the rest, at least a tenth.
    #[test]
    fn semi_and_anti_joins_keep_the_matching_share_of_keys() {
        let near = |got: f64, want: f64| assert!((got / want - 1.0).abs() < 0.1, "{got} vs {want}");
        near(estimate_rows(&join(JoinKind::Semi, 100)), 1000.0);
        near(estimate_rows(&join(JoinKind::Semi, 2000)), 10_000.0);
        near(
            estimate_rows(&join(JoinKind::Anti { null_aware: false }, 100)),
            9000.0,
        );
        near(
            estimate_rows(&join(JoinKind::Anti { null_aware: false }, 2000)),
            1000.0,
        );
    }

    /// Estimates pinned for a plan's run equal the plain ones, node by node, and a plan
    /// built meanwhile (not pinned) is estimated on its own.
    #[test]
    fn pinned_estimates_equal_plain_ones() {
        let plan = table("x", "x", 5000, 50)
            .filter(col("x").lt(lit(10i64)))
            .expect("filter")
            .join(
                PlanBuilder::from_plan(join(JoinKind::Inner, 300)),
                JoinKind::Inner,
                vec![(col("x"), col("a"))],
                None,
            )
            .expect("join")
            .build();
        fn each(p: &LogicalPlan, out: &mut Vec<f64>) {
            out.push(estimate_rows(p));
            p.children().into_iter().for_each(|c| each(c, out));
        }
        let mut plain = Vec::new();
        each(&plan, &mut plain);
        let (pinned, other) = with_estimates_of(&plan, || {
            let mut twice = Vec::new();
            each(&plan, &mut twice);
            each(&plan, &mut twice);
            (twice, estimate_rows(&join(JoinKind::Semi, 100)))
        });
        assert_eq!(pinned, [plain.clone(), plain].concat());
        assert_eq!(other, estimate_rows(&join(JoinKind::Semi, 100)));
    }
}
