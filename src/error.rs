//! The facade's error: whichever layer failed, with SQL errors kept with their query text.

use morsel_executor::ExecError;
use morsel_planner::PlanError;
use morsel_sql::SqlError;
use morsel_storage::csv::CsvError;
use morsel_storage::StorageError;

pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Sql(SqlError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Exec(#[from] ExecError),
    #[error(transparent)]
    Csv(Box<CsvError>),
    #[error(transparent)]
    Storage(StorageError),
    #[error("{0}")]
    Invalid(String),
    /// A panic inside the engine, contained (`guard::contain`): a bug in morsel.
    #[error("internal error (a bug in morsel) in the query `{query}`: {message}")]
    Internal { query: String, message: String },
}

impl From<SqlError> for Error {
    fn from(e: SqlError) -> Self {
        match e.kind {
            morsel_sql::SqlErrorKind::Csv(c) => Error::Csv(c),
            _ => Error::Sql(e),
        }
    }
}

impl From<CsvError> for Error {
    fn from(e: CsvError) -> Self {
        Error::Csv(Box::new(e))
    }
}

impl From<StorageError> for Error {
    fn from(e: StorageError) -> Self {
        match e {
            StorageError::Csv(c) => Error::Csv(c),
            e => Error::Storage(e),
        }
    }
}

impl Error {
    /// This error with the position in the SQL text of the operation a run-time error names,
    /// where `positions` has it (see `morsel_sql::ExprPositions`).
    pub(crate) fn located(self, positions: &morsel_sql::ExprPositions) -> Error {
        match self {
            Error::Exec(ExecError::InExpression {
                expr,
                shape,
                at: None,
                source,
            }) => Error::Exec(ExecError::InExpression {
                at: positions.find(&expr, &shape),
                expr,
                shape,
                source,
            }),
            other => other,
        }
    }
}
