//! Planning errors: unknown or ambiguous columns, type mismatches, invalid plans.

use morsel_storage::{DataType, StorageError};

pub type PlanResult<T> = Result<T, PlanError>;

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("column {name} not found{}; {}", suggest(.candidates), available_columns(.available))]
    ColumnNotFound {
        name: String,
        candidates: Vec<String>,
        available: Vec<String>,
    },
    #[error("column reference {name} is ambiguous; it could be {}", .options.join(" or "))]
    AmbiguousColumn { name: String, options: Vec<String> },
    #[error("type mismatch: {0}")]
    TypeMismatch(String),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

fn available_columns(columns: &[String]) -> String {
    if columns.is_empty() {
        "there are no columns here (is a FROM clause missing?)".into()
    } else {
        format!("available columns: {}", columns.join(", "))
    }
}

fn suggest(candidates: &[String]) -> String {
    if candidates.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", candidates.join(" or "))
    }
}

impl PlanError {
    pub fn mismatch(msg: impl Into<String>) -> Self {
        PlanError::TypeMismatch(msg.into())
    }

    pub fn cannot_apply(op: &str, l: DataType, r: DataType) -> Self {
        PlanError::TypeMismatch(format!(
            "cannot apply {op} to {} and {}",
            l.sql_name(),
            r.sql_name()
        ))
    }
}
