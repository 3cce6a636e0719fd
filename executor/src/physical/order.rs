//! Which groupings' output order nothing observes.
//!
//! A hash aggregate puts its groups back in first-seen order after merging them by hash
//! partition: a gather of every output column in an order unrelated to the partitions'
//! (for text, a cache miss per value). That order is only needed where something can see
//! it. It cannot be seen through a join, a filter or a projection whose own output order
//! is not seen, through an aggregate whose accumulators give the same bits in any order
//! and whose own output order is not seen, or through a sort whose keys include a set of
//! columns unique in its input (the sort leaves no ties for the input order to break).
//! A limit, a window, or the query's result sees it.
//!
//! The partition order is as data-determined as first-seen order (partitions by key hash,
//! each in morsel order), so results stay identical at any thread count either way.

use std::collections::HashSet;

use morsel_planner::{AggFunc, Expr, LogicalPlan, PlanSchema};
use morsel_storage::DataType;

/// The aggregates and DISTINCTs of `plan` whose output order nothing observes, by node
/// address (the plan is borrowed while the pipelines are built).
pub fn unordered_groupings(plan: &LogicalPlan) -> HashSet<usize> {
    let mut out = HashSet::new();
    walk(plan, true, &mut out);
    out
}

/// The address that names `plan` in [`unordered_groupings`].
pub fn node_address(plan: &LogicalPlan) -> usize {
    plan as *const LogicalPlan as usize
}

fn walk(plan: &LogicalPlan, observed: bool, out: &mut HashSet<usize>) {
    let input_observed = match plan {
        LogicalPlan::Aggregate {
            input, group, aggs, ..
        } => {
            if !observed && !group.is_empty() {
                out.insert(node_address(plan));
            }
            observed || aggs.iter().any(|a| order_sensitive(a, input.schema()))
        }
        LogicalPlan::Distinct { .. } => {
            if !observed {
                out.insert(node_address(plan));
            }
            observed
        }
        LogicalPlan::Sort { input, keys } => {
            let keys: Vec<Option<usize>> = keys
                .iter()
                .map(|k| column_index(&k.expr, input.schema()))
                .collect();
            observed
                && !unique_sets(input)
                    .iter()
                    .any(|set| set.iter().all(|c| keys.contains(&Some(*c))))
        }
        LogicalPlan::Limit { .. } | LogicalPlan::Window { .. } => true,
        LogicalPlan::Scan(_)
        | LogicalPlan::Values { .. }
        | LogicalPlan::Filter { .. }
        | LogicalPlan::Projection { .. }
        | LogicalPlan::Join { .. }
        | LogicalPlan::Union { .. }
        | LogicalPlan::SubqueryAlias { .. } => observed,
    };
    for child in plan.children() {
        walk(child, input_observed, out);
    }
}

/// Whether aggregate `a` could give other bits for its group's values in another order:
/// float sums and their kin round by order, ordered text aggregates concatenate by it, and
/// integer sums could overflow part way in one order and not in another. Counts, boolean
/// aggregates, and minimums and maximums of other than floats (whose zeros compare equal
/// with different bits) do not.
fn order_sensitive(a: &Expr, schema: &PlanSchema) -> bool {
    let Expr::Aggregate { func, args, .. } = a.clone().unalias() else {
        return true;
    };
    let float_arg = || {
        args.first()
            .is_none_or(|x| x.data_type(schema).is_ok_and(|t| t == DataType::Float64))
    };
    match func {
        AggFunc::CountStar | AggFunc::Count | AggFunc::BoolAnd | AggFunc::BoolOr => false,
        AggFunc::Min | AggFunc::Max | AggFunc::Single => float_arg(),
        _ => true,
    }
}

/// The input column a plain column reference names.
pub fn column_index(e: &Expr, schema: &PlanSchema) -> Option<usize> {
    match e.clone().unalias() {
        Expr::Column(c) => schema.position(&c),
        _ => None,
    }
}

/// Sets of output columns known to be unique in `plan`'s rows: an aggregate's group columns
/// (the empty set for a global aggregate's one row), every column of a DISTINCT, carried
/// through filters, sorts, limits, aliases and projections that keep the columns as they
/// are.
fn unique_sets(plan: &LogicalPlan) -> Vec<Vec<usize>> {
    match plan {
        LogicalPlan::Aggregate { group, .. } => vec![(0..group.len()).collect()],
        LogicalPlan::Distinct { input } => vec![(0..input.schema().len()).collect()],
        LogicalPlan::Filter { input, .. }
        | LogicalPlan::Sort { input, .. }
        | LogicalPlan::Limit { input, .. }
        | LogicalPlan::SubqueryAlias { input, .. } => unique_sets(input),
        LogicalPlan::Projection { input, exprs, .. } => {
            let from: Vec<Option<usize>> = exprs
                .iter()
                .map(|e| column_index(e, input.schema()))
                .collect();
            unique_sets(input)
                .into_iter()
                .filter_map(|set| {
                    set.iter()
                        .map(|&c| from.iter().position(|&f| f == Some(c)))
                        .collect()
                })
                .collect()
        }
        _ => Vec::new(),
    }
}
