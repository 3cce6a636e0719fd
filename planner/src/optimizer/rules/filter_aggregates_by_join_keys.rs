//! A grouped aggregate joined on its group keys is only read for the groups the other side
//! of the join can match, so its input can first be cut to the rows whose keys the other
//! side holds: a semi join below the aggregate. This is what a decorrelated subquery needs
//! (TPC-H Q17 averages `l_quantity` per part over all of lineitem, then keeps the 204 parts
//! of one brand and container; with the semi join it aggregates only their rows).
//!
//! The keys come from the smallest input (by the estimates) that holds the other side's key
//! columns: walking down from that side through joins, filters and column renames, every
//! level's key values include those of the level above, so any of them may filter. The rule
//! applies only where that input is estimated at an eighth or less of the aggregate's input
//! and half or less of its groups, since the filtering input is computed a second time.
//!
//! Join kinds: the aggregate may be the right input of an inner, left, semi, anti or mark
//! join, or the left input of an inner or right join. `NOT IN` (null-aware anti and mark
//! joins) is left alone: it depends on whether the aggregate's side holds a NULL key at all.
//! The kept groups are computed from exactly the same rows, so answers do not change.

use crate::error::PlanResult;
use crate::expr::{ColumnRef, Expr};
use crate::optimizer::cardinality::estimate_rows;
use crate::optimizer::OptimizerRule;
use crate::plan::{JoinKind, LogicalPlan, PlanBuilder};

pub struct FilterAggregatesByJoinKeys;

impl OptimizerRule for FilterAggregatesByJoinKeys {
    fn name(&self) -> &'static str {
        "filter_aggregates_by_join_keys"
    }

    fn rewrite(&self, plan: LogicalPlan) -> PlanResult<LogicalPlan> {
        rewrite(plan)
    }
}

/// The key source must be estimated at no more than this share of the aggregate's input...
const MAX_SOURCE_SHARE: f64 = 1.0 / 8.0;

/// ... and of its groups.
const MAX_GROUP_SHARE: f64 = 1.0 / 2.0;

fn rewrite(plan: LogicalPlan) -> PlanResult<LogicalPlan> {
    let plan = plan.map_children(rewrite)?;
    let LogicalPlan::Join {
        left,
        right,
        kind,
        on,
        filter,
        schema,
    } = plan
    else {
        return Ok(plan);
    };
    let right_reads_matches = matches!(
        kind,
        JoinKind::Inner
            | JoinKind::Left
            | JoinKind::Semi
            | JoinKind::Anti { null_aware: false }
            | JoinKind::Mark { null_aware: false }
    );
    let left_reads_matches = matches!(kind, JoinKind::Inner | JoinKind::Right);
    let (mut left, mut right) = (*left, *right);
    let mut reduced = false;
    if right_reads_matches {
        let pairs: Vec<(&Expr, &Expr)> = on.iter().map(|(l, r)| (r, l)).collect();
        if let Some(r) = reduce(&right, &left, &pairs)? {
            right = r;
            reduced = true;
        }
    }
    if left_reads_matches && !reduced {
        let pairs: Vec<(&Expr, &Expr)> = on.iter().map(|(l, r)| (l, r)).collect();
        if let Some(l) = reduce(&left, &right, &pairs)? {
            left = l;
        }
    }
    Ok(LogicalPlan::Join {
        left: Box::new(left),
        right: Box::new(right),
        kind,
        on,
        filter,
        schema,
    })
}

/// `agg_side` with a semi join below its aggregate, keeping the rows whose group keys
/// `other` holds; `pairs` are the join's (aggregate side, other side) key expressions.
/// `None` where the side is not a grouped aggregate joined on plain group columns, where it
/// is already filtered this way, or where no input of `other` is small enough.
fn reduce(
    agg_side: &LogicalPlan,
    other: &LogicalPlan,
    pairs: &[(&Expr, &Expr)],
) -> PlanResult<Option<LogicalPlan>> {
    let mut groups = Vec::new();
    let mut other_cols = Vec::new();
    for (a, o) in pairs {
        let (Expr::Column(a), Expr::Column(o)) = (a, o) else {
            continue;
        };
        if let Some(g) = group_index(agg_side, a) {
            groups.push(g);
            other_cols.push(o.clone());
        }
    }
    if groups.is_empty() {
        return Ok(None);
    }
    let Some(agg_input) = aggregate_input(agg_side) else {
        return Ok(None);
    };
    let Some((source, cols)) = smallest_source(other, other_cols) else {
        return Ok(None);
    };
    // Worth it only where the keys are few next to both the aggregate's input and its
    // groups (a filter keeping nearly every group would cost a second scan for nothing).
    let source_rows = estimate_rows(source);
    if source_rows > estimate_rows(agg_input) * MAX_SOURCE_SHARE
        || source_rows > estimate_rows(agg_side) * MAX_GROUP_SHARE
    {
        return Ok(None);
    }
    let keys = PlanBuilder::from_plan(source.clone())
        .project(cols.iter().cloned().map(Expr::Column).collect())?
        .build();
    Ok(place(agg_side.clone(), &groups, keys, &cols))
}

/// The group position the output column `c` of `plan` carries, looking through
/// projections and aliases down to a grouped aggregate.
fn group_index(plan: &LogicalPlan, c: &ColumnRef) -> Option<usize> {
    let i = plan.schema().position(c)?;
    match plan {
        LogicalPlan::Projection { input, exprs, .. } => match exprs[i].clone().unalias() {
            Expr::Column(inner) => group_index(input, &inner),
            _ => None,
        },
        LogicalPlan::SubqueryAlias { input, .. } => {
            group_index(input, &input.schema().field(i).column_ref())
        }
        LogicalPlan::Aggregate { group, .. } => (i < group.len()).then_some(i),
        _ => None,
    }
}

/// The input of the aggregate [`group_index`] reaches.
fn aggregate_input(plan: &LogicalPlan) -> Option<&LogicalPlan> {
    match plan {
        LogicalPlan::Projection { input, .. } | LogicalPlan::SubqueryAlias { input, .. } => {
            aggregate_input(input)
        }
        LogicalPlan::Aggregate { input, .. } => Some(input),
        _ => None,
    }
}

/// Among `plan` and the inputs below it whose `cols` values include those of `plan`, the
/// one with the fewest estimated rows, with the columns' names there.
fn smallest_source(
    plan: &LogicalPlan,
    cols: Vec<ColumnRef>,
) -> Option<(&LogicalPlan, Vec<ColumnRef>)> {
    let here = cols
        .iter()
        .map(|c| {
            let i = plan.schema().position(c)?;
            Some(plan.schema().field(i).column_ref())
        })
        .collect::<Option<Vec<_>>>()?;
    let below = match plan {
        LogicalPlan::Filter { input, .. }
        | LogicalPlan::Sort { input, .. }
        | LogicalPlan::Limit { input, .. }
        | LogicalPlan::Distinct { input } => smallest_source(input, here.clone()),
        LogicalPlan::Projection {
            input,
            exprs,
            schema,
        } => here
            .iter()
            .map(|c| match exprs[schema.position(c)?].clone().unalias() {
                Expr::Column(inner) => Some(inner),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .and_then(|inner| smallest_source(input, inner)),
        LogicalPlan::SubqueryAlias { input, schema, .. } => here
            .iter()
            .map(|c| Some(input.schema().field(schema.position(c)?).column_ref()))
            .collect::<Option<Vec<_>>>()
            .and_then(|inner| smallest_source(input, inner)),
        // A join's output values of a column are among its input's (or NULL, which never
        // matches): descend into the one input that holds every key column.
        LogicalPlan::Join { left, right, .. } => {
            let on_left = here.iter().all(|c| left.schema().has(c));
            let on_right = here.iter().all(|c| right.schema().has(c));
            match (on_left, on_right) {
                (true, false) => smallest_source(left, here.clone()),
                (false, true) => smallest_source(right, here.clone()),
                _ => None,
            }
        }
        _ => None,
    };
    match below {
        Some(b) if estimate_rows(b.0) < estimate_rows(plan) => Some(b),
        _ => Some((plan, here)),
    }
}

/// `plan` rebuilt with `keys` semi-joined below the aggregate [`group_index`] reaches, on
/// its group expressions `groups` against `cols`; `None` where that input is already a
/// semi join on those group expressions.
fn place(
    plan: LogicalPlan,
    groups: &[usize],
    keys: LogicalPlan,
    cols: &[ColumnRef],
) -> Option<LogicalPlan> {
    Some(match plan {
        LogicalPlan::Projection {
            input,
            exprs,
            schema,
        } => LogicalPlan::Projection {
            input: Box::new(place(*input, groups, keys, cols)?),
            exprs,
            schema,
        },
        LogicalPlan::SubqueryAlias {
            input,
            alias,
            schema,
        } => LogicalPlan::SubqueryAlias {
            input: Box::new(place(*input, groups, keys, cols)?),
            alias,
            schema,
        },
        LogicalPlan::Aggregate {
            input,
            group,
            aggs,
            schema,
        } => {
            let on: Vec<(Expr, Expr)> = groups
                .iter()
                .zip(cols)
                .map(|(&g, c)| (group[g].clone(), Expr::Column(c.clone())))
                .collect();
            let done = matches!(
                input.as_ref(),
                LogicalPlan::Join { kind: JoinKind::Semi, on: existing, .. }
                    if on.iter().all(|(g, _)| existing.iter().any(|(e, _)| e == g))
            );
            if done {
                return None;
            }
            let input_schema = input.schema().clone();
            LogicalPlan::Aggregate {
                input: Box::new(LogicalPlan::Join {
                    left: input,
                    right: Box::new(keys),
                    kind: JoinKind::Semi,
                    on,
                    filter: None,
                    schema: input_schema,
                }),
                group,
                aggs,
                schema,
            }
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{col, Expr};
    use crate::optimizer::rules::test_table as table;

    /// `p` joined (`kind`) with the per-key count of `o`.
    fn plan(kind: JoinKind) -> LogicalPlan {
        let counts = table("o", &["ok", "v"])
            .aggregate(vec![col("ok")], vec![Expr::count_star()])
            .unwrap();
        table("p", &["pk"])
            .join(counts, kind, vec![(col("pk"), col("ok"))], None)
            .unwrap()
            .build()
    }

    #[test]
    fn the_aggregate_input_keeps_only_keys_the_other_side_holds() {
        let before = plan(JoinKind::Left);
        let after = rewrite(before.clone()).unwrap();
        assert_eq!(
            after.to_string(),
            "Join: Left on=[pk = ok]\n  Scan: p (memory)\n  Aggregate: group=[ok] \
             aggs=[count(*)]\n    Join: Semi on=[ok = p.pk]\n      Scan: o (memory)\n      \
             Projection: p.pk\n        Scan: p (memory)\n"
        );
        assert_eq!(after.schema(), before.schema());
        // Applied once: a second run changes nothing.
        assert_eq!(
            rewrite(after.clone()).unwrap().to_string(),
            after.to_string()
        );
    }

    #[test]
    fn not_in_and_outer_sides_are_left_alone() {
        // NOT IN depends on whether the aggregate holds a NULL key; a right join keeps
        // every aggregate row.
        for kind in [
            JoinKind::Anti { null_aware: true },
            JoinKind::Mark { null_aware: true },
            JoinKind::Right,
            JoinKind::Full,
        ] {
            let before = plan(kind);
            assert_eq!(
                rewrite(before.clone()).unwrap().to_string(),
                before.to_string(),
                "{kind:?}"
            );
        }
    }
}
