//! [`ColumnBuilder`]: a type-erased builder for any [`Column`] variant.

use super::{BooleanBuilder, Column, PrimitiveBuilder, Utf8Builder};
use crate::datatype::DataType;
use crate::error::{StorageError, StorageResult};
use crate::scalar::ScalarValue;

#[derive(Clone, Debug)]
pub enum ColumnBuilder {
    Boolean(BooleanBuilder),
    Int32(PrimitiveBuilder<i32>),
    Int64(PrimitiveBuilder<i64>),
    Float64(PrimitiveBuilder<f64>),
    Utf8(Utf8Builder),
    Date32(PrimitiveBuilder<i32>),
    Timestamp(PrimitiveBuilder<i64>),
}

impl ColumnBuilder {
    /// A builder for `ty`; the untyped `Null` type builds a `Utf8` column of nulls.
    pub fn with_capacity(ty: DataType, n: usize) -> Self {
        match ty {
            DataType::Boolean => Self::Boolean(BooleanBuilder::with_capacity(n)),
            DataType::Int32 => Self::Int32(PrimitiveBuilder::with_capacity(n)),
            DataType::Int64 => Self::Int64(PrimitiveBuilder::with_capacity(n)),
            DataType::Float64 => Self::Float64(PrimitiveBuilder::with_capacity(n)),
            DataType::Utf8 | DataType::Null => Self::Utf8(Utf8Builder::with_capacity(n, n * 8)),
            DataType::Date32 => Self::Date32(PrimitiveBuilder::with_capacity(n)),
            DataType::Timestamp => Self::Timestamp(PrimitiveBuilder::with_capacity(n)),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Self::Boolean(b) => b.len(),
            Self::Int32(b) | Self::Date32(b) => b.len(),
            Self::Int64(b) | Self::Timestamp(b) => b.len(),
            Self::Float64(b) => b.len(),
            Self::Utf8(b) => b.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn push_null(&mut self) {
        match self {
            Self::Boolean(b) => b.push_null(),
            Self::Int32(b) | Self::Date32(b) => b.push_null(),
            Self::Int64(b) | Self::Timestamp(b) => b.push_null(),
            Self::Float64(b) => b.push_null(),
            Self::Utf8(b) => b.push_null(),
        }
    }

    /// Appends a scalar of exactly this builder's type (or NULL).
    pub fn push_scalar(&mut self, v: &ScalarValue) -> StorageResult<()> {
        match (self, v) {
            (b, ScalarValue::Null) => b.push_null(),
            (Self::Boolean(b), ScalarValue::Boolean(x)) => b.push(*x),
            (Self::Int32(b), ScalarValue::Int32(x)) => b.push(*x),
            (Self::Date32(b), ScalarValue::Date32(x)) => b.push(*x),
            (Self::Int64(b), ScalarValue::Int64(x)) => b.push(*x),
            (Self::Timestamp(b), ScalarValue::Timestamp(x)) => b.push(*x),
            (Self::Float64(b), ScalarValue::Float64(x)) => b.push(*x),
            (Self::Utf8(b), ScalarValue::Utf8(x)) => b.push(x),
            (b, v) => {
                return Err(StorageError::Cast {
                    value: v.to_string(),
                    to: b.data_type(),
                });
            }
        }
        Ok(())
    }

    pub fn truncate(&mut self, len: usize) {
        match self {
            Self::Boolean(b) => b.truncate(len),
            Self::Int32(b) | Self::Date32(b) => b.truncate(len),
            Self::Int64(b) | Self::Timestamp(b) => b.truncate(len),
            Self::Float64(b) => b.truncate(len),
            Self::Utf8(b) => b.truncate(len),
        }
    }

    pub fn data_type(&self) -> DataType {
        match self {
            Self::Boolean(_) => DataType::Boolean,
            Self::Int32(_) => DataType::Int32,
            Self::Int64(_) => DataType::Int64,
            Self::Float64(_) => DataType::Float64,
            Self::Utf8(_) => DataType::Utf8,
            Self::Date32(_) => DataType::Date32,
            Self::Timestamp(_) => DataType::Timestamp,
        }
    }

    pub fn finish(self) -> Column {
        match self {
            Self::Boolean(b) => Column::Boolean(b.finish()),
            Self::Int32(b) => Column::Int32(b.finish()),
            Self::Int64(b) => Column::Int64(b.finish()),
            Self::Float64(b) => Column::Float64(b.finish()),
            Self::Utf8(b) => Column::Utf8(b.finish()),
            Self::Date32(b) => Column::Date32(b.finish()),
            Self::Timestamp(b) => Column::Timestamp(b.finish()),
        }
    }
}
