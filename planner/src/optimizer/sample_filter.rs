//! A scan filter's selectivity over a memory table, measured on the table's sample rows.
//!
//! A conjunct that reads one column, built from comparisons with constants, `LIKE`, `IN`
//! lists, `BETWEEN`, `IS [NOT] NULL`, casts, `NOT`, `AND` and `OR`, is evaluated on that
//! column's sampled values (three-valued: a row is kept only where it is true); the conjuncts
//! on one column are evaluated together, so ranges such as `a >= x AND a < y` count once.
//! Anything else keeps the guess by shape in `cardinality`.

use morsel_storage::like::LikeMatcher;
use morsel_storage::ScalarValue;

use super::rules::fold_binary;
use crate::expr::{BinaryOp, Expr};
use crate::plan::{MemTable, Scan};

/// The fraction of the scan's rows its filters keep, with the conjuncts the sample cannot
/// judge left to `guess`.
pub fn memory_scan_selectivity(scan: &Scan, table: &MemTable, guess: impl Fn(&Expr) -> f64) -> f64 {
    let mut groups = filter_groups(scan, table);
    // Conjuncts over several columns first, then the columns in order.
    groups.sort_by_key(|(col, ..)| *col);
    groups
        .iter()
        .map(|(_, conjuncts, fraction)| match fraction {
            Some(f) => *f,
            None => conjuncts.iter().map(|c| guess(c)).product(),
        })
        .fold(1.0, |all, f| all * f)
}

/// The scan's filters in groups, in the order they are written: the conjuncts over one
/// column together (ranges stay together), each other conjunct alone; each group with its
/// selectivity on the sample, `None` where the sample cannot judge it. The executor orders
/// the groups for testing.
pub fn memory_scan_filter_order(scan: &Scan, table: &MemTable) -> Vec<(Vec<Expr>, Option<f64>)> {
    filter_groups(scan, table)
        .into_iter()
        .map(|(_, conjuncts, fraction)| (conjuncts.into_iter().cloned().collect(), fraction))
        .collect()
}

/// The scan's filters grouped by the one column each reads (`None`: several, each alone),
/// in order of first appearance, with each group's selectivity on the sample.
fn filter_groups<'a>(
    scan: &'a Scan,
    table: &MemTable,
) -> Vec<(Option<usize>, Vec<&'a Expr>, Option<f64>)> {
    let mut groups: Vec<(Option<usize>, Vec<&Expr>)> = Vec::new();
    for f in &scan.filters {
        let col = single_column(f, scan);
        match groups.iter_mut().find(|(c, _)| col.is_some() && *c == col) {
            Some((_, g)) => g.push(f),
            None => groups.push((col, vec![f])),
        }
    }
    groups
        .into_iter()
        .map(|(col, conjuncts)| {
            let fraction = col.and_then(|c| sample_fraction(table, c, &conjuncts));
            (col, conjuncts, fraction)
        })
        .collect()
}

/// The fraction of column `col`'s sampled values that all `conjuncts` (over it alone) keep.
fn sample_fraction(table: &MemTable, col: usize, conjuncts: &[&Expr]) -> Option<f64> {
    table.sample_fraction(col, conjuncts, |values| {
        let mut keep = vec![true; values.len()];
        for c in conjuncts {
            for (k, x) in keep.iter_mut().zip(eval(c, values)?) {
                *k &= x == Some(true);
            }
        }
        Some(keep)
    })
}

/// The table column `e` reads, when it reads exactly one.
fn single_column(e: &Expr, scan: &Scan) -> Option<usize> {
    let (mut first, mut others) = (None, false);
    e.visit(&mut |x| {
        if let Expr::Column(c) = x {
            match first {
                None => first = Some(c.clone()),
                Some(ref f) => others |= f != c,
            }
        }
    });
    let c = first.filter(|_| !others)?;
    let i = scan.schema.position(&c)?;
    Some(scan.projection.as_ref().map_or(i, |p| p[i]))
}

/// Three-valued truth: `Some(b)`, or `None` for unknown (NULL).
type Truth = Option<bool>;

/// `e` on rows whose one column holds `values`; `None` where the shape is not handled.
fn eval(e: &Expr, values: &[ScalarValue]) -> Option<Vec<Truth>> {
    let both = |l: &Expr, r: &Expr, f: fn(Truth, Truth) -> Truth| {
        let (a, b) = (eval(l, values)?, eval(r, values)?);
        Some(a.into_iter().zip(b).map(|(x, y)| f(x, y)).collect())
    };
    match e {
        Expr::Binary {
            left,
            op: BinaryOp::And,
            right,
        } => both(left, right, and),
        Expr::Binary {
            left,
            op: BinaryOp::Or,
            right,
        } => both(left, right, |x, y| match (x, y) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        }),
        Expr::Binary { left, op, right } if op.is_comparison() => {
            let (a, b) = (value(left, values)?, value(right, values)?);
            a.iter().zip(&b).map(|(x, y)| compare(x, *op, y)).collect()
        }
        Expr::Not(x) => Some(
            eval(x, values)?
                .into_iter()
                .map(|t| t.map(|b| !b))
                .collect(),
        ),
        Expr::IsNull(x) => Some(
            value(x, values)?
                .iter()
                .map(|v| Some(v.is_null()))
                .collect(),
        ),
        Expr::IsNotNull(x) => Some(
            value(x, values)?
                .iter()
                .map(|v| Some(!v.is_null()))
                .collect(),
        ),
        Expr::Between {
            expr,
            low,
            high,
            negated,
        } => {
            let (x, lo, hi) = (
                value(expr, values)?,
                value(low, values)?,
                value(high, values)?,
            );
            (0..x.len())
                .map(|i| {
                    let ge = compare(&x[i], BinaryOp::GtEq, &lo[i])?;
                    let le = compare(&x[i], BinaryOp::LtEq, &hi[i])?;
                    Some(and(ge, le).map(|b| b != *negated))
                })
                .collect()
        }
        Expr::InList {
            expr,
            list,
            negated,
        } => {
            let x = value(expr, values)?;
            let items = list
                .iter()
                .map(|item| value(item, values))
                .collect::<Option<Vec<_>>>()?;
            (0..x.len())
                .map(|i| {
                    let (mut found, mut unknown) = (false, x[i].is_null());
                    for item in &items {
                        match compare(&x[i], BinaryOp::Eq, &item[i])? {
                            Some(true) => found = true,
                            Some(false) => {}
                            None => unknown = true,
                        }
                    }
                    Some(match (found, unknown) {
                        (true, _) => Some(!negated),
                        (false, true) => None,
                        (false, false) => Some(*negated),
                    })
                })
                .collect()
        }
        Expr::Like {
            expr,
            pattern,
            negated,
            case_insensitive,
            escape,
        } => {
            let Expr::Literal(ScalarValue::Utf8(p)) = pattern.as_ref() else {
                return None;
            };
            let m = LikeMatcher::new(p, *case_insensitive, *escape).ok()?;
            value(expr, values)?
                .iter()
                .map(|v| match v {
                    ScalarValue::Utf8(text) => Some(Some(m.matches(text) != *negated)),
                    ScalarValue::Null => Some(None),
                    _ => None,
                })
                .collect()
        }
        Expr::Alias { expr, .. } => eval(expr, values),
        _ => None,
    }
}

fn and(x: Truth, y: Truth) -> Truth {
    match (x, y) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

/// `a op b` three-valued; `None` where the two do not compare.
fn compare(a: &ScalarValue, op: BinaryOp, b: &ScalarValue) -> Option<Truth> {
    if a.is_null() || b.is_null() {
        return Some(None);
    }
    match fold_binary(a, op, b)? {
        ScalarValue::Boolean(x) => Some(Some(x)),
        _ => None,
    }
}

/// The values of `e` (the column, a constant, or a cast of one) on the rows.
fn value(e: &Expr, values: &[ScalarValue]) -> Option<Vec<ScalarValue>> {
    match e {
        Expr::Column(_) => Some(values.to_vec()),
        Expr::Literal(x) => Some(vec![x.clone(); values.len()]),
        Expr::Cast { expr, to } => value(expr, values)?
            .iter()
            .map(|v| v.cast_to(*to).ok())
            .collect(),
        Expr::Alias { expr, .. } => value(expr, values),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use morsel_storage::{Batch, Column, DataType, Field, PrimitiveColumn, Schema, Utf8Column};

    use super::memory_scan_selectivity;
    use crate::expr::{col, lit, Expr};
    use crate::plan::{MemTable, Scan, TableSource};

    /// 20,000 rows in two batches: `n` the row number; `s` NULL in about 10% of the rows
    /// (13 in 128), "dark green" in about 5% (6 in 128), else "red"; `k` the row number / 4
    /// (runs of four).
    fn table() -> Arc<MemTable> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("n", DataType::Int64, false),
            Field::new("s", DataType::Utf8, true),
            Field::new("k", DataType::Int64, false),
        ]));
        let batch = |rows: std::ops::Range<i64>| {
            let n = Column::Int64(PrimitiveColumn::from_vec(rows.clone().collect()));
            // A value from 0 to 99 per row, in no order (the sample's even spacing must not
            // line up with a pattern).
            let draw = |i: i64| (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 57 & 127;
            let s = Column::Utf8(Utf8Column::from_strs(rows.clone().map(|i| match draw(i) {
                d if d < 13 => None,
                d if d < 19 => Some("dark green"),
                _ => Some("red"),
            })));
            let k = Column::Int64(PrimitiveColumn::from_vec(
                rows.clone().map(|i| i / 4).collect(),
            ));
            let len = (rows.end - rows.start) as usize;
            Batch::try_new(schema.clone(), vec![n, s, k], len).expect("batch")
        };
        Arc::new(MemTable::new(
            schema.clone(),
            vec![batch(0..12_000), batch(12_000..20_000)],
        ))
    }

    fn fraction(table: &Arc<MemTable>, filters: Vec<Expr>) -> f64 {
        let mut scan = Scan::new("t", "t", TableSource::Memory(table.clone()));
        scan.filters = filters;
        memory_scan_selectivity(&scan, table, |_| 0.5)
    }

    fn like(column: &str, pattern: &str, negated: bool) -> Expr {
        Expr::Like {
            expr: Box::new(col(column)),
            pattern: Box::new(lit(pattern)),
            negated,
            case_insensitive: false,
            escape: None,
        }
    }

    fn near(got: f64, want: f64) {
        assert!((got - want).abs() < 0.01, "got {got}, want {want}");
    }

    /// One-column conjuncts are measured on the sample, NULLs never kept (also under NOT);
    /// conjuncts on one column count together; other shapes keep the guess.
    #[test]
    fn filters_are_measured_on_the_sample_rows() {
        let t = table();
        let (null, green) = (13.0 / 128.0, 6.0 / 128.0);
        let red = 1.0 - null - green;
        near(fraction(&t, vec![like("s", "%green%", false)]), green);
        near(fraction(&t, vec![like("s", "%green%", true)]), red);
        near(fraction(&t, vec![col("s").is_null()]), null);
        let in_list = Expr::InList {
            expr: Box::new(col("s")),
            list: vec![lit("red"), lit("blue")],
            negated: false,
        };
        near(fraction(&t, vec![in_list]), red);
        near(
            fraction(&t, vec![col("n").between(lit(1000i64), lit(2999i64))]),
            0.10,
        );
        // A range over two conjuncts, each half the rows alone.
        let range = vec![col("n").gt_eq(lit(9000i64)), col("n").lt(lit(11_000i64))];
        near(fraction(&t, range), 0.10);
        // Two columns: each measured, then multiplied.
        let both = vec![col("n").lt(lit(10_000i64)), like("s", "red", false)];
        near(fraction(&t, both), 0.5 * red);
        // Reads two columns at once: the guess.
        near(fraction(&t, vec![col("n").lt(col("k"))]), 0.5);
        // A shape the sample cannot evaluate (arithmetic): the guess.
        let sum = Expr::Binary {
            left: Box::new(col("n")),
            op: crate::expr::BinaryOp::Plus,
            right: Box::new(lit(1i64)),
        };
        near(fraction(&t, vec![sum.lt(lit(5i64))]), 0.5);
    }

    /// A column stored in runs of equal values is counted by its runs, which the spaced
    /// sample alone sees as all distinct; values in no order keep the sample's estimate.
    #[test]
    fn clustered_columns_count_their_runs() {
        let t = table();
        let k = t.estimated_distinct(2).unwrap();
        assert!(
            (4000.0..6000.0).contains(&k),
            "runs of four over 20,000 rows: {k}"
        );
        let n = t.estimated_distinct(0).unwrap();
        assert!(n > 15_000.0, "all distinct: {n}");
        let s = t.estimated_distinct(1).unwrap();
        assert!(s < 5.0, "two values: {s}");
    }
}
