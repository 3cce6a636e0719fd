//! From logical plan to pipelines, one function arm per plan node.
//!
//! Streaming nodes (filter, projection, join probe, alias) extend the pipeline of their
//! input. Pipeline breakers (aggregate, sort, limit, distinct, union, join build) run their
//! input's pipeline to completion into a sink; the sink's output becomes the in-memory source
//! of the next pipeline. The plan is thus executed bottom-up, one pipeline at a time, each
//! pipeline spread over all workers morsel by morsel.

mod aggregate;
mod filter_order;
mod join;
mod order;

use std::sync::{Arc, OnceLock};

use morsel_planner::{memory_scan_filter_order, Expr, LogicalPlan, PlanSchema, TableSource};
use morsel_storage::{Batch, Column, DataType, ScalarValue, SchemaRef};

use crate::context::{ExecContext, StageLabel};
use crate::error::{ExecError, ExecResult};
use crate::expr::{compile, fuse, PhysExpr};
use crate::operator::aggregate::{AggSpec, AggregateSink};
use crate::operator::collect::CollectSink;
use crate::operator::filter::{FilterOp, Test};
use crate::operator::hash_join::JoinTable;
use crate::operator::limit::LimitSink;
use crate::operator::project::ProjectOp;
use crate::operator::sort::{SortKey, SortSink};
use crate::operator::window::{self, WindowSpec};
use crate::scheduler::{run_pipeline, Operator, Sink, Source};
use crate::shared::SharedResults;
use crate::source::{CsvSource, MemorySource, ScanFilter};
use crate::union::{UnionInput, UnionSource};
use morsel_planner::optimizer::cardinality::estimate_rows;

/// A pipeline under construction: a source and the streaming operators after it, each with
/// a label (name and the planner's row estimate) for EXPLAIN ANALYZE.
struct Pipe {
    source: Box<dyn Source>,
    ops: Vec<Box<dyn Operator>>,
    labels: Vec<StageLabel>,
    schema: PlanSchema,
    /// The batches the source reads when it reads a node's materialized result (a sort's,
    /// a limit's): with no operators after it, they are the pipe's output.
    materialized: Option<Arc<Vec<Batch>>>,
}

/// A test handed down from a hash join to the memory scan under its probe side: column
/// `column` of the plan being built holds a key of `table` (rows without one would find no
/// match in the join). The scan adds it to its filter where it rules out rows cheaply
/// enough; plans it cannot pass through (anything but filters, projections of the column
/// and aliases) drop it, the probe testing every row anyway.
#[derive(Clone)]
struct JoinKeys {
    column: usize,
    table: Arc<JoinTable>,
    /// What the test is, for EXPLAIN ("l_partkey in the join's keys").
    what: String,
    /// Only the first of the join's keys is tested (its keys are packed from several
    /// columns): the probe reads and packs the others for the rows it keeps, so the test
    /// is worth running even after every other test of the scan.
    first_only: bool,
    /// Set by the scan that tests the keys, to the share of rows it expects them to keep:
    /// the stages between it and the join scale their row estimates by it.
    kept: Arc<OnceLock<f64>>,
}

impl JoinKeys {
    /// `l` with its row estimate after the keys, where a scan below tests them.
    fn scaled(kept: Option<Arc<OnceLock<f64>>>, mut l: StageLabel) -> StageLabel {
        if let Some(f) = kept.as_deref().and_then(OnceLock::get) {
            l.estimated_rows = l.estimated_rows.map(|r| r * f);
        }
        l
    }
}

fn label(name: impl Into<String>, node: Option<&LogicalPlan>) -> StageLabel {
    StageLabel {
        name: name.into(),
        estimated_rows: node.map(estimate_rows),
        details: Vec::new(),
    }
}

/// One detail line per fused program in `exprs`.
pub(crate) fn fused_details<'a>(exprs: impl IntoIterator<Item = &'a PhysExpr>) -> Vec<String> {
    exprs
        .into_iter()
        .flat_map(PhysExpr::fused_programs)
        .map(|p| p.to_string())
        .collect()
}

/// A filter's predicate as conjuncts compiled one by one (see `FilterOp`): first those over
/// numbers alone (cheap), then the others (text, LIKE, functions), which so run on the rows
/// the cheap ones leave. Apart, not fused into one pass: once a conjunct rules out most rows,
/// the rest run on the few left (Q6 in memory 39 -> 18 ms). A memory scan's filter orders
/// them by `filter_order` instead (its table's sample says how selective each is).
fn conjuncts(
    ctx: &ExecContext,
    predicate: &Expr,
    schema: &PlanSchema,
) -> ExecResult<Vec<(PhysExpr, bool)>> {
    let (numeric, rest): (Vec<Expr>, Vec<Expr>) = predicate
        .clone()
        .split_conjunction()
        .into_iter()
        .partition(|c| numeric_only(c, schema));
    compile_conjuncts(ctx, numeric.into_iter().chain(rest), schema)
}

/// Conjuncts compiled, each with whether it is cheap to test on every row (see `FilterOp`).
fn compile_conjuncts(
    ctx: &ExecContext,
    conjuncts: impl IntoIterator<Item = Expr>,
    schema: &PlanSchema,
) -> ExecResult<Vec<(PhysExpr, bool)>> {
    conjuncts
        .into_iter()
        .map(|c| Ok((phys(ctx, &c, schema)?, filter_order::cheap(&c, schema))))
        .collect()
}

/// Whether `e` is comparisons, arithmetic and logic over non-text columns and constants.
pub(super) fn numeric_only(e: &Expr, schema: &PlanSchema) -> bool {
    let not_text = |e: &Expr| e.data_type(schema).is_ok_and(|t| t != DataType::Utf8);
    match e {
        Expr::Column(_) | Expr::Literal(_) => not_text(e),
        Expr::Binary { left, right, .. } => {
            numeric_only(left, schema) && numeric_only(right, schema)
        }
        Expr::Not(x) | Expr::Negative(x) | Expr::IsNull(x) | Expr::IsNotNull(x) => {
            numeric_only(x, schema)
        }
        Expr::Cast { expr, to } => *to != DataType::Utf8 && numeric_only(expr, schema),
        Expr::Between {
            expr, low, high, ..
        } => [expr, low, high].iter().all(|x| numeric_only(x, schema)),
        _ => false,
    }
}

impl StageLabel {
    fn with_details(mut self, details: Vec<String>) -> Self {
        self.details = details;
        self
    }
}

impl Pipe {
    fn push(&mut self, op: Box<dyn Operator>, label: StageLabel) {
        self.ops.push(op);
        self.labels.push(label);
    }

    /// Runs the pipeline into `sink`; `input` is the plan node whose rows the sink consumes
    /// (for its estimate).
    fn run<S: Sink>(
        &self,
        ctx: &ExecContext,
        sink: &S,
        input: Option<&LogicalPlan>,
    ) -> ExecResult<S::Output> {
        let mut labels = self.labels.clone();
        labels.push(label(sink.name(), input).with_details(sink.details()));
        run_pipeline(ctx, self.source.as_ref(), &self.ops, sink, &labels)
    }
}

/// Runs `plan` and returns its result batches in order.
pub fn execute(plan: &LogicalPlan, ctx: &ExecContext) -> ExecResult<Vec<Batch>> {
    let ctx = ExecContext {
        shared: Arc::new(SharedResults::for_plan(plan)),
        unordered: Arc::new(order::unordered_groupings(plan)),
        ..ctx.clone()
    };
    // Every stage's label carries its node's estimate: each is computed once.
    morsel_planner::optimizer::cardinality::with_estimates_of(plan, || {
        let pipe = build(plan, &ctx)?;
        // A result already materialized with nothing after it is the answer as it is: a
        // pipeline collecting it again would only hand its rows over morsel by morsel.
        match (&pipe.materialized, pipe.ops.is_empty()) {
            (Some(batches), true) => Ok(batches
                .iter()
                .filter(|b| b.num_rows() > 0)
                .cloned()
                .collect()),
            _ => pipe.run(&ctx, &CollectSink, Some(plan)),
        }
    })
}

/// Whether grouping `plan` puts its groups back in first-seen order: unless nothing observes
/// their order, and its result is not shared with another reader that might.
fn keeps_order(ctx: &ExecContext, plan: &LogicalPlan) -> bool {
    !ctx.unordered.contains(&order::node_address(plan)) || ctx.shared.holds(plan)
}

fn storage_schema(s: &PlanSchema) -> SchemaRef {
    Arc::new(s.to_schema())
}

/// A pipeline reading the materialized output of plan node `node` (a pipeline breaker).
fn materialized(name: &str, batches: Vec<Batch>, schema: &PlanSchema, node: &LogicalPlan) -> Pipe {
    materialized_arc(name, Arc::new(batches), schema, node)
}

fn materialized_arc(
    name: &str,
    batches: Arc<Vec<Batch>>,
    schema: &PlanSchema,
    node: &LogicalPlan,
) -> Pipe {
    let source = MemorySource::new(name, batches.clone());
    read_back(source, format!("Read {name} result"), batches, schema, node)
}

/// A pipeline whose `source` reads `batches`, the materialized output of plan node `node`,
/// as stage `stage`.
fn read_back(
    source: MemorySource,
    stage: String,
    batches: Arc<Vec<Batch>>,
    schema: &PlanSchema,
    node: &LogicalPlan,
) -> Pipe {
    Pipe {
        source: Box::new(source),
        ops: Vec::new(),
        labels: vec![label(stage, Some(node))],
        schema: schema.clone(),
        materialized: Some(batches),
    }
}

/// The columns `scan` reads out of batches of `wide`, a scan of the same rows with more
/// columns (no copy: the columns are shared).
fn keep_columns(
    batches: &[Batch],
    wide: &morsel_planner::Scan,
    scan: &morsel_planner::Scan,
) -> ExecResult<Arc<Vec<Batch>>> {
    let wide_columns = wide.columns();
    let positions = scan
        .columns()
        .iter()
        .map(|c| wide_columns.iter().position(|w| w == c))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| ExecError::Internal("a widened scan lacks a column".into()))?;
    let schema = storage_schema(&scan.schema);
    let kept = batches
        .iter()
        .map(|b| {
            let cols = positions.iter().map(|&i| b.column(i).clone()).collect();
            Ok(Batch::try_new(schema.clone(), cols, b.num_rows())?)
        })
        .collect::<ExecResult<Vec<_>>>()?;
    Ok(Arc::new(kept))
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

/// The pipeline of a scan: its source, and for in-memory tables the pushed filter.
fn scan_pipe(
    scan: &morsel_planner::Scan,
    plan: &LogicalPlan,
    ctx: &ExecContext,
    keys: Option<JoinKeys>,
) -> ExecResult<Pipe> {
    let schema = storage_schema(&scan.schema);
    let predicate = Expr::conjunction(scan.filters.clone());
    // The source's rows are before the pushed-down filter, unless a CSV scan applies
    // it while decoding.
    let unfiltered = LogicalPlan::Scan(morsel_planner::Scan {
        filters: Vec::new(),
        ..scan.clone()
    });
    let mut scan_label = label(
        format!("Scan {} {}", source_kind(&scan.source), scan.table),
        Some(&unfiltered),
    );
    let source: Box<dyn Source> = match &scan.source {
        TableSource::Csv(reader) => {
            let filter = match &predicate {
                Some(p) => {
                    let f = scan_filter(ctx, p, &scan.schema)?;
                    scan_label = label(
                        format!("Scan csv {} (filtering while decoding)", scan.table),
                        Some(plan),
                    );
                    scan_label.details.push(format!(
                        "filter {p} reads {} of {} columns; the others are built only \
                             for the rows it keeps",
                        f.slots.len(),
                        scan.schema.len()
                    ));
                    scan_label.details.extend(fused_details([&f.predicate]));
                    Some(f)
                }
                None => None,
            };
            Box::new(CsvSource::new(reader, scan.projection.as_deref(), filter)?)
        }
        TableSource::Memory(table) => {
            let batches = match &scan.projection {
                None => relabel(table.batches.clone(), &schema)?,
                Some(p) => table
                    .batches
                    .iter()
                    .map(|b| {
                        let cols: Vec<Column> = p.iter().map(|&i| b.column(i).clone()).collect();
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
    let mut pipe = Pipe {
        labels: vec![scan_label],
        source,
        ops: Vec::new(),
        schema: scan.schema.clone(),
        materialized: None,
    };
    if let (Some(pred), TableSource::Memory(table)) = (predicate, &scan.source) {
        let keys = keys.and_then(|k| {
            let fraction = join_key_fraction(scan, table, &k)?;
            Some((k, fraction))
        });
        let (ordered, keys_at, line) = filter_order::order(
            memory_scan_filter_order(scan, table),
            keys.as_ref()
                .map(|(k, f)| (k.what.clone(), *f, k.first_only)),
            &scan.schema,
        );
        let conjuncts = compile_conjuncts(ctx, ordered, &scan.schema)?;
        let mut details = vec![line];
        details.extend(fused_details(conjuncts.iter().map(|(c, _)| c)));
        let mut tests: Vec<Test> = conjuncts
            .into_iter()
            .map(|(c, cheap)| Test::Conjunct(c, cheap))
            .collect();
        let mut kept = None;
        if let (Some(at), Some((k, fraction))) = (keys_at, keys) {
            tests.insert(
                at,
                Test::JoinKeys {
                    column: k.column,
                    table: k.table,
                },
            );
            let _ = k.kept.set(fraction);
            kept = Some(k.kept);
        }
        // The stage's rows are after the join's keys too, where it tests them.
        let filter_label = label(format!("Filter (pushed into the scan): {pred}"), Some(plan));
        pipe.push(
            Box::new(FilterOp::new(tests)),
            JoinKeys::scaled(kept, filter_label).with_details(details),
        );
    }
    Ok(pipe)
}

/// The column `e` reads as it is (a column, or an alias of one).
fn plain_column(e: &Expr) -> Option<&morsel_planner::ColumnRef> {
    match e {
        Expr::Column(c) => Some(c),
        Expr::Alias { expr, .. } => plain_column(expr),
        _ => None,
    }
}

/// The share of a memory scan's rows whose key column holds a key of the join's table,
/// measured on the table's sample (`None`: no sample to judge by).
fn join_key_fraction(
    scan: &morsel_planner::Scan,
    table: &morsel_planner::MemTable,
    keys: &JoinKeys,
) -> Option<f64> {
    let col = scan
        .projection
        .as_ref()
        .map_or(keys.column, |p| p[keys.column]);
    let values = table.sampled_values(col)?;
    let hits = values
        .iter()
        .filter(|v| match v {
            ScalarValue::Int32(x) | ScalarValue::Date32(x) => keys.table.has_int_key(i64::from(*x)),
            ScalarValue::Int64(x) | ScalarValue::Timestamp(x) => keys.table.has_int_key(*x),
            _ => false,
        })
        .count();
    (!values.is_empty()).then(|| (hits.max(1) as f64 / (values.len() + 1) as f64).min(1.0))
}

fn build(plan: &LogicalPlan, ctx: &ExecContext) -> ExecResult<Pipe> {
    build_with(plan, ctx, None)
}

/// Builds `plan`'s pipeline, handing `keys` down to the memory scan it reads (see
/// [`JoinKeys`]).
fn build_with(plan: &LogicalPlan, ctx: &ExecContext, keys: Option<JoinKeys>) -> ExecResult<Pipe> {
    Ok(match plan {
        LogicalPlan::Scan(scan) => {
            // A scan the query reads more than once is decoded once and its rows kept; one
            // that reads other columns of the same rows reads the scan of both's columns.
            if let Some(wide) = ctx.shared.widened(scan) {
                let wide_plan = LogicalPlan::Scan(wide.clone());
                let decode = || {
                    scan_pipe(&wide, &wide_plan, ctx, None)?.run(
                        ctx,
                        &CollectSink,
                        Some(&wide_plan),
                    )
                };
                if let Some(batches) = ctx.shared.read(&wide_plan, decode) {
                    let kept = keep_columns(&batches?, &wide, scan)?;
                    return Ok(materialized_arc("shared scan", kept, &scan.schema, plan));
                }
            }
            let decode = || scan_pipe(scan, plan, ctx, None)?.run(ctx, &CollectSink, Some(plan));
            match ctx.shared.read(plan, decode) {
                Some(batches) => materialized_arc("shared scan", batches?, &scan.schema, plan),
                None => scan_pipe(scan, plan, ctx, keys)?,
            }
        }
        LogicalPlan::Filter { input, predicate } => {
            let kept = keys.as_ref().map(|k| k.kept.clone());
            let mut pipe = build_with(input, ctx, keys)?;
            let conjuncts = conjuncts(ctx, predicate, input.schema())?;
            let details = fused_details(conjuncts.iter().map(|(c, _)| c));
            pipe.push(
                Box::new(FilterOp::new(
                    conjuncts
                        .into_iter()
                        .map(|(c, cheap)| Test::Conjunct(c, cheap))
                        .collect(),
                )),
                JoinKeys::scaled(kept, label(format!("Filter: {predicate}"), Some(plan)))
                    .with_details(details),
            );
            pipe
        }
        LogicalPlan::Projection {
            input,
            exprs,
            schema,
        } => {
            // The key column passes through where the projection only reads it.
            let keys = keys.and_then(|k| {
                let column = input.schema().position(plain_column(&exprs[k.column])?)?;
                Some(JoinKeys { column, ..k })
            });
            let kept = keys.as_ref().map(|k| k.kept.clone());
            let mut pipe = build_with(input, ctx, keys)?;
            let exprs: Vec<PhysExpr> = exprs
                .iter()
                .map(|e| phys(ctx, e, input.schema()))
                .collect::<ExecResult<_>>()?;
            let details = fused_details(&exprs);
            pipe.push(
                Box::new(ProjectOp {
                    exprs,
                    schema: storage_schema(schema),
                }),
                JoinKeys::scaled(kept, label("Projection", Some(plan))).with_details(details),
            );
            pipe.schema = schema.clone();
            pipe
        }
        LogicalPlan::SubqueryAlias { input, schema, .. } => {
            let mut pipe = build_with(input, ctx, keys)?;
            pipe.schema = schema.clone();
            pipe
        }
        LogicalPlan::Aggregate { .. } => aggregate::aggregate_pipe(ctx, plan, None)?,
        LogicalPlan::Distinct { input } => {
            let in_schema = input.schema();
            let sink = AggregateSink {
                group: (0..in_schema.len()).map(PhysExpr::Column).collect(),
                key_types: in_schema.fields().iter().map(|f| f.data_type).collect(),
                aggs: Vec::new(),
                schema: storage_schema(in_schema),
                threads: ctx.threads,
                keep_order: keeps_order(ctx, plan),
                partition_keys: None,
                whole_groups: false,
            };
            let out = build(input, ctx)?.run(ctx, &sink, Some(input))?;
            materialized("distinct", out, in_schema, plan)
        }
        LogicalPlan::Sort { input, keys } => {
            let out =
                build(input, ctx)?.run(ctx, &sort_sink(ctx, input, keys, None)?, Some(input))?;
            materialized("sort", out, input.schema(), plan)
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
                        |x| phys(ctx, x, in_schema),
                        e.data_type(in_schema)?,
                    ),
                    other => Err(ExecError::Internal(format!(
                        "{other} is not a window function"
                    ))),
                })
                .collect::<ExecResult<Vec<_>>>()?;
            let rows = build(input, ctx)?.run(ctx, &CollectSink, Some(input))?;
            let input_schema = storage_schema(in_schema);
            let batch = Batch::concat(input_schema.clone(), &relabel(rows, &input_schema)?)?;
            let mut columns = batch.columns().to_vec();
            for spec in &specs {
                columns.push(window::evaluate(spec, &batch, ctx.threads)?);
            }
            let out = Batch::try_new(storage_schema(schema), columns, batch.num_rows())?;
            materialized("window", vec![out], schema, plan)
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
            let sink = sort_sink(ctx, sorted, keys, Some(skip + fetch))?;
            let top = build(sorted, ctx)?.run(ctx, &sink, Some(sorted))?;
            let out = materialized("top-k", top, input.schema(), plan).run(
                ctx,
                &LimitSink::new(*skip, Some(*fetch)),
                Some(plan),
            )?;
            materialized("limit", out, input.schema(), plan)
        }
        LogicalPlan::Limit { input, skip, fetch } => {
            let out = build(input, ctx)?.run(ctx, &LimitSink::new(*skip, *fetch), Some(plan))?;
            materialized("limit", out, input.schema(), plan)
        }
        LogicalPlan::Union { inputs, schema } => {
            // The inputs stream through one source; EXPLAIN lists each input's stages.
            let mut details = Vec::new();
            let mut streams = Vec::with_capacity(inputs.len());
            for (i, input) in inputs.iter().enumerate() {
                let pipe = build(input, ctx)?;
                let stages: Vec<&str> = pipe.labels.iter().map(|l| l.name.as_str()).collect();
                details.push(format!("input {}: {}", i + 1, stages.join(" -> ")));
                details.extend(
                    pipe.labels
                        .iter()
                        .flat_map(|l| l.details.iter().map(|d| format!("  {d}"))),
                );
                streams.push(UnionInput {
                    source: pipe.source,
                    operators: pipe.ops,
                });
            }
            Pipe {
                source: Box::new(UnionSource::new(streams, storage_schema(schema))),
                ops: Vec::new(),
                labels: vec![
                    label(format!("Union of {} inputs", inputs.len()), Some(plan))
                        .with_details(details),
                ],
                schema: schema.clone(),
                materialized: None,
            }
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
            materialized("values", batches, schema, plan)
        }
        LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            filter,
            schema,
        } => join::hash_join(
            ctx,
            plan,
            join::JoinParts {
                left,
                right,
                kind: *kind,
                on,
                filter: filter.as_ref(),
                schema,
            },
        )?,
    })
}

/// A CSV scan's pushed-down predicate, compiled against only the columns it reads.
fn scan_filter(ctx: &ExecContext, pred: &Expr, schema: &PlanSchema) -> ExecResult<ScanFilter> {
    let mut slots = pred
        .columns()
        .iter()
        .map(|c| schema.index_of(c))
        .collect::<Result<Vec<_>, _>>()?;
    slots.sort_unstable();
    slots.dedup();
    let sub = PlanSchema::new(slots.iter().map(|&i| schema.field(i).clone()).collect());
    Ok(ScanFilter::new(slots, phys(ctx, pred, &sub)?))
}

/// Compiles `e` over input `schema`, fusing elementwise subtrees unless the context turned
/// fusion off.
fn phys(ctx: &ExecContext, e: &Expr, schema: &PlanSchema) -> ExecResult<PhysExpr> {
    let p = compile(e, schema)?;
    // A column or a constant has nothing to fuse (and a 10,000-column SELECT * would
    // otherwise convert its schema once per column).
    if matches!(p, PhysExpr::Column(_) | PhysExpr::Literal { .. }) {
        return Ok(p);
    }
    if ctx.fusion {
        fuse(p, &schema.to_schema())
    } else {
        Ok(p)
    }
}

fn source_kind(source: &TableSource) -> &'static str {
    match source {
        TableSource::Csv(_) => "csv",
        TableSource::Memory(_) => "memory",
    }
}

fn sort_sink(
    ctx: &ExecContext,
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
                    expr: phys(ctx, &k.expr, in_schema)?,
                    asc: k.asc,
                    nulls_first: k.nulls_first,
                })
            })
            .collect::<ExecResult<_>>()?,
        schema: storage_schema(in_schema),
        limit,
        threads: ctx.threads,
        bound: u64::MAX.into(),
    })
}

fn agg_spec(ctx: &ExecContext, e: &Expr, schema: &PlanSchema) -> ExecResult<AggSpec> {
    match e.clone().unalias() {
        Expr::Aggregate {
            func,
            args,
            distinct,
        } => {
            let arg = args.first();
            let second = match args.get(1) {
                Some(e) if func.takes_two_columns() => Some(phys(ctx, e, schema)?),
                _ => None,
            };
            let constant = match args.get(1) {
                _ if second.is_some() => None,
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
                arg: arg.map(|a| phys(ctx, a, schema)).transpose()?,
                arg_type: match arg {
                    Some(a) => a.data_type(schema)?,
                    None => morsel_storage::DataType::Int64,
                },
                distinct,
                constant,
                second,
            })
        }
        other => Err(ExecError::Internal(format!("{other} is not an aggregate"))),
    }
}
