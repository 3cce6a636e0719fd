//! Quantified comparisons, `x op ANY (q)` / `SOME` / `ALL`, and the IN forms the plain mark
//! join cannot take (`x IN (correlated q)` inside an expression, correlated `NOT IN`), as
//! two mark joins of the subquery each, with SQL's three-valued answer built from them.
//!
//! `x op ANY (q)` is TRUE when some row's comparison is TRUE, else NULL when some row's is
//! NULL, else FALSE (also for no rows). `x op ALL (q)` is FALSE when some row's comparison is
//! FALSE, else NULL when some row's is NULL, else TRUE. So each form reads two marks: one
//! join that finds a row deciding the answer (`x op v` for ANY, `x negop v` for ALL; an
//! equality becomes a hash key), and one that finds a row whose comparison is NULL. Both
//! joins keep the subquery's own correlation (its keys and residual filter), so a correlated
//! subquery is joined on its keys, never run per outer row. `x IN (q)` is `x = ANY (q)` and
//! `x NOT IN (q)` is `x <> ALL (q)`.

use morsel_planner::{BinaryOp, ColumnRef, Expr, JoinKind, PlanSchema};
use morsel_storage::{DataType, ScalarValue};
use sqlparser::ast::{self, Spanned};

use super::subquery::{with_presence, Bound, PendingJoin};
use super::Binder;
use crate::error::SqlError;

impl Binder<'_> {
    /// `x op ANY (q)` (`all`: `x op ALL (q)`), as an expression over two mark columns.
    pub(crate) fn quantified(
        &self,
        x: &ast::Expr,
        op: &ast::BinaryOperator,
        q: &ast::Query,
        all: bool,
        scope: &PlanSchema,
    ) -> Result<Expr, SqlError> {
        let op = comparison(op).ok_or_else(|| {
            SqlError::unsupported(format!("{op} with ANY or ALL; use a comparison")).at(q.span())
        })?;
        let x = self.expr(x, scope)?;
        let sub = self.bind_subquery(q, scope, false)?;
        if sub.correlated && sub.row_over_no_rows.is_some() {
            return self.compare_with_one_row(sub, q, x, op, all);
        }
        // The row that decides: one whose comparison holds (ANY) or fails (ALL).
        let deciding = if all { op.negated() } else { op };
        let decided = self.mark_where(q, scope, &x, deciding, false)?;
        let unknown = self.mark_where(q, scope, &x, op, true)?;
        let boolean = |b: bool| Expr::Literal(ScalarValue::Boolean(b));
        Ok(Expr::Case {
            operand: None,
            branches: vec![
                (decided, boolean(!all)),
                (
                    unknown,
                    Expr::Literal(ScalarValue::Null).cast(DataType::Boolean),
                ),
            ],
            otherwise: Some(Box::new(boolean(all))),
        })
    }

    /// `x op ANY / ALL (q)` where `q` is a correlated aggregate without GROUP BY, which has
    /// at most one row for every outer row, keys without input rows included (where HAVING
    /// over no rows holds): the comparison with that row's value, or, without the row,
    /// FALSE for ANY and TRUE for ALL. Its value is read through a left join, as a scalar
    /// subquery's is.
    fn compare_with_one_row(
        &self,
        sub: Bound,
        q: &ast::Query,
        x: Expr,
        op: BinaryOp,
        all: bool,
    ) -> Result<Expr, SqlError> {
        let value = sub.single_value(q)?;
        if sub.filter.is_some() {
            return Err(SqlError::invalid(
                "internal: a correlated aggregate joined by more than its keys",
            )
            .at(q.span()));
        }
        let (plan, present) = with_presence(sub.plan, sub.id)?;
        let missing = Expr::Column(ColumnRef::new(present)).is_null();
        let boolean = |b: bool| Expr::Literal(ScalarValue::Boolean(b));
        let value = match sub.empty_value {
            Some(empty) => Expr::Case {
                operand: None,
                branches: vec![(missing.clone(), empty)],
                otherwise: Some(Box::new(value)),
            },
            None => value,
        };
        let has_row = Expr::Case {
            operand: None,
            branches: vec![(
                missing,
                sub.row_over_no_rows.unwrap_or_else(|| boolean(true)),
            )],
            otherwise: Some(Box::new(sub.having.unwrap_or_else(|| boolean(true)))),
        };
        self.pending.borrow_mut().push(PendingJoin {
            plan,
            kind: JoinKind::Left,
            on: sub.on,
            filter: None,
            correlated: true,
            mark: None,
            domain: sub.domain,
        });
        let cmp = Expr::Binary {
            left: Box::new(x),
            op,
            right: Box::new(value),
        };
        Ok(Expr::Case {
            operand: None,
            branches: vec![(has_row, cmp)],
            otherwise: Some(Box::new(boolean(all))),
        })
    }

    /// A mark column: whether some row `v` of subquery `q` (under its correlation) has
    /// `x op v` TRUE, or (`is_null`) NULL.
    fn mark_where(
        &self,
        q: &ast::Query,
        scope: &PlanSchema,
        x: &Expr,
        op: BinaryOp,
        is_null: bool,
    ) -> Result<Expr, SqlError> {
        let mut sub = self.bind_subquery(q, scope, false)?;
        let v = sub.single_value(q)?;
        let cmp = Expr::Binary {
            left: Box::new(x.clone()),
            op,
            right: Box::new(v.clone()),
        };
        if op == BinaryOp::Eq && !is_null {
            sub.on.push((x.clone(), v));
        } else {
            let cond = if is_null { cmp.is_null() } else { cmp };
            sub.filter = Some(match sub.filter.take() {
                Some(f) => f.and(cond),
                None => cond,
            });
        }
        let name = format!("__sq{}_m", sub.id);
        self.pending.borrow_mut().push(PendingJoin {
            plan: sub.plan,
            kind: JoinKind::Mark { null_aware: false },
            on: sub.on,
            filter: sub.filter,
            correlated: true,
            mark: Some(name.clone()),
            domain: sub.domain,
        });
        Ok(Expr::Column(ColumnRef::new(name)))
    }
}

/// The comparison `op` names, if it is one.
fn comparison(op: &ast::BinaryOperator) -> Option<BinaryOp> {
    super::expr::binary_op(op).filter(|o| o.is_comparison())
}
