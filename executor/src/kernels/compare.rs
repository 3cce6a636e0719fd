//! Comparisons of two columns of the same type, producing a BOOLEAN column that is NULL
//! wherever either input is. Values are packed 64 comparisons per word.

use std::cmp::Ordering;

use morsel_planner::BinaryOp;
use morsel_storage::{Bitmap, BooleanColumn, Column};

use super::and_validity;
use crate::error::{ExecError, ExecResult};

pub use morsel_storage::cmp_f64;

/// Compares row `i` of `a` with row `j` of `b`, two valid values of one type (ascending;
/// columns of different types compare equal).
pub fn cmp_rows(a: &Column, i: usize, b: &Column, j: usize) -> Ordering {
    match (a, b) {
        (Column::Boolean(x), Column::Boolean(y)) => x.values().get(i).cmp(&y.values().get(j)),
        (Column::Int32(x), Column::Int32(y)) | (Column::Date32(x), Column::Date32(y)) => {
            x.values()[i].cmp(&y.values()[j])
        }
        (Column::Int64(x), Column::Int64(y)) | (Column::Timestamp(x), Column::Timestamp(y)) => {
            x.values()[i].cmp(&y.values()[j])
        }
        (Column::Float64(x), Column::Float64(y)) => cmp_f64(x.values()[i], y.values()[j]),
        (Column::Utf8(x), Column::Utf8(y)) => x.value_bytes(i).cmp(y.value_bytes(j)),
        _ => Ordering::Equal,
    }
}

macro_rules! prim {
    ($op:expr, $a:expr, $b:expr, $cmp:expr) => {{
        let (x, y) = ($a.values(), $b.values());
        let op = $op;
        let values = match op {
            BinaryOp::Eq => Bitmap::from_fn(x.len(), |i| $cmp(x[i], y[i]) == Ordering::Equal),
            BinaryOp::Lt => Bitmap::from_fn(x.len(), |i| $cmp(x[i], y[i]) == Ordering::Less),
            _ => Bitmap::from_fn(x.len(), |i| op.holds($cmp(x[i], y[i]))),
        };
        BooleanColumn::new(values, and_validity($a.validity(), $b.validity()))
    }};
}

/// `l op r` where `op` is a comparison.
pub fn compare(op: BinaryOp, l: &Column, r: &Column) -> ExecResult<BooleanColumn> {
    if !op.is_comparison() {
        return Err(ExecError::Internal(format!(
            "{} is not a comparison",
            op.symbol()
        )));
    }
    Ok(match (l, r) {
        (Column::Int32(a), Column::Int32(b)) | (Column::Date32(a), Column::Date32(b)) => {
            prim!(op, a, b, |p: i32, q: i32| p.cmp(&q))
        }
        (Column::Int64(a), Column::Int64(b)) | (Column::Timestamp(a), Column::Timestamp(b)) => {
            prim!(op, a, b, |p: i64, q: i64| p.cmp(&q))
        }
        (Column::Float64(a), Column::Float64(b)) => prim!(op, a, b, cmp_f64),
        (Column::Utf8(a), Column::Utf8(b)) => {
            let values = Bitmap::from_fn(a.len(), |i| {
                op.holds(a.value_bytes(i).cmp(b.value_bytes(i)))
            });
            BooleanColumn::new(values, and_validity(a.validity(), b.validity()))
        }
        (Column::Boolean(a), Column::Boolean(b)) => {
            let (x, y) = (a.values(), b.values());
            let values = Bitmap::from_fn(a.len(), |i| op.holds(x.get(i).cmp(&y.get(i))));
            BooleanColumn::new(values, and_validity(a.validity(), b.validity()))
        }
        (a, b) => {
            return Err(ExecError::Internal(format!(
                "comparing {} with {} (the planner should have cast them)",
                a.data_type(),
                b.data_type()
            )))
        }
    })
}
