//! [`PlanBuilder`]: builds logical plans node by node, checking names and types as it goes so
//! that mistakes surface at build time with the column name and the available columns.

use morsel_storage::DataType;

use super::{JoinKind, LogicalPlan, Scan, TableSource};
use crate::error::{PlanError, PlanResult};
use crate::expr::{coerce, ColumnRef, Expr, SortExpr};
use crate::schema::{PlanField, PlanSchema};

#[derive(Clone, Debug)]
pub struct PlanBuilder {
    plan: LogicalPlan,
}

fn output_field(e: &Expr, schema: &PlanSchema) -> PlanResult<PlanField> {
    let relation = match e {
        Expr::Column(c) => schema.field(schema.index_of(c)?).relation.clone(),
        _ => None,
    };
    Ok(PlanField::new(
        relation,
        e.output_name(),
        e.data_type(schema)?,
        e.nullable(schema),
    ))
}

impl PlanBuilder {
    pub fn from_plan(plan: LogicalPlan) -> Self {
        Self { plan }
    }

    /// Scans `source`, naming its columns' relation `alias`.
    pub fn scan(table: impl Into<String>, alias: impl Into<String>, source: TableSource) -> Self {
        Self {
            plan: LogicalPlan::Scan(Scan::new(table, alias, source)),
        }
    }

    /// Literal rows; every row must have the same column types.
    pub fn values(rows: Vec<Vec<Expr>>) -> PlanResult<Self> {
        let empty = PlanSchema::default();
        let width = rows.first().map_or(0, Vec::len);
        let mut types = vec![DataType::Null; width];
        let mut coerced = Vec::with_capacity(rows.len());
        for row in rows {
            if row.len() != width {
                return Err(PlanError::Invalid(format!(
                    "VALUES rows must all have {width} columns"
                )));
            }
            let row = row
                .into_iter()
                .map(|e| coerce(e, &empty))
                .collect::<PlanResult<Vec<_>>>()?;
            for (t, e) in types.iter_mut().zip(&row) {
                let et = e.data_type(&empty)?;
                // Rows meet at their common type, as a UNION's inputs do.
                *t = crate::expr::common_type(*t, et).ok_or_else(|| {
                    PlanError::mismatch(format!(
                        "VALUES column has both {} and {}",
                        t.sql_name(),
                        et.sql_name()
                    ))
                })?;
            }
            coerced.push(row);
        }
        let rows = coerced
            .into_iter()
            .map(|row| {
                row.into_iter()
                    .zip(&types)
                    .map(|(e, t)| Expr::Cast {
                        expr: Box::new(e),
                        to: resolved(*t),
                    })
                    .collect()
            })
            .map(|row: Vec<Expr>| {
                row.into_iter()
                    .map(|e| coerce(e, &empty))
                    .collect::<PlanResult<Vec<_>>>()
            })
            .collect::<PlanResult<Vec<_>>>()?;
        let fields = types
            .iter()
            .enumerate()
            .map(|(i, t)| PlanField::new(None, format!("col{i}"), resolved(*t), true))
            .collect();
        Ok(Self {
            plan: LogicalPlan::Values {
                rows,
                schema: PlanSchema::new(fields),
            },
        })
    }

    pub fn schema(&self) -> &PlanSchema {
        self.plan.schema()
    }

    pub fn build(self) -> LogicalPlan {
        self.plan
    }

    pub fn plan(&self) -> &LogicalPlan {
        &self.plan
    }

    pub fn filter(self, predicate: Expr) -> PlanResult<Self> {
        let schema = self.plan.schema();
        if predicate.contains_aggregate() {
            return Err(PlanError::Invalid(format!(
                "aggregates are not allowed in a filter: {predicate}"
            )));
        }
        let predicate = coerce(predicate, schema)?;
        let t = predicate.data_type(schema)?;
        // An untyped NULL predicate (`WHERE NULL`) is a BOOLEAN NULL: it keeps no row.
        let predicate = match t {
            DataType::Null => predicate.cast(DataType::Boolean),
            _ => predicate,
        };
        if t != DataType::Boolean && t != DataType::Null {
            return Err(PlanError::mismatch(format!(
                "filter must be BOOLEAN, got {} ({predicate})",
                t.sql_name()
            )));
        }
        Ok(Self {
            plan: LogicalPlan::Filter {
                input: Box::new(self.plan),
                predicate,
            },
        })
    }

    pub fn project(self, exprs: Vec<Expr>) -> PlanResult<Self> {
        let input = self.plan.schema();
        let exprs = exprs
            .into_iter()
            .map(|e| {
                if e.contains_aggregate() {
                    return Err(PlanError::Invalid(format!(
                        "aggregate {e} outside of an aggregation"
                    )));
                }
                typed_output(coerce(e, input)?, input)
            })
            .collect::<PlanResult<Vec<_>>>()?;
        let fields = exprs
            .iter()
            .map(|e| output_field(e, input))
            .collect::<PlanResult<Vec<_>>>()?;
        Ok(Self {
            plan: LogicalPlan::Projection {
                input: Box::new(self.plan),
                exprs,
                schema: PlanSchema::new(fields),
            },
        })
    }

    /// Groups by `group` and computes `aggs` (each must be an aggregate call, maybe aliased).
    pub fn aggregate(self, group: Vec<Expr>, aggs: Vec<Expr>) -> PlanResult<Self> {
        let input = self.plan.schema();
        let group = group
            .into_iter()
            .map(|e| {
                if e.contains_aggregate() {
                    return Err(PlanError::Invalid(format!(
                        "cannot group by an aggregate: {e}"
                    )));
                }
                typed_output(coerce(e, input)?, input)
            })
            .collect::<PlanResult<Vec<_>>>()?;
        let aggs = aggs
            .into_iter()
            .map(|e| {
                if !e.clone().unalias().is_aggregate() {
                    return Err(PlanError::Invalid(format!("{e} is not an aggregate call")));
                }
                coerce(e, input)
            })
            .collect::<PlanResult<Vec<_>>>()?;
        let mut fields = Vec::with_capacity(group.len() + aggs.len());
        for e in group.iter().chain(&aggs) {
            fields.push(output_field(e, input)?);
        }
        let schema = PlanSchema::new(fields);
        Ok(Self {
            plan: LogicalPlan::Aggregate {
                input: Box::new(self.plan),
                group,
                aggs,
                schema,
            },
        })
    }

    /// Joins with `right` on equal pairs `on` (left expr, right expr) and a residual filter.
    pub fn join(
        self,
        right: PlanBuilder,
        kind: JoinKind,
        on: Vec<(Expr, Expr)>,
        filter: Option<Expr>,
    ) -> PlanResult<Self> {
        self.join_with_mark(right, kind, on, filter, None)
    }

    /// A mark join: every row of this plan plus a boolean column `mark` saying whether it has
    /// a match in `right` (see [`JoinKind::Mark`]).
    pub fn mark_join(
        self,
        right: PlanBuilder,
        on: Vec<(Expr, Expr)>,
        filter: Option<Expr>,
        null_aware: bool,
        mark: &str,
    ) -> PlanResult<Self> {
        let field = PlanField::new(None, mark, DataType::Boolean, true);
        self.join_with_mark(
            right,
            JoinKind::Mark { null_aware },
            on,
            filter,
            Some(field),
        )
    }

    /// A count join: every row of this plan plus a BIGINT column `count` saying how many
    /// rows of `right` match it (see [`JoinKind::Count`]).
    pub fn count_join(
        self,
        right: PlanBuilder,
        on: Vec<(Expr, Expr)>,
        filter: Option<Expr>,
        count: &str,
    ) -> PlanResult<Self> {
        let field = PlanField::new(None, count, DataType::Int64, false);
        self.join_with_mark(right, JoinKind::Count, on, filter, Some(field))
    }

    fn join_with_mark(
        self,
        right: PlanBuilder,
        kind: JoinKind,
        on: Vec<(Expr, Expr)>,
        filter: Option<Expr>,
        mark: Option<PlanField>,
    ) -> PlanResult<Self> {
        let (ls, rs) = (self.plan.schema(), right.plan.schema());
        let mut keys = Vec::with_capacity(on.len());
        for (l, r) in on {
            let (l, r) = (coerce(l, ls)?, coerce(r, rs)?);
            let (lt, rt) = (l.data_type(ls)?, r.data_type(rs)?);
            let (l, r) = match (lt, rt) {
                (a, b) if a == b => (l, r),
                (a, b) if a.is_numeric() && b.is_numeric() => {
                    let t = if a == DataType::Float64 || b == DataType::Float64 {
                        DataType::Float64
                    } else {
                        DataType::Int64
                    };
                    (coerce(l.cast(t), ls)?, coerce(r.cast(t), rs)?)
                }
                // An untyped NULL key (`NULL IN (subquery)`) takes the other side's type.
                (DataType::Null, DataType::Null) => (
                    coerce(l.cast(DataType::Int32), ls)?,
                    coerce(r.cast(DataType::Int32), rs)?,
                ),
                (DataType::Null, t) => (coerce(l.cast(t), ls)?, r),
                (t, DataType::Null) => (l, coerce(r.cast(t), rs)?),
                _ => return Err(PlanError::cannot_apply("join =", lt, rt)),
            };
            keys.push((l, r));
        }
        let schema = kind.output_schema(ls, rs, mark.as_ref());
        // The residual filter sees both sides, whatever the join outputs.
        let filter = filter.map(|f| coerce(f, &ls.join(rs, false))).transpose()?;
        Ok(Self {
            plan: LogicalPlan::Join {
                left: Box::new(self.plan),
                right: Box::new(right.plan),
                kind,
                on: keys,
                filter,
                schema,
            },
        })
    }

    /// Joins on an arbitrary condition: conjuncts of the form `left expr = right expr` become
    /// hash keys; the rest is a residual filter evaluated on matching pairs.
    pub fn join_on(
        self,
        right: PlanBuilder,
        kind: JoinKind,
        condition: Option<Expr>,
    ) -> PlanResult<Self> {
        let (ls, rs) = (self.plan.schema(), right.plan.schema());
        let over = |e: &Expr, s: &PlanSchema| {
            !e.columns().is_empty() && e.columns().iter().all(|c| s.has(c))
        };
        let mut keys = Vec::new();
        let mut rest = Vec::new();
        for c in condition.map(Expr::split_conjunction).unwrap_or_default() {
            match &c {
                Expr::Binary {
                    left,
                    op: crate::expr::BinaryOp::Eq,
                    right,
                } if over(left, ls) && over(right, rs) => {
                    keys.push((*left.clone(), *right.clone()))
                }
                Expr::Binary {
                    left,
                    op: crate::expr::BinaryOp::Eq,
                    right,
                } if over(left, rs) && over(right, ls) => {
                    keys.push((*right.clone(), *left.clone()))
                }
                _ => rest.push(c),
            }
        }
        self.join(right, kind, keys, Expr::conjunction(rest))
    }

    /// Joins on columns of the same name (`USING (a, b)`).
    pub fn join_using(
        self,
        right: PlanBuilder,
        kind: JoinKind,
        names: &[&str],
    ) -> PlanResult<Self> {
        let on = names
            .iter()
            .map(|n| {
                let l = self
                    .plan
                    .schema()
                    .field(self.plan.schema().index_of(&ColumnRef::new(*n))?)
                    .column_ref();
                let r = right
                    .plan
                    .schema()
                    .field(right.plan.schema().index_of(&ColumnRef::new(*n))?)
                    .column_ref();
                Ok((Expr::Column(l), Expr::Column(r)))
            })
            .collect::<PlanResult<Vec<_>>>()?;
        self.join(right, kind, on, None)
    }

    /// Adds one column per window function call in `exprs` (aliased [`Expr::Window`]s).
    pub fn window(self, exprs: Vec<Expr>) -> PlanResult<Self> {
        let schema = self.plan.schema();
        let mut fields = schema.fields().to_vec();
        let mut out = Vec::with_capacity(exprs.len());
        for e in exprs {
            if !matches!(e.clone().unalias(), Expr::Window(_)) {
                return Err(PlanError::Invalid(format!("{e} is not a window function")));
            }
            let name = e.output_name();
            let e = coerce(e, schema)?;
            fields.push(PlanField::new(None, name, e.data_type(schema)?, true));
            out.push(e);
        }
        Ok(Self {
            plan: LogicalPlan::Window {
                input: Box::new(self.plan),
                exprs: out,
                schema: PlanSchema::new(fields),
            },
        })
    }

    pub fn sort(self, keys: Vec<SortExpr>) -> PlanResult<Self> {
        let schema = self.plan.schema();
        let keys = keys
            .into_iter()
            .map(|k| {
                Ok(SortExpr {
                    expr: coerce(k.expr, schema)?,
                    ..k
                })
            })
            .collect::<PlanResult<Vec<_>>>()?;
        Ok(Self {
            plan: LogicalPlan::Sort {
                input: Box::new(self.plan),
                keys,
            },
        })
    }

    pub fn limit(self, skip: usize, fetch: Option<usize>) -> Self {
        Self {
            plan: LogicalPlan::Limit {
                input: Box::new(self.plan),
                skip,
                fetch,
            },
        }
    }

    pub fn distinct(self) -> Self {
        Self {
            plan: LogicalPlan::Distinct {
                input: Box::new(self.plan),
            },
        }
    }

    /// UNION ALL; the inputs must have the same number of columns. Column types meet at a
    /// common type (numbers widen, DATE meets TIMESTAMP, anything meets VARCHAR as VARCHAR).
    pub fn union(self, other: PlanBuilder) -> PlanResult<Self> {
        let (a, b) = (self.plan.schema(), other.plan.schema());
        if a.len() != b.len() {
            return Err(PlanError::Invalid(format!(
                "UNION inputs have {} and {} columns",
                a.len(),
                b.len()
            )));
        }
        let mut targets = Vec::with_capacity(a.len());
        for (x, y) in a.fields().iter().zip(b.fields()) {
            let (l, r) = (x.data_type, y.data_type);
            let t = if l != r && (l == DataType::Utf8 || r == DataType::Utf8) {
                Some(DataType::Utf8)
            } else {
                crate::expr::common_type(l, r)
            };
            targets.push(t.ok_or_else(|| PlanError::cannot_apply("UNION", l, r))?);
        }
        let conform = |p: PlanBuilder| -> PlanResult<PlanBuilder> {
            let s = p.plan.schema().clone();
            if s.fields()
                .iter()
                .zip(&targets)
                .all(|(f, t)| f.data_type == *t)
            {
                return Ok(p);
            }
            // By position: the input may name two columns alike.
            let positional: Vec<String> = (0..s.len()).map(|i| format!("__union{i}")).collect();
            let exprs = s
                .fields()
                .iter()
                .zip(&targets)
                .zip(&positional)
                .map(|((f, t), p)| {
                    let c = Expr::Column(ColumnRef::new(p.clone()));
                    if f.data_type == *t { c } else { c.cast(*t) }.alias(f.name.clone())
                })
                .collect();
            p.rename_by_position(&positional)?.project(exprs)
        };
        let (this, other) = (conform(self)?, conform(other)?);
        let (a, b) = (this.plan.schema(), other.plan.schema());
        let schema = PlanSchema::new(
            a.fields()
                .iter()
                .zip(b.fields())
                .map(|(x, y)| {
                    PlanField::new(None, x.name.clone(), x.data_type, x.nullable || y.nullable)
                })
                .collect(),
        );
        let mut inputs = match this.plan {
            LogicalPlan::Union { inputs, .. } => inputs,
            p => vec![p],
        };
        inputs.push(other.plan);
        Ok(Self {
            plan: LogicalPlan::Union { inputs, schema },
        })
    }

    /// Gives every output column the relation `alias`.
    pub fn alias(self, alias: impl Into<String>) -> Self {
        let alias = alias.into();
        let schema = self.plan.schema().with_relation(&alias);
        Self {
            plan: LogicalPlan::SubqueryAlias {
                input: Box::new(self.plan),
                alias,
                schema,
            },
        }
    }
}

/// An output column of an untyped NULL expression becomes INTEGER, under its own name (as
/// in DuckDB's `SELECT NULL`).
fn typed_output(e: Expr, input: &PlanSchema) -> PlanResult<Expr> {
    Ok(match e.data_type(input)? {
        DataType::Null => {
            let name = e.output_name();
            e.unalias().cast(DataType::Int32).alias(name)
        }
        _ => e,
    })
}

/// Untyped NULL columns become INTEGER (as in DuckDB's `SELECT NULL`).
fn resolved(t: DataType) -> DataType {
    if t == DataType::Null {
        DataType::Int32
    } else {
        t
    }
}
