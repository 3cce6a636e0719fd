//! The general decorrelation: a subquery whose outer references the join rewrites of
//! `subquery` cannot take (a correlation by anything but `inner = outer`, outer columns read
//! in its select list, GROUP BY or HAVING, references two or more levels out) is bound over a
//! *domain*: the distinct values of the outer columns it may read (Neumann and Kemper's
//! "Unnesting Arbitrary Queries"; DuckDB's delim join).
//!
//! The domain is a relation cross-joined into the subquery's own FROM, so its outer
//! references become ordinary columns (`__sqN_dJ`) and every clause of it may read them; the
//! subquery outputs the domain columns as its keys (grouped by, where it aggregates), and the
//! enclosing query joins it on them with NULL-safe equality. Its plan holds a placeholder for
//! the domain until the enclosing query's input is known; then the domain is that input's
//! distinct values of the columns (see [`Domain::plan`]). The subquery runs once, over all
//! outer values at once, never once per outer row; a correlation by an inequality becomes a
//! join whose residual filter compares the two sides.
//!
//! The outer columns a domain holds are chosen from the subquery's text (every outer column
//! whose name it mentions, and every domain column of an enclosing subquery): more than it
//! reads only makes the keys finer, never the answer different.

use morsel_planner::{ColumnRef, Expr, JoinKind, LogicalPlan, PlanBuilder, PlanField, PlanSchema};
use morsel_storage::{DataType, ScalarValue};
use sqlparser::ast;

use super::Binder;
use crate::error::SqlError;

/// The outer columns a subquery bound over a domain reads.
#[derive(Clone, Debug)]
pub(crate) struct Domain {
    /// The subquery's number, in the domain columns' names.
    id: usize,
    /// Each outer column (as the enclosing scope has it) with its name in the domain.
    columns: Vec<(PlanField, String)>,
}

/// Whether `name` is a domain column's (`__sqN_dJ`).
pub(crate) fn is_domain_name(name: &str) -> bool {
    name.strip_prefix("__sq")
        .and_then(|rest| rest.split_once("_d"))
        .is_some_and(|(n, j)| n.bytes().all(|b| b.is_ascii_digit()) && !j.is_empty())
}

impl Domain {
    /// The domain of subquery `id`, text `q`, bound in scope `outer`; `None` when it reads
    /// no outer column.
    pub(crate) fn for_query(id: usize, q: &ast::Query, outer: &PlanSchema) -> Option<Domain> {
        let text = q.to_string().to_ascii_lowercase();
        let words: std::collections::HashSet<&str> = text
            .split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        let columns: Vec<(PlanField, String)> = outer
            .fields()
            .iter()
            .filter(|f| {
                is_domain_name(&f.name) || words.contains(f.name.to_ascii_lowercase().as_str())
            })
            .enumerate()
            .map(|(j, f)| (f.clone(), format!("__sq{id}_d{j}")))
            .collect();
        (!columns.is_empty()).then_some(Domain { id, columns })
    }

    /// The domain's columns, as the subquery sees them.
    fn schema(&self) -> PlanSchema {
        PlanSchema::new(
            self.columns
                .iter()
                .map(|(f, name)| PlanField::new(None, name.clone(), f.data_type, f.nullable))
                .collect(),
        )
    }

    /// The stand-in for the domain inside the subquery's plan (an empty VALUES of its
    /// columns), replaced by [`Domain::substitute`].
    pub(crate) fn placeholder(&self) -> PlanBuilder {
        PlanBuilder::from_plan(LogicalPlan::Values {
            rows: Vec::new(),
            schema: self.schema(),
        })
    }

    /// The domain column standing for outer column `c` of the enclosing scope.
    pub(crate) fn mapped(&self, c: &ColumnRef) -> Option<ColumnRef> {
        let outer = PlanSchema::new(self.columns.iter().map(|(f, _)| f.clone()).collect());
        let i = outer.position(c)?;
        Some(ColumnRef::new(self.columns[i].1.clone()))
    }

    /// The domain columns' names.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.columns.iter().map(|(_, name)| name.as_str())
    }

    /// The domain columns, as key expressions of the subquery.
    pub(crate) fn keys(&self) -> Vec<Expr> {
        self.columns
            .iter()
            .map(|(_, name)| Expr::Column(ColumnRef::new(name.clone())))
            .collect()
    }

    /// The join conditions between key column `key` (domain column `j` as the subquery
    /// outputs it) and its outer column: NULL-safe, so an outer NULL finds the domain's NULL.
    pub(crate) fn key_conditions(&self, j: usize, key: Expr) -> Vec<Expr> {
        let outer = Expr::Column(self.columns[j].0.column_ref());
        self.same_value(j, key, outer)
    }

    /// The join conditions saying `a` and `b`, two copies of domain column `j`, hold the
    /// same value, NULL-safely (as hash keys: the value with NULL filled in, and whether it
    /// is NULL).
    pub(crate) fn same_value(&self, j: usize, key: Expr, outer: Expr) -> Vec<Expr> {
        let (f, _) = &self.columns[j];
        if !f.nullable {
            return vec![key.eq(outer)];
        }
        let zero = zero_of(f.data_type);
        let filled = |e: Expr| Expr::Function {
            func: morsel_planner::ScalarFunc::Coalesce,
            args: vec![e, Expr::Literal(zero.clone())],
        };
        vec![
            filled(key.clone()).eq(filled(outer.clone())),
            key.is_null().eq(outer.is_null()),
        ]
    }

    /// `e` with domain columns replaced by the outer columns they stand for (for a value the
    /// enclosing query computes itself, such as an aggregate's value over no rows).
    pub(crate) fn to_outer(&self, e: Expr) -> Expr {
        e.replace(&mut |x: &Expr| match x {
            Expr::Column(c) if c.relation.is_none() => self
                .columns
                .iter()
                .find(|(_, name)| *name == c.name)
                .map(|(f, _)| Expr::Column(f.column_ref())),
            _ => None,
        })
    }

    /// The domain over the enclosing query's `input`: its distinct values of the columns.
    pub(crate) fn plan(&self, input: &PlanBuilder) -> Result<LogicalPlan, SqlError> {
        let exprs = self
            .columns
            .iter()
            .map(|(f, name)| Expr::Column(f.column_ref()).alias(name.clone()))
            .collect();
        Ok(input.clone().project(exprs)?.distinct().build())
    }

    /// `sub` with its placeholder replaced by the domain over `input`.
    pub(crate) fn substitute(
        &self,
        sub: PlanBuilder,
        input: &PlanBuilder,
    ) -> Result<PlanBuilder, SqlError> {
        let domain = self.plan(input)?;
        let schema = self.schema();
        let mut replaced = 0;
        let plan = replace_placeholder(sub.build(), &schema, &domain, &mut replaced)?;
        if replaced == 0 {
            return Err(SqlError::invalid(format!(
                "internal: subquery {} lost its domain",
                self.id
            )));
        }
        Ok(PlanBuilder::from_plan(plan))
    }
}

/// `plan` with every placeholder of `schema` replaced by `domain` (nested blocks bound over
/// the domain hold one each, see `nested`), counting them in `replaced`.
fn replace_placeholder(
    plan: LogicalPlan,
    schema: &PlanSchema,
    domain: &LogicalPlan,
    replaced: &mut usize,
) -> Result<LogicalPlan, SqlError> {
    match plan {
        LogicalPlan::Values { rows, schema: s } if rows.is_empty() && s == *schema => {
            *replaced += 1;
            Ok(domain.clone())
        }
        other => other.map_children(|c| replace_placeholder(c, schema, domain, replaced)),
    }
}

/// A value of type `t` standing for NULL in a NULL-safe key (paired with an IS NULL key, so
/// it never matches a real value by mistake).
pub(crate) fn zero_of(t: DataType) -> ScalarValue {
    match t {
        DataType::Boolean => ScalarValue::Boolean(false),
        DataType::Int32 => ScalarValue::Int32(0),
        DataType::Int64 => ScalarValue::Int64(0),
        DataType::Float64 => ScalarValue::Float64(0.0),
        DataType::Date32 => ScalarValue::Date32(0),
        DataType::Timestamp => ScalarValue::Timestamp(0),
        DataType::Utf8 | DataType::Null => ScalarValue::Utf8(String::new()),
    }
}

/// Joins the domain placeholder into a subquery body's FROM (a cross join: its correlated
/// conditions are ordinary conditions of the body now).
pub(crate) fn join_domain(b: PlanBuilder, domain: &Domain) -> Result<PlanBuilder, SqlError> {
    Ok(b.join(domain.placeholder(), JoinKind::Inner, Vec::new(), None)?)
}

impl Binder<'_> {
    /// Where outer column `c` (not in the current scope) resolves through the domains of
    /// the subqueries being bound: the domain column standing for it and `true` when the
    /// innermost subquery has a domain; the column one level out (to be read as an outer
    /// reference) and `false` when only enclosing ones do; `None` when no domain is involved.
    pub(crate) fn domain_column(&self, c: &ColumnRef) -> Option<(ColumnRef, bool)> {
        let frames = self.frames.borrow();
        let n = frames.len();
        let k = (0..n).rev().find(|&k| frames[k].outer.has(c))?;
        let mut current = c.clone();
        for (j, frame) in frames.iter().enumerate().skip(k) {
            match &frame.domain {
                Some(d) => current = d.mapped(&current)?,
                None if j + 1 == n && j > k => return Some((current, false)),
                None => return None,
            }
        }
        Some((current, true))
    }

    /// The domain of the subquery whose own SELECT is `s`, if it is bound over one.
    pub(crate) fn body_domain(&self, s: &ast::Select) -> Option<Domain> {
        let frames = self.frames.borrow();
        let f = frames.last()?;
        (f.body == Some(s as *const _))
            .then(|| f.domain.clone())
            .flatten()
    }
}
