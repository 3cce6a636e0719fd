//! `count(DISTINCT x)` (and sum, avg, min, max over `DISTINCT x`) becomes two plain
//! aggregations: first the distinct `(group keys, x)` pairs, then the plain aggregate of `x`
//! per group. Every value set is then built by the hash aggregate (per-morsel tables merged
//! by partition) instead of one hash set of encoded values per group per morsel, merged on
//! one thread (TPC-H Q16's `count(DISTINCT ps_suppkey)` over 18K groups).
//!
//! It applies when every aggregate of the node is DISTINCT over the same one argument, which
//! is not itself a group key. Answers are the same: NULL values form their own pair and are
//! skipped by the plain aggregate, as DISTINCT skips them, and groups come out in the order
//! their keys first appear, as before.

use crate::error::PlanResult;
use crate::expr::{AggFunc, Expr};
use crate::optimizer::rules::renamed;
use crate::optimizer::OptimizerRule;
use crate::plan::{LogicalPlan, PlanBuilder};

pub struct DistinctAggregatesToGroupBy;

impl OptimizerRule for DistinctAggregatesToGroupBy {
    fn name(&self) -> &'static str {
        "distinct_aggregates_to_group_by"
    }

    fn rewrite(&self, plan: LogicalPlan) -> PlanResult<LogicalPlan> {
        rewrite(plan)
    }
}

fn rewrite(plan: LogicalPlan) -> PlanResult<LogicalPlan> {
    let plan = plan.map_children(rewrite)?;
    let LogicalPlan::Aggregate {
        input,
        group,
        aggs,
        schema,
    } = plan
    else {
        return Ok(plan);
    };
    let Some((arg, funcs)) =
        single_distinct_argument(&aggs).filter(|(arg, _)| !group.contains(arg))
    else {
        return Ok(LogicalPlan::Aggregate {
            input,
            group,
            aggs,
            schema,
        });
    };
    let original = LogicalPlan::Aggregate {
        input: input.clone(),
        group: group.clone(),
        aggs,
        schema: schema.clone(),
    };
    // Where the two groupings cannot be formed (say the argument is a group key written with
    // another qualifier, so the pairs' columns are ambiguous) the node stays as it is.
    Ok(two_groupings(*input, group, arg, funcs, schema).unwrap_or(original))
}

/// `input` grouped by `group` and `arg`, then by `group` with `funcs` over `arg`, under the
/// original output `schema`.
fn two_groupings(
    input: LogicalPlan,
    group: Vec<Expr>,
    arg: Expr,
    funcs: Vec<AggFunc>,
    schema: crate::schema::PlanSchema,
) -> PlanResult<LogicalPlan> {
    let keys_len = group.len();
    let mut pair_keys = group;
    pair_keys.push(arg);
    let pairs = PlanBuilder::from_plan(input).aggregate(pair_keys, Vec::new())?;
    let fields = pairs.schema().fields().to_vec();
    let (keys, value) = fields.split_at(keys_len);
    let value = Expr::Column(value[0].column_ref());
    let per_group = pairs.aggregate(
        keys.iter().map(|f| Expr::Column(f.column_ref())).collect(),
        funcs
            .into_iter()
            .map(|func| Expr::Aggregate {
                func,
                args: vec![value.clone()],
                distinct: false,
            })
            .collect(),
    )?;
    if per_group.schema().len() != schema.len() {
        return Err(crate::PlanError::Invalid(
            "distinct rewrite lost a column".into(),
        ));
    }
    Ok(renamed(per_group.build(), schema))
}

/// The argument every aggregate in `aggs` takes DISTINCT, with each one's function; `None`
/// unless all are count, sum, avg, min or max over `DISTINCT` of the same one argument.
fn single_distinct_argument(aggs: &[Expr]) -> Option<(Expr, Vec<AggFunc>)> {
    let mut arg: Option<&Expr> = None;
    let mut funcs = Vec::with_capacity(aggs.len());
    for a in aggs {
        let a = match a {
            Expr::Alias { expr, .. } => expr.as_ref(),
            other => other,
        };
        let Expr::Aggregate {
            func,
            args,
            distinct: true,
        } = a
        else {
            return None;
        };
        let supported = matches!(
            func,
            AggFunc::Count | AggFunc::Sum | AggFunc::Avg | AggFunc::Min | AggFunc::Max
        );
        let [x] = args.as_slice() else {
            return None;
        };
        if !supported || arg.is_some_and(|prev| prev != x) {
            return None;
        }
        arg = Some(x);
        funcs.push(*func);
    }
    arg.map(|a| (a.clone(), funcs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::col;
    use crate::optimizer::rules::test_table;

    fn table() -> PlanBuilder {
        test_table("t", &["g", "x"])
    }

    fn distinct(func: AggFunc, arg: Expr) -> Expr {
        Expr::Aggregate {
            func,
            args: vec![arg],
            distinct: true,
        }
    }

    #[test]
    fn distinct_aggregates_become_two_groupings_with_the_same_output() {
        let before = table()
            .aggregate(
                vec![col("g")],
                vec![
                    distinct(AggFunc::Count, col("x")),
                    distinct(AggFunc::Sum, col("x")),
                ],
            )
            .unwrap()
            .build();
        let after = rewrite(before.clone()).unwrap();
        assert_eq!(
            after.to_string(),
            "Projection: t.g, count(t.x), sum(t.x)\n  Aggregate: group=[t.g] aggs=[count(t.x), \
             sum(t.x)]\n    Aggregate: group=[g, x] aggs=[]\n      Scan: t (memory)\n"
        );
        assert_eq!(after.schema(), before.schema());
    }

    #[test]
    fn mixed_or_grouped_arguments_stay() {
        for aggs in [
            vec![distinct(AggFunc::Count, col("x")), col("x").sum()],
            vec![
                distinct(AggFunc::Count, col("x")),
                distinct(AggFunc::Count, col("g")),
            ],
            vec![distinct(AggFunc::Count, col("g"))],
        ] {
            let before = table().aggregate(vec![col("g")], aggs).unwrap().build();
            assert_eq!(
                rewrite(before.clone()).unwrap().to_string(),
                before.to_string()
            );
        }
    }
}
