//! Queries: SELECT blocks (with aggregation, HAVING, DISTINCT, ORDER BY), UNION, LIMIT.
//!
//! Aggregation follows the usual plan shape: aggregate calls are collected from the select
//! list, HAVING and ORDER BY; an Aggregate node computes them grouped by the GROUP BY
//! expressions; then every expression above is rewritten to read the aggregate's output
//! columns, and anything left that is neither grouped nor aggregated is an error.

use morsel_planner::expr::coerce;
use morsel_planner::{
    AggFunc, BinaryOp, ColumnRef, Expr, LogicalPlan, PlanBuilder, PlanSchema, SortExpr,
};
use morsel_storage::ScalarValue;
use sqlparser::ast::{self, Spanned};

use super::subquery::{self, Shape};
use super::Binder;
use crate::error::SqlError;

/// A select-list entry: the bound expression, its syntax (none for `*`), and where it is.
struct Item {
    expr: Expr,
    syntax: Option<ast::Expr>,
    span: sqlparser::tokenizer::Span,
}

/// A bound ORDER BY key before it is placed above or below the projection.
enum OrderKey {
    /// Refers to output column `i` of the select list.
    Output(usize),
    /// An expression over the select block's input (or aggregate output).
    Input(Expr),
}

impl Binder<'_> {
    pub(crate) fn query(&self, q: &ast::Query) -> Result<PlanBuilder, SqlError> {
        // WITH: each CTE is in scope for the ones after it and the rest of this query, and is
        // bound where it is referenced (as DuckDB does: one never referenced is not bound),
        // against the CTEs before it; referencing it twice plans it twice. (Binding each
        // once up front and copying its plan on use made a chain of n CTEs cost n squared
        // plan nodes of memory.)
        let scope = self.ctes.borrow().len();
        if let Some(with) = &q.with {
            if with.recursive {
                return Err(SqlError::unsupported("WITH RECURSIVE").at(q.span()));
            }
            for cte in &with.cte_tables {
                let visible = self.ctes.borrow().len();
                self.ctes.borrow_mut().push(super::Cte {
                    name: cte.alias.name.value.clone(),
                    alias: cte.alias.clone(),
                    query: cte.query.clone(),
                    visible,
                });
            }
        }
        let result = self.query_body(q);
        self.ctes.borrow_mut().truncate(scope);
        result
    }

    /// A set operation's output (or a grouping-sets block's) sorted by `order`, whose keys
    /// name output columns (by name, position, or the text of a select item, such as
    /// `sum(x)`), or by every output column with `order_all`.
    fn order_output(
        &self,
        b: PlanBuilder,
        order: &[ast::OrderByExpr],
        order_all: Option<&ast::OrderByOptions>,
        q: &ast::Query,
    ) -> Result<PlanBuilder, SqlError> {
        let out = b.schema().clone();
        if let Some(options) = order_all {
            let keys = (0..out.len())
                .map(|i| {
                    let key = Expr::Column(out.field(i).column_ref());
                    if !out.has(&out.field(i).column_ref()) {
                        return Err(SqlError::invalid(format!(
                            "ORDER BY ALL: output column {} ({}) is ambiguous; alias it",
                            i + 1,
                            out.field(i).name
                        ))
                        .at(q.span()));
                    }
                    Ok(sort_with(key, options))
                })
                .collect::<Result<Vec<_>, SqlError>>()?;
            return Ok(b.sort(keys)?);
        }
        if order.is_empty() {
            return Ok(b);
        }
        let keys = order
            .iter()
            .map(|o| {
                let mut written = &o.expr;
                while let ast::Expr::Nested(inner) = written {
                    written = inner;
                }
                let text = written.to_string();
                let by_text = || out.fields().iter().position(|f| f.name == text);
                let key = match self.output_key(&o.expr, &out, &[])?.or_else(by_text) {
                    Some(i) => Expr::Column(out.field(i).column_ref()),
                    None => self.expr(&o.expr, &out)?,
                };
                Ok(sort_expr(key, o))
            })
            .collect::<Result<Vec<_>, SqlError>>()?;
        Ok(b.sort(keys)?)
    }

    fn query_body(&self, q: &ast::Query) -> Result<PlanBuilder, SqlError> {
        // `ORDER BY ALL`: every output column, left to right, each in the direction given.
        let (order, order_all) = match &q.order_by {
            None => (Vec::new(), None),
            Some(ob) => match &ob.kind {
                ast::OrderByKind::Expressions(list) => (list.clone(), None),
                ast::OrderByKind::All(options) => (Vec::new(), Some(options)),
            },
        };
        if let Some((id, domain)) = self.set_body_domain(q) {
            if order_all.is_some() {
                return Err(
                    SqlError::unsupported("ORDER BY ALL in a correlated set operation")
                        .at(q.span()),
                );
            }
            // A correlated set operation bound over a domain takes its LIMIT per key.
            self.mark_limit_taken();
            return self.set_over_domain(id, q, &domain, &order);
        }
        let mut b = match q.body.as_ref() {
            ast::SetExpr::Select(s) => match super::grouping_sets::grouping_sets(&s.group_by)
                .map_err(|e| e.at(s.span()))?
            {
                // Bound once per grouping set: the concatenation is ordered as a set
                // operation's output is.
                Some(grouping) => {
                    let b = self.grouping_sets_select(s, grouping)?;
                    self.order_output(b, &order, order_all, q)?
                }
                None => self.select_ordered(s, &order, order_all)?,
            },
            body => {
                let b = self.set_expr(body)?;
                self.order_output(b, &order, order_all, q)?
            }
        };
        let (limit, offset) = self.limit(q)?;
        let taken = match q.body.as_ref() {
            ast::SetExpr::Select(s) => self.limit_taken_by(s),
            _ => false,
        };
        if (limit.is_some() || offset > 0) && !taken {
            b = b.limit(offset, limit);
        }
        Ok(b)
    }

    pub(crate) fn limit(&self, q: &ast::Query) -> Result<(Option<usize>, usize), SqlError> {
        let count = |e: &ast::Expr| -> Result<usize, SqlError> {
            match e {
                ast::Expr::Value(v) => match &v.value {
                    ast::Value::Number(n, _) => n.to_string().parse().ok(),
                    _ => None,
                },
                _ => None,
            }
            .ok_or_else(|| {
                SqlError::invalid(format!(
                    "LIMIT and OFFSET take a non-negative integer, got {e}"
                ))
                .at(e.span())
            })
        };
        let (mut limit, mut offset) = (None, 0);
        match &q.limit_clause {
            None => {}
            Some(ast::LimitClause::LimitOffset {
                limit: l,
                offset: o,
                limit_by,
            }) => {
                if !limit_by.is_empty() {
                    return Err(SqlError::unsupported("LIMIT BY"));
                }
                if let Some(l) = l {
                    if !matches!(l, ast::Expr::Value(v) if v.value == ast::Value::Null) {
                        limit = Some(count(l)?);
                    }
                }
                if let Some(o) = o {
                    offset = count(&o.value)?;
                }
            }
            Some(ast::LimitClause::OffsetCommaLimit {
                offset: o,
                limit: l,
            }) => {
                offset = count(o)?;
                limit = Some(count(l)?);
            }
        }
        if let Some(f) = &q.fetch {
            if f.percent || f.with_ties {
                return Err(SqlError::unsupported("FETCH ... PERCENT / WITH TIES"));
            }
            limit = Some(match &f.quantity {
                Some(e) => count(e)?,
                None => 1,
            });
        }
        Ok((limit, offset))
    }

    fn set_expr(&self, body: &ast::SetExpr) -> Result<PlanBuilder, SqlError> {
        match body {
            ast::SetExpr::Select(s) => self.select(s, &[]),
            ast::SetExpr::Query(q) => self.query(q),
            ast::SetExpr::SetOperation {
                op,
                set_quantifier,
                left,
                right,
            } => {
                let (l, r) = (self.set_expr(left)?, self.set_expr(right)?);
                self.set_operation(body, op, set_quantifier, l, r)
            }
            ast::SetExpr::Values(v) => {
                let empty = PlanSchema::default();
                let rows = v
                    .rows
                    .iter()
                    .map(|r| {
                        r.content
                            .iter()
                            .map(|e| self.expr(e, &empty))
                            .collect::<Result<Vec<_>, _>>()
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(PlanBuilder::values(rows).map_err(|e| SqlError::from(e).at(body.span()))?)
            }
            other => Err(SqlError::unsupported(format!("the query form {other}")).at(other.span())),
        }
    }

    /// `l op r` for set operation `body` (`UNION`, `INTERSECT`, `EXCEPT`, each `ALL` or not).
    pub(crate) fn set_operation(
        &self,
        body: &ast::SetExpr,
        op: &ast::SetOperator,
        quantifier: &ast::SetQuantifier,
        l: PlanBuilder,
        r: PlanBuilder,
    ) -> Result<PlanBuilder, SqlError> {
        let all = match quantifier {
            ast::SetQuantifier::All => true,
            ast::SetQuantifier::Distinct | ast::SetQuantifier::None => false,
            other => return Err(SqlError::unsupported(format!("{op} {other}")).at(body.span())),
        };
        match op {
            ast::SetOperator::Union => {
                let u = l.union(r).map_err(|e| SqlError::from(e).at(body.span()))?;
                Ok(if all { u } else { u.distinct() })
            }
            ast::SetOperator::Intersect | ast::SetOperator::Except => {
                set_difference(l, r, *op == ast::SetOperator::Intersect, all)
                    .map_err(|e| e.at(body.span()))
            }
            op => Err(SqlError::unsupported(op.to_string()).at(body.span())),
        }
    }

    /// Output column `i` of `out` named by an ORDER BY key: an ordinal or an output name.
    pub(crate) fn output_position(
        &self,
        e: &ast::Expr,
        out: &PlanSchema,
    ) -> Result<Option<usize>, SqlError> {
        self.output_key(e, out, &[])
    }

    /// Output column `i` named by an ORDER BY / GROUP BY key: an ordinal or an output name.
    fn output_key(
        &self,
        e: &ast::Expr,
        out: &PlanSchema,
        items: &[Item],
    ) -> Result<Option<usize>, SqlError> {
        match e {
            ast::Expr::Value(v) => {
                if let ast::Value::Number(n, _) = &v.value {
                    let k: usize = n.to_string().parse().unwrap_or(0);
                    if k == 0 || k > out.len() {
                        return Err(SqlError::invalid(format!(
                            "position {n} is not in the select list (1 to {})",
                            out.len()
                        ))
                        .at(e.span()));
                    }
                    return Ok(Some(k - 1));
                }
                Ok(None)
            }
            ast::Expr::Identifier(i) => {
                let hits: Vec<usize> = (0..out.len())
                    .filter(|&k| out.field(k).name.eq_ignore_ascii_case(&i.value))
                    .collect();
                Ok(match hits.as_slice() {
                    [k] => Some(*k),
                    _ => None,
                })
            }
            other => Ok(items
                .iter()
                .position(|it| it.syntax.as_ref() == Some(other))),
        }
    }

    pub(crate) fn select(
        &self,
        s: &ast::Select,
        order: &[ast::OrderByExpr],
    ) -> Result<PlanBuilder, SqlError> {
        self.select_ordered(s, order, None)
    }

    /// A SELECT block ordered by `order`, or by every output column with `order_all`
    /// (`ORDER BY ALL`, with its direction and NULLS placement). Its `WINDOW` clause names
    /// windows for its own calls only (a subquery's block has its own).
    fn select_ordered(
        &self,
        s: &ast::Select,
        order: &[ast::OrderByExpr],
        order_all: Option<&ast::OrderByOptions>,
    ) -> Result<PlanBuilder, SqlError> {
        let outer = self.windows.replace(s.named_window.clone());
        let branch = self.next_grouping.borrow_mut().take();
        let outer_grouping = self.grouping.replace(branch);
        let outer_orders = self.aggregate_orders.take();
        let b = self.select_block(s, order, order_all);
        self.aggregate_orders.replace(outer_orders);
        self.grouping.replace(outer_grouping);
        self.windows.replace(outer);
        b
    }

    /// The QUALIFY condition `DISTINCT ON (on)` stands for: the row numbered 1 within each
    /// key, numbered in ORDER BY order (`order`, bound as `keys`). A key may name a select
    /// item by alias or ordinal, as an ORDER BY key may.
    fn distinct_on(
        &self,
        on: &[ast::Expr],
        order: &[ast::OrderByExpr],
        keys: &[OrderKey],
        out_names: &PlanSchema,
        items: &[Item],
        input: &PlanSchema,
    ) -> Result<Expr, SqlError> {
        let partition_by = on
            .iter()
            .map(|e| match self.output_key(e, out_names, items)? {
                Some(k) => Ok(items[k].expr.clone().unalias()),
                None => self.expr(e, input),
            })
            .collect::<Result<Vec<_>, SqlError>>()?;
        let order_by = keys
            .iter()
            .zip(order)
            .map(|(k, o)| {
                let e = match k {
                    OrderKey::Output(i) => items[*i].expr.clone().unalias(),
                    OrderKey::Input(e) => e.clone(),
                };
                sort_expr(e, o)
            })
            .collect();
        let number = Expr::Window(Box::new(morsel_planner::WindowExpr {
            func: morsel_planner::WindowFunc::RowNumber,
            args: Vec::new(),
            partition_by,
            order_by,
            frame: morsel_planner::WindowFrame::default_for(!order.is_empty()),
            ignore_nulls: false,
        }));
        Ok(number.eq(Expr::Literal(ScalarValue::Int64(1))))
    }

    fn select_block(
        &self,
        s: &ast::Select,
        order: &[ast::OrderByExpr],
        order_all: Option<&ast::OrderByOptions>,
    ) -> Result<PlanBuilder, SqlError> {
        if s.top.is_some() || s.into.is_some() || !s.lateral_views.is_empty() {
            return Err(SqlError::unsupported("TOP, INTO or LATERAL VIEW").at(s.span()));
        }
        let (distinct, distinct_on) = match &s.distinct {
            None | Some(ast::Distinct::All) => (false, None),
            Some(ast::Distinct::Distinct) => (true, None),
            Some(ast::Distinct::On(on)) => (false, Some(on)),
        };
        if distinct_on.is_some() && s.qualify.is_some() {
            return Err(SqlError::unsupported("DISTINCT ON with QUALIFY").at(s.span()));
        }
        let using_mark = self.using_columns.borrow().len();
        // Bound over a domain: the outer values join the FROM, every clause reads them. They
        // come first, so nested blocks may read them too, unless a RIGHT or FULL join would
        // lose them (see `nested`).
        let domain = self.body_domain(s);
        let domain_first = domain.is_some() && !super::nested::has_outer_join(&s.from);
        let mut b = match &domain {
            Some(d) if domain_first => self.bind_from_over_domain(&s.from, d)?,
            _ => self.from(&s.from)?,
        };
        // What `*` expands to: the FROM clause's columns, never the columns of subqueries
        // the WHERE clause joins in, nor the second copy of a USING column.
        // (They stay listed while the SELECT binds: `t2.a` finds them; see `column` in
        // expr.rs.)
        let hidden: Vec<ColumnRef> = self.using_columns.borrow()[using_mark..]
            .iter()
            .map(|(_, hidden)| hidden.clone())
            .collect();
        let star_scope = PlanSchema::new(
            b.schema()
                .fields()
                .iter()
                .filter(|f| {
                    let domain_column =
                        f.relation.is_none() && super::domain::is_domain_name(&f.name);
                    !domain_column && !hidden.contains(&f.column_ref())
                })
                .cloned()
                .collect(),
        );
        // Set when this SELECT is a subquery's own: its WHERE may read the enclosing query.
        let body = self.body_frame_id(s);
        if let (Some(d), false) = (&domain, domain_first) {
            b = super::domain::join_domain(b, d)?;
        }
        let mut correlated = Vec::new();
        if let Some(w) = &s.selection {
            // Conjuncts over the FROM tables filter first; then EXISTS / IN conjuncts become
            // semi / anti joins, and subqueries inside expressions are joined in; conjuncts
            // reading their columns filter last. (So even unoptimized plans never join a
            // subquery to an unfiltered cross product.)
            let mark = self.pending_mark();
            let from_scope = b.schema().clone();
            let mut bound = Vec::new();
            let mut subquery_conjuncts = Vec::new();
            for c in split_and(w) {
                if let Some(sub) = subquery_conjunct(c) {
                    subquery_conjuncts.push((c, sub));
                    continue;
                }
                self.set_allow_outer(body.is_some());
                let e = self.expr(c, &from_scope);
                self.set_allow_outer(false);
                let e = e?;
                if e.contains_window() {
                    return Err(SqlError::invalid(
                        "window functions are not allowed in WHERE; filter in an outer query",
                    )
                    .at(c.span()));
                }
                if e.contains_aggregate() {
                    return Err(SqlError::invalid(
                        "aggregates are not allowed in WHERE; use HAVING",
                    )
                    .at(c.span()));
                }
                bound.push(e);
            }
            let pending_scope = self.pending_scope(&from_scope, mark);
            let (mut first, mut last) = (Vec::new(), Vec::new());
            for conj in bound.into_iter().flat_map(Expr::split_conjunction) {
                let cols = conj.columns();
                if cols.iter().all(|c| from_scope.has(c)) {
                    first.push(conj);
                } else if body.is_some() && cols.iter().any(|c| !pending_scope.has(c)) {
                    correlated.push(conj);
                } else {
                    last.push(conj);
                }
            }
            if let Some(pred) = Expr::conjunction(first) {
                b = b.filter(pred).map_err(|e| SqlError::from(e).at(w.span()))?;
            }
            for (c, (q, in_expr, negated)) in subquery_conjuncts {
                b = self
                    .filter_by_subquery(b, q, in_expr, negated)
                    .map_err(|e| e.at(c.span()))?;
            }
            b = self.apply_pending(b, mark, false)?;
            if let Some(pred) = Expr::conjunction(last) {
                b = b.filter(pred).map_err(|e| SqlError::from(e).at(w.span()))?;
            }
        }
        let input = b.schema().clone();
        let correlation = match (&domain, body) {
            (Some(d), Some(id)) if correlated.is_empty() => Some(Correlation::over_domain(id, d)),
            _ => body
                .map(|id| Correlation::new(id, correlated, &input))
                .transpose()?,
        };
        let pending = self.pending_mark();

        // The select list, bound against the FROM scope: (expression, its syntax).
        let mut items: Vec<Item> = Vec::new();
        // `FROM t` alone (DuckDB's FROM-first form) selects every column.
        let every = [ast::SelectItem::Wildcard(Default::default())];
        let projection = match s.projection.is_empty() {
            true => &every[..],
            false => &s.projection[..],
        };
        for item in projection {
            match item {
                ast::SelectItem::UnnamedExpr(e) => {
                    let mut expr = self.expr(e, &input)?;
                    // A subquery's column is named by its SQL text, not by internal names;
                    // a USING join's right copy (`t2.a`) by its column name.
                    let name = expr.output_name();
                    if name.starts_with("__using") {
                        let column = match e {
                            ast::Expr::CompoundIdentifier(parts) => {
                                parts.last().map(|p| p.value.clone())
                            }
                            _ => None,
                        };
                        expr = expr.alias(column.unwrap_or_else(|| e.to_string()));
                    } else if !matches!(
                        e,
                        ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_)
                    ) {
                        // Named as the user wrote it (`sum(b)`, not the coerced
                        // `sum(CAST(b AS BIGINT))`), as DuckDB does.
                        let mut written = e;
                        while let ast::Expr::Nested(inner) = written {
                            written = inner;
                        }
                        let text = written.to_string();
                        // The name it would have once its operands are cast: where that
                        // cannot be known yet (it reads a subquery's value), alias it.
                        let coerced = coerce(expr.clone(), &input).ok().map(|c| c.output_name());
                        if coerced.as_deref() != Some(text.as_str()) {
                            expr = expr.alias(text);
                        }
                    }
                    items.push(Item {
                        expr,
                        syntax: Some(e.clone()),
                        span: e.span(),
                    })
                }
                ast::SelectItem::ExprWithAlias { expr, alias } => items.push(Item {
                    expr: self.expr(expr, &input)?.alias(alias.value.clone()),
                    syntax: Some(expr.clone()),
                    span: expr.span(),
                }),
                ast::SelectItem::Wildcard(opts) => {
                    let fields: Vec<_> = star_scope.fields().iter().collect();
                    for expr in self.star_columns(&fields, opts, &input, item)? {
                        items.push(Item {
                            expr,
                            syntax: None,
                            span: item.span(),
                        });
                    }
                }
                ast::SelectItem::QualifiedWildcard(kind, opts) => {
                    let rel = match kind {
                        // `"T".*` names the relation T (the quotes are not part of it).
                        ast::SelectItemQualifiedWildcardKind::ObjectName(n) => {
                            n.0.iter()
                                .filter_map(|p| p.as_ident())
                                .map(|i| i.value.as_str())
                                .collect::<Vec<_>>()
                                .join(".")
                        }
                        ast::SelectItemQualifiedWildcardKind::Expr(e) => e.to_string(),
                    };
                    let fields: Vec<_> = star_scope
                        .fields()
                        .iter()
                        .filter(|f| {
                            f.relation
                                .as_deref()
                                .is_some_and(|r| r.eq_ignore_ascii_case(&rel))
                        })
                        .collect();
                    if fields.is_empty() {
                        return Err(SqlError::invalid(format!("no table named {rel} in FROM"))
                            .at(item.span()));
                    }
                    for expr in self.star_columns(&fields, opts, &input, item)? {
                        items.push(Item {
                            expr,
                            syntax: None,
                            span: item.span(),
                        });
                    }
                }
                other => {
                    return Err(
                        SqlError::unsupported(format!("the select item {other}")).at(other.span())
                    )
                }
            }
        }

        let visible_items = items.len();
        if let Some(c) = &correlation {
            for (j, k) in c.keys.iter().enumerate() {
                items.push(Item {
                    expr: k.clone().alias(subquery::key_name(c.id, j)),
                    syntax: None,
                    span: s.span(),
                });
            }
        }

        // The select list's output names, for keys given as an ordinal or an alias.
        let out_names = PlanSchema::new(
            items
                .iter()
                .map(|it| {
                    morsel_planner::PlanField::new(
                        None,
                        it.expr.output_name(),
                        morsel_storage::DataType::Null,
                        true,
                    )
                })
                .collect(),
        );

        // GROUP BY keys: an ordinal or alias of the select list, or an input expression.
        let mut group = Vec::new();
        // Grouping expressions this block's grouping set leaves out: NULL in its rows.
        let mut nulled: Vec<Expr> = Vec::new();
        match &s.group_by {
            ast::GroupByExpr::Expressions(exprs, modifiers) => {
                // Bound for one grouping set: its keys, and the other grouping expressions
                // to read as NULL.
                let branch = self.grouping.borrow().clone();
                let keys: Vec<&ast::Expr> = match &branch {
                    Some(b) => b.keys.iter().collect(),
                    None if !modifiers.is_empty() => {
                        return Err(SqlError::unsupported("GROUP BY modifiers").at(s.span()))
                    }
                    None => exprs.iter().collect(),
                };
                let others: Vec<&ast::Expr> = match &branch {
                    Some(b) => b.all.iter().filter(|g| !b.keys.contains(g)).collect(),
                    None => Vec::new(),
                };
                for (n, g) in keys.iter().chain(&others).enumerate() {
                    let g = *g;
                    let by_output = match g {
                        ast::Expr::Identifier(i) if input.has(&ColumnRef::new(i.value.clone())) => {
                            None
                        }
                        _ => self.output_key(g, &out_names, &[])?,
                    };
                    let e = match by_output {
                        Some(k) => items[k].expr.clone().unalias(),
                        None => self.expr(g, &input)?,
                    };
                    if e.contains_aggregate() {
                        return Err(
                            SqlError::invalid("GROUP BY cannot contain aggregates").at(g.span())
                        );
                    }
                    // A key may read a subquery's column, joined in before the aggregate.
                    let scope = self.pending_scope(&input, pending);
                    let e = coerce(e, &scope).map_err(|err| SqlError::from(err).at(g.span()))?;
                    match n < keys.len() {
                        true => group.push(e),
                        false => nulled.push(e),
                    }
                }
            }
            ast::GroupByExpr::All(modifiers) => {
                if !modifiers.is_empty() {
                    return Err(
                        SqlError::unsupported("GROUP BY modifiers (ROLLUP, CUBE, ...)")
                            .at(s.span()),
                    );
                }
                // Every select-list expression without an aggregate (or a window, which
                // runs after grouping) is a key, as in DuckDB; so are none that read no
                // column (`SELECT 1, count(*) ... GROUP BY ALL` is one row over no rows).
                let scope = self.pending_scope(&input, pending);
                for it in &items[..visible_items] {
                    let e = it.expr.clone().unalias();
                    if e.contains_aggregate() || e.contains_window() || e.columns().is_empty() {
                        continue;
                    }
                    group.push(coerce(e, &scope).map_err(|err| SqlError::from(err).at(it.span))?);
                }
            }
        }
        // HAVING may name a select-list alias (as in DuckDB) where the input has no such
        // column.
        let aliases: Vec<(String, Expr)> = items
            .iter()
            .filter_map(|it| match &it.expr {
                Expr::Alias { expr, name } if it.syntax.is_some() => {
                    Some((name.clone(), (**expr).clone()))
                }
                _ => None,
            })
            .collect();
        let alias_mark = self.aliases.borrow().len();
        self.aliases.borrow_mut().extend(aliases);
        let having = s
            .having
            .as_ref()
            .map(|h| Ok::<_, SqlError>((self.expr(h, &input)?, h)));
        // QUALIFY too: it filters after the window functions, before DISTINCT and ORDER BY.
        let qualify = s.qualify.as_ref().map(|q| self.expr(q, &input));
        self.aliases.borrow_mut().truncate(alias_mark);
        let having = having.transpose()?;
        let mut qualify_expr = qualify.transpose()?;

        // ORDER BY keys that name output columns; the rest are bound against the input.
        let every_output: Vec<ast::OrderByExpr>;
        let order = match order_all {
            None => order,
            Some(options) => {
                every_output = (1..=visible_items)
                    .map(|k| ast::OrderByExpr {
                        expr: ast::Expr::value(ast::Value::Number(k.to_string(), false)),
                        options: options.clone(),
                        with_fill: None,
                    })
                    .collect();
                &every_output
            }
        };
        let mut order_keys = Vec::with_capacity(order.len());
        for o in order {
            order_keys.push(match self.output_key(&o.expr, &out_names, &items)? {
                Some(k) => OrderKey::Output(k),
                None => OrderKey::Input(self.expr(&o.expr, &input)?),
            });
        }

        if let Some(on) = distinct_on {
            // DISTINCT ON (keys): the first row of each key in ORDER BY order, that is
            // QUALIFY row_number() OVER (PARTITION BY keys ORDER BY ...) = 1.
            qualify_expr =
                Some(self.distinct_on(on, order, &order_keys, &out_names, &items, &input)?);
        }
        let qualify_span = s.qualify.as_ref().map_or(s.span(), |q| q.span());

        let grouping_set = self.grouping.borrow().is_some();
        if grouping_set && correlation.is_some() {
            return Err(SqlError::unsupported(
                "ROLLUP, CUBE or GROUPING SETS in a correlated subquery",
            )
            .at(s.span()));
        }
        let user_grouped = !group.is_empty() || grouping_set;
        let aggregating = user_grouped
            || items.iter().any(|it| it.expr.contains_aggregate())
            || having.as_ref().is_some_and(|(h, _)| h.contains_aggregate())
            || qualify_expr.as_ref().is_some_and(Expr::contains_aggregate)
            || order_keys
                .iter()
                .any(|k| matches!(k, OrderKey::Input(e) if e.contains_aggregate()));
        if let Some(c) = &correlation {
            if aggregating {
                if c.non_equi {
                    return Err(SqlError::unsupported(
                        "an aggregating subquery correlated by anything but equalities",
                    )
                    .at(s.span()));
                }
                for k in &c.keys {
                    group.push(coerce(k.clone(), &input)?);
                }
            }
        }
        let mut having_expr = having.as_ref().map(|(h, _)| h.clone());
        if aggregating {
            // Expressions may read subqueries' columns, joined in after the aggregate.
            let scope = self.pending_scope(&input, pending);
            // Keys and the expressions over them are matched with every column named in
            // full (`c` and `t.c` are one column).
            let qualify = |e: &Expr| {
                e.clone().replace(&mut |x: &Expr| match x {
                    Expr::Column(c) => scope
                        .position(c)
                        .map(|i| Expr::Column(scope.field(i).column_ref())),
                    _ => None,
                })
            };
            // A key named twice (`GROUP BY c, t.c`, or a correlation key also grouped by)
            // is one key: the aggregate's output names each key once. (Found by their
            // text, then compared whole: GROUP BY lists can be long.)
            let mut seen: std::collections::HashMap<String, Vec<Expr>> = Default::default();
            group.retain(|g| {
                let g = qualify(g);
                let same = seen.entry(g.to_string()).or_default();
                let fresh = !same.contains(&g);
                if fresh {
                    same.push(g);
                }
                fresh
            });
            let qualified_group: Vec<Expr> = group.iter().map(qualify).collect();
            // An expression matches a key only if it has as many nodes.
            let key_nodes = group.iter().map(Expr::node_count).max().unwrap_or(0);
            let coerce_at = |e: Expr, span: sqlparser::tokenizer::Span| {
                coerce(e, &scope).map_err(|err| SqlError::from(err).at(span))
            };
            for it in items.iter_mut() {
                it.expr = coerce_at(it.expr.clone(), it.span)?;
            }
            if let (Some(h), Some((_, ast))) = (having_expr.as_mut(), having.as_ref()) {
                *h = coerce_at(h.clone(), ast.span())?;
            }
            if let Some(q) = qualify_expr.as_mut() {
                *q = coerce_at(q.clone(), qualify_span)?;
            }
            for (k, o) in order_keys.iter_mut().zip(order) {
                if let OrderKey::Input(e) = k {
                    *e = coerce_at(e.clone(), o.expr.span())?;
                }
            }
            let mut aggs: Vec<Expr> = Vec::new();
            let mut collect = |e: &Expr| {
                e.visit(&mut |x| {
                    if x.is_aggregate() && !aggs.contains(x) {
                        aggs.push(x.clone());
                    }
                })
            };
            items.iter().for_each(|it| collect(&it.expr));
            having_expr.iter().for_each(&mut collect);
            qualify_expr.iter().for_each(&mut collect);
            order_keys.iter().for_each(|k| {
                if let OrderKey::Input(e) = k {
                    collect(e)
                }
            });
            if let Some(c) = &correlation {
                self.report_shape(c.shape(
                    !user_grouped,
                    &items[..visible_items],
                    having_expr.as_ref(),
                    self.in_scalar_subquery(),
                ));
            }
            // Subqueries inside GROUP BY keys or aggregate arguments join the input first.
            let needed: Vec<ColumnRef> = group
                .iter()
                .chain(&aggs)
                .flat_map(|e| e.columns())
                .filter(|c| !input.has(c))
                .collect();
            if !needed.is_empty() {
                b = self.apply_pending_reading(b, pending, &needed)?;
            }
            // Ordered aggregates (`string_agg(x, ',' ORDER BY y)`) see their input sorted
            // (the aggregate keeps input order); all of a block's must agree on the order.
            let orders = self.aggregate_orders.take();
            if let Some(first) = orders.first() {
                let text = |o: &[ast::OrderByExpr]| {
                    o.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                if orders.iter().any(|o| text(o) != text(first)) {
                    return Err(SqlError::unsupported(
                        "aggregates ordered by different ORDER BY clauses in one query block",
                    )
                    .at(s.span()));
                }
                let sort_scope = b.schema().clone();
                let keys = first
                    .iter()
                    .map(|o| {
                        let e = self.expr(&o.expr, &input)?;
                        let e = coerce(e, &sort_scope)
                            .map_err(|err| SqlError::from(err).at(o.expr.span()))?;
                        Ok(sort_expr(e, o))
                    })
                    .collect::<Result<Vec<_>, SqlError>>()?;
                b = b.sort(keys).map_err(|e| SqlError::from(e).at(s.span()))?;
            }
            b = b
                .aggregate(group.clone(), aggs.clone())
                .map_err(|e| SqlError::from(e).at(s.span()))?;
            let agg_schema = b.schema().clone();
            // Uncorrelated subqueries in the select list or HAVING join the aggregate's output.
            b = self.apply_pending(b, pending, true)?;
            let joined = b.schema().clone();
            let nulled_types = nulled
                .iter()
                .map(|e| e.data_type(&scope))
                .collect::<Result<Vec<_>, _>>()?;
            let qualified_nulled: Vec<Expr> = nulled.iter().map(qualify).collect();
            let rewrite = |e: Expr| -> Expr {
                e.replace(&mut |x: &Expr| {
                    let left_out = nulled.iter().position(|g| g == x).or_else(|| {
                        let q = qualify(x);
                        qualified_nulled.iter().position(|g| *g == q)
                    });
                    if let Some(j) = left_out {
                        return Some(Expr::Literal(ScalarValue::Null).cast(nulled_types[j]));
                    }
                    let key = group.iter().position(|g| g == x).or_else(|| {
                        let q = x.has_at_most_nodes(key_nodes).then(|| qualify(x))?;
                        qualified_group.iter().position(|g| *g == q)
                    });
                    if let Some(i) = key {
                        return Some(Expr::Column(agg_schema.field(i).column_ref()));
                    }
                    aggs.iter()
                        .position(|a| a == x)
                        .map(|j| Expr::Column(agg_schema.field(group.len() + j).column_ref()))
                })
            };
            let check = |e: &Expr, span: sqlparser::tokenizer::Span| -> Result<(), SqlError> {
                for c in e.columns() {
                    if !joined.has(&c) {
                        return Err(SqlError::invalid(format!(
                            "column {c} must appear in the GROUP BY clause or be used in an aggregate function"
                        ))
                        .at(span));
                    }
                }
                Ok(())
            };
            for it in items.iter_mut() {
                let name = it.expr.output_name();
                it.expr = rewrite(it.expr.clone());
                // A key this grouping set reads as NULL keeps its column's name.
                if !nulled.is_empty() && it.expr.output_name() != name {
                    it.expr = it.expr.clone().unalias().alias(name);
                }
                check(&it.expr, it.span)?;
            }
            if let Some(q) = qualify_expr.take() {
                let q = rewrite(q);
                check(&q, qualify_span)?;
                qualify_expr = Some(q);
            }
            if let Some(h) = having_expr.take() {
                let h = rewrite(h);
                let span = having.as_ref().map(|(_, a)| a.span()).unwrap_or(s.span());
                check(&h, span)?;
                if correlation.is_some() && !user_grouped && self.in_scalar_subquery() {
                    // A correlated aggregate keeps its row per key: HAVING makes its value
                    // NULL (a key without the row would read as one over no rows).
                    for it in items[..visible_items].iter_mut() {
                        let name = it.expr.output_name();
                        it.expr = Expr::Case {
                            operand: None,
                            branches: vec![(h.clone(), it.expr.clone().unalias())],
                            otherwise: None,
                        }
                        .alias(name);
                    }
                } else if let Some(c) = correlation
                    .as_ref()
                    .filter(|c| !user_grouped && !c.keys.is_empty())
                {
                    // Its row per key is kept, with whether HAVING holds after the keys: a
                    // key whose rows HAVING rules out must not read as a key without rows
                    // (whose row is decided by HAVING over no rows).
                    items.push(Item {
                        expr: Expr::Function {
                            func: morsel_planner::ScalarFunc::Coalesce,
                            args: vec![h, Expr::Literal(ScalarValue::Boolean(false))],
                        }
                        .alias(subquery::having_name(c.id)),
                        syntax: None,
                        span,
                    });
                } else {
                    b = b.filter(h).map_err(|e| SqlError::from(e).at(span))?;
                }
            }
            for (k, o) in order_keys.iter_mut().zip(order) {
                if let OrderKey::Input(e) = k {
                    *e = rewrite(e.clone());
                    check(e, o.expr.span())?;
                }
            }
        } else if let Some((_, ast)) = &having {
            return Err(SqlError::invalid("HAVING needs GROUP BY or an aggregate").at(ast.span()));
        } else {
            if let Some(c) = &correlation {
                self.report_shape(c.shape(false, &[], None, false));
            }
            b = self.apply_pending(b, pending, false)?;
        }

        // Window functions: computed over the (grouped) input, read by the projection.
        let mut windows: Vec<Expr> = Vec::new();
        let mut collect_windows = |e: &Expr| {
            e.visit(&mut |x| {
                if matches!(x, Expr::Window(_)) && !windows.contains(x) {
                    windows.push(x.clone());
                }
            })
        };
        items.iter().for_each(|it| collect_windows(&it.expr));
        qualify_expr.iter().for_each(&mut collect_windows);
        order_keys.iter().for_each(|k| {
            if let OrderKey::Input(e) = k {
                collect_windows(e)
            }
        });
        if !windows.is_empty() && grouping_set {
            return Err(SqlError::unsupported(
                "window functions with ROLLUP, CUBE or GROUPING SETS",
            )
            .at(s.span()));
        }
        if !windows.is_empty() {
            // In a correlated subquery a window sees one outer row's rows: it is partitioned
            // by the keys first (read through their select items, which are rewritten over
            // an aggregate's output).
            let mut key_partition: Vec<Expr> = Vec::new();
            if let Some(c) = correlation.as_ref().filter(|c| !c.keys.is_empty()) {
                if c.non_equi {
                    return Err(SqlError::unsupported(
                        "a window function in a subquery correlated by anything but equalities",
                    )
                    .at(s.span()));
                }
                key_partition = items[visible_items..visible_items + c.keys.len()]
                    .iter()
                    .map(|it| it.expr.clone().unalias())
                    .collect();
            }
            let named = windows
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    let w = match w {
                        Expr::Window(x) if !key_partition.is_empty() => {
                            let mut x = (**x).clone();
                            let mut partition_by = key_partition.clone();
                            partition_by.append(&mut x.partition_by);
                            x.partition_by = partition_by;
                            Expr::Window(Box::new(x))
                        }
                        other => other.clone(),
                    };
                    w.alias(format!("__win{i}"))
                })
                .collect();
            b = b
                .window(named)
                .map_err(|e| SqlError::from(e).at(s.span()))?;
            let to_column = |e: Expr| {
                e.replace(&mut |x: &Expr| {
                    windows
                        .iter()
                        .position(|w| w == x)
                        .map(|i| Expr::Column(ColumnRef::new(format!("__win{i}"))))
                })
            };
            for it in items.iter_mut() {
                if it.expr.contains_window() {
                    // Keep the column's name: the call's text, or its alias.
                    let name = it.expr.output_name();
                    it.expr = to_column(it.expr.clone().unalias()).alias(name);
                }
            }
            for k in order_keys.iter_mut() {
                if let OrderKey::Input(e) = k {
                    *e = to_column(e.clone());
                }
            }
            qualify_expr = qualify_expr.map(to_column);
        }
        if let Some(q) = qualify_expr {
            b = b
                .filter(q)
                .map_err(|e| SqlError::from(e).at(qualify_span))?;
        }

        // Project, with hidden columns for ORDER BY keys not in the select list.
        let mut exprs: Vec<Expr> = items.iter().map(|it| it.expr.clone()).collect();
        let visible = exprs.len();
        let mut sort_targets = Vec::with_capacity(order_keys.len());
        for (n, k) in order_keys.into_iter().enumerate() {
            sort_targets.push(match k {
                OrderKey::Output(i) => i,
                OrderKey::Input(e) => match exprs[..visible].iter().position(|x| x.clone().unalias() == e) {
                    Some(i) => i,
                    None => {
                        if distinct {
                            return Err(SqlError::invalid("with SELECT DISTINCT, ORDER BY expressions must appear in the select list")
                                .at(order[n].expr.span()));
                        }
                        exprs.push(e.alias(format!("__order_{n}")));
                        exprs.len() - 1
                    }
                },
            });
        }
        let projected = b
            .project(exprs.clone())
            .map_err(|e| SqlError::from(e).at(s.span()))?;
        // Sort keys name output columns; when two outputs share a name, sort on unique
        // internal names and restore the user's names afterwards.
        let out = projected.schema().clone();
        let clash =
            !sort_targets.is_empty() && out.fields().iter().any(|f| !out.has(&f.column_ref()));
        b = if clash {
            let renamed = exprs
                .iter()
                .enumerate()
                .map(|(i, e)| e.clone().unalias().alias(format!("__col{i}")))
                .collect();
            // The projection's input, taken back (not cloned: a view chain would copy its
            // whole plan at every level).
            let LogicalPlan::Projection { input, .. } = projected.build() else {
                return Err(SqlError::invalid(
                    "internal: a projection built as something else",
                ));
            };
            PlanBuilder::from_plan(*input).project(renamed)?
        } else {
            projected
        };
        if distinct {
            b = b.distinct();
        }
        let per_key = match &correlation {
            Some(c) if !c.keys.is_empty() => self.take_limit_per_key(s),
            _ => None,
        };
        if let (Some((offset, limit)), Some(c)) = (per_key, &correlation) {
            // A correlated subquery's LIMIT holds per outer row: rows numbered within each
            // key (in ORDER BY order), those past OFFSET + LIMIT dropped.
            let numbered = b.schema().clone();
            let column = |i: usize| Expr::Column(numbered.field(i).column_ref());
            let partition_by = (visible_items..visible_items + c.keys.len())
                .map(column)
                .collect();
            let order_by: Vec<SortExpr> = sort_targets
                .iter()
                .zip(order)
                .map(|(&i, o)| sort_expr(column(i), o))
                .collect();
            b = super::nested::number_per_key(b, partition_by, order_by, offset, limit)?;
            let cols = (0..visible)
                .map(|i| {
                    if clash {
                        column(i).alias(out.field(i).name.clone())
                    } else {
                        column(i)
                    }
                })
                .collect();
            return Ok(b.project(cols)?);
        }
        if !sort_targets.is_empty() {
            let sorted = b.schema().clone();
            let keys = sort_targets
                .iter()
                .zip(order)
                .map(|(&i, o)| sort_expr(Expr::Column(sorted.field(i).column_ref()), o))
                .collect();
            b = b.sort(keys).map_err(|e| SqlError::from(e).at(s.span()))?;
            if clash || sorted.len() > visible {
                let cols = (0..visible)
                    .map(|i| {
                        let c = Expr::Column(sorted.field(i).column_ref());
                        if clash {
                            c.alias(out.field(i).name.clone())
                        } else {
                            c
                        }
                    })
                    .collect();
                b = b.project(cols)?;
            }
        }
        Ok(b)
    }
}

pub(crate) fn sort_expr(e: Expr, o: &ast::OrderByExpr) -> SortExpr {
    sort_with(e, &o.options)
}

fn sort_with(e: Expr, options: &ast::OrderByOptions) -> SortExpr {
    let asc = !matches!(options.sort, Some(ast::OrderBySort::Desc));
    // DuckDB's default: NULLS LAST in both directions.
    let nulls_first = options.nulls_first.unwrap_or(false);
    e.sort(asc, nulls_first)
}

/// The conjuncts of a WHERE clause, through parentheses.
fn split_and(e: &ast::Expr) -> Vec<&ast::Expr> {
    match e {
        ast::Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::And,
            right,
        } => {
            let mut v = split_and(left);
            v.extend(split_and(right));
            v
        }
        ast::Expr::Nested(inner) => split_and(inner),
        e => vec![e],
    }
}

/// `[NOT] EXISTS (q)` or `x [NOT] IN (q)`: the subquery, the IN operand and the negation.
fn subquery_conjunct(e: &ast::Expr) -> Option<(&ast::Query, Option<&ast::Expr>, bool)> {
    match e {
        ast::Expr::Exists { subquery, negated } => Some((subquery, None, *negated)),
        ast::Expr::In {
            expr,
            target: ast::InTarget::Subquery(q),
            negated,
            ..
        } => Some((q, Some(expr), *negated)),
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Not,
            expr,
        } => subquery_conjunct(expr).map(|(q, x, n)| (q, x, !n)),
        ast::Expr::Nested(inner) => subquery_conjunct(inner),
        _ => None,
    }
}

/// The correlation of a subquery's SELECT: conjuncts of its WHERE that read the enclosing
/// query, rewritten over key columns that the SELECT outputs after its visible columns.
struct Correlation {
    id: usize,
    /// Inner expressions output as key columns `__sqN_kJ`.
    keys: Vec<Expr>,
    /// The conjuncts over key columns and outer columns.
    conjuncts: Vec<Expr>,
    /// Some conjunct is not `inner = outer`.
    non_equi: bool,
}

impl Correlation {
    fn new(id: usize, conjuncts: Vec<Expr>, inner: &PlanSchema) -> Result<Self, SqlError> {
        let mut c = Correlation {
            id,
            keys: Vec::new(),
            conjuncts: Vec::new(),
            non_equi: false,
        };
        let inner_only = |e: &Expr| {
            let cols = e.columns();
            !cols.is_empty() && cols.iter().all(|x| inner.has(x))
        };
        let outer_only = |e: &Expr| e.columns().iter().all(|x| !inner.has(x));
        for conj in conjuncts {
            if let Expr::Binary {
                left,
                op: BinaryOp::Eq,
                right,
            } = &conj
            {
                let pair = if inner_only(left) && outer_only(right) {
                    Some((left, right))
                } else if inner_only(right) && outer_only(left) {
                    Some((right, left))
                } else {
                    None
                };
                if let Some((i, o)) = pair {
                    let k = c.key(*i.clone());
                    c.conjuncts.push(k.eq(*o.clone()));
                    continue;
                }
            }
            c.non_equi = true;
            let mut cols = Vec::new();
            conj.visit(&mut |x| {
                if let Expr::Column(col) = x {
                    if inner.has(col) && !cols.contains(x) {
                        cols.push(x.clone());
                    }
                }
            });
            let keyed: Vec<(Expr, Expr)> =
                cols.into_iter().map(|x| (x.clone(), c.key(x))).collect();
            c.conjuncts.push(conj.replace(&mut |x: &Expr| {
                keyed
                    .iter()
                    .find(|(col, _)| col == x)
                    .map(|(_, k)| k.clone())
            }));
        }
        Ok(c)
    }

    /// The correlation of a SELECT bound over `domain`: its columns are the keys, joined
    /// to the outer columns they stand for NULL-safely.
    fn over_domain(id: usize, domain: &super::domain::Domain) -> Self {
        let keys = domain.keys();
        let conjuncts = (0..keys.len())
            .flat_map(|j| {
                domain.key_conditions(j, Expr::Column(ColumnRef::new(subquery::key_name(id, j))))
            })
            .collect();
        Correlation {
            id,
            keys,
            conjuncts,
            non_equi: false,
        }
    }

    /// The key column for inner expression `e` (added if new).
    fn key(&mut self, e: Expr) -> Expr {
        let j = match self.keys.iter().position(|k| *k == e) {
            Some(j) => j,
            None => {
                self.keys.push(e);
                self.keys.len() - 1
            }
        };
        Expr::Column(ColumnRef::new(subquery::key_name(self.id, j)))
    }

    /// What the enclosing query needs to know. `one_row_per_key`: the SELECT aggregates with
    /// no GROUP BY of its own; `items` its visible select items (before aggregation).
    fn shape(
        &self,
        one_row_per_key: bool,
        items: &[Item],
        having: Option<&Expr>,
        scalar: bool,
    ) -> Shape {
        // Over no rows an aggregate is NULL, a count 0; the item is computed from those,
        // and is NULL where HAVING does not hold for them.
        let over_no_rows = |e: &Expr| {
            e.clone().unalias().replace(&mut |x: &Expr| match x {
                Expr::Aggregate {
                    func: AggFunc::Count | AggFunc::CountStar,
                    ..
                } => Some(Expr::Literal(ScalarValue::Int64(0))),
                Expr::Aggregate { .. } => Some(Expr::Literal(ScalarValue::Null)),
                _ => None,
            })
        };
        let empty_values = match one_row_per_key && !self.keys.is_empty() {
            true => items
                .iter()
                .map(|it| {
                    let value = over_no_rows(&it.expr);
                    let value = match having {
                        Some(h) => Expr::Case {
                            operand: None,
                            branches: vec![(over_no_rows(h), value)],
                            otherwise: None,
                        },
                        None => value,
                    };
                    Some(value).filter(|v| !certainly_null(v))
                })
                .collect(),
            false => Vec::new(),
        };
        // An aggregate without GROUP BY has its one row for a key no input row has, unless
        // HAVING over no rows rules it out.
        let row_over_no_rows = (one_row_per_key && !self.keys.is_empty()).then(|| match having {
            Some(h) => Expr::Function {
                func: morsel_planner::ScalarFunc::Coalesce,
                args: vec![over_no_rows(h), Expr::Literal(ScalarValue::Boolean(false))],
            },
            None => Expr::Literal(ScalarValue::Boolean(true)),
        });
        Shape {
            conjuncts: self.conjuncts.clone(),
            keys: self.keys.len(),
            one_row_per_key,
            empty_values,
            row_over_no_rows,
            having_column: having.is_some() && one_row_per_key && !self.keys.is_empty() && !scalar,
        }
    }
}

/// Whether `e` is NULL whatever its columns hold: a NULL, or an operator or function that is
/// NULL when an operand is, over one (false where unsure).
fn certainly_null(e: &Expr) -> bool {
    match e {
        Expr::Literal(ScalarValue::Null) => true,
        Expr::Cast { expr, .. } | Expr::Negative(expr) | Expr::Not(expr) => certainly_null(expr),
        Expr::Alias { expr, .. } => certainly_null(expr),
        Expr::Binary { left, op, right } if !matches!(op, BinaryOp::And | BinaryOp::Or) => {
            certainly_null(left) || certainly_null(right)
        }
        _ => false,
    }
}

/// `l INTERSECT r` / `l EXCEPT r` (with `all`, counting duplicates), as an aggregation over
/// both inputs: rows are grouped (NULLs equal, as set operations require) and a group is kept
/// by how many of its rows came from each side. For ALL, each row is first numbered within
/// its duplicates, so the n-th copy of a row matches the n-th copy on the other side.
fn set_difference(
    l: PlanBuilder,
    r: PlanBuilder,
    intersect: bool,
    all: bool,
) -> Result<PlanBuilder, SqlError> {
    let names: Vec<String> = l.schema().fields().iter().map(|f| f.name.clone()).collect();
    if r.schema().len() != names.len() {
        return Err(SqlError::invalid(format!(
            "{} needs inputs with the same number of columns, got {} and {}",
            if intersect { "INTERSECT" } else { "EXCEPT" },
            names.len(),
            r.schema().len()
        )));
    }
    let cols: Vec<String> = (0..names.len()).map(|i| format!("__set{i}")).collect();
    let col = |n: &str| Expr::Column(ColumnRef::new(n));
    // Each side: positional names, the duplicate number (ALL), and which side it is.
    let side = |b: PlanBuilder, tag: i32| -> Result<PlanBuilder, SqlError> {
        // By position: the input may name two columns alike.
        let b = b.rename_by_position(&cols)?;
        let mut exprs: Vec<Expr> = cols.iter().map(|c| col(c)).collect();
        exprs.push(Expr::Literal(ScalarValue::Int32(tag)).alias("__side"));
        let mut b = b.project(exprs)?;
        if all {
            let number = Expr::Window(Box::new(morsel_planner::WindowExpr {
                func: morsel_planner::WindowFunc::RowNumber,
                args: vec![],
                partition_by: cols.iter().map(|c| col(c)).collect(),
                order_by: vec![],
                frame: morsel_planner::WindowFrame::default_for(false),
                ignore_nulls: false,
            }));
            b = b.window(vec![number.alias("__dup")])?;
        }
        Ok(b)
    };
    let unioned = side(l, 1)?.union(side(r, 2)?)?;
    let mut group: Vec<Expr> = cols.iter().map(|c| col(c)).collect();
    if all {
        group.push(col("__dup"));
    }
    let count_side = |tag: i32, name: &str| {
        Expr::Aggregate {
            func: AggFunc::Count,
            args: vec![Expr::Case {
                operand: None,
                branches: vec![(
                    col("__side").eq(Expr::Literal(ScalarValue::Int32(tag))),
                    Expr::Literal(ScalarValue::Int32(1)),
                )],
                otherwise: None,
            }],
            distinct: false,
        }
        .alias(name)
    };
    let zero = || Expr::Literal(ScalarValue::Int64(0));
    let keep = if intersect {
        col("__left").gt(zero()).and(col("__right").gt(zero()))
    } else {
        col("__left").gt(zero()).and(col("__right").eq(zero()))
    };
    let out = unioned
        .aggregate(
            group,
            vec![count_side(1, "__left"), count_side(2, "__right")],
        )?
        .filter(keep)?
        .project(
            cols.iter()
                .zip(&names)
                .map(|(c, n)| col(c).alias(n.clone()))
                .collect(),
        )?;
    Ok(out)
}
