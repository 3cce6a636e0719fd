//! Vectorized kernels. Each works on whole columns of one type (the planner inserted the
//! casts), reads values as plain slices, and combines validity bitmaps word-at-a-time instead
//! of branching on nulls per row.

pub mod arith;
pub mod boolean;
pub mod calendar;
pub mod cast;
pub mod compare;
pub mod math;
pub mod reduce;
pub mod regex;
pub mod select;
pub mod string;
pub mod temporal;
pub mod text;

use morsel_storage::{Bitmap, Column, PrimitiveColumn};

use crate::error::{ExecError, ExecResult};

/// A BIGINT argument column (the planner cast it).
pub fn int64_arg(c: &Column) -> ExecResult<&PrimitiveColumn<i64>> {
    match c {
        Column::Int64(x) => Ok(x),
        other => Err(ExecError::Internal(format!(
            "expected BIGINT argument, got {}",
            other.data_type()
        ))),
    }
}

/// The validity of a row-wise combination of two columns: valid where both are.
pub fn and_validity(a: Option<&Bitmap>, b: Option<&Bitmap>) -> Option<Bitmap> {
    match (a, b) {
        (None, None) => None,
        (Some(x), None) | (None, Some(x)) => Some(x.clone()),
        (Some(x), Some(y)) => Some(x.and(y)),
    }
}

/// Whether the processor has AVX-512F (checked once, then cached by the standard library).
#[cfg(target_arch = "x86_64")]
fn avx512() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
}
