//! The order in which a memory scan's filter tests its conjuncts. Each group of conjuncts
//! (those over one column together, so that ranges merge) has a selectivity, measured on
//! the table's sample rows where the planner can judge it, and a cost per row by its shape;
//! groups run in decreasing order of the rows they rule out per unit of cost, `(1 -
//! selectivity) / cost`, the order that minimizes the expected work when each conjunct only
//! tests the rows the earlier ones left.

use morsel_planner::{BinaryOp, Expr, PlanSchema};
use morsel_storage::{DataType, ScalarValue};

use super::numeric_only;

/// The selectivity assumed for a group the sample cannot judge.
const UNJUDGED: f64 = 0.5;

/// The cost per row of testing whether a value is a key of a hash join's built side (an
/// array slot or a bit, and the value read from memory: measured on lineitem's order and
/// part keys, 2.6-3.3 ns a row). A bit per value tested eight at a time with AVX-512 takes
/// about 1 ns a row, but a cost of 3 placed TPC-H's key tests no better (in memory, three
/// alternated rounds: Q4 0.76 and Q2 0.77, Q19 1.12 and Q21 1.08, geometric mean 0.98).
const JOIN_KEY_COST: f64 = 6.0;

/// A test of the first of a join's packed keys runs last in a scan's filter where it keeps
/// at most this share of the rows.
const FIRST_KEY_LAST_BELOW: f64 = 0.5;

/// The conjuncts of `groups` (each with its selectivity on the sample, if judged) in the
/// order to test them, and a line saying so for EXPLAIN. `join_keys` is a test of a join's
/// keys (its description, selectivity on the sample, and whether it tests only the first
/// of several keys): it comes back with the number of conjuncts to test before it, or
/// `None` where it would be the last test (the join's probe tests the keys then anyway),
/// unless it tests a first key and keeps at most [`FIRST_KEY_LAST_BELOW`] of the rows
/// (then the probe reads and packs the other keys only for the rows it keeps).
pub(super) fn order(
    groups: Vec<(Vec<Expr>, Option<f64>)>,
    join_keys: Option<(String, f64, bool)>,
    schema: &PlanSchema,
) -> (Vec<Expr>, Option<usize>, String) {
    let mut ranked: Vec<(f64, Vec<Expr>, Option<f64>)> = groups
        .into_iter()
        .map(|(group, fraction)| {
            let cost = group_cost(&group, schema);
            let rank = (1.0 - fraction.unwrap_or(UNJUDGED)) / cost;
            (rank, group, fraction)
        })
        .collect();
    // Stable: equal ranks keep the written order.
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut described: Vec<String> = ranked
        .iter()
        .map(|(_, group, fraction)| {
            let columns = group[0].columns();
            let what = match columns.as_slice() {
                [one] => one.to_string(),
                _ => group
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(" AND "),
            };
            match fraction {
                Some(f) => format!("{what} {:.1}%", f * 100.0),
                None => format!("{what} (not judged)"),
            }
        })
        .collect();
    // The join's keys go before the first group that rules out fewer rows per cost.
    let keys_at = join_keys.and_then(|(what, fraction, first_only)| {
        let rank = (1.0 - fraction) / JOIN_KEY_COST;
        let last = (first_only && fraction <= FIRST_KEY_LAST_BELOW).then_some(ranked.len());
        let before = ranked.iter().position(|(r, ..)| rank > *r).or(last)?;
        described.insert(before, format!("{what} {:.1}%", fraction * 100.0));
        Some(ranked[..before].iter().map(|(_, g, _)| g.len()).sum())
    });
    let line = format!(
        "tested in order of rows ruled out per cost (selectivity on the table's sample): {}",
        described.join(", ")
    );
    (
        ranked.into_iter().flat_map(|(_, g, _)| g).collect(),
        keys_at,
        line,
    )
}

/// Whether testing `e` on every row costs about as little as a comparison or two (then a
/// filter whose survivors are listed tests it on the whole batch instead of gathering them).
pub(super) fn cheap(e: &Expr, schema: &PlanSchema) -> bool {
    cost(e, schema) <= 2.0
}

/// A group's cost per row: one comparison for a range of one integer-like column, else
/// the sum of its conjuncts' costs.
fn group_cost(group: &[Expr], schema: &PlanSchema) -> f64 {
    if group.len() > 1 && group.iter().all(|c| constant_comparison(c, schema)) {
        return 1.0;
    }
    group.iter().map(|c| cost(c, schema)).sum()
}

/// Whether `e` compares a numeric column with a constant.
fn constant_comparison(e: &Expr, schema: &PlanSchema) -> bool {
    match e {
        Expr::Binary { left, op, right } if op.is_comparison() => {
            let numeric = |x: &Expr| x.data_type(schema).is_ok_and(|t| t != DataType::Utf8);
            matches!(
                (left.as_ref(), right.as_ref()),
                (Expr::Column(_), Expr::Literal(_)) | (Expr::Literal(_), Expr::Column(_))
            ) && numeric(left)
        }
        _ => false,
    }
}

/// The cost per row of one conjunct, relative to comparing a number with a constant
/// (about 0.5 ns a row in memory): numeric expressions by their operators; text equality
/// with a constant, which reads offsets and bytes, from 2.5 (one byte: `l_returnflag =
/// 'R'`, 1 ns a row) to 10 times that (17 bytes: `l_shipinstruct = 'DELIVER IN PERSON'`,
/// 5 ns a row), by the constant's length; short `IN` lists 12 (7 ns a row); `LIKE` and
/// anything else more.
fn cost(e: &Expr, schema: &PlanSchema) -> f64 {
    if numeric_only(e, schema) {
        return operators(e).max(1) as f64;
    }
    match e {
        Expr::Binary {
            left,
            op: BinaryOp::Eq | BinaryOp::NotEq,
            right,
        } => match (left.as_ref(), right.as_ref()) {
            (Expr::Literal(ScalarValue::Utf8(t)), _) | (_, Expr::Literal(ScalarValue::Utf8(t))) => {
                (2.0 + t.len() as f64 / 2.0).min(10.0)
            }
            _ => 10.0,
        },
        Expr::InList { list, .. } if list.len() <= 8 => 12.0,
        Expr::Like { .. } => 25.0,
        _ => 15.0,
    }
}

/// The operators (comparisons, arithmetic, logic) in a numeric expression.
fn operators(e: &Expr) -> usize {
    match e {
        Expr::Binary { left, right, .. } => 1 + operators(left) + operators(right),
        Expr::Not(x) | Expr::Negative(x) | Expr::IsNull(x) | Expr::IsNotNull(x) => 1 + operators(x),
        Expr::Cast { expr, .. } => operators(expr),
        Expr::Between { expr, .. } => 2 + operators(expr),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use morsel_planner::{col, lit, lit_date, PlanSchema};
    use morsel_storage::{DataType, Field, Schema};

    use super::order;

    /// Groups run by rows ruled out per cost: a date range (one comparison) before a more
    /// selective text equality (ten times the cost), a cheap unjudged comparison of two
    /// columns before a text test that rules out fewer rows per cost, and equal ranks keep
    /// the written order.
    #[test]
    fn groups_run_by_rows_ruled_out_per_cost() {
        let schema = PlanSchema::from_schema(
            None,
            &Schema::new(vec![
                Field::new("d", DataType::Date32, false),
                Field::new("e", DataType::Date32, false),
                Field::new("s", DataType::Utf8, false),
            ]),
        );
        let range = vec![
            col("d").gt_eq(lit_date("1994-01-01")),
            col("d").lt(lit_date("1995-01-01")),
        ];
        let text = vec![col("s").eq(lit("AIR"))];
        let pair = vec![col("d").lt(col("e"))];
        let groups = vec![
            (text.clone(), Some(0.1)),
            (pair.clone(), None),
            (range.clone(), Some(0.3)),
        ];
        let (ordered, _, line) = order(groups, None, &schema);
        // range: 0.7 / 1; pair: 0.5 / 1; text: 0.9 / 10.
        let want: Vec<_> = range.into_iter().chain(pair).chain(text).collect();
        assert_eq!(ordered, want);
        assert!(
            line.ends_with("d 30.0%, d < e (not judged), s 10.0%"),
            "{line}"
        );
    }

    /// A join's keys go before the first group that rules out fewer rows per cost (at six
    /// comparisons a row), and are left to the probe where they would come last, unless
    /// they are the first of packed keys and rule out most rows.
    #[test]
    fn join_keys_go_where_they_rule_out_more_per_cost() {
        let schema = PlanSchema::from_schema(
            None,
            &Schema::new(vec![
                Field::new("d", DataType::Date32, false),
                Field::new("s", DataType::Utf8, false),
            ]),
        );
        let range = vec![col("d").lt(lit_date("1995-01-01"))];
        let text = vec![col("s").eq(lit("DELIVER IN PERSON"))];
        let groups = || vec![(text.clone(), Some(0.25)), (range.clone(), Some(0.9))];
        // range: 0.1 / 1; text: 0.75 / 10; keys keeping 1%: 0.99 / 6, first.
        let (ordered, at, line) = order(groups(), Some(("k in keys".into(), 0.01, false)), &schema);
        assert_eq!(at, Some(0));
        assert_eq!(
            ordered,
            range.iter().chain(&text).cloned().collect::<Vec<_>>()
        );
        assert!(line.ends_with("k in keys 1.0%, d 90.0%, s 25.0%"), "{line}");
        // Keeping 50%: 0.5 / 6, after the range, before the text.
        let (_, at, line) = order(groups(), Some(("k in keys".into(), 0.5, false)), &schema);
        assert_eq!(at, Some(1));
        assert!(
            line.ends_with("d 90.0%, k in keys 50.0%, s 25.0%"),
            "{line}"
        );
        // Keeping 99%: last, so left to the probe.
        let (_, at, line) = order(groups(), Some(("k in keys".into(), 0.99, false)), &schema);
        assert_eq!(at, None);
        assert!(!line.contains("k in keys"), "{line}");
        // After a range keeping 16% (0.84 / 1), keys keeping 1% (0.99 / 6) would come last:
        // left to the probe, unless they are the first of packed keys.
        let date_range = || vec![(range.clone(), Some(0.16))];
        let first = |keeps: f64, first_only: bool| {
            let keys = ("k in first keys".to_string(), keeps, first_only);
            order(date_range(), Some(keys), &schema)
        };
        assert_eq!(first(0.01, false).1, None);
        let (ordered, at, line) = first(0.01, true);
        assert_eq!((ordered, at), (range.clone(), Some(1)));
        assert!(line.ends_with("d 16.0%, k in first keys 1.0%"), "{line}");
        assert_eq!(first(0.6, true).1, None);
    }
}
