//! Subqueries inside a join's ON condition (`JOIN u ON u.x > (SELECT avg(x) FROM v WHERE
//! v.a = t.a)`, `LEFT JOIN u ON ... AND EXISTS (...)`).
//!
//! A subquery is joined into the input of the expression that holds it (see `subquery`);
//! here that input is every pair of the join's two sides. For an inner join the pairs are
//! the cross product, filtered by the condition (the optimizer then takes its equalities as
//! keys again). An outer, semi or anti join must also know which rows of its preserved side
//! found no pair: that side's rows are numbered first, the pairs that pass are found as
//! for an inner join, and the numbered side is joined to them by its row numbers (a left
//! join keeps the rows without a pair, a semi join those with one, an anti join those
//! without; a full join numbers both sides). The numbering follows the input's order, the
//! same on any number of threads.

use morsel_planner::{ColumnRef, Expr, JoinKind, PlanBuilder, PlanSchema, WindowExpr};
use morsel_planner::{WindowFrame, WindowFunc};

use super::Binder;
use crate::error::SqlError;

impl Binder<'_> {
    /// `left kind JOIN right ON cond`, where `cond` (bound over both sides) read the
    /// subqueries queued since `mark`.
    pub(crate) fn join_on_subqueries(
        &self,
        left: PlanBuilder,
        right: PlanBuilder,
        kind: JoinKind,
        cond: Expr,
        mark: usize,
    ) -> Result<PlanBuilder, SqlError> {
        let id = self.next_subquery.get();
        self.next_subquery.set(id + 1);
        let row = format!("__on{id}_row");
        let matched = format!("__on{id}_matched");
        let columns = |s: &PlanSchema| -> Vec<Expr> {
            s.fields()
                .iter()
                .map(|f| Expr::Column(f.column_ref()))
                .collect()
        };
        // The pairs of `l` and `r` the condition passes.
        let passing = |l: PlanBuilder, r: PlanBuilder| -> Result<PlanBuilder, SqlError> {
            let pairs = l.join(r, JoinKind::Inner, Vec::new(), None)?;
            let pairs = self.apply_pending(pairs, mark, false)?;
            Ok(pairs.filter(cond.clone())?)
        };
        let (left_cols, right_cols) = (columns(left.schema()), columns(right.schema()));
        let by_row = || {
            vec![(
                Expr::Column(ColumnRef::new(row.clone())),
                Expr::Column(ColumnRef::new(matched.clone())),
            )]
        };
        // The numbered side's row numbers of the passing pairs, with the other side's columns.
        let matches = |pairs: PlanBuilder, other: &[Expr]| -> Result<PlanBuilder, SqlError> {
            let mut exprs = vec![Expr::Column(ColumnRef::new(row.clone())).alias(matched.clone())];
            exprs.extend(other.iter().cloned());
            Ok(pairs.project(exprs)?)
        };
        let all: Vec<Expr> = left_cols.iter().chain(&right_cols).cloned().collect();
        match kind {
            JoinKind::Inner => Ok(passing(left, right)?.project(all)?),
            JoinKind::Left => {
                let numbered = numbered(left, &row)?;
                let pairs = passing(numbered.clone(), right)?;
                let m = matches(pairs, &right_cols)?;
                Ok(numbered
                    .join(m, JoinKind::Left, by_row(), None)?
                    .project(all)?)
            }
            JoinKind::Right => {
                let numbered = numbered(right, &row)?;
                let pairs = passing(left, numbered.clone())?;
                let m = matches(pairs, &left_cols)?;
                Ok(numbered
                    .join(m, JoinKind::Left, by_row(), None)?
                    .project(all)?)
            }
            JoinKind::Semi | JoinKind::Anti { .. } => {
                let numbered = numbered(left, &row)?;
                let pairs = passing(numbered.clone(), right)?;
                let m = matches(pairs, &[])?;
                Ok(numbered.join(m, kind, by_row(), None)?.project(left_cols)?)
            }
            JoinKind::Full => {
                // Each right row with the left row numbers of its pairs (none: NULL), full
                // joined to the numbered left rows by them: a right row without a pair
                // meets no left row, and a left row no pair names meets no right row.
                let other = format!("__on{id}_right_row");
                let other_matched = format!("__on{id}_right_matched");
                let (l, r) = (numbered(left, &row)?, numbered(right, &other)?);
                let pairs = passing(l.clone(), r.clone())?.project(vec![
                    Expr::Column(ColumnRef::new(row.clone())).alias(matched.clone()),
                    Expr::Column(ColumnRef::new(other.clone())).alias(other_matched.clone()),
                ])?;
                let by_right = vec![(
                    Expr::Column(ColumnRef::new(other)),
                    Expr::Column(ColumnRef::new(other_matched)),
                )];
                let right_rows = r.join(pairs, JoinKind::Left, by_right, None)?;
                Ok(l.join(right_rows, JoinKind::Full, by_row(), None)?
                    .project(all)?)
            }
            _ => {
                self.pending.borrow_mut().truncate(mark);
                Err(SqlError::unsupported(format!(
                    "subqueries in the condition of a {} join",
                    kind.name()
                )))
            }
        }
    }
}

/// `input` with its rows' numbers (from 1, in input order) as column `name`.
fn numbered(input: PlanBuilder, name: &str) -> Result<PlanBuilder, SqlError> {
    let number = Expr::Window(Box::new(WindowExpr {
        func: WindowFunc::RowNumber,
        args: vec![],
        partition_by: vec![],
        order_by: vec![],
        frame: WindowFrame::default_for(false),
        ignore_nulls: false,
    }));
    Ok(input.window(vec![number.alias(name.to_string())])?)
}
