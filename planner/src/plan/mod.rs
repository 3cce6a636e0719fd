//! The logical plan: what to compute, not how. Nodes hold only storage types and expressions,
//! so a plan can be displayed, rewritten by the optimizer, or serialized without the executor.

mod builder;
mod display;
mod mem_table;
mod remembered;
mod rename;

use std::sync::Arc;

use morsel_storage::csv::CsvReader;
use morsel_storage::SchemaRef;

pub use builder::PlanBuilder;
pub use mem_table::MemTable;
pub(crate) use remembered::ScanSelectivities;

use crate::expr::{Expr, SortExpr};
use crate::schema::{PlanField, PlanSchema};

/// One or more CSV files read as one table (a glob pattern's matches, in path order), each
/// with its head (header, schema) read already; all share the first file's schema.
#[derive(Debug)]
pub struct CsvFiles {
    readers: Vec<CsvReader>,
    /// Scans' filter selectivities measured on the inference sample.
    selectivities: ScanSelectivities,
}

impl CsvFiles {
    /// `readers` must be non-empty and share one schema.
    pub fn new(readers: Vec<CsvReader>) -> Result<Self, crate::PlanError> {
        let Some(first) = readers.first() else {
            return Err(crate::PlanError::Invalid("a CSV table needs a file".into()));
        };
        for r in &readers[1..] {
            if r.schema().len() != first.schema().len() {
                return Err(crate::PlanError::Invalid(format!(
                    "{} has {} columns but {} has {}; files read as one table need the same columns",
                    r.input().name(),
                    r.schema().len(),
                    first.input().name(),
                    first.schema().len()
                )));
            }
        }
        Ok(Self {
            readers,
            selectivities: ScanSelectivities::default(),
        })
    }

    pub fn readers(&self) -> &[CsvReader] {
        &self.readers
    }

    pub fn schema(&self) -> &SchemaRef {
        self.readers[0].schema()
    }
}

/// Where a scan reads from.
#[derive(Clone, Debug)]
pub enum TableSource {
    Csv(Arc<CsvFiles>),
    Memory(Arc<MemTable>),
}

/// Two sources are equal when they are the same opened files or the same table.
impl PartialEq for TableSource {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (TableSource::Csv(a), TableSource::Csv(b)) => Arc::ptr_eq(a, b),
            (TableSource::Memory(a), TableSource::Memory(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl TableSource {
    /// The full schema of the source, before projection.
    pub fn schema(&self) -> &SchemaRef {
        match self {
            TableSource::Csv(r) => r.schema(),
            TableSource::Memory(m) => &m.schema,
        }
    }

    /// The selectivities of scans over this source the planner estimated (it asks for each
    /// many times while it orders joins).
    pub(crate) fn scan_selectivities(&self) -> &ScanSelectivities {
        match self {
            TableSource::Csv(r) => &r.selectivities,
            TableSource::Memory(m) => &m.scans,
        }
    }
}

/// A table scan with the projection and filters pushed into it.
#[derive(Clone, Debug, PartialEq)]
pub struct Scan {
    /// The name the table was referenced by (a catalog name or a file path).
    pub table: String,
    pub source: TableSource,
    /// Source column indexes the scan produces (`None` = all), in output order.
    pub projection: Option<Vec<usize>>,
    /// Conjuncts applied to every row the scan produces.
    pub filters: Vec<Expr>,
    /// The output schema (projected fields, qualified by the table's alias).
    pub schema: PlanSchema,
    pub alias: String,
}

impl Scan {
    pub fn new(table: impl Into<String>, alias: impl Into<String>, source: TableSource) -> Self {
        let alias = alias.into();
        let schema = PlanSchema::from_schema(Some(&alias), source.schema());
        Self {
            table: table.into(),
            source,
            projection: None,
            filters: Vec::new(),
            schema,
            alias,
        }
    }

    /// The source column indexes the scan produces, in output order.
    pub fn columns(&self) -> Vec<usize> {
        match &self.projection {
            Some(p) => p.clone(),
            None => (0..self.source.schema().len()).collect(),
        }
    }

    /// Restricts the scan to `indexes` of the source schema (recomputing the output schema).
    pub fn with_projection(mut self, indexes: Vec<usize>) -> Self {
        let projected = self.source.schema().project(&indexes);
        self.schema = PlanSchema::from_schema(Some(&self.alias), &projected);
        self.projection = Some(indexes);
        self
    }
}

/// How a join combines its inputs. Semi, anti and mark joins are what `EXISTS`, `IN` and
/// their negations decorrelate into: they output left rows only (a mark join adds one
/// boolean column), never duplicating a left row however many right rows match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JoinKind {
    Inner,
    /// Every left row; NULLs for the right side where nothing matches.
    Left,
    /// Every right row; NULLs for the left side where nothing matches.
    Right,
    /// Every row of both sides.
    Full,
    /// Left rows with at least one match.
    Semi,
    /// Left rows without a match. `null_aware` is `NOT IN`'s three-valued logic: no left row
    /// survives when the right side has a NULL key, and a NULL left key survives only when
    /// the right side is empty.
    Anti {
        null_aware: bool,
    },
    /// Every left row plus a boolean column saying whether it has a match (`EXISTS` / `IN`
    /// inside a larger expression). `null_aware` gives `IN`'s NULL instead of false where
    /// the key is NULL or the right side holds a NULL key.
    Mark {
        null_aware: bool,
    },
    /// Every left row plus a BIGINT column: how many right rows match it (a grouped count
    /// over a join, computed without forming the pairs; see `count_matches_before_join`).
    Count,
}

impl JoinKind {
    pub fn name(self) -> &'static str {
        match self {
            JoinKind::Inner => "Inner",
            JoinKind::Left => "Left",
            JoinKind::Right => "Right",
            JoinKind::Full => "Full",
            JoinKind::Semi => "Semi",
            JoinKind::Anti { null_aware: false } => "Anti",
            JoinKind::Anti { null_aware: true } => "NullAwareAnti",
            JoinKind::Mark { null_aware: false } => "Mark",
            JoinKind::Mark { null_aware: true } => "NullAwareMark",
            JoinKind::Count => "Count",
        }
    }

    /// Whether the output adds a column of its own after the left fields (mark, count).
    pub fn adds_column(self) -> bool {
        matches!(self, JoinKind::Mark { .. } | JoinKind::Count)
    }

    /// Whether a probe row needs every match (the right columns, or how many), not only
    /// whether it has one.
    pub fn needs_every_match(self) -> bool {
        self.outputs_right() || self == JoinKind::Count
    }

    /// Whether the output has the right side's columns.
    pub fn outputs_right(self) -> bool {
        matches!(
            self,
            JoinKind::Inner | JoinKind::Left | JoinKind::Right | JoinKind::Full
        )
    }

    /// The output schema: left fields, then right fields (outer sides nullable), or for a
    /// mark or count join the left fields and `mark` (the mark or count column).
    pub fn output_schema(
        self,
        left: &PlanSchema,
        right: &PlanSchema,
        mark: Option<&PlanField>,
    ) -> PlanSchema {
        match self {
            JoinKind::Inner => left.join(right, false),
            JoinKind::Left => left.join(right, true),
            JoinKind::Right => left.nullable().join(right, false),
            JoinKind::Full => left.nullable().join(right, true),
            JoinKind::Semi | JoinKind::Anti { .. } => left.clone(),
            JoinKind::Mark { .. } | JoinKind::Count => {
                let mut fields = left.fields().to_vec();
                fields.extend(mark.cloned());
                PlanSchema::new(fields)
            }
        }
    }
}

/// Plans compare structurally: the optimizer's test of whether a rule changed one.
#[derive(Clone, Debug, PartialEq)]
pub enum LogicalPlan {
    Scan(Scan),
    Filter {
        input: Box<LogicalPlan>,
        predicate: Expr,
    },
    Projection {
        input: Box<LogicalPlan>,
        exprs: Vec<Expr>,
        schema: PlanSchema,
    },
    /// Groups by `group` and computes `aggs`; output is the group columns, then the aggregates.
    Aggregate {
        input: Box<LogicalPlan>,
        group: Vec<Expr>,
        aggs: Vec<Expr>,
        schema: PlanSchema,
    },
    /// Equi-join on `on` pairs (left expr, right expr) plus an optional residual `filter`.
    /// No keys and no filter is a cross join.
    Join {
        left: Box<LogicalPlan>,
        right: Box<LogicalPlan>,
        kind: JoinKind,
        on: Vec<(Expr, Expr)>,
        filter: Option<Expr>,
        schema: PlanSchema,
    },
    Sort {
        input: Box<LogicalPlan>,
        keys: Vec<SortExpr>,
    },
    /// Every input column, then one column per window function call in `exprs` (each an
    /// aliased [`Expr::Window`]).
    Window {
        input: Box<LogicalPlan>,
        exprs: Vec<Expr>,
        schema: PlanSchema,
    },
    Limit {
        input: Box<LogicalPlan>,
        skip: usize,
        fetch: Option<usize>,
    },
    Distinct {
        input: Box<LogicalPlan>,
    },
    /// UNION ALL of inputs with equal column types.
    Union {
        inputs: Vec<LogicalPlan>,
        schema: PlanSchema,
    },
    /// Literal rows (`SELECT 1` without FROM is one empty row).
    Values {
        rows: Vec<Vec<Expr>>,
        schema: PlanSchema,
    },
    /// Renames the relation of every output column (`(...) AS t`).
    SubqueryAlias {
        input: Box<LogicalPlan>,
        alias: String,
        schema: PlanSchema,
    },
}

/// A node's children, borrowed as `$plan` is (`iter` or `iter_mut` for a union's inputs).
macro_rules! children_of {
    ($plan:expr, $iter:ident) => {
        match $plan {
            LogicalPlan::Scan(_) | LogicalPlan::Values { .. } => vec![],
            LogicalPlan::Filter { input, .. }
            | LogicalPlan::Projection { input, .. }
            | LogicalPlan::Aggregate { input, .. }
            | LogicalPlan::Window { input, .. }
            | LogicalPlan::Sort { input, .. }
            | LogicalPlan::Limit { input, .. }
            | LogicalPlan::Distinct { input }
            | LogicalPlan::SubqueryAlias { input, .. } => vec![input],
            LogicalPlan::Join { left, right, .. } => vec![left, right],
            LogicalPlan::Union { inputs, .. } => inputs.$iter().collect(),
        }
    };
}

impl LogicalPlan {
    /// The output schema.
    pub fn schema(&self) -> &PlanSchema {
        match self {
            LogicalPlan::Scan(s) => &s.schema,
            LogicalPlan::Filter { input, .. }
            | LogicalPlan::Sort { input, .. }
            | LogicalPlan::Limit { input, .. }
            | LogicalPlan::Distinct { input } => input.schema(),
            LogicalPlan::Projection { schema, .. }
            | LogicalPlan::Aggregate { schema, .. }
            | LogicalPlan::Window { schema, .. }
            | LogicalPlan::Join { schema, .. }
            | LogicalPlan::Union { schema, .. }
            | LogicalPlan::Values { schema, .. }
            | LogicalPlan::SubqueryAlias { schema, .. } => schema,
        }
    }

    pub fn children(&self) -> Vec<&LogicalPlan> {
        children_of!(self, iter)
    }

    /// The children, to be replaced in place.
    fn children_mut(&mut self) -> Vec<&mut LogicalPlan> {
        children_of!(self, iter_mut)
    }

    /// Rebuilds this node over new children, recomputing schemas derived from them.
    pub fn with_new_children(self, mut children: Vec<LogicalPlan>) -> LogicalPlan {
        let mut next = || Box::new(children.remove(0));
        match self {
            p @ (LogicalPlan::Scan(_) | LogicalPlan::Values { .. }) => p,
            LogicalPlan::Filter { predicate, .. } => LogicalPlan::Filter {
                input: next(),
                predicate,
            },
            LogicalPlan::Projection { exprs, schema, .. } => LogicalPlan::Projection {
                input: next(),
                exprs,
                schema,
            },
            LogicalPlan::Aggregate {
                group,
                aggs,
                schema,
                ..
            } => LogicalPlan::Aggregate {
                input: next(),
                group,
                aggs,
                schema,
            },
            LogicalPlan::Sort { keys, .. } => LogicalPlan::Sort {
                input: next(),
                keys,
            },
            LogicalPlan::Window { exprs, schema, .. } => {
                let input = next();
                let mut fields = input.schema().fields().to_vec();
                fields.extend_from_slice(&schema.fields()[schema.len() - exprs.len()..]);
                LogicalPlan::Window {
                    input,
                    exprs,
                    schema: PlanSchema::new(fields),
                }
            }
            LogicalPlan::Limit { skip, fetch, .. } => LogicalPlan::Limit {
                input: next(),
                skip,
                fetch,
            },
            LogicalPlan::Distinct { .. } => LogicalPlan::Distinct { input: next() },
            LogicalPlan::SubqueryAlias { alias, .. } => {
                let input = next();
                let schema = input.schema().with_relation(&alias);
                LogicalPlan::SubqueryAlias {
                    input,
                    alias,
                    schema,
                }
            }
            LogicalPlan::Join {
                kind,
                on,
                filter,
                schema: old,
                ..
            } => {
                let (left, right) = (next(), next());
                let mark = kind.adds_column().then(|| old.fields().last()).flatten();
                let schema = kind.output_schema(left.schema(), right.schema(), mark);
                LogicalPlan::Join {
                    left,
                    right,
                    kind,
                    on,
                    filter,
                    schema,
                }
            }
            LogicalPlan::Union { schema, .. } => LogicalPlan::Union {
                inputs: children,
                schema,
            },
        }
    }

    /// Applies `f` to each child and rebuilds this node.
    pub fn map_children<E>(
        mut self,
        mut f: impl FnMut(LogicalPlan) -> Result<LogicalPlan, E>,
    ) -> Result<LogicalPlan, E> {
        // The children are moved out (an empty node left in their place until the node is
        // rebuilt over the new ones), not cloned: a rule walking the plan this way would
        // otherwise copy every subtree once per level above it.
        let children: Vec<LogicalPlan> = self
            .children_mut()
            .into_iter()
            .map(|slot| {
                let empty = LogicalPlan::Values {
                    rows: Vec::new(),
                    schema: PlanSchema::default(),
                };
                std::mem::replace(slot, empty)
            })
            .collect();
        if children.is_empty() {
            return Ok(self);
        }
        let children = children
            .into_iter()
            .map(&mut f)
            .collect::<Result<Vec<_>, E>>()?;
        Ok(self.with_new_children(children))
    }
}
