//! What the binder needs from its host: named tables and access to files.

use morsel_planner::TableSource;
use morsel_storage::csv::CsvOptions;

use crate::ast;
use crate::error::SqlError;

pub trait Catalog {
    /// A registered table or view by name (case-insensitive), if any.
    fn table(&self, name: &str) -> Option<TableSource>;
    /// A view's query by name (case-insensitive), if any; bound where it is used.
    fn view(&self, name: &str) -> Option<ast::Query>;
    /// A view's columns as bound when it was created, if known: what a new view over it is
    /// checked against.
    fn view_schema(&self, _name: &str) -> Option<morsel_planner::PlanSchema> {
        None
    }
    /// Names of all registered tables and views, for "did you mean" suggestions.
    fn table_names(&self) -> Vec<String>;
    /// Opens a CSV file named in a query. The one place that decides which files a query may
    /// read, so a host can restrict it.
    fn csv_file(&self, path: &str, options: CsvOptions) -> Result<TableSource, SqlError>;
    /// Runs query `sql` and returns its EXPLAIN ANALYZE profile as a table, one row per
    /// pipeline stage (`FROM explain_analyze('SELECT ...')`). Hosts that cannot run queries
    /// keep this default, an error.
    /// A setting's current value (`current_setting('threads')`), if the host has one of
    /// that name (case-insensitive).
    fn setting(&self, name: &str) -> Option<morsel_storage::ScalarValue> {
        let _ = name;
        None
    }
    fn query_profile(&self, sql: &str) -> Result<TableSource, SqlError> {
        let _ = sql;
        Err(SqlError::unsupported(
            "explain_analyze() in a catalog that cannot run queries".to_string(),
        ))
    }
}
