//! A grouped count over an inner or left join, grouped by columns of the left input and
//! counting rows or values of the right, needs of the right input only how many rows (or
//! values) each join key has: the right input is first grouped by its join keys with those
//! counts, and the join then finds one row per key, whose counts the outer aggregate adds
//! up. TPC-H Q13 counts the orders of each customer through a left join: 1.5M order rows
//! became 1.5M joined pairs, gathered and then grouped again; with this rule the orders are
//! grouped by customer (100K rows) and each customer finds one.
//!
//! It applies to a grouped aggregate (a global one counts 0 over no rows, where a sum of
//! counts is NULL) whose every call is `count(x)` (x over right columns) or `count(*)`, not
//! DISTINCT, directly over an inner or left join on keys without a residual filter, whose
//! group keys read only left columns (for an inner join, the sides may be the other way
//! round), and where the counted input is estimated to have at least twice as many rows as
//! join keys. Answers are the same: each left row adds what its pairs would have counted (a
//! left row without a match: `count(*)` 1, `count(x)` 0), and NULL keys match nothing
//! either way. Groups come in the order their keys first appear in the new join's output:
//! as before where the grouped input is the left (the join still emits in its order, now a
//! row per left row); in the order of the counted input's first keys for an inner join the
//! other way round. Float keys are left alone (grouping and join equality need not agree on
//! -0.0 and NaN).
//!
//! A count over a join whose condition is only inequalities between the sides (`b.x < a.x`,
//! bands; what a correlated count by an inequality decorrelates into) cannot group the
//! counted input by a key. There each grouped row gets how many counted rows meet the
//! condition from a count join ([`JoinKind::Count`]), which the executor answers by binary
//! search over the counted rows sorted (a range join that measures each run instead of
//! forming its pairs), and the outer aggregate adds those up: a count over 1M x 1M rows
//! costs a sort and 1M searches, not 5 * 10^11 pairs. `count(x)` counts the rows where x
//! is not NULL with a count join of its own; a global count (no GROUP BY) is 0 over no
//! rows.

use crate::error::PlanResult;
use crate::expr::{AggFunc, BinaryOp, ColumnRef, Expr, ScalarFunc};
use crate::optimizer::cardinality::estimate_rows;
use crate::optimizer::rules::renamed;
use crate::optimizer::OptimizerRule;
use crate::plan::{JoinKind, LogicalPlan, PlanBuilder};
use crate::schema::PlanSchema;
use morsel_storage::{DataType, ScalarValue};

pub struct CountMatchesBeforeJoin;

impl OptimizerRule for CountMatchesBeforeJoin {
    fn name(&self) -> &'static str {
        "count_matches_before_join"
    }

    fn rewrite(&self, plan: LogicalPlan) -> PlanResult<LogicalPlan> {
        rewrite(plan)
    }
}

/// The right input must be estimated at no fewer than this many rows per join key.
const MIN_ROWS_PER_KEY: f64 = 2.0;

/// What one aggregate call counts over the joined pairs.
#[derive(Clone)]
enum Counted {
    Rows,
    Values(Expr),
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
    // The join, and the group keys and calls as they read its columns (through a
    // projection that only picks columns, as a join's inputs swapped leave one).
    let through = match input.as_ref() {
        LogicalPlan::Projection {
            input: join,
            exprs,
            schema: picked,
        } => picked_columns(&group, exprs, picked)
            .zip(picked_columns(&aggs, exprs, picked))
            .map(|(g, a)| (join.as_ref(), g, a)),
        join => Some((join, group.clone(), aggs.clone())),
    };
    let rewritten = match through {
        Some((
            LogicalPlan::Join {
                left,
                right,
                kind: kind @ (JoinKind::Inner | JoinKind::Left),
                on,
                filter: None,
                ..
            },
            group,
            aggs,
            // Grouped only: over no rows a global count is 0, the sum of counts NULL.
        )) if !on.is_empty() && !group.is_empty() => {
            match applying(*kind, left, right, &aggs, &group) {
                Some((s, counts)) => count_first(&s, *kind, on, &group, &counts, &schema)?,
                None => None,
            }
        }
        Some((
            LogicalPlan::Join {
                left,
                right,
                kind: kind @ (JoinKind::Inner | JoinKind::Left),
                on,
                filter: Some(condition),
                ..
            },
            group,
            aggs,
        )) if on.is_empty() && is_range(condition) => {
            match applying(*kind, left, right, &aggs, &group) {
                Some((s, counts)) => {
                    count_by_condition(&s, *kind, condition, &group, &counts, &schema)?
                }
                None => None,
            }
        }
        _ => None,
    };
    Ok(rewritten.unwrap_or(LogicalPlan::Aggregate {
        input,
        group,
        aggs,
        schema,
    }))
}

/// `exprs` reading the columns a projection of plain columns `picked` reads (`None` where
/// one of its columns is computed).
fn picked_columns(exprs: &[Expr], picks: &[Expr], picked: &PlanSchema) -> Option<Vec<Expr>> {
    let mut plain = true;
    let mapped = exprs
        .iter()
        .map(|e| {
            e.clone().replace(&mut |x| match x {
                Expr::Column(c) => match picked.position(c).map(|i| picks[i].clone().unalias()) {
                    Some(inner @ Expr::Column(_)) => Some(inner),
                    _ => {
                        plain = false;
                        None
                    }
                },
                _ => None,
            })
        })
        .collect();
    plain.then_some(mapped)
}

/// The join's inputs by role: the one whose columns the aggregate groups by and the one
/// whose rows it counts, and whether the grouped one is the join's left input.
struct Sides<'a> {
    grouped: &'a LogicalPlan,
    counted: &'a LogicalPlan,
    grouped_is_left: bool,
}

/// The first way round a join of `left` and `right` can count: the grouped side and what
/// each call of `aggs` counts, where `group` reads only the grouped side's columns. An
/// inner join counts the same whichever side it groups; a left join groups its left.
fn applying<'a>(
    kind: JoinKind,
    left: &'a LogicalPlan,
    right: &'a LogicalPlan,
    aggs: &[Expr],
    group: &[Expr],
) -> Option<(Sides<'a>, Vec<Counted>)> {
    let mut candidates = vec![Sides {
        grouped: left,
        counted: right,
        grouped_is_left: true,
    }];
    if kind == JoinKind::Inner {
        candidates.push(Sides {
            grouped: right,
            counted: left,
            grouped_is_left: false,
        });
    }
    candidates.into_iter().find_map(|s| {
        let (g, c) = (s.grouped.schema(), s.counted.schema());
        let grouped = group.is_empty() || reads_only(group, g, c);
        counted(aggs, c, g)
            .filter(|_| grouped)
            .map(|counts| (s, counts))
    })
}

/// What each call of `aggs` counts, when every one is a plain `count(*)` or `count(x)`
/// with x over columns of `counted` only (none of `grouped`).
fn counted(aggs: &[Expr], counted: &PlanSchema, grouped: &PlanSchema) -> Option<Vec<Counted>> {
    aggs.iter()
        .map(|a| match a.clone().unalias() {
            Expr::Aggregate {
                func: AggFunc::CountStar,
                distinct: false,
                ..
            } => Some(Counted::Rows),
            Expr::Aggregate {
                func: AggFunc::Count,
                args,
                distinct: false,
            } => match args.as_slice() {
                [x] if reads_only(std::slice::from_ref(x), counted, grouped) => {
                    Some(Counted::Values(x.clone()))
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Whether `exprs` read columns and only columns of `side` (none that `other` also has).
fn reads_only(exprs: &[Expr], side: &PlanSchema, other: &PlanSchema) -> bool {
    exprs.iter().all(|e| {
        let cols = e.columns();
        !cols.is_empty()
            && cols
                .iter()
                .all(|c| side.has(c) && other.positions(c).is_empty())
    })
}

/// The names of `n` count columns.
fn count_names(n: usize) -> Vec<String> {
    (0..n).map(|j| format!("__count_{j}")).collect()
}

/// Whether one of `names` is a column of the grouped input already.
fn clashes(sides: &Sides, names: &[String]) -> bool {
    let schema = sides.grouped.schema();
    names
        .iter()
        .any(|n| !schema.positions(&ColumnRef::new(n)).is_empty())
}

/// The aggregate over the grouped input joined with the counted input's counts per key;
/// `None` where it would not pay (too few rows per key), the keys are floats, or a name
/// would clash.
fn count_first(
    sides: &Sides,
    kind: JoinKind,
    on: &[(Expr, Expr)],
    group: &[Expr],
    counts: &[Counted],
    schema: &PlanSchema,
) -> PlanResult<Option<LogicalPlan>> {
    // Each pair as (grouped side's key, counted side's key).
    let on: Vec<(Expr, Expr)> = match sides.grouped_is_left {
        true => on.to_vec(),
        false => on.iter().map(|(l, r)| (r.clone(), l.clone())).collect(),
    };
    let key_types = on
        .iter()
        .map(|(_, c)| c.data_type(sides.counted.schema()))
        .collect::<Result<Vec<_>, _>>()?;
    if key_types.contains(&DataType::Float64) {
        return Ok(None);
    }
    let names = count_names(counts.len());
    if clashes(sides, &names) {
        return Ok(None);
    }
    let per_key_counts = counts
        .iter()
        .zip(&names)
        .map(|(c, name)| {
            let call = match c {
                Counted::Rows => Expr::count_star(),
                Counted::Values(x) => x.clone().count(),
            };
            call.alias(name)
        })
        .collect();
    let per_key = PlanBuilder::from_plan(sides.counted.clone())
        .aggregate(on.iter().map(|(_, c)| c.clone()).collect(), per_key_counts)?;
    if estimate_rows(per_key.plan()) * MIN_ROWS_PER_KEY > estimate_rows(sides.counted) {
        return Ok(None);
    }
    let key_fields = per_key.schema().fields()[..on.len()].to_vec();
    let keys = on
        .iter()
        .zip(&key_fields)
        .map(|((g, _), f)| (g.clone(), Expr::Column(f.column_ref())));
    let grouped = PlanBuilder::from_plan(sides.grouped.clone());
    let joined = match sides.grouped_is_left {
        true => grouped.join(per_key, kind, keys.collect(), None)?,
        false => per_key.join(grouped, kind, keys.map(|(g, c)| (c, g)).collect(), None)?,
    };
    // A left row's pairs counted (one pair, NULL on the right, where it has no match).
    let sums = counts
        .iter()
        .zip(&names)
        .map(|(c, name)| {
            let unmatched = match c {
                Counted::Rows => 1,
                Counted::Values(_) => 0,
            };
            Expr::Function {
                func: ScalarFunc::Coalesce,
                args: vec![
                    crate::expr::col(name),
                    Expr::Literal(ScalarValue::Int64(unmatched)),
                ],
            }
            .sum()
        })
        .collect();
    let per_group = joined.aggregate(group.to_vec(), sums)?;
    if per_group.schema().len() != schema.len() {
        return Ok(None);
    }
    Ok(Some(renamed(per_group.build(), schema.clone())))
}

/// Whether `condition` is only inequalities (`<`, `<=`, `>`, `>=`) between columns of the
/// two sides, which the executor answers by binary search over one side sorted (a range
/// join): counting a row's matches is then the length of its run, never a pass over pairs.
fn is_range(condition: &Expr) -> bool {
    condition.clone().split_conjunction().iter().all(|c| {
        matches!(
            c,
            Expr::Binary {
                op: BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq,
                left,
                right,
            } if !left.columns().is_empty() && !right.columns().is_empty()
        )
    })
}

/// The aggregate over the grouped input with, per row, how many rows of the counted input
/// meet `condition` (a count join each: of every row, and of the rows where a counted value
/// is not NULL), instead of over the pairs; `None` where a name would clash. A grouped row
/// of an inner join without a match makes no pair, so it is dropped; of a left join it
/// makes one, whose `count(*)` is 1 and `count(x)` 0. Over no rows at all (no GROUP BY) a
/// count is 0, not the NULL of a sum over nothing.
fn count_by_condition(
    sides: &Sides,
    kind: JoinKind,
    condition: &Expr,
    group: &[Expr],
    counts: &[Counted],
    schema: &PlanSchema,
) -> PlanResult<Option<LogicalPlan>> {
    let rows = "__count_rows".to_string();
    let names = count_names(counts.len());
    if clashes(sides, &names) || clashes(sides, std::slice::from_ref(&rows)) {
        return Ok(None);
    }
    let counted = PlanBuilder::from_plan(sides.counted.clone());
    let mut b = PlanBuilder::from_plan(sides.grouped.clone()).count_join(
        counted.clone(),
        Vec::new(),
        Some(condition.clone()),
        &rows,
    )?;
    for (c, name) in counts.iter().zip(&names) {
        if let Counted::Values(x) = c {
            let present = counted.clone().filter(x.clone().is_not_null())?;
            b = b.count_join(present, Vec::new(), Some(condition.clone()), name)?;
        }
    }
    let n = || crate::expr::col(&rows);
    if kind == JoinKind::Inner {
        b = b.filter(n().gt(Expr::Literal(ScalarValue::Int64(0))))?;
    }
    let sums = counts
        .iter()
        .zip(&names)
        .map(|(c, name)| {
            let per_row = match (c, kind) {
                (Counted::Rows, JoinKind::Left) => Expr::Case {
                    operand: None,
                    branches: vec![(
                        n().eq(Expr::Literal(ScalarValue::Int64(0))),
                        Expr::Literal(ScalarValue::Int64(1)),
                    )],
                    otherwise: Some(Box::new(n())),
                },
                (Counted::Rows, _) => n(),
                (Counted::Values(_), _) => crate::expr::col(name),
            };
            per_row.sum()
        })
        .collect();
    let mut per_group = b.aggregate(group.to_vec(), sums)?;
    if group.is_empty() {
        let zeros = per_group
            .schema()
            .fields()
            .iter()
            .map(|f| Expr::Function {
                func: ScalarFunc::Coalesce,
                args: vec![
                    Expr::Column(f.column_ref()),
                    Expr::Literal(ScalarValue::Int64(0)),
                ],
            })
            .collect();
        per_group = per_group.project(zeros)?;
    }
    if per_group.schema().len() != schema.len() {
        return Ok(None);
    }
    Ok(Some(renamed(per_group.build(), schema.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::col;
    use crate::optimizer::rules::test_data_table;

    /// Customers 0..100 and 1000 orders of customers 0..50, each key ten times over.
    fn tables() -> (PlanBuilder, PlanBuilder) {
        let customers = test_data_table("c", &[("ck", (0..100).collect())]);
        let orders = test_data_table(
            "o",
            &[
                ("ok", (0..1000).collect()),
                ("oc", (0..1000).map(|i| i % 50).collect()),
            ],
        );
        (customers, orders)
    }

    fn counted_per_customer(kind: JoinKind, aggs: Vec<Expr>) -> LogicalPlan {
        let (c, o) = tables();
        c.join(o, kind, vec![(col("ck"), col("oc"))], None)
            .unwrap()
            .aggregate(vec![col("ck")], aggs)
            .unwrap()
            .build()
    }

    #[test]
    fn counts_over_a_join_are_taken_per_key_first() {
        let before = counted_per_customer(
            JoinKind::Left,
            vec![col("ok").count(), Expr::count_star().alias("n")],
        );
        let after = rewrite(before.clone()).unwrap();
        assert_eq!(
            after.to_string(),
            "Projection: c.ck, sum(coalesce(__count_0, 0)), sum(coalesce(__count_1, 1))\n  \
             Aggregate: group=[ck] aggs=[sum(coalesce(__count_0, 0)), \
             sum(coalesce(__count_1, 1))]\n    Join: Left on=[ck = o.oc]\n      \
             Scan: c (memory)\n      Aggregate: group=[oc] aggs=[count(ok) AS __count_0, \
             count(*) AS __count_1]\n        Scan: o (memory)\n"
        );
        assert_eq!(after.schema(), before.schema());
        // Applied once: the rewritten aggregate sums, it does not count.
        assert_eq!(
            rewrite(after.clone()).unwrap().to_string(),
            after.to_string()
        );
    }

    /// An inner join with the grouped input on the right: the left input is counted per
    /// key and probes the right.
    #[test]
    fn an_inner_join_may_count_its_left_input() {
        let (c, o) = tables();
        let before = o
            .join(c, JoinKind::Inner, vec![(col("oc"), col("ck"))], None)
            .unwrap()
            .aggregate(vec![col("ck")], vec![col("ok").count()])
            .unwrap()
            .build();
        let after = rewrite(before.clone()).unwrap();
        assert_eq!(
            after.to_string(),
            "Projection: c.ck, sum(coalesce(__count_0, 0))\n  Aggregate: group=[ck] \
             aggs=[sum(coalesce(__count_0, 0))]\n    Join: Inner on=[o.oc = ck]\n      \
             Aggregate: group=[oc] aggs=[count(ok) AS __count_0]\n        Scan: o (memory)\n      \
             Scan: c (memory)\n"
        );
        assert_eq!(after.schema(), before.schema());
    }

    #[test]
    fn other_aggregates_groups_or_joins_stay() {
        let (c, o) = tables();
        let right_grouped = c
            .clone()
            .join(
                o.clone(),
                JoinKind::Inner,
                vec![(col("ck"), col("oc"))],
                None,
            )
            .unwrap()
            .aggregate(vec![col("oc")], vec![col("ok").count()])
            .unwrap()
            .build();
        let filtered = c
            .clone()
            .join(
                o.clone(),
                JoinKind::Left,
                vec![(col("ck"), col("oc"))],
                Some(col("ok").gt(crate::expr::lit(5i64))),
            )
            .unwrap()
            .aggregate(vec![col("ck")], vec![col("ok").count()])
            .unwrap()
            .build();
        // Orders keyed by their own unique column: a row per key, nothing to gain.
        let unique_keys = c
            .join(o, JoinKind::Left, vec![(col("ck"), col("ok"))], None)
            .unwrap()
            .aggregate(vec![col("ck")], vec![col("oc").count()])
            .unwrap()
            .build();
        let (c, o) = tables();
        let global = c
            .join(o, JoinKind::Left, vec![(col("ck"), col("oc"))], None)
            .unwrap()
            .aggregate(Vec::new(), vec![col("ok").count()])
            .unwrap()
            .build();
        for before in [
            global,
            counted_per_customer(JoinKind::Left, vec![col("ok").sum()]),
            counted_per_customer(JoinKind::Left, vec![col("ck").count()]),
            counted_per_customer(JoinKind::Right, vec![col("ok").count()]),
            right_grouped,
            filtered,
            unique_keys,
        ] {
            assert_eq!(
                rewrite(before.clone()).unwrap().to_string(),
                before.to_string()
            );
        }
    }
}
