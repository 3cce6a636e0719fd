//! morsel-sql: SQL text to logical plans.
//!
//! Parsing is sqlparser's (its DuckDB dialect, see `dialect`, so `FROM 'file.csv'`, `//` and
//! `::` work); binding is ours: names are resolved against a [`Catalog`], aggregates are
//! pulled out of the select list into an Aggregate node, and every error carries the
//! position of the expression or clause it is about, so the CLI can point at it with a caret.

#![forbid(unsafe_code)]

mod binder;
mod catalog;
mod dialect;
mod error;
mod positions;

use sqlparser::parser::Parser;

pub use binder::{
    plan_statement, plan_statement_with_positions, DropKind, ExplainFormat, Statement,
};
pub use catalog::Catalog;
pub use error::{SqlError, SqlErrorKind};
pub use positions::ExprPositions;
pub use sqlparser::ast;

/// How deeply parentheses, subqueries and derived tables may nest. The parser grows its
/// stack as it needs; binding and planning run on the statement's own large stack (see the
/// facade's `guard`), sized for this depth.
pub const MAX_NESTING: usize = 10_000;

/// Parses one or more `;`-separated statements.
pub fn parse(sql: &str) -> Result<Vec<ast::Statement>, SqlError> {
    Parser::new(&dialect::MorselDialect)
        .with_recursion_limit(MAX_NESTING)
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_statements())
        .map_err(|e| SqlError::from_parser(e, sql))
}
