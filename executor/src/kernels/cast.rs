//! CAST between column types. A value that does not fit its target is an error naming the
//! value, never a silent NULL or wraparound.

use morsel_storage::csv::format_float;
use morsel_storage::scalar::{float_to_int, parse_text};
use morsel_storage::temporal::MICROS_PER_DAY;
use morsel_storage::{
    Bitmap, BooleanColumn, Buffer, Column, ColumnBuilder, DataType, NativeType, PrimitiveColumn,
    ScalarValue, Utf8Builder,
};

use crate::error::{ExecError, ExecResult};

fn map<A: NativeType, B: NativeType>(
    c: &PrimitiveColumn<A>,
    f: impl Fn(A) -> B,
) -> PrimitiveColumn<B> {
    PrimitiveColumn::new(
        Buffer::from_vec(c.values().iter().map(|v| f(*v)).collect()),
        c.validity().cloned(),
    )
}

/// Like `map`, but `f` may fail on a valid row (the error names the value).
fn try_map<A: NativeType, B: NativeType>(
    c: &PrimitiveColumn<A>,
    to: DataType,
    f: impl Fn(A) -> Option<B>,
) -> ExecResult<PrimitiveColumn<B>> {
    let mut out = Vec::with_capacity(c.len());
    for (i, v) in c.values().iter().enumerate() {
        match f(*v) {
            Some(x) => out.push(x),
            None if !c.is_valid(i) => out.push(B::default()),
            None => {
                return Err(ExecError::Cast {
                    value: format!("{v:?}"),
                    to,
                })
            }
        }
    }
    Ok(PrimitiveColumn::new(
        Buffer::from_vec(out),
        c.validity().cloned(),
    ))
}

/// SQL text of a float: shortest round trip, with `.0` kept for integral values (`1.0`).
fn float_text(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e16 {
        format!("{v:.1}")
    } else {
        format_float(v)
    }
}

fn to_text(c: &Column) -> Column {
    let mut b = Utf8Builder::with_capacity(c.len(), c.len() * 8);
    for i in 0..c.len() {
        match c.scalar_at(i) {
            ScalarValue::Null => b.push_null(),
            ScalarValue::Float64(v) => b.push(&float_text(v)),
            v => b.push(&v.to_string()),
        }
    }
    Column::Utf8(b.finish())
}

fn from_text(c: &morsel_storage::Utf8Column, to: DataType) -> ExecResult<Column> {
    let mut b = ColumnBuilder::with_capacity(to, c.len());
    for i in 0..c.len() {
        match c.get(i) {
            None => b.push_null(),
            Some(s) => {
                let v = parse_text(s.trim(), to).ok_or_else(|| ExecError::Cast {
                    value: s.to_string(),
                    to,
                })?;
                b.push_scalar(&v)?;
            }
        }
    }
    Ok(b.finish())
}

/// Casts `c` to `to`.
pub fn cast(c: &Column, to: DataType) -> ExecResult<Column> {
    use Column as C;
    if c.data_type() == to {
        return Ok(c.clone());
    }
    if c.null_count() == c.len() {
        // Only NULLs: any type converts (an untyped NULL column, or all values missing).
        return Ok(Column::new_null(to, c.len()));
    }
    Ok(match (c, to) {
        (_, DataType::Utf8) => to_text(c),
        (C::Utf8(s), _) => from_text(s, to)?,
        (C::Int32(x), DataType::Int64) => C::Int64(map(x, |v| v as i64)),
        (C::Int32(x), DataType::Float64) => C::Float64(map(x, |v| v as f64)),
        (C::Int64(x), DataType::Int32) => C::Int32(try_map(x, to, |v| i32::try_from(v).ok())?),
        (C::Int64(x), DataType::Float64) => C::Float64(map(x, |v| v as f64)),
        (C::Float64(x), DataType::Int64) => C::Int64(try_map(x, to, float_to_int)?),
        (C::Float64(x), DataType::Int32) => C::Int32(try_map(x, to, |v| {
            float_to_int(v).and_then(|i| i32::try_from(i).ok())
        })?),
        (C::Date32(x), DataType::Timestamp) => C::Timestamp(map(x, |d| d as i64 * MICROS_PER_DAY)),
        (C::Date32(x), DataType::Int64) => C::Int64(map(x, |d| d as i64)),
        (C::Timestamp(x), DataType::Date32) => {
            C::Date32(map(x, |t| t.div_euclid(MICROS_PER_DAY) as i32))
        }
        (C::Boolean(b), DataType::Int32 | DataType::Int64 | DataType::Float64) => {
            let mut out = ColumnBuilder::with_capacity(to, b.len());
            for i in 0..b.len() {
                let v = b
                    .get(i)
                    .map(|v| ScalarValue::Int64(v as i64))
                    .unwrap_or(ScalarValue::Null);
                out.push_scalar(&v.cast_to(to)?)?;
            }
            out.finish()
        }
        (C::Int32(_) | C::Int64(_) | C::Float64(_), DataType::Boolean) => {
            let values = Bitmap::from_fn(c.len(), |i| match c.scalar_at(i) {
                ScalarValue::Int32(v) => v != 0,
                ScalarValue::Int64(v) => v != 0,
                ScalarValue::Float64(v) => v != 0.0,
                _ => false,
            });
            C::Boolean(BooleanColumn::new(values, c.validity().cloned()))
        }
        (from, to) => {
            return Err(ExecError::Unsupported(format!(
                "CAST from {} to {}",
                from.data_type().sql_name(),
                to.sql_name()
            )))
        }
    })
}

/// `TRY_CAST`: like [`cast`], but a value that cannot be converted becomes NULL.
pub fn try_cast(c: &Column, to: DataType) -> ExecResult<Column> {
    match cast(c, to) {
        Ok(out) => Ok(out),
        Err(ExecError::Unsupported(msg)) => Err(ExecError::Unsupported(msg)),
        Err(_) => {
            // Some value failed: convert row by row, keeping what converts.
            let mut out = ColumnBuilder::with_capacity(to, c.len());
            for i in 0..c.len() {
                let v = c.scalar_at(i).cast_to(to).unwrap_or(ScalarValue::Null);
                out.push_scalar(&v)?;
            }
            Ok(out.finish())
        }
    }
}

/// A column of `len` rows of `value` (of type `ty`, or NULL).
pub fn broadcast(value: &ScalarValue, ty: DataType, len: usize) -> ExecResult<Column> {
    let v = if value.is_null() || value.data_type() == ty {
        value.clone()
    } else {
        value.cast_to(ty)?
    };
    Ok(match (&v, ty) {
        (ScalarValue::Float64(x), _) => Column::Float64(PrimitiveColumn::from_vec(vec![*x; len])),
        (ScalarValue::Int64(x), _) => Column::Int64(PrimitiveColumn::from_vec(vec![*x; len])),
        (ScalarValue::Int32(x), _) => Column::Int32(PrimitiveColumn::from_vec(vec![*x; len])),
        (ScalarValue::Date32(x), _) => Column::Date32(PrimitiveColumn::from_vec(vec![*x; len])),
        (ScalarValue::Boolean(x), _) => {
            Column::Boolean(BooleanColumn::new(Bitmap::new_filled(len, *x), None))
        }
        _ => Column::from_scalar(&v, ty, len)?,
    })
}
