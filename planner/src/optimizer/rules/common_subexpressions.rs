//! Common subexpressions: an expression of at least two operations that one projection, or
//! the arguments of one aggregation, compute more than once (TPC-H Q1's
//! `l_extendedprice * (1 - l_discount)`, inside two sums) is computed once. A projection
//! inserted below the node passes through the input columns the node still reads and adds
//! each shared expression as a column `__cse_N`; the node reads that column instead. The
//! node's output names and schema stay as they were.

use crate::error::PlanResult;
use crate::expr::{ColumnRef, Expr};
use crate::optimizer::OptimizerRule;
use crate::plan::{LogicalPlan, PlanBuilder};
use crate::schema::PlanSchema;

pub struct CommonSubexpressions;

impl OptimizerRule for CommonSubexpressions {
    fn name(&self) -> &'static str {
        "common_subexpressions"
    }

    fn rewrite(&self, plan: LogicalPlan) -> PlanResult<LogicalPlan> {
        rewrite(plan)
    }
}

fn rewrite(plan: LogicalPlan) -> PlanResult<LogicalPlan> {
    let plan = plan.map_children(rewrite)?;
    Ok(match plan {
        LogicalPlan::Aggregate {
            input,
            group,
            aggs,
            schema,
        } => {
            let args: Vec<&Expr> = aggs.iter().flat_map(aggregate_args).collect();
            let shared = shared_subexpressions(&args);
            if shared.is_empty() {
                return Ok(LogicalPlan::Aggregate {
                    input,
                    group,
                    aggs,
                    schema,
                });
            }
            let names = column_names(input.schema(), shared.len());
            let aggs: Vec<Expr> = aggs
                .into_iter()
                .map(|a| replace(a, &shared, &names))
                .collect();
            let input = compute_below(*input, &shared, &names, group.iter().chain(&aggs))?;
            LogicalPlan::Aggregate {
                input: Box::new(input),
                group,
                aggs,
                schema,
            }
        }
        LogicalPlan::Projection {
            input,
            exprs,
            schema,
        } => {
            let all: Vec<&Expr> = exprs.iter().collect();
            let shared = shared_subexpressions(&all);
            if shared.is_empty() {
                return Ok(LogicalPlan::Projection {
                    input,
                    exprs,
                    schema,
                });
            }
            let names = column_names(input.schema(), shared.len());
            let exprs: Vec<Expr> = exprs
                .into_iter()
                .map(|e| replace(e, &shared, &names))
                .collect();
            let input = compute_below(*input, &shared, &names, exprs.iter())?;
            LogicalPlan::Projection {
                input: Box::new(input),
                exprs,
                schema,
            }
        }
        other => other,
    })
}

/// The arguments of an aggregate call (under its alias, if any).
fn aggregate_args(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::Alias { expr, .. } => aggregate_args(expr),
        Expr::Aggregate { args, .. } => args.iter().collect(),
        _ => Vec::new(),
    }
}

/// Operations in `e` (nodes other than columns, literals and aliases).
fn operations(e: &Expr) -> usize {
    let mut n = 0;
    e.visit(&mut |x| {
        n += usize::from(!matches!(
            x,
            Expr::Column(_) | Expr::Literal(_) | Expr::Alias { .. }
        ))
    });
    n
}

/// The most expression nodes (over one projection or one aggregation's arguments) searched
/// for shared subtrees; TPC-H's largest has under a hundred.
const MAX_SEARCHED_NODES: usize = 2_000;

/// Subtrees of `exprs` worth sharing: at least two operations, reading a column, no
/// aggregate or window inside, occurring at least twice; largest first, none inside another.
fn shared_subexpressions(exprs: &[&Expr]) -> Vec<Expr> {
    // The search compares every subtree with every other (cubic in the nodes): past this
    // size it is not made, so a generated chain of thousands of terms plans in linear time.
    let mut nodes = 0usize;
    for e in exprs {
        e.visit(&mut |_| nodes += 1);
    }
    if nodes > MAX_SEARCHED_NODES {
        return Vec::new();
    }
    let mut counts: Vec<(Expr, usize)> = Vec::new();
    for e in exprs {
        e.visit(&mut |x| {
            let candidate = operations(x) >= 2
                && !matches!(x, Expr::Alias { .. } | Expr::Aggregate { .. })
                && !x.contains_aggregate()
                && !x.contains_window()
                && !x.columns().is_empty();
            if !candidate {
                return;
            }
            match counts.iter_mut().find(|(c, _)| c == x) {
                Some((_, n)) => *n += 1,
                None => counts.push((x.clone(), 1)),
            }
        });
    }
    let mut repeated: Vec<Expr> = counts
        .into_iter()
        .filter(|(_, n)| *n >= 2)
        .map(|(e, _)| e)
        .collect();
    repeated.sort_by_key(|e| std::cmp::Reverse(operations(e)));
    let mut chosen: Vec<Expr> = Vec::new();
    for e in repeated {
        let mut inside = false;
        for c in &chosen {
            c.visit(&mut |x| inside |= *x == e);
        }
        if !inside {
            chosen.push(e);
        }
    }
    chosen
}

/// `n` names `__cse_N` not taken in `schema`.
fn column_names(schema: &PlanSchema, n: usize) -> Vec<String> {
    (0..)
        .map(|k| format!("__cse_{k}"))
        .filter(|name| !schema.fields().iter().any(|f| f.name == *name))
        .take(n)
        .collect()
}

/// A projection over `input` computing `shared` as columns `names` and passing through the
/// input columns that `users` read. When `input` only selects columns, the new projection
/// replaces it (it selects what it needs itself).
fn compute_below<'a>(
    input: LogicalPlan,
    shared: &[Expr],
    names: &[String],
    users: impl Iterator<Item = &'a Expr>,
) -> PlanResult<LogicalPlan> {
    let input = match input {
        LogicalPlan::Projection { input, exprs, .. }
            if exprs.iter().all(|e| matches!(e, Expr::Column(_))) =>
        {
            *input
        }
        other => other,
    };
    let schema: &PlanSchema = input.schema();
    let mut exprs: Vec<Expr> = Vec::new();
    for e in users {
        for c in e.columns() {
            if let Some(i) = schema.position(&c) {
                let pass = Expr::Column(schema.field(i).column_ref());
                if !exprs.contains(&pass) {
                    exprs.push(pass);
                }
            }
        }
    }
    exprs.extend(shared.iter().zip(names).map(|(e, n)| e.clone().alias(n)));
    Ok(PlanBuilder::from_plan(input).project(exprs)?.build())
}

/// `e` with every occurrence of a shared expression replaced by its column.
fn replace(e: Expr, shared: &[Expr], names: &[String]) -> Expr {
    match shared.iter().position(|s| *s == e) {
        Some(k) => Expr::Column(ColumnRef {
            relation: None,
            name: names[k].clone(),
        }),
        None => e.map_children(|c| replace(c, shared, names)),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use morsel_storage::{DataType, Field, Schema};

    use super::*;
    use crate::expr::{col, lit};
    use crate::plan::{MemTable, TableSource};

    fn table() -> PlanBuilder {
        let schema = Schema::new(vec![
            Field::new("price", DataType::Float64, false),
            Field::new("disc", DataType::Float64, false),
            Field::new("tax", DataType::Float64, false),
            Field::new("flag", DataType::Utf8, false),
        ]);
        let source = TableSource::Memory(Arc::new(MemTable::new(Arc::new(schema), Vec::new())));
        PlanBuilder::scan("t", "t", source)
    }

    #[test]
    fn shared_aggregate_arguments_are_computed_once() {
        let net = col("price") * (lit(1.0) - col("disc"));
        let plan = table()
            .aggregate(
                vec![col("flag")],
                vec![net.clone().sum(), (net * (lit(1.0) + col("tax"))).sum()],
            )
            .unwrap()
            .build();
        let before = plan.schema().clone();
        let after = rewrite(plan).unwrap();
        let text = after.to_string();
        assert!(
            text.contains("aggs=[sum(__cse_0), sum(__cse_0 * (1.0 + tax))]"),
            "{text}"
        );
        assert!(
            text.contains("Projection: t.flag, t.tax, price * (1.0 - disc) AS __cse_0"),
            "{text}"
        );
        // Output names are unchanged.
        assert_eq!(after.schema(), &before);
        // Nothing more to share: a second run changes nothing.
        assert_eq!(rewrite(after.clone()).unwrap().to_string(), text);
    }

    #[test]
    fn single_uses_and_one_operation_expressions_are_left_alone() {
        let plan = table()
            .project(vec![
                (col("price") * col("disc")).alias("a"),
                (col("price") * col("disc") + lit(1.0)).alias("b"),
            ])
            .unwrap()
            .build();
        let text = plan.to_string();
        assert_eq!(rewrite(plan).unwrap().to_string(), text);
    }
}
