//! Row-count estimates for planning: exact counts for in-memory tables, file size over the
//! sampled record width for CSV files, distinct-value counts from the CSV inference sample,
//! the fraction of sampled values a CSV scan's comparisons with constants keep (all the
//! comparisons on one column evaluated together, so `BETWEEN` is not two independent
//! halves), and fixed selectivities for other predicate shapes (the textbook guesses). An equi-join of `l`
//! and `r` rows on keys with `d` distinct values is estimated at `l * r / d`; without
//! statistics for a key, as a foreign-key join (the larger side's rows). Estimates depend
//! only on the data, so plans are the same for any thread count.

use crate::expr::{BinaryOp, ColumnRef, Expr};
use morsel_storage::ScalarValue;

use crate::plan::{JoinKind, LogicalPlan, Scan, TableSource};

/// The estimated number of rows `plan` produces.
pub fn estimate_rows(plan: &LogicalPlan) -> f64 {
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
        } => {
            let (l, r) = (estimate_rows(left), estimate_rows(right));
            let keys = key_distinct(on, left, right);
            let inner = keyed_join_rows(l, r, !on.is_empty(), keys)
                * filter.as_ref().map_or(1.0, selectivity);
            match kind {
                JoinKind::Inner => inner,
                JoinKind::Left => inner.max(l),
                JoinKind::Right => inner.max(r),
                JoinKind::Full => inner.max(l + r),
                JoinKind::Semi | JoinKind::Anti { .. } => l / 2.0,
                JoinKind::Mark { .. } => l,
            }
        }
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
    on.iter()
        .filter_map(|(l, r)| {
            let dl = expr_distinct(l, left)?;
            let dr = expr_distinct(r, right)?;
            Some(dl.max(dr))
        })
        .reduce(f64::max)
}

fn expr_distinct(e: &Expr, plan: &LogicalPlan) -> Option<f64> {
    match e {
        Expr::Column(c) => distinct_values(plan, c),
        Expr::Cast { expr, .. } | Expr::Alias { expr, .. } => expr_distinct(expr, plan),
        _ => None,
    }
}

/// Estimated distinct values of column `c` of `plan`'s output (never more than its rows).
pub fn distinct_values(plan: &LogicalPlan, c: &ColumnRef) -> Option<f64> {
    let i = plan.schema().index_of(c).ok()?;
    let d = match plan {
        LogicalPlan::Scan(s) => {
            let col = s.projection.as_ref().map_or(i, |p| p[i]);
            match &s.source {
                TableSource::Csv(files) => files
                    .readers()
                    .iter()
                    .map(|r| r.estimated_distinct(col))
                    .sum::<Option<f64>>()?,
                TableSource::Memory(m) => m.estimated_distinct(col)?,
            }
        }
        LogicalPlan::Filter { input, .. }
        | LogicalPlan::Sort { input, .. }
        | LogicalPlan::Limit { input, .. }
        | LogicalPlan::Distinct { input } => {
            distinct_values(input, &input.schema().field(i).column_ref())?
        }
        LogicalPlan::SubqueryAlias { input, .. } => {
            distinct_values(input, &input.schema().field(i).column_ref())?
        }
        LogicalPlan::Window { input, .. } if i < input.schema().len() => {
            distinct_values(input, &input.schema().field(i).column_ref())?
        }
        LogicalPlan::Projection { input, exprs, .. } => expr_distinct(&exprs[i], input)?,
        LogicalPlan::Aggregate { input, group, .. } if i < group.len() => {
            expr_distinct(&group[i], input)?
        }
        LogicalPlan::Join { left, right, .. } => {
            let nl = left.schema().len();
            if i < nl {
                distinct_values(left, &left.schema().field(i).column_ref())?
            } else if right.schema().len() > i - nl {
                distinct_values(right, &right.schema().field(i - nl).column_ref())?
            } else {
                return None;
            }
        }
        _ => return None,
    };
    Some(d.min(estimate_rows(plan)).max(1.0))
}

/// The fraction of a scan's rows its filters keep: comparisons of a CSV column with a
/// constant by the inference sample (per column, all such comparisons at once), the rest by
/// [`selectivity`]; a memory table's one-column conjuncts by its sample rows (see
/// `sample_filter`); columns are taken as independent.
fn scan_selectivity(scan: &Scan) -> f64 {
    let files = match &scan.source {
        TableSource::Csv(files) => files,
        TableSource::Memory(table) => {
            return super::sample_filter::memory_scan_selectivity(scan, table, selectivity)
        }
    };
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
    let i = scan.schema.index_of(c).ok()?;
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
