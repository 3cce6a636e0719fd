//! Date functions: EXTRACT, DATE_TRUNC, DATE_DIFF, and adding days or months to dates.

use morsel_storage::temporal::{add_months, DatePart};
use morsel_storage::{Buffer, Column, PrimitiveColumn};

use crate::error::{ExecError, ExecResult};

pub fn extract(part: DatePart, c: &Column) -> ExecResult<Column> {
    let values: Vec<i64> = match c {
        Column::Date32(d) => d.values().iter().map(|&x| part.of_days(x)).collect(),
        Column::Timestamp(t) => t.values().iter().map(|&x| part.of_micros(x)).collect(),
        other => {
            return Err(ExecError::Internal(format!(
                "extract from {}",
                other.data_type()
            )))
        }
    };
    Ok(Column::Int64(PrimitiveColumn::new(
        Buffer::from_vec(values),
        c.validity().cloned(),
    )))
}

/// `date + n days` or `date + n months` (row by row; NULL if either is NULL).
pub fn add(
    days: &PrimitiveColumn<i32>,
    n: &PrimitiveColumn<i64>,
    months: bool,
) -> ExecResult<Column> {
    let mut b = morsel_storage::PrimitiveBuilder::<i32>::with_capacity(days.len());
    for i in 0..days.len() {
        match (days.get(i), n.get(i)) {
            (Some(d), Some(k)) => {
                let k = i32::try_from(k).ok();
                let out = k.and_then(|k| {
                    if months {
                        add_months(d, k)
                    } else {
                        d.checked_add(k)
                    }
                });
                b.push(out.ok_or(ExecError::Overflow {
                    op: "date arithmetic",
                    ty: morsel_storage::DataType::Date32,
                })?);
            }
            _ => b.push_null(),
        }
    }
    Ok(Column::Date32(b.finish()))
}

pub(crate) fn timestamps(c: &Column) -> ExecResult<&PrimitiveColumn<i64>> {
    match c {
        Column::Timestamp(t) => Ok(t),
        other => Err(ExecError::Internal(format!(
            "expected TIMESTAMP, got {}",
            other.data_type()
        ))),
    }
}

/// `date_trunc(part, ts)`.
pub fn trunc(part: DatePart, c: &Column) -> ExecResult<Column> {
    let t = timestamps(c)?;
    let values = t.values().iter().map(|&x| part.truncate(x)).collect();
    Ok(Column::Timestamp(PrimitiveColumn::new(
        Buffer::from_vec(values),
        t.validity().cloned(),
    )))
}

/// `date_diff(part, a, b)`.
pub fn diff(part: DatePart, a: &Column, b: &Column) -> ExecResult<Column> {
    let (x, y) = (timestamps(a)?, timestamps(b)?);
    let values = (0..x.len())
        .map(|i| part.diff(x.values()[i], y.values()[i]))
        .collect();
    Ok(Column::Int64(PrimitiveColumn::new(
        Buffer::from_vec(values),
        crate::kernels::and_validity(x.validity(), y.validity()),
    )))
}
