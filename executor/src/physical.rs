//! From logical plan to pipelines, one function arm per plan node.
//!
//! Streaming nodes (filter, projection, join probe, alias) extend the pipeline of their
//! input. Pipeline breakers (aggregate, sort, limit, distinct, union, join build) run their
//! input's pipeline to completion into a sink; the sink's output becomes the in-memory source
//! of the next pipeline. The plan is thus executed bottom-up, one pipeline at a time, each
//! pipeline spread over all workers morsel by morsel.

use std::sync::Arc;

use morsel_planner::{Expr, JoinKind, LogicalPlan, PlanSchema, TableSource};
use morsel_storage::{Batch, Column, SchemaRef};

use crate::context::ExecContext;
use crate::error::{ExecError, ExecResult};
use crate::expr::{compile, PhysExpr};
use crate::operator::aggregate::{AggSpec, AggregateSink};
use crate::operator::collect::CollectSink;
use crate::operator::filter::FilterOp;
use crate::operator::hash_join::{HashProbeOp, JoinTable, MatchedRows};
use crate::operator::limit::LimitSink;
use crate::operator::project::ProjectOp;
use crate::operator::sort::{SortKey, SortSink};
use crate::operator::window::{self, WindowSpec};
use crate::scheduler::{run_pipeline, Operator, Sink, Source};
use crate::source::{CsvSource, MemorySource};

/// A pipeline under construction: a source and the streaming operators after it.
struct Pipe {
    source: Box<dyn Source>,
    ops: Vec<Box<dyn Operator>>,
    schema: PlanSchema,
}

impl Pipe {
    fn run<S: Sink>(&self, ctx: &ExecContext, sink: &S) -> ExecResult<S::Output> {
        run_pipeline(ctx, self.source.as_ref(), &self.ops, sink)
    }
}

/// Runs `plan` and returns its result batches in order.
pub fn execute(plan: &LogicalPlan, ctx: &ExecContext) -> ExecResult<Vec<Batch>> {
    build(plan, ctx)?.run(ctx, &CollectSink)
}

fn storage_schema(s: &PlanSchema) -> SchemaRef {
    Arc::new(s.to_schema())
}

fn materialized(name: &str, batches: Vec<Batch>, schema: &PlanSchema) -> Pipe {
    Pipe {
        source: Box::new(MemorySource::new(name, Arc::new(batches))),
        ops: Vec::new(),
        schema: schema.clone(),
    }
}

/// Re-labels batches with `schema` (same column types, new names).
fn relabel(batches: Vec<Batch>, schema: &SchemaRef) -> ExecResult<Vec<Batch>> {
    batches
        .into_iter()
        .map(|b| {
            let rows = b.num_rows();
            Ok(Batch::try_new(schema.clone(), b.into_columns(), rows)?)
        })
        .collect()
}

fn build(plan: &LogicalPlan, ctx: &ExecContext) -> ExecResult<Pipe> {
    Ok(match plan {
        LogicalPlan::Scan(scan) => {
            let schema = storage_schema(&scan.schema);
            let source: Box<dyn Source> = match &scan.source {
                TableSource::Csv(reader) => {
                    Box::new(CsvSource::new(reader, scan.projection.as_deref())?)
                }
                TableSource::Memory(table) => {
                    let batches = match &scan.projection {
                        None => relabel(table.batches.clone(), &schema)?,
                        Some(p) => table
                            .batches
                            .iter()
                            .map(|b| {
                                let cols: Vec<Column> =
                                    p.iter().map(|&i| b.column(i).clone()).collect();
                                Ok(Batch::try_new(schema.clone(), cols, b.num_rows())?)
                            })
                            .collect::<ExecResult<Vec<_>>>()?,
                    };
                    Box::new(MemorySource::new(
                        format!("memory {}", scan.table),
                        Arc::new(batches),
                    ))
                }
            };
            let mut ops: Vec<Box<dyn Operator>> = Vec::new();
            if let Some(pred) = Expr::conjunction(scan.filters.clone()) {
                ops.push(Box::new(FilterOp {
                    predicate: compile(&pred, &scan.schema)?,
                }));
            }
            Pipe {
                source,
                ops,
                schema: scan.schema.clone(),
            }
        }
        LogicalPlan::Filter { input, predicate } => {
            let mut pipe = build(input, ctx)?;
            pipe.ops.push(Box::new(FilterOp {
                predicate: compile(predicate, input.schema())?,
            }));
            pipe
        }
        LogicalPlan::Projection {
            input,
            exprs,
            schema,
        } => {
            let mut pipe = build(input, ctx)?;
            let exprs = exprs
                .iter()
                .map(|e| compile(e, input.schema()))
                .collect::<ExecResult<_>>()?;
            pipe.ops.push(Box::new(ProjectOp {
                exprs,
                schema: storage_schema(schema),
            }));
            pipe.schema = schema.clone();
            pipe
        }
        LogicalPlan::SubqueryAlias { input, schema, .. } => {
            let mut pipe = build(input, ctx)?;
            pipe.schema = schema.clone();
            pipe
        }
        LogicalPlan::Aggregate {
            input,
            group,
            aggs,
            schema,
        } => {
            let in_schema = input.schema();
            let sink = AggregateSink {
                group: group
                    .iter()
                    .map(|e| compile(e, in_schema))
                    .collect::<ExecResult<_>>()?,
                key_types: group
                    .iter()
                    .map(|e| e.data_type(in_schema))
                    .collect::<Result<_, _>>()?,
                aggs: aggs
                    .iter()
                    .map(|a| agg_spec(a, in_schema))
                    .collect::<ExecResult<_>>()?,
                schema: storage_schema(schema),
            };
            let out = build(input, ctx)?.run(ctx, &sink)?;
            materialized("aggregate", out, schema)
        }
        LogicalPlan::Distinct { input } => {
            let in_schema = input.schema();
            let sink = AggregateSink {
                group: (0..in_schema.len()).map(PhysExpr::Column).collect(),
                key_types: in_schema.fields().iter().map(|f| f.data_type).collect(),
                aggs: Vec::new(),
                schema: storage_schema(in_schema),
            };
            let out = build(input, ctx)?.run(ctx, &sink)?;
            materialized("distinct", out, in_schema)
        }
        LogicalPlan::Sort { input, keys } => {
            let out = build(input, ctx)?.run(ctx, &sort_sink(input, keys, None)?)?;
            materialized("sort", out, input.schema())
        }
        LogicalPlan::Window {
            input,
            exprs,
            schema,
        } => {
            let in_schema = input.schema();
            let specs = exprs
                .iter()
                .map(|e| match e.clone().unalias() {
                    Expr::Window(w) => WindowSpec::from_expr(
                        &w,
                        |x| compile(x, in_schema),
                        e.data_type(in_schema)?,
                    ),
                    other => Err(ExecError::Internal(format!(
                        "{other} is not a window function"
                    ))),
                })
                .collect::<ExecResult<Vec<_>>>()?;
            let rows = build(input, ctx)?.run(ctx, &CollectSink)?;
            let input_schema = storage_schema(in_schema);
            let batch = Batch::concat(input_schema.clone(), &relabel(rows, &input_schema)?)?;
            let mut columns = batch.columns().to_vec();
            for spec in &specs {
                columns.push(window::evaluate(spec, &batch)?);
            }
            let out = Batch::try_new(storage_schema(schema), columns, batch.num_rows())?;
            materialized("window", vec![out], schema)
        }
        LogicalPlan::Limit {
            input,
            skip,
            fetch: Some(fetch),
        } if matches!(input.as_ref(), LogicalPlan::Sort { .. }) => {
            // ORDER BY ... LIMIT: a Top-K sort keeps only the rows the limit can reach.
            let LogicalPlan::Sort {
                input: sorted,
                keys,
            } = input.as_ref()
            else {
                unreachable!("matched above");
            };
            let sink = sort_sink(sorted, keys, Some(skip + fetch))?;
            let top = build(sorted, ctx)?.run(ctx, &sink)?;
            let out = materialized("top-k", top, input.schema()).run(
                ctx,
                &LimitSink {
                    skip: *skip,
                    fetch: Some(*fetch),
                },
            )?;
            materialized("limit", out, input.schema())
        }
        LogicalPlan::Limit { input, skip, fetch } => {
            let out = build(input, ctx)?.run(
                ctx,
                &LimitSink {
                    skip: *skip,
                    fetch: *fetch,
                },
            )?;
            materialized("limit", out, input.schema())
        }
        LogicalPlan::Union { inputs, schema } => {
            let target = storage_schema(schema);
            let mut all = Vec::new();
            for input in inputs {
                all.extend(relabel(
                    build(input, ctx)?.run(ctx, &CollectSink)?,
                    &target,
                )?);
            }
            materialized("union", all, schema)
        }
        LogicalPlan::Values { rows, schema } => {
            let target = storage_schema(schema);
            let one_row =
                Batch::try_new(Arc::new(morsel_storage::Schema::default()), Vec::new(), 1)?;
            let empty = PlanSchema::default();
            let mut batches = Vec::with_capacity(rows.len());
            for row in rows {
                let cols = row
                    .iter()
                    .map(|e| compile(e, &empty)?.evaluate(&one_row))
                    .collect::<ExecResult<Vec<_>>>()?;
                batches.push(Batch::try_new(target.clone(), cols, 1)?);
            }
            materialized("values", batches, schema)
        }
        LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            filter,
            schema,
        } => {
            let build_keys: Vec<PhysExpr> = on
                .iter()
                .map(|(_, r)| compile(r, right.schema()))
                .collect::<ExecResult<_>>()?;
            let probe_keys: Vec<PhysExpr> = on
                .iter()
                .map(|(l, _)| compile(l, left.schema()))
                .collect::<ExecResult<_>>()?;
            let build_side = build(right, ctx)?.run(ctx, &CollectSink)?;
            let build_batch = Batch::concat(
                storage_schema(right.schema()),
                &relabel(build_side, &storage_schema(right.schema()))?,
            )?;
            let table = Arc::new(JoinTable::new(build_batch, &build_keys)?);
            let pair_schema = left.schema().join(right.schema(), false);
            let tracks_build = matches!(kind, JoinKind::Right | JoinKind::Full);
            let matched = tracks_build.then(|| Arc::new(MatchedRows::new(table.num_rows())));
            let mut pipe = build(left, ctx)?;
            let out_schema = storage_schema(schema);
            pipe.ops.push(Box::new(HashProbeOp {
                table: table.clone(),
                probe_keys,
                kind: *kind,
                filter: filter
                    .as_ref()
                    .map(|f| compile(f, &pair_schema))
                    .transpose()?,
                pair_schema: storage_schema(&pair_schema),
                schema: out_schema.clone(),
                matched: matched.clone(),
            }));
            pipe.schema = schema.clone();
            match matched {
                // Right and full joins end once every probe row has been seen: the build rows
                // nothing matched follow the probe output, in build order.
                Some(matched) => {
                    let mut out = relabel(pipe.run(ctx, &CollectSink)?, &out_schema)?;
                    out.push(table.unmatched(
                        &matched,
                        &storage_schema(left.schema()),
                        &out_schema,
                    )?);
                    materialized("join", out, schema)
                }
                None => pipe,
            }
        }
    })
}

fn sort_sink(
    input: &LogicalPlan,
    keys: &[morsel_planner::SortExpr],
    limit: Option<usize>,
) -> ExecResult<SortSink> {
    let in_schema = input.schema();
    Ok(SortSink {
        keys: keys
            .iter()
            .map(|k| {
                Ok(SortKey {
                    expr: compile(&k.expr, in_schema)?,
                    asc: k.asc,
                    nulls_first: k.nulls_first,
                })
            })
            .collect::<ExecResult<_>>()?,
        schema: storage_schema(in_schema),
        limit,
    })
}

fn agg_spec(e: &Expr, schema: &PlanSchema) -> ExecResult<AggSpec> {
    match e.clone().unalias() {
        Expr::Aggregate {
            func,
            args,
            distinct,
        } => {
            let arg = args.first();
            let constant = match args.get(1) {
                Some(Expr::Literal(v)) => Some(v.clone()),
                Some(other) => {
                    return Err(ExecError::Internal(format!(
                        "non-constant second argument {other} of {}()",
                        func.name()
                    )))
                }
                None => None,
            };
            Ok(AggSpec {
                func,
                arg: arg.map(|a| compile(a, schema)).transpose()?,
                arg_type: match arg {
                    Some(a) => a.data_type(schema)?,
                    None => morsel_storage::DataType::Int64,
                },
                distinct,
                constant,
            })
        }
        other => Err(ExecError::Internal(format!("{other} is not an aggregate"))),
    }
}
