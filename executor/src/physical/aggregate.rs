//! The pipelines of a GROUP BY: its sink, and, for an aggregate over another that groups
//! by more keys (as `COUNT(DISTINCT x) ... GROUP BY k` becomes: distinct `(k, x)` first,
//! then `k`'s count), how the two meet without a second merge.
//!
//! The aggregate below partitions its groups by the hash of the keys the one above groups
//! by, so each of its output batches (one per partition) holds whole groups of the one
//! above. That one then reads a batch per morsel and groups each in a table of its own: no
//! group spans two morsels, so the tables' groups, in morsel order, are the result, in
//! first-seen order, with nothing merged. Partitions are a constant number, chosen by key
//! hash, so the batches (and the results' bits) depend on the data only.

use std::sync::Arc;

use morsel_planner::{Expr, LogicalPlan, PlanSchema};

use super::order::column_index;
use super::{
    agg_spec, build, keeps_order, materialized_arc, phys, read_back, storage_schema, Pipe,
};
use crate::context::ExecContext;
use crate::error::ExecResult;
use crate::operator::aggregate::AggregateSink;
use crate::source::MemorySource;

/// The pipeline reading aggregate `plan`'s output (an `Aggregate` node with `input`,
/// `group`, `aggs` and `schema`). With `partition_keys`, its groups are partitioned by
/// those keys' hash and read a partition per morsel.
pub(super) fn aggregate_pipe(
    ctx: &ExecContext,
    plan: &LogicalPlan,
    partition_keys: Option<Vec<bool>>,
) -> ExecResult<Pipe> {
    let LogicalPlan::Aggregate {
        input,
        group,
        aggs,
        schema,
    } = plan
    else {
        return Err(crate::error::ExecError::Internal(
            "an aggregate pipeline over another node".into(),
        ));
    };
    let in_schema = input.schema();
    let below = whole_groups_below(ctx, group, input);
    let sink = AggregateSink {
        group: group
            .iter()
            .map(|e| phys(ctx, e, in_schema))
            .collect::<ExecResult<_>>()?,
        key_types: group
            .iter()
            .map(|e| e.data_type(in_schema))
            .collect::<Result<_, _>>()?,
        aggs: aggs
            .iter()
            .map(|a| agg_spec(ctx, a, in_schema))
            .collect::<ExecResult<_>>()?,
        schema: storage_schema(schema),
        threads: ctx.threads,
        keep_order: keeps_order(ctx, plan),
        partition_keys: partition_keys.clone(),
        whole_groups: below.is_some(),
    };
    let run = || {
        let pipe = match below.clone() {
            Some(keys) => aggregate_pipe(ctx, input, keys)?,
            None => build(input, ctx)?,
        };
        pipe.run(ctx, &sink, Some(input))
    };
    // An aggregate the query holds more than once runs once.
    let (batches, name) = match ctx.shared.read(plan, run) {
        Some(batches) => (batches?, "shared aggregate"),
        None => (Arc::new(run()?), "aggregate"),
    };
    if partition_keys.is_none() {
        return Ok(materialized_arc(name, batches, schema, plan));
    }
    let source = MemorySource::batch_per_morsel(name, batches.clone());
    let stage = format!("Read {name} partitions");
    Ok(read_back(source, stage, batches, schema, plan))
}

/// Where aggregate `input` can hand an aggregate grouping by `group` over it whole groups
/// per morsel: `Some(partition keys)` for `input`'s pipeline (`None` inside: all its keys,
/// whose groups are each one row of its output), or `None` where it cannot. The aggregate
/// below must group by two keys or more, among them every key above (as its columns), and
/// must not be read in its order (nor by another part of the query).
fn whole_groups_below(
    ctx: &ExecContext,
    group: &[Expr],
    input: &LogicalPlan,
) -> Option<Option<Vec<bool>>> {
    let LogicalPlan::Aggregate { group: below, .. } = input else {
        return None;
    };
    if group.is_empty() || below.len() < 2 || keeps_order(ctx, input) {
        return None;
    }
    let schema: &PlanSchema = input.schema();
    let mut keep = vec![false; below.len()];
    for e in group {
        let c = column_index(e, schema).filter(|&c| c < below.len())?;
        keep[c] = true;
    }
    Some((!keep.iter().all(|&k| k)).then_some(keep))
}
