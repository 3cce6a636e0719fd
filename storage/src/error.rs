//! Errors of the storage layer: batch construction, casts, and CSV input.

use crate::csv::CsvError;
use crate::datatype::DataType;

pub type StorageResult<T> = Result<T, StorageError>;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("column {index} has {actual} rows but the batch has {expected}")]
    LengthMismatch {
        index: usize,
        expected: usize,
        actual: usize,
    },
    #[error("column {index} ({name}) is {actual} but the schema says {expected}")]
    TypeMismatch {
        index: usize,
        name: String,
        expected: DataType,
        actual: DataType,
    },
    #[error("batch has {actual} columns but the schema has {expected}")]
    ColumnCount { expected: usize, actual: usize },
    #[error("cannot cast {value:?} to {}", .to.sql_name())]
    Cast { value: String, to: DataType },
    #[error("the LIKE pattern {0:?} ends with its escape character")]
    LikeEscapeAtEnd(String),
    #[error("cannot concatenate columns of different types ({0} and {1})")]
    ConcatTypes(DataType, DataType),
    #[error("text rows are not valid UTF-8 cut at character boundaries ({0})")]
    InvalidText(String),
    #[error(transparent)]
    Csv(#[from] Box<CsvError>),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

impl From<CsvError> for StorageError {
    fn from(e: CsvError) -> Self {
        StorageError::Csv(Box::new(e))
    }
}
