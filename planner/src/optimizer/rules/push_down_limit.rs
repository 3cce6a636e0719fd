//! Limits move toward the scans: below a projection (which keeps one row per row, so the
//! same rows come out, and the projection then runs only on them) and an alias, and a copy
//! into every input of a UNION ALL (no input can contribute more than `offset + limit`
//! rows). At run time a limit stops its pipeline once the morsels read so far hold enough
//! rows, so a limit that reaches a scan stops the scan, and one that reaches a sort makes
//! it a top-k.

use std::convert::Infallible;

use crate::error::PlanResult;
use crate::optimizer::OptimizerRule;
use crate::plan::LogicalPlan;

pub struct PushDownLimit;

impl OptimizerRule for PushDownLimit {
    fn name(&self) -> &'static str {
        "push_down_limit"
    }

    fn rewrite(&self, plan: LogicalPlan) -> PlanResult<LogicalPlan> {
        rewrite(plan)
    }
}

fn rewrite(plan: LogicalPlan) -> PlanResult<LogicalPlan> {
    let plan = plan.map_children(rewrite)?;
    Ok(match plan {
        LogicalPlan::Limit {
            input,
            skip,
            fetch: Some(fetch),
        } => push(*input, skip, fetch),
        other => other,
    })
}

/// `LIMIT fetch OFFSET skip` over `input`, moved as far down as it goes.
fn push(input: LogicalPlan, skip: usize, fetch: usize) -> LogicalPlan {
    match input {
        // A projection and an alias keep rows one for one (an alias: a view or a subquery
        // in FROM, so `SELECT * FROM v LIMIT 5` reaches the union or sort under `v`).
        node @ (LogicalPlan::Projection { .. } | LogicalPlan::SubqueryAlias { .. }) => {
            let Ok(node) = node.map_children(|c| Ok::<_, Infallible>(push(c, skip, fetch)));
            node
        }
        LogicalPlan::Union { inputs, schema } => {
            let most = skip.saturating_add(fetch);
            let inputs = inputs
                .into_iter()
                .map(|i| match i {
                    bounded @ LogicalPlan::Limit {
                        skip: 0,
                        fetch: Some(f),
                        ..
                    } if f <= most => bounded,
                    other => push(other, 0, most),
                })
                .collect();
            LogicalPlan::Limit {
                input: Box::new(LogicalPlan::Union { inputs, schema }),
                skip,
                fetch: Some(fetch),
            }
        }
        other => LogicalPlan::Limit {
            input: Box::new(other),
            skip,
            fetch: Some(fetch),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use morsel_storage::{DataType, Field, Schema};

    use super::*;
    use crate::expr::{col, lit};
    use crate::plan::{MemTable, PlanBuilder, TableSource};

    fn table(name: &str) -> PlanBuilder {
        let schema = Schema::new(vec![Field::new("x", DataType::Int64, false)]);
        let source = TableSource::Memory(Arc::new(MemTable::new(Arc::new(schema), Vec::new())));
        PlanBuilder::scan(name, name, source)
    }

    #[test]
    fn limits_pass_projections_and_enter_union_inputs() {
        let plan = table("a")
            .project(vec![(col("x") + lit(1)).alias("y")])
            .unwrap()
            .limit(2, Some(3))
            .build();
        assert_eq!(
            rewrite(plan).unwrap().to_string(),
            "Projection: x + 1 AS y\n  Limit: skip=2 fetch=3\n    Scan: a (memory)\n"
        );
        let union = table("a")
            .union(table("b"))
            .unwrap()
            .limit(1, Some(4))
            .build();
        let once = rewrite(union).unwrap();
        let text = once.to_string();
        assert_eq!(text.matches("Limit: skip=0 fetch=5").count(), 2, "{text}");
        // Already bounded inputs are left alone: the rule reaches a fixed point.
        assert_eq!(rewrite(once).unwrap().to_string(), text);
    }

    /// `SELECT x FROM v LIMIT 5` where `body AS v` is the view, after the rule.
    fn first_five_through_view(body: PlanBuilder, view: &str) -> String {
        let plan = body
            .alias(view)
            .project(vec![col("x")])
            .unwrap()
            .limit(0, Some(5))
            .build();
        rewrite(plan).unwrap().to_string()
    }

    /// `SELECT * FROM v LIMIT n` over a view of a union: the limit passes the query's
    /// projection and the view's alias in one pass and bounds every input of the union;
    /// over a view that sorts, it reaches the sort (a top-k, not a whole sort).
    #[test]
    fn limits_pass_aliases_to_the_union_below() {
        assert_eq!(
            first_five_through_view(table("a").union(table("b")).unwrap(), "v"),
            "Projection: x\n  SubqueryAlias: v\n    Limit: skip=0 fetch=5\n      Union\n        \
             Limit: skip=0 fetch=5\n          Scan: a (memory)\n        \
             Limit: skip=0 fetch=5\n          Scan: b (memory)\n",
        );
        // A view that sorts: the limit lands right on the sort, which runs as a top-k.
        let sorting = table("a").sort(vec![col("x").sort(false, true)]).unwrap();
        assert_eq!(
            first_five_through_view(sorting, "s"),
            "Projection: x\n  SubqueryAlias: s\n    Limit: skip=0 fetch=5\n      \
             Sort: x DESC NULLS FIRST\n        Scan: a (memory)\n",
        );
    }
}
