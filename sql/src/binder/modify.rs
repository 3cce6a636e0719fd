//! `UPDATE` and `DELETE` on in-memory tables. Each is bound as queries over the table: the
//! table's new contents (every row, with `SET` applied where `WHERE` holds, or with the
//! rows `WHERE` holds for left out) and the rows the statement changes (which the result
//! counts, as DuckDB's does). The session swaps the contents in whole, so a query already
//! running keeps the rows it started with. Expressions are the user's own syntax trees,
//! spans included, so an error still points into the statement; `WHERE` and `SET` may
//! hold subqueries, correlated ones too, as any query may.

use sqlparser::ast::helpers::attached_token::AttachedToken;
use sqlparser::ast::{self, Spanned};

use super::statement::{conform, object_name, Statement};
use super::Binder;
use crate::error::SqlError;

impl Binder<'_> {
    pub(crate) fn update(&self, u: &ast::Update) -> Result<Statement, SqlError> {
        if u.from.is_some() || u.returning.is_some() || u.or.is_some() || u.limit.is_some() {
            return Err(
                SqlError::unsupported("UPDATE with FROM, RETURNING, OR or LIMIT").at(u.span()),
            );
        }
        if !u.table.joins.is_empty() {
            return Err(SqlError::unsupported("UPDATE of a join").at(u.table.span()));
        }
        let name = relation_name(&u.table.relation)?;
        let schema = self.table_schema(&name)?;
        // Each column's new value, by the column's position.
        let mut assigned: Vec<Option<&ast::Expr>> = vec![None; schema.fields.len()];
        for a in &u.assignments {
            let ast::AssignmentTarget::ColumnName(target) = &a.target else {
                return Err(
                    SqlError::unsupported("assigning a tuple of columns").at(a.target.span())
                );
            };
            // `SET t.c = ...` names the column with the table (or its alias) in front.
            let column = target
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map(|i| i.value.clone())
                .unwrap_or_default();
            let Some(i) = schema
                .fields
                .iter()
                .position(|f| f.name.eq_ignore_ascii_case(&column))
            else {
                return Err(
                    SqlError::invalid(format!("table {name} has no column {column}"))
                        .at(target.span()),
                );
            };
            if assigned[i].is_some() {
                return Err(
                    SqlError::invalid(format!("the column {column} is assigned twice"))
                        .at(target.span()),
                );
            }
            assigned[i] = Some(&a.value);
        }
        let projection = schema
            .fields
            .iter()
            .zip(&assigned)
            .map(|(f, value)| {
                let old = ast::Expr::Identifier(ast::Ident::with_quote('"', f.name.clone()));
                let new = match (value, &u.selection) {
                    (None, _) => old,
                    (Some(v), None) => (*v).clone(),
                    // Where WHERE does not hold (is false or NULL) the row keeps its value.
                    (Some(v), Some(w)) => ast::Expr::Case {
                        case_token: AttachedToken::empty(),
                        end_token: AttachedToken::empty(),
                        operand: None,
                        conditions: vec![ast::CaseWhen {
                            condition: ast::Expr::Nested(Box::new(w.clone())),
                            result: (*v).clone(),
                        }],
                        else_result: Some(Box::new(old)),
                    },
                };
                ast::SelectItem::ExprWithAlias {
                    expr: new,
                    alias: ast::Ident::with_quote('"', f.name.clone()),
                }
            })
            .collect();
        let rows = self.select(&select(projection, &u.table, None), &[])?;
        let rows = conform(rows, &schema, None)?;
        let changed = self.changed_rows(&u.table, u.selection.as_ref())?;
        Ok(Statement::Rewrite {
            table: name,
            rows,
            changed,
        })
    }

    pub(crate) fn delete(&self, d: &ast::Delete) -> Result<Statement, SqlError> {
        if d.using.is_some()
            || d.returning.is_some()
            || !d.order_by.is_empty()
            || d.limit.is_some()
            || !d.tables.is_empty()
        {
            return Err(SqlError::unsupported(
                "DELETE with USING, RETURNING, ORDER BY, LIMIT or several tables",
            )
            .at(d.span()));
        }
        let from = match &d.from {
            ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
        };
        let [table] = from.as_slice() else {
            return Err(SqlError::unsupported("DELETE from several tables").at(d.span()));
        };
        if !table.joins.is_empty() {
            return Err(SqlError::unsupported("DELETE from a join").at(table.span()));
        }
        let name = relation_name(&table.relation)?;
        let schema = self.table_schema(&name)?;
        // The rows kept: those where WHERE does not hold (false or NULL).
        let keep = d
            .selection
            .as_ref()
            .map(|w| ast::Expr::IsNotTrue(Box::new(ast::Expr::Nested(Box::new(w.clone())))))
            .unwrap_or_else(|| ast::Expr::Value(ast::Value::Boolean(false).into()));
        let star = vec![ast::SelectItem::Wildcard(Default::default())];
        let rows = self.select(&select(star, table, Some(keep)), &[])?;
        let rows = conform(rows, &schema, None)?;
        let changed = self.changed_rows(table, d.selection.as_ref())?;
        Ok(Statement::Rewrite {
            table: name,
            rows,
            changed,
        })
    }

    /// The rows of `table` where `selection` holds (all of them without one), as one
    /// constant column: the session counts them.
    fn changed_rows(
        &self,
        table: &ast::TableWithJoins,
        selection: Option<&ast::Expr>,
    ) -> Result<morsel_planner::LogicalPlan, SqlError> {
        let one = vec![ast::SelectItem::UnnamedExpr(ast::Expr::value(
            ast::Value::Boolean(true),
        ))];
        Ok(self
            .select(&select(one, table, selection.cloned()), &[])?
            .build())
    }
}

/// The table an UPDATE or DELETE names.
fn relation_name(t: &ast::TableFactor) -> Result<String, SqlError> {
    match t {
        ast::TableFactor::Table {
            name, args: None, ..
        } => object_name(name),
        other => {
            Err(SqlError::unsupported("UPDATE or DELETE of anything but a table").at(other.span()))
        }
    }
}

/// `SELECT projection FROM table [WHERE selection]`.
fn select(
    projection: Vec<ast::SelectItem>,
    table: &ast::TableWithJoins,
    selection: Option<ast::Expr>,
) -> ast::Select {
    ast::Select {
        select_token: AttachedToken::empty(),
        optimizer_hints: Vec::new(),
        distinct: None,
        select_modifiers: None,
        top: None,
        top_before_distinct: false,
        projection,
        exclude: None,
        into: None,
        from: vec![table.clone()],
        lateral_views: Vec::new(),
        prewhere: None,
        selection,
        group_by: ast::GroupByExpr::Expressions(Vec::new(), Vec::new()),
        cluster_by: Vec::new(),
        distribute_by: Vec::new(),
        sort_by: Vec::new(),
        having: None,
        named_window: Vec::new(),
        window_before_qualify: false,
        qualify: None,
        value_table_mode: None,
        connect_by: Vec::new(),
        flavor: ast::SelectFlavor::Standard,
    }
}
