//! SQL type names to morsel types.

use morsel_storage::DataType;
use sqlparser::ast;

use crate::error::SqlError;

/// Maps a SQL type name (INTEGER, BIGINT, DOUBLE, VARCHAR, DATE, ...) to a column type.
/// DECIMAL/NUMERIC are stored as DOUBLE for now (documented in docs/architecture.md).
pub fn sql_type(t: &ast::DataType) -> Result<DataType, SqlError> {
    let text = t.to_string().to_ascii_uppercase();
    let base = text.split(['(', ' ']).next().unwrap_or("");
    Ok(match base {
        "INT" | "INTEGER" | "INT4" | "SIGNED" | "SMALLINT" | "INT2" | "TINYINT" | "INT1" => {
            DataType::Int32
        }
        "BIGINT" | "INT8" | "LONG" => DataType::Int64,
        "DOUBLE" | "FLOAT8" | "FLOAT" | "REAL" | "FLOAT4" | "DECIMAL" | "NUMERIC" => {
            DataType::Float64
        }
        "VARCHAR" | "TEXT" | "STRING" | "CHAR" | "BPCHAR" | "CHARACTER" => DataType::Utf8,
        "DATE" => DataType::Date32,
        "TIMESTAMP" | "DATETIME" => DataType::Timestamp,
        "BOOLEAN" | "BOOL" => DataType::Boolean,
        _ => return Err(SqlError::unsupported(format!("the type {text}"))),
    })
}
