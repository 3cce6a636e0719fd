//! Limits move toward the scans: below a projection (which keeps one row per row, so the
//! same rows come out, and the projection then runs only on them), and a copy into every
//! input of a UNION ALL (no input can contribute more than `offset + limit` rows). At run
//! time a limit stops its pipeline once the morsels read so far hold enough rows, so a
//! limit that reaches a scan stops the scan.

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
        } => match *input {
            LogicalPlan::Projection {
                input,
                exprs,
                schema,
            } => LogicalPlan::Projection {
                input: Box::new(LogicalPlan::Limit {
                    input,
                    skip,
                    fetch: Some(fetch),
                }),
                exprs,
                schema,
            },
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
                        other => LogicalPlan::Limit {
                            input: Box::new(other),
                            skip: 0,
                            fetch: Some(most),
                        },
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
        },
        other => other,
    })
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
}
