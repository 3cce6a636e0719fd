//! Comparisons of two columns of the same type, producing a BOOLEAN column that is NULL
//! wherever either input is. Values are packed 64 comparisons per word.

use std::cmp::Ordering;

use morsel_planner::BinaryOp;
use morsel_storage::{Bitmap, BooleanColumn, Column, ScalarValue};

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

/// `l op value` for one non-NULL value of `l`'s type, without a column of copies of it (one
/// loop per operator); `None` for the types this does not cover (the caller broadcasts).
pub fn compare_scalar(op: BinaryOp, l: &Column, value: &ScalarValue) -> Option<BooleanColumn> {
    macro_rules! against {
        ($a:expr, $y:expr, $cmp:expr) => {{
            let (x, y) = ($a.values(), $y);
            let n = x.len();
            let values = match op {
                BinaryOp::Eq => Bitmap::from_fn(n, |i| $cmp(x[i], y) == Ordering::Equal),
                BinaryOp::NotEq => Bitmap::from_fn(n, |i| $cmp(x[i], y) != Ordering::Equal),
                BinaryOp::Lt => Bitmap::from_fn(n, |i| $cmp(x[i], y) == Ordering::Less),
                BinaryOp::LtEq => Bitmap::from_fn(n, |i| $cmp(x[i], y) != Ordering::Greater),
                BinaryOp::Gt => Bitmap::from_fn(n, |i| $cmp(x[i], y) == Ordering::Greater),
                BinaryOp::GtEq => Bitmap::from_fn(n, |i| $cmp(x[i], y) != Ordering::Less),
                _ => return None,
            };
            Some(BooleanColumn::new(values, $a.validity().cloned()))
        }};
    }
    match (l, value) {
        (Column::Int32(a) | Column::Date32(a), ScalarValue::Int32(y) | ScalarValue::Date32(y)) => {
            against!(a, *y, |p: i32, q: i32| p.cmp(&q))
        }
        (
            Column::Int64(a) | Column::Timestamp(a),
            ScalarValue::Int64(y) | ScalarValue::Timestamp(y),
        ) => against!(a, *y, |p: i64, q: i64| p.cmp(&q)),
        (Column::Float64(a), ScalarValue::Float64(y)) => against!(a, *y, cmp_f64),
        _ => None,
    }
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

#[cfg(test)]
mod tests {
    use morsel_planner::BinaryOp;
    use morsel_storage::{Column, PrimitiveColumn, ScalarValue};

    use super::{compare, compare_scalar};
    use crate::kernels::cast::broadcast;

    /// Against a constant, the scalar path gives what comparing with a column of copies
    /// gives, NULLs, NaN and -0.0 included, for every operator and both integer widths.
    #[test]
    fn comparing_with_a_constant_equals_comparing_with_copies() {
        let floats = [
            Some(1.5),
            None,
            Some(f64::NAN),
            Some(-0.0),
            Some(0.0),
            Some(-2.0),
        ];
        let ints = [Some(3), None, Some(-1), Some(0), Some(7), Some(3)];
        let columns = [
            Column::Float64(PrimitiveColumn::from_options(floats)),
            Column::Int64(PrimitiveColumn::from_options(
                ints.map(|v| v.map(i64::from)),
            )),
            Column::Date32(PrimitiveColumn::from_options(ints)),
        ];
        let constants = [
            vec![
                ScalarValue::Float64(0.0),
                ScalarValue::Float64(f64::NAN),
                ScalarValue::Float64(1.5),
            ],
            vec![ScalarValue::Int64(3), ScalarValue::Int64(-5)],
            vec![ScalarValue::Date32(0), ScalarValue::Date32(7)],
        ];
        for (col, values) in columns.iter().zip(&constants) {
            for value in values {
                let copies = broadcast(value, col.data_type(), col.len()).unwrap();
                for op in BinaryOp::COMPARISONS {
                    let got = compare_scalar(op, col, value).unwrap();
                    let want = compare(op, col, &copies).unwrap();
                    let show = |c: &morsel_storage::BooleanColumn| {
                        (0..c.len()).map(|i| c.get(i)).collect::<Vec<_>>()
                    };
                    assert_eq!(show(&got), show(&want), "{op:?} {value:?}");
                }
            }
        }
    }
}
