//! Hash joins into pipelines: which input is indexed, the index step between pipelines, and
//! the pipeline that probes it.
//!
//! A join normally indexes its right input and streams the left through a probe, so the
//! output follows the left input's order. A semi or anti join (`EXISTS`, `NOT EXISTS`, `IN`
//! without NULL semantics) whose left input is expected to be the smaller instead indexes
//! the left rows and streams the right input past them, marking each left row some right
//! row matches; the left rows are then read back in their order, the marked ones for a semi
//! join and the others for an anti join. The output is the same rows in the same order
//! either way; the large input is never collected or indexed.

use std::sync::Arc;

use morsel_planner::{BinaryOp, Expr, JoinKind, LogicalPlan, PlanSchema};
use morsel_storage::Batch;

use super::{
    build, build_with, fused_details, label, materialized, phys, relabel, storage_schema, JoinKeys,
    Pipe,
};
use crate::context::{ExecContext, PipelineStats, StageStats};
use crate::error::ExecResult;
use crate::expr::PhysExpr;
use crate::operator::collect::CollectSink;
use crate::operator::hash_join::{HashProbeOp, JoinTable, MarkSink, MatchedRows};
use crate::operator::pair_filter::PairFilter;
use crate::operator::range_index::{RangeBound, RangeIndex};
use morsel_planner::optimizer::cardinality::estimate_rows;

/// The parts of a `LogicalPlan::Join`.
pub(super) struct JoinParts<'a> {
    pub left: &'a LogicalPlan,
    pub right: &'a LogicalPlan,
    pub kind: JoinKind,
    pub on: &'a [(Expr, Expr)],
    pub filter: Option<&'a Expr>,
    pub schema: &'a PlanSchema,
}

impl JoinParts<'_> {
    /// Whether to index the left input: a semi or anti join (not `NOT IN`, whose NULLs
    /// depend on the whole right input) on keys, whose left input is expected to have fewer
    /// rows than its right.
    fn builds_left(&self) -> bool {
        let marks = matches!(
            self.kind,
            JoinKind::Semi | JoinKind::Anti { null_aware: false }
        );
        marks && !self.on.is_empty() && estimate_rows(self.left) < estimate_rows(self.right)
    }

    /// The key expressions of one side, compiled against that side's schema.
    fn keys(&self, ctx: &ExecContext, left: bool) -> ExecResult<Vec<PhysExpr>> {
        self.on
            .iter()
            .map(|(l, r)| match left {
                true => phys(ctx, l, self.left.schema()),
                false => phys(ctx, r, self.right.schema()),
            })
            .collect()
    }
}

/// The pipeline of a hash join's output. `plan` is the join node.
pub(super) fn hash_join(ctx: &ExecContext, plan: &LogicalPlan, j: JoinParts) -> ExecResult<Pipe> {
    if j.builds_left() {
        return left_built(ctx, plan, j);
    }
    // A semi, anti or mark join without a filter asks only whether a key has a row.
    let keys_only = j.filter.is_none() && !j.kind.needs_every_match();
    let table = Arc::new(index(ctx, j.right, &j.keys(ctx, false)?, keys_only)?);
    let pair_schema = j.left.schema().join(j.right.schema(), false);
    let tracks_build = matches!(j.kind, JoinKind::Right | JoinKind::Full);
    let matched = tracks_build.then(|| Arc::new(MatchedRows::new(table.num_rows())));
    let mut pipe = build_with(j.left, ctx, probe_scan_keys(&j, &table, ctx))?;
    let out_schema = storage_schema(j.schema);
    let probe_keys = j.keys(ctx, true)?;
    // Without keys, inequalities between the sides select runs of the build rows sorted.
    let range = match j.on.is_empty() {
        true => RangeSplit::of(&j),
        false => None,
    };
    let residual = match &range {
        Some(split) => split.residual.as_ref(),
        None => j.filter,
    };
    let filter = residual
        .map(|f| pair_filter(ctx, f, &pair_schema))
        .transpose()?;
    let mut details = vec![match &range {
        Some(split) => format!(
            "builds on the right input (~{:.0} rows) sorted by {}, probes with the left: \
             each probe row's matches are the run where {} (binary search); output in \
             probe order, matches in key order",
            estimate_rows(j.right),
            split.key,
            split.text(),
        ),
        None => format!(
            "builds on the right input (~{:.0} rows), probes with the left; output in \
             probe order, matches in build order",
            estimate_rows(j.right)
        ),
    }];
    details.extend(fused_details(
        probe_keys.iter().chain(filter.as_ref().map(|f| &f.expr)),
    ));
    let range = match range {
        Some(split) => Some(Arc::new(split.index(ctx, &j, &table)?)),
        None => None,
    };
    pipe.push(
        Box::new(HashProbeOp {
            table: table.clone(),
            probe_keys,
            kind: j.kind,
            filter,
            schema: out_schema.clone(),
            matched: matched.clone(),
            range: range.clone(),
        }),
        label(
            match &range {
                Some(_) => format!("RangeJoin {} probe", j.kind.name()),
                None => format!("HashJoin {} probe on=[{}]", j.kind.name(), on_text(j.on)),
            },
            Some(plan),
        )
        .with_details(details),
    );
    pipe.schema = j.schema.clone();
    Ok(match matched {
        // Right and full joins end once every probe row has been seen: the build rows
        // nothing matched follow the probe output, in build order.
        Some(matched) => {
            let mut out = relabel(pipe.run(ctx, &CollectSink, Some(plan))?, &out_schema)?;
            out.push(table.unmatched(&matched, &storage_schema(j.left.schema()), &out_schema)?);
            materialized("join", out, j.schema, plan)
        }
        None => pipe,
    })
}

/// The test of the join's keys to hand down to the scan under the probe side (see
/// [`JoinKeys`]): for an inner or semi join (its probe rows without a match are dropped) on
/// one key, or on integer keys packed into one (then of the first key only), a column of
/// the probe side, whose built table tests keys cheaply. Not while the plan is only being
/// described: the table is empty then.
fn probe_scan_keys(j: &JoinParts, table: &Arc<JoinTable>, ctx: &ExecContext) -> Option<JoinKeys> {
    let drops_unmatched = matches!(j.kind, JoinKind::Inner | JoinKind::Semi);
    let (Expr::Column(c), _) = j.on.first()? else {
        return None;
    };
    let first_only = table.tests_first_key_only();
    if !drops_unmatched || ctx.explain_only || !table.tests_keys_cheaply() {
        return None;
    }
    if j.on.len() > 1 && !first_only {
        return None;
    }
    Some(JoinKeys {
        column: j.left.schema().position(c)?,
        table: table.clone(),
        what: match first_only {
            true => format!("{c} in the join's first keys"),
            false => format!("{c} in the join's keys"),
        },
        first_only,
        kept: Default::default(),
    })
}

/// A keyless join's condition split into inequalities on one expression of the build side
/// (`key op probe`, each probe expression over the probe side alone and of the key's type),
/// which a [`RangeIndex`] answers, and the rest, tested on the pairs it finds.
struct RangeSplit {
    key: Expr,
    bounds: Vec<(BinaryOp, Expr)>,
    residual: Option<Expr>,
}

impl RangeSplit {
    /// The split of `j`'s condition on the build expression most of its inequalities
    /// bound; `None` where none does.
    fn of(j: &JoinParts) -> Option<Self> {
        let conjuncts = j.filter?.clone().split_conjunction();
        let left = j.left.schema();
        let right = j.right.schema();
        // Which side every column of `e` belongs to: Some(true) left, Some(false) right.
        let side = |e: &Expr| -> Option<bool> {
            let cols = e.columns();
            let on_left = cols.iter().all(|c| left.has(c) && !right.has(c));
            let on_right = cols.iter().all(|c| right.has(c) && !left.has(c));
            match (cols.is_empty(), on_left, on_right) {
                (false, true, false) => Some(true),
                (false, false, true) => Some(false),
                _ => None,
            }
        };
        // Each conjunct as (build expression, op, probe expression) where it is one.
        let bound = |e: &Expr| -> Option<(Expr, BinaryOp, Expr)> {
            let Expr::Binary {
                left: l,
                op,
                right: r,
            } = e
            else {
                return None;
            };
            if !matches!(
                op,
                BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq
            ) {
                return None;
            }
            let (build, op, probe) = match (side(l)?, side(r)?) {
                (false, true) => ((**l).clone(), *op, (**r).clone()),
                (true, false) => ((**r).clone(), op.swap(), (**l).clone()),
                _ => return None,
            };
            let same_type = match (build.data_type(right), probe.data_type(left)) {
                (Ok(a), Ok(b)) => a == b,
                _ => false,
            };
            same_type.then_some((build, op, probe))
        };
        let found: Vec<Option<(Expr, BinaryOp, Expr)>> = conjuncts.iter().map(bound).collect();
        // The build expression bounded most often (the first of equals).
        let mut best: Option<(&Expr, usize)> = None;
        for (key, _, _) in found.iter().flatten() {
            let count = found.iter().flatten().filter(|(k, _, _)| k == key).count();
            if best.is_none_or(|(_, n)| count > n) {
                best = Some((key, count));
            }
        }
        let key = best?.0.clone();
        let (mut bounds, mut rest) = (Vec::new(), Vec::new());
        for (conjunct, found) in conjuncts.into_iter().zip(found) {
            match found {
                Some((k, op, probe)) if k == key => bounds.push((op, probe)),
                _ => rest.push(conjunct),
            }
        }
        Some(Self {
            key,
            bounds,
            residual: Expr::conjunction(rest),
        })
    }

    /// `key op probe AND ...`, for EXPLAIN.
    fn text(&self) -> String {
        let parts: Vec<String> = self
            .bounds
            .iter()
            .map(|(op, probe)| format!("{} {} {probe}", self.key, op.symbol()))
            .collect();
        parts.join(" AND ")
    }

    /// The index of `table`'s build rows by the key.
    fn index(&self, ctx: &ExecContext, j: &JoinParts, table: &JoinTable) -> ExecResult<RangeIndex> {
        let bounds = self
            .bounds
            .iter()
            .map(|(op, probe)| {
                Ok(RangeBound {
                    op: *op,
                    probe: phys(ctx, probe, j.left.schema())?,
                })
            })
            .collect::<ExecResult<Vec<_>>>()?;
        let key = phys(ctx, &self.key, j.right.schema())?;
        RangeIndex::new(table.build(), &key, bounds, ctx.threads)
    }
}

/// A join condition `f` over `pair_schema`'s rows, compiled over the columns it reads.
fn pair_filter(ctx: &ExecContext, f: &Expr, pair_schema: &PlanSchema) -> ExecResult<PairFilter> {
    let columns = f
        .columns()
        .iter()
        .map(|c| pair_schema.index_of(c))
        .collect::<Result<Vec<usize>, _>>()?;
    let read = PlanSchema::new(
        columns
            .iter()
            .map(|&c| pair_schema.fields()[c].clone())
            .collect(),
    );
    Ok(PairFilter {
        columns,
        expr: phys(ctx, f, &read)?,
        schema: storage_schema(&read),
    })
}

/// A semi or anti join that indexes its left rows and marks them from the right input.
fn left_built(ctx: &ExecContext, plan: &LogicalPlan, j: JoinParts) -> ExecResult<Pipe> {
    // Every left row of a matched key is marked: the rows per key are laid out.
    let table = Arc::new(index(ctx, j.left, &j.keys(ctx, true)?, false)?);
    let pair_schema = j.left.schema().join(j.right.schema(), false);
    let matched = Arc::new(MatchedRows::new(table.num_rows()));
    let keys = j.keys(ctx, false)?;
    let filter = j
        .filter
        .map(|f| pair_filter(ctx, f, &pair_schema))
        .transpose()?;
    let mut details = vec![
        format!("{} join on=[{}]", j.kind.name(), on_text(j.on)),
        format!(
            "builds on the left input (~{:.0} rows) and marks the rows the right input \
             matches; output in left order",
            estimate_rows(j.left)
        ),
    ];
    details.extend(fused_details(
        keys.iter().chain(filter.as_ref().map(|f| &f.expr)),
    ));
    let sink = MarkSink {
        table: table.clone(),
        keys,
        filter,
        matched: matched.clone(),
        details,
    };
    build(j.right, ctx)?.run(ctx, &sink, Some(j.right))?;
    let semi = matches!(j.kind, JoinKind::Semi);
    let out = table.marked_rows(&matched, semi, &storage_schema(j.schema))?;
    Ok(materialized("join", vec![out], j.schema, plan))
}

/// `l = r, ...` for a stage label.
fn on_text(on: &[(Expr, Expr)]) -> String {
    let keys: Vec<String> = on.iter().map(|(l, r)| format!("{l} = {r}")).collect();
    keys.join(", ")
}

/// Runs `input` and indexes its rows by `keys` (with `keys_only`, without the rows per key),
/// reported as its own step between pipelines.
fn index(
    ctx: &ExecContext,
    input: &LogicalPlan,
    keys: &[PhysExpr],
    keys_only: bool,
) -> ExecResult<JoinTable> {
    let rows = build(input, ctx)?.run(ctx, &CollectSink, Some(input))?;
    let schema = storage_schema(input.schema());
    let batch = Batch::concat(schema.clone(), &relabel(rows, &schema)?)?;
    let started = std::time::Instant::now();
    let table = JoinTable::new(batch, keys, keys_only, ctx.threads)?;
    let ns = started.elapsed().as_nanos() as u64;
    let details = if ctx.explain_only {
        vec!["after the build input ends; integer keys and the rows per key on the workers".into()]
    } else {
        vec![format!(
            "{} distinct keys over {} rows, {}",
            table.distinct_keys(),
            table.num_rows(),
            table.index_kind()
        )]
    };
    ctx.metrics
        .pipelines
        .lock()
        .expect("metrics")
        .push(PipelineStats {
            source: "hash join build".into(),
            morsels: 0,
            morsels_per_worker: Vec::new(),
            stages: vec![StageStats {
                name: "HashJoin build index".into(),
                estimated_rows: Some(estimate_rows(input)),
                rows: table.num_rows() as u64,
                batches: 1,
                busy_ns_per_worker: vec![ns],
                bytes: 0,
                memory_bytes: table.heap_bytes() as u64,
                details,
            }],
            finish_ns: 0,
            wall_ns: ns,
            scan: None,
        });
    Ok(table)
}
