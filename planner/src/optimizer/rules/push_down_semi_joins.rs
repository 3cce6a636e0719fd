//! Semi and anti joins move below inner joins, to the input that holds the columns they test:
//! whether a row survives `x IN (SELECT ...)` or `NOT EXISTS (...)` depends only on that row's
//! own columns, so the test can run before the inner join multiplies rows, and a join that
//! then builds on the filtered input builds on far fewer rows (TPC-H Q18: the 57 orders with
//! more than 300 items are found before lineitem is joined to orders, not after). A test
//! moves down only where it would see no more rows (by the estimates) than where it is: below
//! a join that drops most rows (TPC-H Q21's supplier-nation join) it stays above. Rows keep
//! their relative order, so results do not change, not even in float bits.

use crate::error::PlanResult;
use crate::expr::Expr;
use crate::optimizer::cardinality::{estimate_rows, key_distinct, keyed_join_rows, selectivity};
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

/// Whether `test` fits one side of the join and that side has no more estimated rows than
/// the join's output (`joined`).
fn fewer_rows_below(left: &LogicalPlan, right: &LogicalPlan, test: &Test, joined: &f64) -> bool {
    let side = if test.fits(right.schema()) {
        right
    } else if test.fits(left.schema()) {
        left
    } else {
        return false;
    };
    estimate_rows(side) <= *joined
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::col;
    use crate::optimizer::rules::test_table as table;

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
