//! The binder: sqlparser AST to logical plans, one module per part of a query.

mod constant_functions;
mod domain;
mod expr;
mod from;
mod functions;
mod grouping_sets;
mod join_condition;
mod lateral;
mod modify;
mod nested;
mod quantified;
mod query;
mod range;
mod star;
mod statement;
mod subquery;
mod types;
mod window;

use std::cell::{Cell, RefCell};

use morsel_planner::{ColumnRef, Expr, TableSource};
use morsel_storage::csv::CsvOptions;
use sqlparser::ast;
use sqlparser::ast::Spanned;

pub use statement::{DropKind, ExplainFormat, Statement};

use crate::catalog::Catalog;
use crate::error::SqlError;
use crate::positions::ExprPositions;

/// Binds one parsed statement against `catalog`.
pub fn plan_statement(stmt: &ast::Statement, catalog: &dyn Catalog) -> Result<Statement, SqlError> {
    plan_statement_with_positions(stmt, catalog).map(|(s, _)| s)
}

/// [`plan_statement`], with where the statement's operations that can fail at run time are
/// (see [`ExprPositions`]).
pub fn plan_statement_with_positions(
    stmt: &ast::Statement,
    catalog: &dyn Catalog,
) -> Result<(Statement, ExprPositions), SqlError> {
    let binder = Binder::new(catalog);
    let bound = binder.bind_statement(stmt)?;
    Ok((bound, binder.positions.into_inner()))
}

impl Binder<'_> {
    fn bind_statement(&self, stmt: &ast::Statement) -> Result<Statement, SqlError> {
        match stmt {
            ast::Statement::Query(q) => Ok(Statement::Query(self.query(q)?.build())),
            ast::Statement::Explain {
                statement,
                analyze,
                verbose,
                format,
                describe_alias,
                options,
                ..
            } => {
                let ast::Statement::Query(q) = statement.as_ref() else {
                    return Err(SqlError::unsupported(format!(
                        "EXPLAIN of {}",
                        statement_kind(statement)
                    ))
                    .at(statement.span()));
                };
                if *describe_alias == ast::DescribeAlias::Describe {
                    return Ok(Statement::Describe(self.query(q)?.schema().clone()));
                }
                let (mut analyze, mut verbose) = (*analyze, *verbose);
                let mut format = match format {
                    None => ExplainFormat::Text,
                    Some(
                        ast::AnalyzeFormatKind::Keyword(f) | ast::AnalyzeFormatKind::Assignment(f),
                    ) => explain_format(&f.to_string())?,
                };
                // The PostgreSQL form: EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) query.
                for o in options.iter().flatten() {
                    let on = !matches!(
                        &o.arg,
                        Some(ast::Expr::Value(v)) if v.value == ast::Value::Boolean(false)
                    );
                    match o.name.value.to_ascii_lowercase().as_str() {
                        "analyze" => analyze = on,
                        "verbose" => verbose = on,
                        "format" => {
                            let arg = o.arg.as_ref().map(|a| a.to_string()).unwrap_or_default();
                            format = explain_format(&arg)?;
                        }
                        other => {
                            return Err(SqlError::unsupported(format!(
                                "the EXPLAIN option {other}"
                            )))
                        }
                    }
                }
                if format == ExplainFormat::Graphviz && analyze {
                    return Err(SqlError::unsupported("EXPLAIN ANALYZE FORMAT GRAPHVIZ"));
                }
                Ok(Statement::Explain {
                    plan: self.query(q)?.build(),
                    verbose,
                    analyze,
                    format,
                })
            }
            other => self.statement(other),
        }
    }
}

fn explain_format(name: &str) -> Result<ExplainFormat, SqlError> {
    match name.trim().to_ascii_lowercase().as_str() {
        "text" => Ok(ExplainFormat::Text),
        "json" => Ok(ExplainFormat::Json),
        "graphviz" | "dot" => Ok(ExplainFormat::Graphviz),
        other => Err(SqlError::unsupported(format!(
            "EXPLAIN FORMAT {other} (TEXT, JSON or GRAPHVIZ)"
        ))),
    }
}

/// The leading keywords of a statement, for messages.
fn statement_kind(stmt: &ast::Statement) -> String {
    let text = stmt.to_string();
    text.split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A common table expression in scope: its query, bound where it is referenced, with the
/// CTEs before it (the first `visible` in scope) visible to it.
pub(crate) struct Cte {
    name: String,
    /// `name(a, b, ...)`: the names its first columns take.
    alias: sqlparser::ast::TableAlias,
    query: Box<ast::Query>,
    visible: usize,
}

pub(crate) struct Binder<'a> {
    catalog: &'a dyn Catalog,
    /// Common table expressions in scope, innermost last.
    ctes: RefCell<Vec<Cte>>,
    /// Enclosing queries of the subquery being bound, innermost last.
    frames: RefCell<Vec<subquery::Frame>>,
    /// Subqueries bound inside the expression being bound, waiting to be joined in.
    pending: RefCell<Vec<subquery::PendingJoin>>,
    /// Numbers subqueries, for unique column names (`__sq3_v0`).
    next_subquery: Cell<usize>,
    /// Views being expanded, innermost last (a view that reads itself is an error).
    views: RefCell<Vec<String>>,
    /// Files the statement has opened, by path and options: a file named twice is one
    /// source (opened and its schema inferred once), so its scans can run once.
    files: RefCell<Vec<(String, CsvOptions, TableSource)>>,
    /// Right-hand join columns a `JOIN ... USING` keeps for qualified references (`t2.a`),
    /// each with the internal name it is kept under (which `*` leaves out), innermost last.
    using_columns: RefCell<Vec<(ColumnRef, ColumnRef)>>,
    /// Select-list aliases a HAVING clause may name, with their bound expressions.
    aliases: RefCell<Vec<(String, Expr)>>,
    /// Set while a CREATE VIEW's query is checked: views it reads stand in by their columns.
    checking_view: Cell<bool>,
    /// Where the statement's operations that can fail at run time are.
    positions: RefCell<ExprPositions>,
    /// The statement's clock (`now()`), read at its first use.
    clock: Cell<Option<i64>>,
    /// The `WINDOW name AS (...)` definitions of the select block being bound.
    windows: RefCell<Vec<ast::NamedWindowDefinition>>,
    /// The grouping set the next select block is bound for (ROLLUP, CUBE, GROUPING SETS),
    /// and the one of the block being bound.
    next_grouping: RefCell<Option<grouping_sets::GroupingBranch>>,
    /// The ORDER BY clauses of the order-sensitive aggregate calls (`string_agg(x, ','
    /// ORDER BY y)`) of the select block being bound.
    aggregate_orders: RefCell<Vec<Vec<ast::OrderByExpr>>>,
    grouping: RefCell<Option<grouping_sets::GroupingBranch>>,
}

impl<'a> Binder<'a> {
    fn new(catalog: &'a dyn Catalog) -> Self {
        Self {
            catalog,
            ctes: RefCell::default(),
            frames: RefCell::default(),
            pending: RefCell::default(),
            next_subquery: Cell::new(0),
            views: RefCell::default(),
            using_columns: RefCell::default(),
            aliases: RefCell::default(),
            checking_view: Cell::new(false),
            files: RefCell::default(),
            positions: RefCell::default(),
            clock: Cell::new(None),
            windows: RefCell::default(),
            next_grouping: RefCell::default(),
            aggregate_orders: RefCell::default(),
            grouping: RefCell::default(),
        }
    }

    /// The CSV file at `path` read with `options`, opened once per statement.
    fn csv_file(&self, path: &str, options: CsvOptions) -> Result<TableSource, SqlError> {
        let opened = self
            .files
            .borrow()
            .iter()
            .find_map(|(p, o, source)| (p == path && *o == options).then(|| source.clone()));
        if let Some(source) = opened {
            return Ok(source);
        }
        let source = self.catalog.csv_file(path, options.clone())?;
        self.files
            .borrow_mut()
            .push((path.to_string(), options, source.clone()));
        Ok(source)
    }
}
