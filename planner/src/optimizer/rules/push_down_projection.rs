//! Narrows every scan to the columns some operator above it reads. Expressions refer to
//! columns by name, so pruning a scan never requires rewriting the expressions above it; only
//! schemas derived from children (joins, aliases) are recomputed. A column that only a scan's
//! own filter reads is dropped right after the scan by a projection, so joins and sorts above
//! never carry it (TPC-H Q13's `o_comment`).

use crate::error::PlanResult;
use crate::expr::{ColumnRef, Expr};
use crate::optimizer::OptimizerRule;
use crate::plan::{LogicalPlan, PlanBuilder, Scan};
use crate::schema::PlanSchema;

pub struct PushDownProjection;

impl OptimizerRule for PushDownProjection {
    fn name(&self) -> &'static str {
        "push_down_projection"
    }

    fn rewrite(&self, plan: LogicalPlan) -> PlanResult<LogicalPlan> {
        let required = all_columns(plan.schema());
        prune(plan, required)
    }
}

fn all_columns(schema: &PlanSchema) -> Vec<ColumnRef> {
    schema.fields().iter().map(|f| f.column_ref()).collect()
}

fn add_columns<'a>(required: &mut Vec<ColumnRef>, exprs: impl IntoIterator<Item = &'a Expr>) {
    let mut seen: std::collections::HashSet<ColumnRef> = required.iter().cloned().collect();
    for e in exprs {
        for c in e.columns() {
            if seen.insert(c.clone()) {
                required.push(c);
            }
        }
    }
}

/// The references in `required` by lower-case name, so that asking for each of a wide
/// node's fields takes constant time (a 10,000-column scan asked a 10,000-long list).
struct Required(std::collections::HashMap<String, Vec<Option<String>>>);

impl Required {
    fn new(required: &[ColumnRef]) -> Self {
        let mut m: std::collections::HashMap<String, Vec<Option<String>>> = Default::default();
        for c in required {
            m.entry(c.name.to_ascii_lowercase())
                .or_default()
                .push(c.relation.clone());
        }
        Required(m)
    }

    /// Whether a field of `relation` named `name` is named by a reference here.
    fn has(&self, relation: &Option<String>, name: &str) -> bool {
        self.0.get(&name.to_ascii_lowercase()).is_some_and(|rels| {
            rels.iter().any(|r| match (r, relation) {
                (None, _) => true,
                (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
                _ => false,
            })
        })
    }
}

/// Narrows `scan` to the columns `required` above it plus those its filters read; with
/// `drop_filter_only`, columns only the filters read are then dropped by a projection over
/// the scan (a projection directly above a scan passes false: it already selects).
fn prune_scan(
    scan: Scan,
    required: Vec<ColumnRef>,
    drop_filter_only: bool,
) -> PlanResult<LogicalPlan> {
    let above = required.clone();
    let mut required = required;
    add_columns(&mut required, &scan.filters);
    let full = scan.source.schema().clone();
    let current: Vec<usize> = scan
        .projection
        .clone()
        .unwrap_or_else(|| (0..full.len()).collect());
    let wanted = Required::new(&required);
    let alias = Some(scan.alias.clone());
    let keep: Vec<usize> = current
        .into_iter()
        .filter(|&i| wanted.has(&alias, &full.field(i).name))
        .collect();
    let unchanged = scan.projection.as_ref() == Some(&keep)
        || (scan.projection.is_none() && keep.len() == full.len());
    let scan = if unchanged {
        scan
    } else {
        scan.with_projection(keep)
    };
    if drop_filter_only && !scan.filters.is_empty() {
        let above = Required::new(&above);
        let out: Vec<Expr> = scan
            .schema
            .fields()
            .iter()
            .filter(|f| above.has(&f.relation, &f.name))
            .map(|f| Expr::Column(f.column_ref()))
            .collect();
        if !out.is_empty() && out.len() < scan.schema.len() {
            return Ok(PlanBuilder::from_plan(LogicalPlan::Scan(scan))
                .project(out)?
                .build());
        }
    }
    Ok(LogicalPlan::Scan(scan))
}

fn prune(plan: LogicalPlan, mut required: Vec<ColumnRef>) -> PlanResult<LogicalPlan> {
    match plan {
        LogicalPlan::Scan(scan) => prune_scan(scan, required, true),
        LogicalPlan::Projection {
            input,
            exprs,
            schema,
        } => {
            // Outputs nothing above reads are dropped, all of them where nothing reads any
            // (`count(*)` over a view: its batches carry row counts and no columns, and the
            // scan below decodes none).
            let wanted = Required::new(&required);
            let keep: Vec<usize> = (0..exprs.len())
                .filter(|&i| {
                    let f = schema.field(i);
                    wanted.has(&f.relation, &f.name)
                })
                .collect();
            let (exprs, schema) = if keep.len() == exprs.len() {
                (exprs, schema)
            } else {
                let fields = keep.iter().map(|&i| schema.field(i).clone()).collect();
                (
                    keep.iter().map(|&i| exprs[i].clone()).collect(),
                    PlanSchema::new(fields),
                )
            };
            let req = exprs.iter().flat_map(Expr::columns).collect();
            let input = match *input {
                LogicalPlan::Scan(scan) => prune_scan(scan, req, false)?,
                other => prune(other, req)?,
            };
            Ok(LogicalPlan::Projection {
                input: Box::new(input),
                exprs,
                schema,
            })
        }
        LogicalPlan::Aggregate {
            input,
            group,
            aggs,
            schema,
        } => {
            let mut req = Vec::new();
            add_columns(&mut req, group.iter().chain(&aggs));
            Ok(LogicalPlan::Aggregate {
                input: Box::new(prune(*input, req)?),
                group,
                aggs,
                schema,
            })
        }
        LogicalPlan::Window {
            input,
            exprs,
            schema,
        } => {
            add_columns(&mut required, &exprs);
            let pruned = prune((*input).clone(), required)?;
            // The window's schema is its input's plus its own columns: recompute it.
            Ok(LogicalPlan::Window {
                input,
                exprs,
                schema,
            }
            .with_new_children(vec![pruned]))
        }
        LogicalPlan::Filter { input, predicate } => {
            add_columns(&mut required, [&predicate]);
            Ok(LogicalPlan::Filter {
                input: Box::new(prune(*input, required)?),
                predicate,
            })
        }
        LogicalPlan::Sort { input, keys } => {
            add_columns(&mut required, keys.iter().map(|k| &k.expr));
            Ok(LogicalPlan::Sort {
                input: Box::new(prune(*input, required)?),
                keys,
            })
        }
        LogicalPlan::Limit { input, skip, fetch } => Ok(LogicalPlan::Limit {
            input: Box::new(prune(*input, required)?),
            skip,
            fetch,
        }),
        join @ LogicalPlan::Join { .. } => {
            if let LogicalPlan::Join { on, filter, .. } = &join {
                add_columns(
                    &mut required,
                    on.iter().flat_map(|(l, r)| [l, r]).chain(filter.iter()),
                );
            }
            join.map_children(|c| prune(c, required.clone()))
        }
        LogicalPlan::SubqueryAlias {
            input,
            alias,
            schema,
        } => {
            // A reference the alias's output does not name belongs to a sibling (the other
            // side of a join above), so it keeps nothing here; an ambiguous one keeps every
            // field it names.
            let inner = input.schema().clone();
            let req = required
                .iter()
                .flat_map(|c| schema.positions(c))
                .map(|i| inner.field(i).column_ref())
                .collect();
            let input = prune(*input, req)?;
            let schema = input.schema().with_relation(&alias);
            Ok(LogicalPlan::SubqueryAlias {
                input: Box::new(input),
                alias,
                schema,
            })
        }
        LogicalPlan::Union { inputs, schema } => prune_union(inputs, schema, &required),
        // Distinct reads every column of its input.
        other => other.map_children(|c| {
            let all = all_columns(c.schema());
            prune(c, all)
        }),
    }
}

/// Narrows a UNION ALL to the output positions `required` names (none for `count(*)`: its
/// batches carry row counts), position by position in every input, where each input is a
/// projection (as the builder makes them); otherwise every input keeps all its columns.
fn prune_union(
    inputs: Vec<LogicalPlan>,
    schema: PlanSchema,
    required: &[ColumnRef],
) -> PlanResult<LogicalPlan> {
    let mut keep: Vec<usize> = required.iter().flat_map(|c| schema.positions(c)).collect();
    keep.sort_unstable();
    keep.dedup();
    let narrow = keep.len() < schema.len()
        && inputs.iter().all(
            |i| matches!(i, LogicalPlan::Projection { exprs, .. } if exprs.len() == schema.len()),
        );
    if !narrow {
        let inputs = inputs
            .into_iter()
            .map(|c| {
                let all = all_columns(c.schema());
                prune(c, all)
            })
            .collect::<PlanResult<_>>()?;
        return Ok(LogicalPlan::Union { inputs, schema });
    }
    let inputs = inputs
        .into_iter()
        .map(|input| {
            let LogicalPlan::Projection {
                input,
                exprs,
                schema,
            } = input
            else {
                unreachable!("checked above: every input is a projection");
            };
            let fields = keep.iter().map(|&i| schema.field(i).clone()).collect();
            let narrowed = LogicalPlan::Projection {
                input,
                exprs: keep.iter().map(|&i| exprs[i].clone()).collect(),
                schema: PlanSchema::new(fields),
            };
            let all = all_columns(narrowed.schema());
            prune(narrowed, all)
        })
        .collect::<PlanResult<_>>()?;
    let fields = keep.iter().map(|&i| schema.field(i).clone()).collect();
    Ok(LogicalPlan::Union {
        inputs,
        schema: PlanSchema::new(fields),
    })
}
