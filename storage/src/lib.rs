//! morsel-storage: the columnar data model and the CSV reader/writer.
//!
//! Key decision: every column is a *window* (offset, length) onto reference-counted buffers.
//! Slicing a batch into morsels, projecting columns and handing a column to another operator
//! never copy data; only kernels that compute something new allocate. The layout follows Arrow
//! (values buffer, optional validity bitmap, bit-packed booleans, `i64` string offsets into one
//! UTF-8 byte buffer) so batches can later be exported zero-copy.
//!
//! Kernels read a column as a plain `&[T]` plus an optional validity [`Bitmap`]; there is one
//! generic [`PrimitiveColumn`] over the [`NativeType`] trait instead of one copy per type.

#![forbid(unsafe_op_in_unsafe_fn)]

pub mod batch;
pub mod bitmap;
pub mod buffer;
pub mod cache_hint;
pub mod column;
mod compress;
pub mod csv;
pub mod datatype;
pub mod error;
pub mod like;
pub mod parse;
pub mod scalar;
pub mod stats;
pub mod temporal;
/// The fixed-seed generator of the workspace's randomized unit tests (not for data).
#[doc(hidden)]
pub mod test_rng;

pub use batch::Batch;
pub use bitmap::{Bitmap, BitmapBuilder};
pub use buffer::Buffer;
pub use column::{
    BooleanColumn, Column, ColumnBuilder, NativeType, PrimitiveBuilder, PrimitiveColumn,
    Utf8Builder, Utf8Column,
};
pub use datatype::{DataType, Field, Schema, SchemaRef};
pub use error::{StorageError, StorageResult};
pub use scalar::{cmp_f64, ScalarValue};
