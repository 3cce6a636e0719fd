//! Semi and anti joins move below inner joins, to the input that holds the columns they test:
//! whether a row survives `x IN (SELECT ...)` or `NOT EXISTS (...)` depends only on that row's
//! own columns, so the test can run before the inner join multiplies rows, and a join that
//! then builds on the filtered input builds on far fewer rows (TPC-H Q18: the 57 orders with
//! more than 300 items are found before lineitem is joined to orders, not after). A test
//! moves down only where, by the estimates, it costs less: where it keeps no more rows than
//! the join outputs (a test with a residual filter: where it reads no more rows than above);
//! below a join that drops most rows (TPC-H Q21's supplier-nation join) it stays above. Rows
//! keep their relative order, so results do not change, not even in float bits.

use crate::error::PlanResult;
use crate::expr::Expr;
use crate::optimizer::cardinality::{
    estimate_rows, join_rows, key_distinct, keyed_join_rows, selectivity,
};
use crate::optimizer::OptimizerRule;
use crate::plan::{JoinKind, LogicalPlan};
use crate::schema::PlanSchema;

pub struct PushDownSemiJoins;

impl OptimizerRule for PushDownSemiJoins {
    fn name(&self) -> &'static str {
        "push_down_semi_joins"
    }

    fn rewrite(&self, plan: LogicalPlan) -> PlanResult<LogicalPlan> {
        rewrite(plan)
    }
}

/// A semi or anti join without its left input.
struct Test {
    right: LogicalPlan,
    kind: JoinKind,
    on: Vec<(Expr, Expr)>,
    filter: Option<Expr>,
}

impl Test {
    /// Whether every column the test reads from its left input is in `schema`.
    fn fits(&self, schema: &PlanSchema) -> bool {
        let right = self.right.schema();
        let left_exprs = self.on.iter().map(|(l, _)| l).chain(&self.filter);
        left_exprs
            .flat_map(Expr::columns)
            .all(|c| schema.has(&c) || right.has(&c))
            && self
                .on
                .iter()
                .all(|(l, _)| l.columns().iter().all(|c| schema.has(c)))
    }

    fn apply(self, left: LogicalPlan) -> LogicalPlan {
        let schema = left.schema().clone();
        LogicalPlan::Join {
            left: Box::new(left),
            right: Box::new(self.right),
            kind: self.kind,
            on: self.on,
            filter: self.filter,
            schema,
        }
    }
}

fn rewrite(plan: LogicalPlan) -> PlanResult<LogicalPlan> {
    let plan = plan.map_children(rewrite)?;
    Ok(match plan {
        LogicalPlan::Join {
            left,
            right,
            kind: kind @ (JoinKind::Semi | JoinKind::Anti { .. }),
            on,
            filter,
            ..
        } => place(
            *left,
            Test {
                right: *right,
                kind,
                on,
                filter,
            },
        ),
        other => other,
    })
}

/// `input` with `test` applied as deep as it can go: through a column-selecting projection
/// over an inner join, and into the side of an inner join that holds every column it reads.
/// (Other projections gain nothing: they keep every row.)
fn place(input: LogicalPlan, test: Test) -> LogicalPlan {
    match input {
        LogicalPlan::Projection {
            input: inner,
            exprs,
            schema,
        } if exprs.iter().all(|e| matches!(e, Expr::Column(_)))
            && matches!(
                inner.as_ref(),
                LogicalPlan::Join {
                    kind: JoinKind::Inner,
                    ..
                }
            )
            && test.fits(inner.schema()) =>
        {
            LogicalPlan::Projection {
                input: Box::new(place(*inner, test)),
                exprs,
                schema,
            }
        }
        LogicalPlan::Join {
            left,
            right,
            kind: JoinKind::Inner,
            on,
            filter,
            schema,
        } if fewer_rows_below(
            &left,
            &right,
            &test,
            &input_rows(&left, &right, &on, &filter),
        ) =>
        {
            let (left, right) = if test.fits(right.schema()) {
                (*left, place(*right, test))
            } else {
                (place(*left, test), *right)
            };
            LogicalPlan::Join {
                left: Box::new(left),
                right: Box::new(right),
                kind: JoinKind::Inner,
                on,
                filter,
                schema,
            }
        }
        other => test.apply(other),
    }
}

/// The estimated rows of the inner join of `left` and `right`.
fn input_rows(
    left: &LogicalPlan,
    right: &LogicalPlan,
    on: &[(Expr, Expr)],
    filter: &Option<Expr>,
) -> f64 {
    let (l, r) = (estimate_rows(left), estimate_rows(right));
    keyed_join_rows(l, r, !on.is_empty(), key_distinct(on, left, right))
        * filter.as_ref().map_or(1.0, selectivity)
}

/// Whether `test` fits one side of the join and is estimated to cost less there than above
/// the join (whose output is `joined` rows). A test on keys alone costs about what the join's
/// probe costs per row: below, it reads the side's rows and the join then reads those it
/// keeps; above, the join reads the side's rows and the test then reads the join's output.
/// So it moves down when it keeps no more rows there than the join outputs (TPC-H Q2: the
/// 0.4% of partsupp whose part matches are found before partsupp meets the suppliers of
/// one region, 20% of its rows). The rows a test keeps are estimated from its keys' distinct
/// values, which is cheap only for a table's scan (from its sample); a test over a deeper
/// plan (a subquery's joins and aggregates: milliseconds to estimate, each time the rule
/// runs; TPC-H Q20 took 10 ms longer), or with a residual filter (which costs more per row),
/// moves down only where it reads no more rows than above.
fn fewer_rows_below(left: &LogicalPlan, right: &LogicalPlan, test: &Test, joined: &f64) -> bool {
    let side = if test.fits(right.schema()) {
        right
    } else if test.fits(left.schema()) {
        left
    } else {
        return false;
    };
    let rows = match &test.filter {
        None if over_a_scan(&test.right) => {
            join_rows(side, &test.right, &test.kind, &test.on, None)
        }
        _ => estimate_rows(side),
    };
    rows <= *joined
}

/// Whether `plan` is a table's scan under filters and projections only.
fn over_a_scan(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Scan(_) => true,
        LogicalPlan::Filter { input, .. } | LogicalPlan::Projection { input, .. } => {
            over_a_scan(input)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::col;
    use crate::optimizer::rules::{test_data_table as data, test_table as table};

    /// A test that keeps few rows moves below an inner join onto the side it tests even
    /// where that side has more rows than the join outputs (the join is then spared nearly
    /// all of them); with a residual filter, or over more than a scan (its keys' distinct
    /// values not estimated), it stays above.
    #[test]
    fn a_selective_test_moves_below_a_join_that_drops_rows() {
        // 1000 rows over 100 parts and 10 suppliers: the join with two suppliers keeps
        // about 200, the test one part's 10.
        let ps = || {
            let parts = (0..1000).map(|i| i % 100).collect();
            data(
                "ps",
                &[("pk", parts), ("sk", (0..1000).map(|i| i % 10).collect())],
            )
        };
        let part = || data("part", &[("p", vec![7])]);
        let grouped = || part().aggregate(vec![col("p")], vec![]).unwrap();
        let cases = [
            (part(), None, true),
            (part(), Some(col("pk").gt(col("p"))), false),
            (grouped(), None, false),
        ];
        for (tested, filter, moves) in cases {
            let plan = ps()
                .join(
                    data("supp", &[("s", vec![0, 1])]),
                    JoinKind::Inner,
                    vec![(col("sk"), col("s"))],
                    None,
                )
                .unwrap()
                .join(tested, JoinKind::Semi, vec![(col("pk"), col("p"))], filter)
                .unwrap()
                .build();
            let after = rewrite(plan).unwrap().to_string();
            assert_eq!(after.starts_with("Join: Inner"), moves, "{after}");
        }
    }

    #[test]
    fn a_semi_join_moves_to_the_input_holding_its_key() {
        let joined = table("l", &["lk", "q"])
            .join(
                table("o", &["ok", "ck"]),
                JoinKind::Inner,
                vec![(col("lk"), col("ok"))],
                None,
            )
            .unwrap();
        let plan = joined
            .join(
                table("s", &["sk"]),
                JoinKind::Semi,
                vec![(col("ok"), col("sk"))],
                None,
            )
            .unwrap()
            .build();
        let schema = plan.schema().clone();
        let after = rewrite(plan).unwrap();
        assert_eq!(
            after.to_string(),
            "Join: Inner on=[lk = ok]\n  Scan: l (memory)\n  Join: Semi on=[ok = sk]\n    \
             Scan: o (memory)\n    Scan: s (memory)\n"
        );
        assert_eq!(after.schema(), &schema);
        // At its place it stays: a second run changes nothing.
        assert_eq!(
            rewrite(after.clone()).unwrap().to_string(),
            after.to_string()
        );
    }
}
