//! Subqueries, decorrelated into joins while binding; no subquery ever runs once per outer
//! row.
//!
//! A subquery is bound inside a *frame* that holds the enclosing query's scope. Columns the
//! subquery cannot resolve itself resolve there (one level out), but only inside the WHERE
//! clause of the subquery's own SELECT. That SELECT takes the conjuncts which read outer
//! columns (the correlation) out of its filter, and outputs the inner expressions they read as
//! extra key columns (grouped by, if it aggregates). The enclosing query then joins:
//!
//! - `EXISTS` / `IN` as a conjunct of WHERE: a semi join (`NOT`: an anti join; `NOT IN`
//!   uncorrelated: a null-aware anti join);
//! - `EXISTS` / `IN` anywhere else: a mark join, whose boolean column replaces the subquery;
//! - a scalar subquery: a left join with the subquery made one row per key (an aggregate
//!   without GROUP BY already is; anything else is wrapped in an aggregate that fails on a
//!   second row), whose value column replaces the subquery.
//!
//! Correlation conjuncts `inner = outer` become join keys; others become the join's residual
//! filter, which only joins that do not aggregate the subquery can take.
//!
//! What these rewrites refuse (an aggregate or scalar correlated by more than equalities,
//! outer columns outside the WHERE clause, references two or more levels out) is bound again
//! over a domain of the outer values (see `domain`), whose keys are equalities again; a
//! failed try leaves nothing queued. `quantified` builds ANY / ALL from the mark joins here.

use std::cell::{Cell, RefCell};

use morsel_planner::{AggFunc, ColumnRef, Expr, JoinKind, PlanBuilder, PlanField, PlanSchema};
use morsel_storage::{DataType, ScalarValue};
use sqlparser::ast::{self, Spanned};

use super::domain::Domain;
use super::Binder;
use crate::error::SqlError;

/// The scope a subquery is bound in.
pub(crate) struct Frame {
    id: usize,
    /// The enclosing query's scope: where unresolved columns are looked up.
    pub(crate) outer: PlanSchema,
    /// The subquery's own SELECT (its body), if the body is a plain SELECT.
    pub(crate) body: Option<*const ast::Select>,
    /// The subquery itself.
    query: *const ast::Query,
    /// True while the body's WHERE clause is being bound.
    allow_outer: Cell<bool>,
    /// Filled in by the body's SELECT.
    shape: RefCell<Option<Shape>>,
    /// A scalar subquery (its value is read), not EXISTS or IN (its rows are tested).
    scalar: bool,
    /// Set when the subquery is bound over a domain of the outer columns it reads (the
    /// general decorrelation, see `domain`).
    pub(crate) domain: Option<Domain>,
    /// The subquery's LIMIT and OFFSET, and whether its SELECT took them per key (a
    /// correlated subquery's rows are limited per outer row, not in all).
    limit: Option<(usize, Option<usize>)>,
    limit_taken: Cell<bool>,
}

/// What the body SELECT of a subquery reports back to the enclosing query.
pub(crate) struct Shape {
    /// Correlation conjuncts, reading the key columns (`__sqN_kJ`) and outer columns.
    pub conjuncts: Vec<Expr>,
    /// How many key columns follow the visible columns in the output.
    pub keys: usize,
    /// At most one row per key combination: an aggregate without (user) GROUP BY.
    pub one_row_per_key: bool,
    /// For an aggregate without GROUP BY: the value of each visible select item over no
    /// rows, where that is not NULL (`count(...)` gives 0).
    pub empty_values: Vec<Option<Expr>>,
    /// For an aggregate without GROUP BY: whether it has a row for a key without input rows
    /// (TRUE, or HAVING over no rows), which EXISTS must see.
    pub row_over_no_rows: Option<Expr>,
    /// For a correlated aggregate without GROUP BY (not a scalar subquery's) with HAVING:
    /// whether HAVING holds is a column after the keys (`__sqN_h`), and no row is left out
    /// by it.
    pub having_column: bool,
}

/// A join the enclosing expression's input needs before the expression can be evaluated.
pub(crate) struct PendingJoin {
    pub(crate) plan: PlanBuilder,
    pub(crate) kind: JoinKind,
    pub(crate) on: Vec<(Expr, Expr)>,
    pub(crate) filter: Option<Expr>,
    /// Whether the subquery reads outer columns.
    pub(crate) correlated: bool,
    /// The mark column of a mark join.
    pub(crate) mark: Option<String>,
    /// The domain the subquery's plan stands on, built from the input it joins.
    pub(crate) domain: Option<Domain>,
}

/// A bound subquery: its plan with uniquely named outputs, and how it joins.
pub(crate) struct Bound {
    pub(crate) id: usize,
    pub(crate) plan: PlanBuilder,
    /// Value columns (`__sqN_vI`).
    pub(crate) values: Vec<Expr>,
    pub(crate) on: Vec<(Expr, Expr)>,
    pub(crate) filter: Option<Expr>,
    pub(crate) correlated: bool,
    pub(crate) one_row_per_key: bool,
    /// The first value over no rows (see [`Shape::empty_values`]), over outer columns.
    pub(crate) empty_value: Option<Expr>,
    pub(crate) row_over_no_rows: Option<Expr>,
    /// The values and row over no rows as the subquery has them (over its domain
    /// columns), for a LATERAL subquery, which outputs every column.
    pub(crate) empty_values: Vec<Option<Expr>>,
    pub(crate) raw_row_over_no_rows: Option<Expr>,
    /// Whether HAVING holds for a key's row (see [`Shape::having_column`]); the key has no
    /// row where it does not.
    pub(crate) having: Option<Expr>,
    /// The visible columns' own names.
    pub(crate) names: Vec<String>,
    pub(crate) domain: Option<Domain>,
}

impl Bound {
    /// The subquery's only visible column.
    pub(crate) fn single_value(&self, q: &ast::Query) -> Result<Expr, SqlError> {
        single_value(self, q)
    }
}

/// Key column `j` of subquery `id`.
pub(crate) fn key_name(id: usize, j: usize) -> String {
    format!("__sq{id}_k{j}")
}

/// The column of subquery `id` saying whether HAVING holds (see [`Shape::having_column`]).
pub(crate) fn having_name(id: usize) -> String {
    format!("__sq{id}_h")
}

fn is_key_column(c: &ColumnRef) -> bool {
    c.relation.is_none() && c.name.starts_with("__sq") && c.name.contains("_k")
}

impl Binder<'_> {
    /// Resolves a column the current scope does not have in the enclosing query (correlation).
    pub(crate) fn outer_column(&self, c: &ColumnRef) -> Result<Option<Expr>, SqlError> {
        let frames = self.frames.borrow();
        let Some(frame) = frames.last() else {
            return Ok(None);
        };
        if let Ok(i) = frame.outer.index_of(c) {
            if !frame.allow_outer.get() {
                return Err(SqlError::unsupported(format!(
                    "the correlated reference to {c} outside the WHERE clause of the subquery"
                )));
            }
            return Ok(Some(Expr::Column(frame.outer.field(i).column_ref())));
        }
        if frames[..frames.len() - 1].iter().any(|f| f.outer.has(c)) {
            return Err(SqlError::unsupported(format!(
                "the reference to {c} from a subquery nested two or more levels below its query"
            )));
        }
        Ok(None)
    }

    /// The frame whose body is `s`, if `s` is a subquery's own SELECT.
    pub(crate) fn body_frame_id(&self, s: &ast::Select) -> Option<usize> {
        let frames = self.frames.borrow();
        let f = frames.last()?;
        (f.body == Some(s as *const _)).then_some(f.id)
    }

    /// The LIMIT and OFFSET a correlated subquery's own SELECT `s` takes per key, if any;
    /// asking marks them taken (its query then applies no limit of its own).
    pub(crate) fn take_limit_per_key(&self, s: &ast::Select) -> Option<(usize, Option<usize>)> {
        let frames = self.frames.borrow();
        let f = frames.last()?;
        if f.body != Some(s as *const _) {
            return None;
        }
        f.limit_taken.set(f.limit.is_some());
        f.limit
    }

    /// The subquery's number and domain when `q` is a subquery bound over a domain whose
    /// body is a set operation (see `nested`).
    pub(crate) fn set_body_domain(&self, q: &ast::Query) -> Option<(usize, Domain)> {
        let frames = self.frames.borrow();
        let f = frames.last()?;
        match (&f.domain, f.body) {
            (Some(d), None) if std::ptr::eq(f.query, q) => Some((f.id, d.clone())),
            _ => None,
        }
    }

    /// Marks the current subquery's LIMIT as taken per key.
    pub(crate) fn mark_limit_taken(&self) {
        if let Some(f) = self.frames.borrow().last() {
            f.limit_taken.set(f.limit.is_some());
        }
    }

    /// Whether the subquery whose body is `s` took its LIMIT per key.
    pub(crate) fn limit_taken_by(&self, s: &ast::Select) -> bool {
        let frames = self.frames.borrow();
        frames
            .last()
            .is_some_and(|f| f.body == Some(s as *const _) && f.limit_taken.get())
    }

    /// Whether the subquery being bound is a scalar one.
    pub(crate) fn in_scalar_subquery(&self) -> bool {
        self.frames.borrow().last().is_some_and(|f| f.scalar)
    }

    pub(crate) fn set_allow_outer(&self, allow: bool) {
        if let Some(f) = self.frames.borrow().last() {
            f.allow_outer.set(allow);
        }
    }

    pub(crate) fn report_shape(&self, shape: Shape) {
        if let Some(f) = self.frames.borrow().last() {
            *f.shape.borrow_mut() = Some(shape);
        }
    }

    /// Binds `q` as a subquery of a query whose scope is `outer`.
    pub(crate) fn bind_subquery(
        &self,
        q: &ast::Query,
        outer: &PlanSchema,
        scalar: bool,
    ) -> Result<Bound, SqlError> {
        let (pending, using, aliases) = (
            self.pending_mark(),
            self.using_columns.borrow().len(),
            self.aliases.borrow().len(),
        );
        match self.bind_over(q, outer, scalar, false) {
            Err(e) if needs_domain(&e) => {
                // What the failed try left queued goes.
                self.pending.borrow_mut().truncate(pending);
                self.using_columns.borrow_mut().truncate(using);
                self.aliases.borrow_mut().truncate(aliases);
                self.bind_over(q, outer, scalar, true)
            }
            result => result,
        }
    }

    /// Binds `q` as a subquery of a query whose scope is `outer`, over a domain of the outer
    /// columns it reads with `general`, else by the join rewrites.
    pub(crate) fn bind_over(
        &self,
        q: &ast::Query,
        outer: &PlanSchema,
        scalar: bool,
        general: bool,
    ) -> Result<Bound, SqlError> {
        let id = self.next_subquery.get();
        self.next_subquery.set(id + 1);
        let domain = general.then(|| Domain::for_query(id, q, outer)).flatten();
        let body = match q.body.as_ref() {
            ast::SetExpr::Select(s) => Some(s.as_ref() as *const ast::Select),
            _ => None,
        };
        self.frames.borrow_mut().push(Frame {
            id,
            outer: outer.clone(),
            body,
            query: q as *const _,
            allow_outer: Cell::new(false),
            shape: RefCell::new(None),
            scalar,
            domain: domain.clone(),
            limit: match self.limit(q)? {
                (None, 0) => None,
                (limit, offset) => Some((offset, limit)),
            },
            limit_taken: Cell::new(false),
        });
        let result = self.query(q);
        let frame = self.frames.borrow_mut().pop();
        let sub = result?;
        let limit_taken = frame.as_ref().is_some_and(|f| f.limit_taken.get());
        let shape = frame.and_then(|f| f.shape.into_inner()).unwrap_or(Shape {
            conjuncts: Vec::new(),
            keys: 0,
            one_row_per_key: false,
            empty_values: Vec::new(),
            row_over_no_rows: None,
            having_column: false,
        });
        let correlated = !shape.conjuncts.is_empty();
        if domain.is_some() && shape.keys == 0 {
            // The body is not a plain SELECT (a set operation): it cannot take a domain.
            return Err(
                SqlError::unsupported("a correlated subquery that is not a plain SELECT")
                    .at(q.span()),
            );
        }
        if correlated && (q.limit_clause.is_some() || q.fetch.is_some()) && !limit_taken {
            return Err(SqlError::unsupported("LIMIT in a correlated subquery").at(q.span()));
        }
        // Outputs: the visible columns renamed `__sqN_vI`, then the key columns.
        let schema = sub.schema().clone();
        let visible = schema.len() - shape.keys - usize::from(shape.having_column);
        let mut exprs = Vec::with_capacity(schema.len());
        let mut values = Vec::with_capacity(visible);
        let mut names = Vec::with_capacity(visible);
        for (i, f) in schema.fields().iter().enumerate() {
            if i < visible {
                names.push(f.name.clone());
                let name = format!("__sq{id}_v{i}");
                exprs.push(Expr::Column(f.column_ref()).alias(name.clone()));
                values.push(Expr::Column(ColumnRef::new(name)));
            } else {
                exprs.push(Expr::Column(ColumnRef::new(f.name.clone())));
            }
        }
        let plan = sub.project(exprs)?;
        let mut on = Vec::new();
        let mut rest = Vec::new();
        for c in shape.conjuncts {
            match key_pair(&c) {
                Some(pair) => on.push(pair),
                None => rest.push(c),
            }
        }
        let first = shape.empty_values.first().cloned().flatten();
        Ok(Bound {
            id,
            plan,
            values,
            on,
            filter: Expr::conjunction(rest),
            correlated,
            one_row_per_key: shape.one_row_per_key,
            // Computed by the enclosing query: over its own columns.
            empty_value: match &domain {
                Some(d) => first.map(|e| d.to_outer(e)),
                None => first,
            },
            row_over_no_rows: match &domain {
                Some(d) => shape.row_over_no_rows.clone().map(|e| d.to_outer(e)),
                None => shape.row_over_no_rows.clone(),
            },
            empty_values: shape.empty_values,
            raw_row_over_no_rows: shape.row_over_no_rows,
            having: shape
                .having_column
                .then(|| Expr::Column(ColumnRef::new(having_name(id)))),
            names,
            domain,
        })
    }

    /// `[NOT] EXISTS (q)` or `x [NOT] IN (q)` as a conjunct of WHERE: a semi or anti join of
    /// `input` with the subquery.
    pub(crate) fn filter_by_subquery(
        &self,
        input: PlanBuilder,
        q: &ast::Query,
        in_expr: Option<&ast::Expr>,
        negated: bool,
    ) -> Result<PlanBuilder, SqlError> {
        let scope = input.schema().clone();
        let mut sub = self.bind_subquery(q, &scope, false)?;
        if in_expr.is_none() && sub.row_over_no_rows.is_some() {
            // [NOT] EXISTS over an aggregate without GROUP BY: a row for every outer row
            // but those HAVING rules out.
            let mark = self.pending_mark();
            let exists = self.mark_subquery_bound(sub, q, None, negated, &scope)?;
            let input = self.apply_pending(input, mark, false)?;
            return input
                .filter(exists)
                .map_err(|e| SqlError::from(e).at(q.span()));
        }
        if let (Some(x), true) = (in_expr, sub.correlated && sub.row_over_no_rows.is_some()) {
            // x [NOT] IN (correlated aggregate): one row for every outer row, keys without
            // input rows included, which a semi join would not find.
            let (op, all) = match negated {
                false => (ast::BinaryOperator::Eq, false),
                true => (ast::BinaryOperator::NotEq, true),
            };
            let mark = self.pending_mark();
            let keep = self.quantified(x, &op, q, all, &scope)?;
            let input = self.apply_pending(input, mark, false)?;
            return input
                .filter(keep)
                .map_err(|e| SqlError::from(e).at(q.span()));
        }
        if let Some(x) = in_expr {
            let mark = self.pending_mark();
            let x = self.expr(x, &scope)?;
            self.refuse_pending_since(mark, "the left side of IN")
                .map_err(|e| e.at(q.span()))?;
            sub.on.push((x, single_value(&sub, q)?));
        }
        let kind = match (negated, in_expr.is_some()) {
            (false, _) => JoinKind::Semi,
            (true, false) => JoinKind::Anti { null_aware: false },
            (true, true) => {
                if sub.correlated {
                    // x NOT IN (correlated q): x <> ALL (q), with its NULL semantics.
                    let x = in_expr.expect("an IN operand");
                    let mark = self.pending_mark();
                    let keep = self.quantified(x, &ast::BinaryOperator::NotEq, q, true, &scope)?;
                    let input = self.apply_pending(input, mark, false)?;
                    return input
                        .filter(keep)
                        .map_err(|e| SqlError::from(e).at(q.span()));
                }
                JoinKind::Anti { null_aware: true }
            }
        };
        let plan = match &sub.domain {
            Some(d) => d.substitute(sub.plan, &input)?,
            None => sub.plan,
        };
        input
            .join(plan, kind, sub.on, sub.filter)
            .map_err(|e| SqlError::from(e).at(q.span()))
    }

    /// `[NOT] EXISTS (q)` or `x [NOT] IN (q)` inside an expression: a mark join queued for the
    /// expression's input; the expression reads its mark column.
    pub(crate) fn mark_subquery(
        &self,
        q: &ast::Query,
        in_expr: Option<&ast::Expr>,
        negated: bool,
        scope: &PlanSchema,
    ) -> Result<Expr, SqlError> {
        let sub = self.bind_subquery(q, scope, false)?;
        self.mark_subquery_bound(sub, q, in_expr, negated, scope)
    }

    /// [`Binder::mark_subquery`] for a subquery bound already.
    fn mark_subquery_bound(
        &self,
        mut sub: Bound,
        q: &ast::Query,
        in_expr: Option<&ast::Expr>,
        negated: bool,
        scope: &PlanSchema,
    ) -> Result<Expr, SqlError> {
        let null_aware = in_expr.is_some();
        let over_no_rows = match in_expr {
            None => sub.row_over_no_rows.take(),
            Some(_) => None,
        };
        if let Some(x) = in_expr {
            if sub.correlated {
                // x [NOT] IN (correlated q): x = ANY (q) / x <> ALL (q).
                let (op, all) = match negated {
                    false => (ast::BinaryOperator::Eq, false),
                    true => (ast::BinaryOperator::NotEq, true),
                };
                return self.quantified(x, &op, q, all, scope);
            }
            let x = self.expr(x, scope)?;
            sub.on.push((x, single_value(&sub, q)?));
        }
        let name = format!("__sq{}_m", sub.id);
        let kind = JoinKind::Mark { null_aware };
        if let (Some(h), Some(over_no_rows)) = (sub.having.clone(), over_no_rows.clone()) {
            // EXISTS over a correlated aggregate whose HAVING is a column: a key's row counts
            // where HAVING holds for it; a key without a row, where HAVING over no rows does.
            let holds = format!("__sq{}_mh", sub.id);
            for (mark, filter) in [
                (
                    holds.clone(),
                    Some(sub.filter.clone().map_or(h.clone(), |f| f.and(h.clone()))),
                ),
                (name.clone(), sub.filter.clone()),
            ] {
                self.pending.borrow_mut().push(PendingJoin {
                    plan: sub.plan.clone(),
                    kind,
                    on: sub.on.clone(),
                    filter,
                    correlated: sub.correlated,
                    mark: Some(mark),
                    domain: sub.domain.clone(),
                });
            }
            let column = |n: String| Expr::Column(ColumnRef::new(n));
            let exists = column(holds).or(Expr::Not(Box::new(column(name))).and(over_no_rows));
            return Ok(if negated {
                Expr::Not(Box::new(exists))
            } else {
                exists
            });
        }
        self.pending.borrow_mut().push(PendingJoin {
            plan: sub.plan,
            kind,
            on: sub.on,
            filter: sub.filter,
            correlated: sub.correlated,
            mark: Some(name.clone()),
            domain: sub.domain,
        });
        let mark = Expr::Column(ColumnRef::new(name));
        // EXISTS over an aggregate without GROUP BY also holds where no row matched, when
        // its row over no rows is kept.
        let exists = match over_no_rows {
            Some(e) => mark.or(e),
            None => mark,
        };
        Ok(if negated {
            Expr::Not(Box::new(exists))
        } else {
            exists
        })
    }

    /// A scalar subquery: a left join queued for the expression's input; the expression reads
    /// the subquery's value column.
    pub(crate) fn scalar_subquery(
        &self,
        q: &ast::Query,
        scope: &PlanSchema,
    ) -> Result<Expr, SqlError> {
        let mut sub = self.bind_subquery(q, scope, true)?;
        if sub.filter.is_some() && sub.domain.is_none() {
            // Correlated by more than equalities: over a domain, whose keys are equalities.
            sub = self.bind_over(q, scope, true, true)?;
        }
        let value = single_value(&sub, q)?;
        if sub.filter.is_some() {
            return Err(SqlError::unsupported(
                "a scalar subquery correlated by anything but equalities",
            )
            .at(q.span()));
        }
        let mut plan = sub.plan;
        let mut value_col = value.clone();
        if !sub.one_row_per_key {
            // At most one row per key, or an error: group by the keys, keep the only value.
            // (By the key columns: a NULL-safe key is an expression over one.)
            let mut keys: Vec<Expr> = Vec::new();
            for c in sub.on.iter().flat_map(|(_, k)| k.columns()) {
                let c = Expr::Column(c);
                if !keys.contains(&c) {
                    keys.push(c);
                }
            }
            let name = format!("__sq{}_single", sub.id);
            let agg = Expr::Aggregate {
                func: AggFunc::Single,
                args: vec![value],
                distinct: false,
            }
            .alias(name.clone());
            plan = plan.aggregate(keys, vec![agg])?;
            value_col = Expr::Column(ColumnRef::new(name));
        }
        let mut result = value_col.clone();
        if let Some(empty) = sub.empty_value {
            // A correlated count over no rows is 0, not the left join's NULL.
            let present;
            (plan, present) = with_presence(plan, sub.id)?;
            result = Expr::Case {
                operand: None,
                branches: vec![(Expr::Column(ColumnRef::new(present)).is_null(), empty)],
                otherwise: Some(Box::new(value_col)),
            };
        }
        self.pending.borrow_mut().push(PendingJoin {
            plan,
            kind: JoinKind::Left,
            on: sub.on,
            filter: None,
            correlated: sub.correlated,
            mark: None,
            domain: sub.domain,
        });
        Ok(result)
    }

    /// How many joins are queued; pass it to [`Binder::apply_pending`] after binding.
    pub(crate) fn pending_mark(&self) -> usize {
        self.pending.borrow().len()
    }

    /// Joins the subqueries queued since `mark` into `input`. With `after_aggregate` (`input`
    /// is an aggregate's output), a correlated one must read only columns `input` has.
    pub(crate) fn apply_pending(
        &self,
        mut input: PlanBuilder,
        mark: usize,
        after_aggregate: bool,
    ) -> Result<PlanBuilder, SqlError> {
        let joins: Vec<PendingJoin> = self.pending.borrow_mut().drain(mark..).collect();
        for j in joins {
            // Over an aggregate's output, a correlated subquery may read GROUP BY columns only.
            let reads_input = |e: &Expr| e.columns().iter().all(|c| input.schema().has(c));
            if after_aggregate
                && j.correlated
                && !(j.on.iter().all(|(o, _)| reads_input(o))
                    && j.filter.as_ref().is_none_or(|f| {
                        f.columns()
                            .iter()
                            .all(|c| input.schema().has(c) || j.plan.schema().has(c))
                    }))
            {
                return Err(SqlError::invalid(
                    "a correlated subquery in the select list or HAVING of an aggregating query \
                     may only read GROUP BY columns of the outer query",
                ));
            }
            let plan = match &j.domain {
                Some(d) => d.substitute(j.plan, &input)?,
                None => j.plan,
            };
            let j = PendingJoin { plan, ..j };
            input = match (j.kind, j.mark) {
                (JoinKind::Mark { null_aware }, Some(name)) => {
                    input.mark_join(j.plan, j.on, j.filter, null_aware, &name)?
                }
                (kind, _) => input.join(j.plan, kind, j.on, j.filter)?,
            };
        }
        Ok(input)
    }

    /// Joins into `input` the subqueries queued since `mark` whose columns `needed` holds
    /// (a subquery inside a GROUP BY key or an aggregate's argument joins the aggregate's
    /// input); the others stay queued.
    pub(crate) fn apply_pending_reading(
        &self,
        mut input: PlanBuilder,
        mark: usize,
        needed: &[ColumnRef],
    ) -> Result<PlanBuilder, SqlError> {
        let outputs = |j: &PendingJoin| -> Vec<ColumnRef> {
            match &j.mark {
                Some(name) => vec![ColumnRef::new(name.clone())],
                None => j
                    .plan
                    .schema()
                    .fields()
                    .iter()
                    .map(|f| f.column_ref())
                    .collect(),
            }
        };
        let queued: Vec<PendingJoin> = self.pending.borrow_mut().drain(mark..).collect();
        let (now, later): (Vec<_>, Vec<_>) = queued
            .into_iter()
            .partition(|j| outputs(j).iter().any(|c| needed.contains(c)));
        self.pending.borrow_mut().extend(later);
        let first = self.pending_mark();
        self.pending.borrow_mut().extend(now);
        input = self.apply_pending(input, first, false)?;
        Ok(input)
    }

    /// `input`'s scope plus the columns the joins queued since `mark` will add.
    pub(crate) fn pending_scope(&self, input: &PlanSchema, mark: usize) -> PlanSchema {
        let mut fields = input.fields().to_vec();
        for j in &self.pending.borrow()[mark..] {
            match &j.mark {
                Some(name) => fields.push(PlanField::new(None, name, DataType::Boolean, true)),
                None => fields.extend(j.plan.schema().nullable().fields().iter().cloned()),
            }
        }
        PlanSchema::new(fields)
    }

    /// Refuses subqueries where they are not supported (join conditions, VALUES, ...).
    pub(crate) fn refuse_pending_since(&self, mark: usize, what: &str) -> Result<(), SqlError> {
        if self.pending.borrow().len() > mark {
            self.pending.borrow_mut().truncate(mark);
            return Err(SqlError::unsupported(format!("subqueries in {what}")));
        }
        Ok(())
    }
}

/// Whether `e` is a join rewrite's refusal that a domain takes away.
fn needs_domain(e: &SqlError) -> bool {
    match &e.kind {
        crate::error::SqlErrorKind::Unsupported(m) => [
            "correlated reference to",
            "two or more levels below",
            "correlated by anything but equalities",
        ]
        .iter()
        .any(|p| m.contains(p)),
        _ => false,
    }
}

/// `plan` with a column `__sqN_p` that is TRUE on every row (NULL after a left join: the key
/// found no row), and that column's name.
pub(crate) fn with_presence(
    plan: PlanBuilder,
    id: usize,
) -> Result<(PlanBuilder, String), SqlError> {
    let present = format!("__sq{id}_p");
    let mut exprs: Vec<Expr> = plan
        .schema()
        .fields()
        .iter()
        .map(|f| Expr::Column(f.column_ref()))
        .collect();
    exprs.push(Expr::Literal(ScalarValue::Boolean(true)).alias(present.clone()));
    Ok((plan.project(exprs)?, present))
}

/// The subquery's only visible column.
fn single_value(sub: &Bound, q: &ast::Query) -> Result<Expr, SqlError> {
    match sub.values.as_slice() {
        [v] => Ok(v.clone()),
        vs => Err(SqlError::invalid(format!(
            "the subquery must return one column, not {}",
            vs.len()
        ))
        .at(q.span())),
    }
}

/// `key = outer` (either way round) with one side only key columns and the other none.
fn key_pair(e: &Expr) -> Option<(Expr, Expr)> {
    let Expr::Binary {
        left,
        op: morsel_planner::BinaryOp::Eq,
        right,
    } = e
    else {
        return None;
    };
    let keys_only = |x: &Expr| {
        let cols = x.columns();
        !cols.is_empty() && cols.iter().all(is_key_column)
    };
    let outer_only = |x: &Expr| {
        let cols = x.columns();
        !cols.is_empty() && !cols.iter().any(is_key_column)
    };
    if keys_only(right) && outer_only(left) {
        Some((*left.clone(), *right.clone()))
    } else if keys_only(left) && outer_only(right) {
        Some((*right.clone(), *left.clone()))
    } else {
        None
    }
}
