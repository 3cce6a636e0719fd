//! `LATERAL` derived tables: a subquery in FROM that reads the columns of the FROM items
//! before it (`FROM t, LATERAL (SELECT ... WHERE u.a = t.a) s`, `LEFT JOIN LATERAL (...) s
//! ON ...`).
//!
//! It is decorrelated as any subquery is over a domain (see `domain`): bound once over the
//! distinct values of the outer columns it names, it outputs those as keys, and the FROM
//! items before it join it on them, NULL-safely. An aggregate without GROUP BY has one row
//! for every outer row, rows with no input included: its rows are first completed over the
//! whole domain (a key without rows gets each column's value over no rows: `count(*)` is
//! 0), so the join finds one row for every outer row, but where HAVING rules it out.

use morsel_planner::{ColumnRef, Expr, JoinKind, PlanBuilder, ScalarFunc};
use morsel_storage::ScalarValue;
use sqlparser::ast::{self, Spanned};

use super::domain::{zero_of, Domain};
use super::subquery::{key_name, with_presence, Bound};
use super::Binder;
use crate::error::SqlError;

impl Binder<'_> {
    /// `left kind JOIN LATERAL (q) alias [ON on]`, `kind` inner or left (a comma or CROSS
    /// JOIN is an inner join without a condition).
    pub(crate) fn lateral_join(
        &self,
        left: PlanBuilder,
        q: &ast::Query,
        alias: Option<&ast::TableAlias>,
        kind: JoinKind,
        on: Option<&ast::Expr>,
    ) -> Result<PlanBuilder, SqlError> {
        let scope = left.schema().clone();
        let sub = self.bind_over(q, &scope, false, true)?;
        let visible = sub.values.len();
        let plan = match &sub.domain {
            Some(d) if sub.one_row_per_key => one_row_each(&sub, d, &left)?,
            Some(d) => d.substitute(sub.plan.clone(), &left)?,
            None => sub.plan.clone(),
        };
        // The subquery's columns under their own names (the keys after them), under its alias.
        let mut exprs: Vec<Expr> = sub
            .values
            .iter()
            .zip(&sub.names)
            .map(|(v, name)| v.clone().alias(name.clone()))
            .collect();
        exprs.extend(
            plan.schema().fields()[visible..]
                .iter()
                .map(|f| Expr::Column(f.column_ref())),
        );
        let right = plan.project(exprs)?;
        let right = match alias {
            Some(a) if a.columns.len() > visible => {
                return Err(SqlError::invalid(format!(
                    "{} has {visible} columns but {} names were given",
                    a.name.value,
                    a.columns.len()
                ))
                .at(a.name.span))
            }
            Some(a) => super::from::rename_columns(right, a)?,
            None => right.alias("unnamed_subquery"),
        };
        let shown: Vec<Expr> = left
            .schema()
            .fields()
            .iter()
            .chain(&right.schema().fields()[..visible])
            .map(|f| Expr::Column(f.column_ref()))
            .collect();
        let mut condition: Vec<Expr> = sub
            .on
            .iter()
            .map(|(o, k)| o.clone().eq(k.clone()))
            .collect();
        if let Some(on) = on {
            let both = left.schema().join(right.schema(), false);
            let mark = self.pending_mark();
            let cond = self.expr(on, &both)?;
            self.refuse_pending_since(mark, "the condition of a LATERAL join")
                .map_err(|e| e.at(on.span()))?;
            condition.push(cond);
        }
        let joined = left.join_on(right, kind, Expr::conjunction(condition))?;
        Ok(joined.project(shown)?)
    }
}

/// The rows of an aggregate without GROUP BY bound over `domain`, completed over the whole
/// domain of `input`: a key without rows gets each column's value over no rows, and is left
/// out where HAVING over no rows does not hold. Outputs the values, then the keys.
fn one_row_each(
    sub: &Bound,
    domain: &Domain,
    input: &PlanBuilder,
) -> Result<PlanBuilder, SqlError> {
    let (plan, present) = with_presence(domain.substitute(sub.plan.clone(), input)?, sub.id)?;
    let visible = sub.values.len();
    let keys = domain.keys();
    let all = PlanBuilder::from_plan(domain.plan(input)?);
    // NULL-safe: a NULL key finds its NULL.
    let mut on = Vec::new();
    for (j, d) in keys.iter().enumerate() {
        let k = Expr::Column(ColumnRef::new(key_name(sub.id, j)));
        let nullable = all.schema().fields()[j].nullable;
        match nullable {
            false => on.push((d.clone(), k)),
            true => {
                let zero = Expr::Literal(zero_of(all.schema().fields()[j].data_type));
                let filled = |e: &Expr| Expr::Function {
                    func: ScalarFunc::Coalesce,
                    args: vec![e.clone(), zero.clone()],
                };
                on.push((filled(d), filled(&k)));
                on.push((d.clone().is_null(), k.is_null()));
            }
        }
    }
    let joined = all.join(plan, JoinKind::Left, on, None)?;
    let missing = Expr::Column(ColumnRef::new(present)).is_null();
    // A key's row is kept where HAVING holds for it; a key without one gets its row where
    // HAVING over no rows holds.
    let joined = match (&sub.raw_row_over_no_rows, &sub.having) {
        (Some(Expr::Literal(ScalarValue::Boolean(true))) | None, None) => joined,
        (row, having) => {
            let yes = || Expr::Literal(ScalarValue::Boolean(true));
            joined.filter(Expr::Case {
                operand: None,
                branches: vec![(missing.clone(), row.clone().unwrap_or_else(yes))],
                otherwise: Some(Box::new(having.clone().unwrap_or_else(yes))),
            })?
        }
    };
    let mut out: Vec<Expr> = Vec::with_capacity(visible + keys.len());
    for (i, v) in sub.values.iter().enumerate() {
        let name = v.output_name();
        out.push(match sub.empty_values.get(i).cloned().flatten() {
            Some(empty) => Expr::Case {
                operand: None,
                branches: vec![(missing.clone(), empty)],
                otherwise: Some(Box::new(v.clone())),
            }
            .alias(name),
            None => v.clone(),
        });
    }
    for (j, d) in keys.into_iter().enumerate() {
        out.push(d.alias(key_name(sub.id, j)));
    }
    Ok(joined.project(out)?)
}
