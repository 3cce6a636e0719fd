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
    #[error("{ty} overflow in {op}")]
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
