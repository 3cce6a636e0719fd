//! Correlation inside the nested query blocks of a subquery bound over a domain (see
//! `domain`): derived tables, CTEs and join conditions in its FROM, and set operations as its
//! body (`(SELECT count(*) FROM (SELECT x FROM u WHERE u.a = t.a) s)`, `(SELECT x FROM u
//! WHERE u.a = t.a UNION ALL SELECT t.c ORDER BY 1 LIMIT 1)`).
//!
//! The dependent join is pushed into the block, as Neumann and Kemper push it through every
//! operator:
//!
//! - FROM: the domain is the first FROM item, and a derived table or CTE that reads outer
//!   columns is joined as a LATERAL subquery of the items before it (so of the domain); join
//!   conditions read the domain columns as ordinary ones. A RIGHT or FULL join must keep
//!   its right input's unmatched rows once per outer row: its right input is joined with a
//!   second copy of the domain first, the two copies are matched NULL-safely in the join
//!   condition, and the domain columns after it are the first non-NULL of the two (the right
//!   copy where the left side found no match).
//! - A set operation distributes over the domain: every branch is bound as a LATERAL
//!   subquery of the domain (an aggregate branch without GROUP BY gets its row for keys
//!   without input rows there), outputs the domain columns as keys, and the set operation
//!   runs over values and keys together, so it holds per outer row (`UNION` and `EXCEPT`
//!   compare keys too). ORDER BY and LIMIT number the rows within each key.

use morsel_planner::expr::{WindowExpr, WindowFrame, WindowFunc};
use morsel_planner::{ColumnRef, Expr, JoinKind, PlanBuilder, SortExpr};
use morsel_storage::ScalarValue;
use sqlparser::ast::{self, Spanned};

use super::domain::Domain;
use super::subquery::{key_name, Shape};
use super::Binder;
use crate::error::SqlError;

/// Whether a FROM clause has a join that cannot be bound over a domain (a right semi or
/// anti join, or a RIGHT or FULL join with USING or NATURAL): the domain then joins after
/// the whole FROM, and nested outer references are refused.
pub(crate) fn has_outer_join(from: &[ast::TableWithJoins]) -> bool {
    use ast::JoinOperator as J;
    from.iter()
        .flat_map(|t| &t.joins)
        .any(|j| match &j.join_operator {
            J::RightSemi(_) | J::RightAnti(_) => true,
            op => right_or_full(op).is_some_and(|(_, on)| on.is_none()),
        })
}

/// The kind and ON condition of a RIGHT or FULL join operator (`None` as the condition for
/// USING or NATURAL); `None` for other operators.
fn right_or_full(op: &ast::JoinOperator) -> Option<(JoinKind, Option<&ast::Expr>)> {
    use ast::JoinOperator as J;
    let (kind, c) = match op {
        J::Right(c) | J::RightOuter(c) => (JoinKind::Right, c),
        J::FullOuter(c) => (JoinKind::Full, c),
        _ => return None,
    };
    Some(match c {
        ast::JoinConstraint::On(e) => (kind, Some(e)),
        _ => (kind, None),
    })
}

/// Set-operation branch `body` as a query of its own.
fn alone(body: &ast::SetExpr) -> ast::Query {
    ast::Query {
        with: None,
        body: Box::new(body.clone()),
        order_by: None,
        limit_clause: None,
        fetch: None,
        locks: Vec::new(),
        for_clause: None,
        settings: None,
        format_clause: None,
        pipe_operators: Vec::new(),
    }
}

/// An alias naming a CTE's rows where its reference has none.
fn alias_named(name: &str) -> ast::TableAlias {
    ast::TableAlias {
        explicit: true,
        name: ast::Ident::new(name),
        columns: Vec::new(),
        at: None,
    }
}

impl Binder<'_> {
    /// Whether `q` names a column of the subquery's enclosing scope (so it may read one).
    fn reads_outer(&self, q: &ast::Query) -> bool {
        let frames = self.frames.borrow();
        frames
            .last()
            .is_some_and(|f| Domain::for_query(0, q, &f.outer).is_some())
    }

    /// A FROM item that reads outer columns as a query and its alias: a derived table, or a
    /// reference to a CTE whose query does (with the CTEs it may see, which the caller
    /// restores with the returned count).
    fn correlated_item(
        &self,
        t: &ast::TableFactor,
    ) -> Option<(ast::Query, ast::TableAlias, Option<usize>)> {
        match t {
            ast::TableFactor::Derived {
                subquery, alias, ..
            } if self.reads_outer(subquery) => Some((
                (**subquery).clone(),
                alias
                    .clone()
                    .unwrap_or_else(|| alias_named("unnamed_subquery")),
                None,
            )),
            ast::TableFactor::Table {
                name,
                alias,
                args: None,
                ..
            } => {
                let [part] = name.0.as_slice() else {
                    return None;
                };
                let ident = part.as_ident()?;
                let (query, visible) = self
                    .ctes
                    .borrow()
                    .iter()
                    .rev()
                    .find(|c| c.name.eq_ignore_ascii_case(&ident.value))
                    .map(|c| ((*c.query).clone(), c.visible))?;
                if !self.reads_outer(&query) {
                    return None;
                }
                let alias = alias.clone().unwrap_or_else(|| alias_named(&ident.value));
                Some((query, alias, Some(visible)))
            }
            _ => None,
        }
    }

    /// `left` joined (`kind`, `on`) with FROM item `t`, which reads outer columns, as a
    /// LATERAL subquery of `left`; `None` when `t` reads none.
    fn join_correlated_item(
        &self,
        left: PlanBuilder,
        t: &ast::TableFactor,
        kind: JoinKind,
        on: Option<&ast::Expr>,
    ) -> Result<Result<PlanBuilder, PlanBuilder>, SqlError> {
        let Some((q, alias, visible)) = self.correlated_item(t) else {
            return Ok(Err(left));
        };
        // A CTE is bound with only the CTEs before it in scope.
        let later = visible.map(|v| self.ctes.borrow_mut().split_off(v));
        let joined = self.lateral_join(left, &q, Some(&alias), kind, on);
        if let Some(later) = later {
            self.ctes.borrow_mut().extend(later);
        }
        Ok(Ok(joined.map_err(|e| e.at(t.span()))?))
    }

    /// The FROM clause of a SELECT bound over `domain`, which is its first item (see the
    /// module doc); FROM items reading outer columns join as LATERAL subqueries.
    pub(crate) fn bind_from_over_domain(
        &self,
        from: &[ast::TableWithJoins],
        domain: &Domain,
    ) -> Result<PlanBuilder, SqlError> {
        let mut b = domain.placeholder();
        for twj in from {
            b = match self.join_correlated_item(b, &twj.relation, JoinKind::Inner, None)? {
                Ok(joined) => joined,
                Err(left) if super::from::lateral(&twj.relation).is_some() => {
                    let (q, alias) = super::from::lateral(&twj.relation).expect("checked");
                    self.lateral_join(left, q, alias, JoinKind::Inner, None)
                        .map_err(|e| e.at(twj.relation.span()))?
                }
                Err(left) => {
                    let item = self.from(std::slice::from_ref(&ast::TableWithJoins {
                        relation: twj.relation.clone(),
                        joins: Vec::new(),
                    }))?;
                    left.join(item, JoinKind::Inner, Vec::new(), None)?
                }
            };
            for j in &twj.joins {
                if let Some((kind, Some(on))) = right_or_full(&j.join_operator) {
                    b = self
                        .outer_join_over_domain(b, &j.relation, kind, on, domain)
                        .map_err(|e| e.at(j.span()))?;
                    continue;
                }
                let (kind, on) = inner_or_left(&j.join_operator);
                let attempt = match kind {
                    Some(kind) if self.correlated_item(&j.relation).is_some() => {
                        self.join_correlated_item(b, &j.relation, kind, on)?
                    }
                    _ => Err(b),
                };
                b = match attempt {
                    Ok(joined) => joined,
                    Err(left) => self.join_one(left, j)?,
                };
            }
        }
        Ok(b)
    }

    /// `left` (which holds the domain columns) RIGHT or FULL joined (`kind`) with FROM item
    /// `t` on `on`, per outer row (see the module doc).
    fn outer_join_over_domain(
        &self,
        left: PlanBuilder,
        t: &ast::TableFactor,
        kind: JoinKind,
        on: &ast::Expr,
        domain: &Domain,
    ) -> Result<PlanBuilder, SqlError> {
        let copy = |name: &str| format!("{name}_r");
        // The right input over its own copy of the domain (so a LATERAL one reads it).
        let right =
            match self.join_correlated_item(domain.placeholder(), t, JoinKind::Inner, None)? {
                Ok(joined) => joined,
                Err(base) => match super::from::lateral(t) {
                    Some((q, alias)) => self.lateral_join(base, q, alias, JoinKind::Inner, None)?,
                    None => base.join(self.table_factor(t)?, JoinKind::Inner, Vec::new(), None)?,
                },
            };
        let names: Vec<&str> = domain.names().collect();
        let renamed: Vec<Expr> = right
            .schema()
            .fields()
            .iter()
            .map(|f| {
                let c = Expr::Column(f.column_ref());
                match f.relation.is_none() && names.contains(&f.name.as_str()) {
                    true => c.alias(copy(&f.name)),
                    false => c,
                }
            })
            .collect();
        let right = right.project(renamed)?;
        let both = left.schema().join(right.schema(), false);
        let mark = self.pending_mark();
        let cond = self.expr(on, &both)?;
        self.refuse_pending_since(
            mark,
            "the ON condition of a RIGHT or FULL join in a correlated subquery",
        )?;
        let mut conds = vec![cond];
        for (j, name) in names.iter().enumerate() {
            let (l, r) = (ColumnRef::new(*name), ColumnRef::new(copy(name)));
            conds.extend(domain.same_value(j, Expr::Column(l), Expr::Column(r)));
        }
        let joined = left.join_on(right, kind, Expr::conjunction(conds))?;
        // One copy of the domain columns: the left one where the left side matched.
        let exprs: Vec<Expr> = joined
            .schema()
            .fields()
            .iter()
            .filter_map(|f| {
                let c = Expr::Column(f.column_ref());
                let domain_column = f.relation.is_none() && names.contains(&f.name.as_str());
                let right_copy = f.relation.is_none() && names.iter().any(|n| copy(n) == f.name);
                match (domain_column, right_copy) {
                    (_, true) => None,
                    (true, _) => Some(
                        Expr::Function {
                            func: morsel_planner::ScalarFunc::Coalesce,
                            args: vec![c, Expr::Column(ColumnRef::new(copy(&f.name)))],
                        }
                        .alias(f.name.clone()),
                    ),
                    _ => Some(c),
                }
            })
            .collect();
        Ok(joined.project(exprs)?)
    }

    /// The body of subquery `id` bound over `domain` when it is a set operation (see the
    /// module doc): values, then the keys; reports its shape.
    pub(crate) fn set_over_domain(
        &self,
        id: usize,
        q: &ast::Query,
        domain: &Domain,
        order: &[ast::OrderByExpr],
    ) -> Result<PlanBuilder, SqlError> {
        let b = self.set_branches(id, &q.body, domain)?;
        let keys = domain.keys().len();
        let schema = b.schema().clone();
        let visible = schema.len() - keys;
        let values = morsel_planner::PlanSchema::new(schema.fields()[..visible].to_vec());
        let order_by = order
            .iter()
            .map(|o| {
                let key = match self.output_position(&o.expr, &values)? {
                    Some(i) => Expr::Column(values.field(i).column_ref()),
                    None => self.expr(&o.expr, &values)?,
                };
                Ok(super::query::sort_expr(key, o))
            })
            .collect::<Result<Vec<SortExpr>, SqlError>>()?;
        let key_columns: Vec<Expr> = (0..keys)
            .map(|j| Expr::Column(ColumnRef::new(key_name(id, j))))
            .collect();
        let b = match self.limit(q)? {
            // Without LIMIT the order of a subquery's rows is not observable.
            (None, 0) => b,
            (limit, offset) => {
                let all: Vec<Expr> = schema
                    .fields()
                    .iter()
                    .map(|f| Expr::Column(f.column_ref()))
                    .collect();
                number_per_key(b, key_columns.clone(), order_by, offset, limit)?.project(all)?
            }
        };
        self.report_shape(Shape {
            conjuncts: (0..keys)
                .flat_map(|j| domain.key_conditions(j, key_columns[j].clone()))
                .collect(),
            keys,
            one_row_per_key: false,
            empty_values: Vec::new(),
            row_over_no_rows: None,
            having_column: false,
        });
        Ok(b)
    }

    /// Each branch of set operation `body` as a LATERAL subquery of `domain`, combined.
    fn set_branches(
        &self,
        id: usize,
        body: &ast::SetExpr,
        domain: &Domain,
    ) -> Result<PlanBuilder, SqlError> {
        match body {
            ast::SetExpr::SetOperation {
                op,
                set_quantifier,
                left,
                right,
            } => {
                let l = self.set_branches(id, left, domain)?;
                let r = self.set_branches(id, right, domain)?;
                self.set_operation(body, op, set_quantifier, l, r)
            }
            branch => {
                let q = match branch {
                    ast::SetExpr::Query(q) => (**q).clone(),
                    other => alone(other),
                };
                let placeholder = domain.placeholder();
                let outer = placeholder.schema().clone();
                let joined = self
                    .lateral_join(placeholder, &q, None, JoinKind::Inner, None)
                    .map_err(|e| e.at(branch.span()))?;
                // Values first, then the domain columns as this subquery's keys.
                let fields = joined.schema().fields().to_vec();
                let mut exprs: Vec<Expr> = fields[outer.len()..]
                    .iter()
                    .map(|f| Expr::Column(f.column_ref()))
                    .collect();
                exprs.extend(
                    outer
                        .fields()
                        .iter()
                        .enumerate()
                        .map(|(j, f)| Expr::Column(f.column_ref()).alias(key_name(id, j))),
                );
                Ok(joined.project(exprs)?)
            }
        }
    }
}

/// The join kind and condition of an inner or left join operator; `None` for others.
fn inner_or_left(op: &ast::JoinOperator) -> (Option<JoinKind>, Option<&ast::Expr>) {
    use ast::JoinOperator as J;
    let (kind, c) = match op {
        J::Join(c) | J::Inner(c) => (JoinKind::Inner, c),
        J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, c),
        J::CrossJoin(_) => return (Some(JoinKind::Inner), None),
        _ => return (None, None),
    };
    match c {
        ast::JoinConstraint::On(e) => (Some(kind), Some(e)),
        ast::JoinConstraint::None => (Some(kind), None),
        _ => (None, None),
    }
}

/// `b`'s rows numbered within each `partition_by` key in `order_by` order, those past
/// `offset + limit` dropped (a correlated subquery's LIMIT holds per outer row); the row
/// number is an extra column `__row` at the end.
pub(crate) fn number_per_key(
    b: PlanBuilder,
    partition_by: Vec<Expr>,
    order_by: Vec<SortExpr>,
    offset: usize,
    limit: Option<usize>,
) -> Result<PlanBuilder, SqlError> {
    let frame = WindowFrame::default_for(!order_by.is_empty());
    let row = Expr::Window(Box::new(WindowExpr {
        func: WindowFunc::RowNumber,
        args: Vec::new(),
        partition_by,
        order_by,
        frame,
        ignore_nulls: false,
    }));
    let b = b.window(vec![row.alias("__row")])?;
    let n = Expr::Column(ColumnRef::new("__row"));
    let mut keep = n
        .clone()
        .gt(Expr::Literal(ScalarValue::Int64(offset as i64)));
    if let Some(l) = limit {
        keep = keep.and(n.lt_eq(Expr::Literal(ScalarValue::Int64((offset + l) as i64))));
    }
    Ok(b.filter(keep)?)
}
