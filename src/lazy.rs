//! [`LazyFrame`]: a query built in code, in the spirit of Polars. Each step is checked as it
//! is added (unknown columns, type mismatches); the first error is kept and returned by the
//! terminal call (`collect`, `explain`, `schema`), so a chain reads without `?` at each step.

use std::fmt;

use morsel_planner::{Expr, JoinKind, LogicalPlan, PlanBuilder, PlanError, SortExpr};
use morsel_storage::csv::SkippedRow;
use morsel_storage::{Batch, ScalarValue, SchemaRef};

use crate::error::{Error, Result};
use crate::format::render_table;
use crate::guard;
use crate::session::Session;

#[derive(Clone)]
pub struct LazyFrame {
    session: Session,
    /// The plan so far, or the first error met while building it.
    builder: std::result::Result<PlanBuilder, std::sync::Arc<PlanError>>,
    /// Where the operations of the SQL it was made from are, for run-time errors.
    positions: std::sync::Arc<morsel_sql::ExprPositions>,
}

impl LazyFrame {
    pub(crate) fn new(session: Session, builder: PlanBuilder) -> Self {
        Self {
            session,
            builder: Ok(builder),
            positions: Default::default(),
        }
    }

    /// This frame, its run-time errors placed in the SQL it was made from.
    pub(crate) fn with_positions(mut self, positions: morsel_sql::ExprPositions) -> Self {
        self.positions = std::sync::Arc::new(positions);
        self
    }

    fn step(
        self,
        f: impl FnOnce(PlanBuilder) -> std::result::Result<PlanBuilder, PlanError>,
    ) -> Self {
        let builder = self.builder.and_then(|b| f(b).map_err(std::sync::Arc::new));
        Self {
            session: self.session,
            builder,
            positions: self.positions,
        }
    }

    /// The plan built so far, or the first error met while building it.
    pub fn check(&self) -> Result<&PlanBuilder> {
        self.builder
            .as_ref()
            .map_err(|e| Error::Invalid(e.to_string()))
    }

    pub fn filter(self, predicate: Expr) -> Self {
        self.step(|b| b.filter(predicate))
    }

    pub fn select(self, exprs: impl IntoIterator<Item = Expr>) -> Self {
        let exprs: Vec<Expr> = exprs.into_iter().collect();
        self.step(|b| b.project(exprs))
    }

    pub fn group_by(self, keys: impl IntoIterator<Item = Expr>) -> GroupBy {
        GroupBy {
            frame: self,
            keys: keys.into_iter().collect(),
        }
    }

    pub fn sort<K: Into<SortExpr>>(self, keys: impl IntoIterator<Item = K>) -> Self {
        let keys: Vec<SortExpr> = keys.into_iter().map(Into::into).collect();
        self.step(|b| b.sort(keys))
    }

    pub fn limit(self, n: usize) -> Self {
        self.step(|b| Ok(b.limit(0, Some(n))))
    }

    pub fn slice(self, offset: usize, len: usize) -> Self {
        self.step(|b| Ok(b.limit(offset, Some(len))))
    }

    pub fn distinct(self) -> Self {
        self.step(|b| Ok(b.distinct()))
    }

    /// Joins with `right` on pairs of (left, right) key expressions.
    pub fn join(
        self,
        right: LazyFrame,
        kind: JoinKind,
        on: impl IntoIterator<Item = (Expr, Expr)>,
    ) -> Self {
        let on: Vec<(Expr, Expr)> = on.into_iter().collect();
        match right.builder {
            Ok(r) => self.step(|b| b.join(r, kind, on, None)),
            Err(e) => Self {
                session: self.session,
                builder: Err(e),
                positions: self.positions,
            },
        }
    }

    /// The logical plan as built (before optimization).
    pub fn logical_plan(&self) -> Result<LogicalPlan> {
        Ok(self.check()?.plan().clone())
    }

    /// What SQL's `EXPLAIN` prints: the optimized plan with estimated rows, then the
    /// physical plan (pipelines, fused programs, strategies).
    pub fn explain(&self) -> Result<String> {
        let plan = self.logical_plan()?;
        guard::contain(
            || self.describe(),
            || crate::explain::explain_text(&self.session, &plan, false),
        )
    }

    /// Runs the query and returns what each pipeline stage did (EXPLAIN ANALYZE as data).
    pub fn explain_analyze(&self) -> Result<crate::explain::QueryProfile> {
        let plan = self.logical_plan()?;
        guard::contain(
            || self.describe(),
            || Ok(crate::explain::run_profiled(&self.session, &plan)?.1),
        )
    }

    pub fn schema(&self) -> Result<SchemaRef> {
        Ok(std::sync::Arc::new(self.check()?.schema().to_schema()))
    }

    /// Optimizes and runs the query.
    pub fn collect(&self) -> Result<QueryResult> {
        let plan = self.logical_plan()?;
        guard::contain(|| self.describe(), || self.run(plan))
    }

    /// The plan as text, for an internal error's message.
    fn describe(&self) -> String {
        self.check()
            .map(|b| b.plan().to_string())
            .unwrap_or_default()
    }

    fn run(&self, plan: LogicalPlan) -> Result<QueryResult> {
        let plan = self.session.optimizer()?.optimize(plan, None)?;
        let schema = std::sync::Arc::new(plan.schema().to_schema());
        let ctx = self.session.exec_context();
        let batches = morsel_executor::execute(&plan, &ctx)
            .map_err(|e| Error::from(e).located(&self.positions))?;
        let mut skipped = std::mem::take(
            &mut *ctx
                .metrics
                .skipped_rows
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        skipped.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
        Ok(QueryResult {
            schema,
            batches,
            skipped,
        })
    }
}

/// A grouping waiting for its aggregates.
pub struct GroupBy {
    frame: LazyFrame,
    keys: Vec<Expr>,
}

impl GroupBy {
    pub fn agg(self, aggs: impl IntoIterator<Item = Expr>) -> LazyFrame {
        let aggs: Vec<Expr> = aggs.into_iter().collect();
        let keys = self.keys;
        self.frame.step(|b| b.aggregate(keys, aggs))
    }
}

/// A query's result: its schema and batches, in order.
#[derive(Clone, Debug)]
pub struct QueryResult {
    schema: SchemaRef,
    batches: Vec<Batch>,
    skipped: Vec<SkippedRow>,
}

impl QueryResult {
    pub fn new(schema: SchemaRef, batches: Vec<Batch>) -> Self {
        Self {
            schema,
            batches,
            skipped: Vec::new(),
        }
    }

    /// CSV records the query's scans skipped under `ignore_errors`, by file and line.
    pub fn skipped_rows(&self) -> &[SkippedRow] {
        &self.skipped
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    pub fn batches(&self) -> &[Batch] {
        &self.batches
    }

    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(Batch::num_rows).sum()
    }

    /// Every row as scalars (convenient for tests and small results).
    pub fn rows(&self) -> Vec<Vec<ScalarValue>> {
        self.batches
            .iter()
            .flat_map(|b| {
                (0..b.num_rows()).map(move |r| b.columns().iter().map(|c| c.scalar_at(r)).collect())
            })
            .collect()
    }
}

impl fmt::Display for QueryResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&render_table(&self.schema, &self.batches))
    }
}
