//! Execution errors.

use morsel_planner::PlanError;
use morsel_storage::csv::CsvError;
use morsel_storage::{DataType, StorageError};

pub type ExecResult<T> = Result<T, ExecError>;

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error(transparent)]
    Csv(Box<CsvError>),
    #[error(transparent)]
    Storage(StorageError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("{} overflow in {op}", .ty.sql_name())]
    Overflow { op: &'static str, ty: DataType },
    #[error("division by zero in {op}")]
    DivisionByZero { op: &'static str },
    #[error("cannot cast {value:?} to {}", .to.sql_name())]
    Cast { value: String, to: DataType },
    /// A function got an argument it cannot take (a bad regular expression, log of zero).
    #[error("{0}")]
    InvalidArgument(String),
    #[error("more than one row returned by a subquery used as an expression")]
    SubqueryRows,
    #[error("{0} is not supported yet")]
    Unsupported(String),
    #[error("query cancelled")]
    Cancelled,
    #[error("internal error (a bug in morsel): {0}")]
    Internal(String),
    /// A value error (`source`) raised by the operation `expr` (its text as the plan shows
    /// it); `at` is where that operation is in the SQL text (line, column), when known.
    #[error("{}", in_expression(source, expr, at))]
    InExpression {
        expr: String,
        /// The operation's text with its columns written `?` (`Expr::located_shape`).
        shape: String,
        at: Option<(u64, u64)>,
        source: Box<ExecError>,
    },
}

fn in_expression(source: &ExecError, expr: &str, at: &Option<(u64, u64)>) -> String {
    match at {
        Some((line, column)) => format!("{source} (line {line}, column {column})"),
        None => format!("{source} in {expr}"),
    }
}

impl ExecError {
    /// An error a value causes (a cast, an overflow, a zero divisor, a bad argument), which
    /// an operation of the query can be named for.
    pub fn is_value_error(&self) -> bool {
        matches!(
            self,
            ExecError::Overflow { .. }
                | ExecError::DivisionByZero { .. }
                | ExecError::Cast { .. }
                | ExecError::InvalidArgument(_)
        )
    }

    /// This error, raised by the operation `text` (of shape `shape`): named for it, if it is a value error not
    /// named already (the innermost operation is the one that failed).
    pub fn in_expression(self, text: &str, shape: &str) -> ExecError {
        match self.is_value_error() {
            true => ExecError::InExpression {
                expr: text.to_string(),
                shape: shape.to_string(),
                at: None,
                source: Box::new(self),
            },
            false => self,
        }
    }
}

impl From<CsvError> for ExecError {
    fn from(e: CsvError) -> Self {
        ExecError::Csv(Box::new(e))
    }
}

impl From<StorageError> for ExecError {
    fn from(e: StorageError) -> Self {
        match e {
            StorageError::Csv(c) => ExecError::Csv(c),
            StorageError::Cast { value, to } => ExecError::Cast { value, to },
            e @ StorageError::LikeEscapeAtEnd(_) => ExecError::InvalidArgument(e.to_string()),
            other => ExecError::Storage(other),
        }
    }
}
