//! Numeric functions: ABS, ROUND, FLOOR, CEIL, SQRT, LN, LOG10, EXP, POWER, SIGN, TRUNC,
//! GCD, LCM, ATAN2, the DOUBLE functions of [`MathFunc`] and the NaN / infinity tests.

use morsel_planner::{MathFunc, ScalarFunc};
use morsel_storage::{BooleanColumn, Buffer, Column, DataType, NativeType, PrimitiveColumn};

use crate::error::{ExecError, ExecResult};

fn map_f64(c: &PrimitiveColumn<f64>, f: impl Fn(f64) -> f64) -> Column {
    Column::Float64(PrimitiveColumn::new(
        Buffer::from_vec(c.values().iter().map(|v| f(*v)).collect()),
        c.validity().cloned(),
    ))
}

/// Rounds half away from zero to `digits` decimal places (negative digits round left of the
/// point), by the double's exact decimal value, as DuckDB does: `round(23.65, 1)` is 23.6,
/// because the double nearest 23.65 is 23.649999...
pub fn round_f64(v: f64, digits: i64) -> f64 {
    if !v.is_finite() {
        return v;
    }
    let digits = digits.clamp(-308, 308) as i32;
    let scale = 10f64.powi(digits.abs());
    if digits < 0 {
        return (v / scale).round() * scale;
    }
    let t = v.abs() * scale;
    if !t.is_finite() || t >= 9.0e15 {
        // Already whole at this precision.
        return v;
    }
    let frac = t - t.floor();
    let n = if (frac - 0.5).abs() > 1e-6 {
        t.round()
    } else {
        // Near a tie the product above is inexact: decide on the exact decimal digits.
        let exact = format!("{:.120}", v.abs());
        let point = exact.find('.').unwrap_or(exact.len());
        let next = exact.as_bytes().get(point + 1 + digits as usize).copied();
        let kept: String = exact[..point]
            .chars()
            .chain(exact[point + 1..].chars().take(digits as usize))
            .collect();
        let base: f64 = kept.parse().unwrap_or(t.floor());
        if next.is_some_and(|d| d >= b'5') {
            base + 1.0
        } else {
            base
        }
    };
    (n / scale).copysign(v)
}

/// `abs` over integers; the smallest value has no absolute value, which is an overflow.
fn int_abs<T: NativeType>(
    x: &PrimitiveColumn<T>,
    abs: impl Fn(T) -> Option<T>,
    ty: DataType,
) -> ExecResult<PrimitiveColumn<T>> {
    let mut out = Vec::with_capacity(x.len());
    for (i, v) in x.values().iter().enumerate() {
        out.push(match abs(*v) {
            Some(a) => a,
            None if !x.is_valid(i) => T::default(),
            None => return Err(ExecError::Overflow { op: "abs", ty }),
        });
    }
    Ok(PrimitiveColumn::new(
        Buffer::from_vec(out),
        x.validity().cloned(),
    ))
}

pub fn unary(
    func: ScalarFunc,
    c: &Column,
    digits: Option<&PrimitiveColumn<i64>>,
) -> ExecResult<Column> {
    Ok(match (func, c) {
        (ScalarFunc::Abs, Column::Int32(x)) => {
            Column::Int32(int_abs(x, i32::checked_abs, DataType::Int32)?)
        }
        (ScalarFunc::Abs, Column::Int64(x)) => {
            Column::Int64(int_abs(x, i64::checked_abs, DataType::Int64)?)
        }
        (ScalarFunc::Abs, Column::Float64(x)) => map_f64(x, f64::abs),
        (ScalarFunc::Floor, Column::Float64(x)) => map_f64(x, f64::floor),
        (ScalarFunc::Ceil, Column::Float64(x)) => map_f64(x, f64::ceil),
        (ScalarFunc::Sqrt, Column::Float64(x)) => map_f64(x, f64::sqrt),
        (ScalarFunc::Exp, Column::Float64(x)) => map_f64(x, f64::exp),
        (ScalarFunc::Ln | ScalarFunc::Log10, Column::Float64(x)) => {
            // DuckDB refuses the logarithm of zero and of negative numbers.
            for (i, v) in x.values().iter().enumerate() {
                if x.is_valid(i) && *v <= 0.0 {
                    return Err(ExecError::InvalidArgument(format!(
                        "cannot take the logarithm of {}",
                        if *v == 0.0 {
                            "zero"
                        } else {
                            "a negative number"
                        }
                    )));
                }
            }
            map_f64(
                x,
                if func == ScalarFunc::Ln {
                    f64::ln
                } else {
                    f64::log10
                },
            )
        }
        (ScalarFunc::Round, Column::Float64(x)) => match digits {
            None => map_f64(x, |v| round_f64(v, 0)),
            Some(d) => {
                let values = (0..x.len())
                    .map(|i| round_f64(x.values()[i], d.values()[i]))
                    .collect();
                let validity = crate::kernels::and_validity(x.validity(), d.validity());
                Column::Float64(PrimitiveColumn::new(Buffer::from_vec(values), validity))
            }
        },
        // Integers are already whole: FLOOR, CEIL and ROUND (to >= 0 digits) keep them.
        (
            ScalarFunc::Floor | ScalarFunc::Ceil | ScalarFunc::Round,
            Column::Int32(_) | Column::Int64(_),
        ) => c.clone(),
        (f, other) => {
            return Err(ExecError::Internal(format!(
                "{}() on {}",
                f.name(),
                other.data_type()
            )))
        }
    })
}

/// `power(a, b)`.
pub fn power(a: &Column, b: &Column) -> ExecResult<Column> {
    match (a, b) {
        (Column::Float64(x), Column::Float64(y)) => {
            let values = (0..x.len())
                .map(|i| x.values()[i].powf(y.values()[i]))
                .collect();
            let validity = crate::kernels::and_validity(x.validity(), y.validity());
            Ok(Column::Float64(PrimitiveColumn::new(
                Buffer::from_vec(values),
                validity,
            )))
        }
        _ => Err(ExecError::Internal(format!(
            "power() on {} and {}",
            a.data_type(),
            b.data_type()
        ))),
    }
}

/// A DOUBLE function of one DOUBLE, NULL where the input is.
pub fn float_unary(func: MathFunc, c: &Column) -> ExecResult<Column> {
    match c {
        Column::Float64(x) => Ok(map_f64(x, |v| func.apply(v))),
        other => Err(ExecError::Internal(format!(
            "{}() on {}",
            func.name(),
            other.data_type()
        ))),
    }
}

/// `atan2(y, x)`.
pub fn atan2(y: &Column, x: &Column) -> ExecResult<Column> {
    match (y, x) {
        (Column::Float64(a), Column::Float64(b)) => {
            let values = (0..a.len())
                .map(|i| a.values()[i].atan2(b.values()[i]))
                .collect();
            let validity = crate::kernels::and_validity(a.validity(), b.validity());
            Ok(Column::Float64(PrimitiveColumn::new(
                Buffer::from_vec(values),
                validity,
            )))
        }
        _ => Err(ExecError::Internal(format!(
            "atan2() on {} and {}",
            y.data_type(),
            x.data_type()
        ))),
    }
}

/// `isnan`, `isinf` and `isfinite` over a DOUBLE column.
pub fn float_test(func: ScalarFunc, c: &Column) -> ExecResult<Column> {
    let Column::Float64(x) = c else {
        return Err(ExecError::Internal(format!(
            "{}() on {}",
            func.name(),
            c.data_type()
        )));
    };
    let test: fn(f64) -> bool = match func {
        ScalarFunc::IsNan => f64::is_nan,
        ScalarFunc::IsInf => f64::is_infinite,
        _ => f64::is_finite,
    };
    Ok(Column::Boolean(BooleanColumn::from_options(
        (0..x.len()).map(|i| x.is_valid(i).then(|| test(x.values()[i]))),
    )))
}

/// `sign(x)`: -1, 0 or 1 as an INTEGER; 0 for NaN and for -0.0, as in DuckDB.
pub fn sign(c: &Column) -> ExecResult<Column> {
    fn of<T: NativeType>(x: &PrimitiveColumn<T>, f: impl Fn(T) -> i32) -> Column {
        Column::Int32(PrimitiveColumn::new(
            Buffer::from_vec(x.values().iter().map(|v| f(*v)).collect()),
            x.validity().cloned(),
        ))
    }
    Ok(match c {
        Column::Int32(x) => of(x, i32::signum),
        Column::Int64(x) => of(x, |v| v.signum() as i32),
        Column::Float64(x) => of(x, |v| match v {
            v if v > 0.0 => 1,
            v if v < 0.0 => -1,
            _ => 0,
        }),
        other => {
            return Err(ExecError::Internal(format!(
                "sign() on {}",
                other.data_type()
            )))
        }
    })
}

/// `trunc(x)`: toward zero; integers are already whole.
pub fn trunc(c: &Column) -> ExecResult<Column> {
    Ok(match c {
        Column::Float64(x) => map_f64(x, f64::trunc),
        Column::Int32(_) | Column::Int64(_) => c.clone(),
        other => {
            return Err(ExecError::Internal(format!(
                "trunc() on {}",
                other.data_type()
            )))
        }
    })
}

fn gcd_u64(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `gcd(a, b)` (`lcm` with `lcm`) over BIGINTs. Both are non-negative; a result that does
/// not fit a BIGINT (`gcd(i64::MIN, 0)`, a large `lcm`) is an overflow.
pub fn gcd_lcm(a: &Column, b: &Column, lcm: bool) -> ExecResult<Column> {
    let (x, y) = (crate::kernels::int64_arg(a)?, crate::kernels::int64_arg(b)?);
    let validity = crate::kernels::and_validity(x.validity(), y.validity());
    let op = if lcm { "lcm" } else { "gcd" };
    let mut out = Vec::with_capacity(x.len());
    for i in 0..x.len() {
        if !validity.as_ref().is_none_or(|v| v.get(i)) {
            out.push(0);
            continue;
        }
        let (p, q) = (x.values()[i].unsigned_abs(), y.values()[i].unsigned_abs());
        let g = gcd_u64(p, q);
        let r = match lcm {
            false => Some(g),
            true if g == 0 => Some(0),
            true => (p / g).checked_mul(q),
        };
        out.push(
            r.and_then(|r| i64::try_from(r).ok())
                .ok_or(ExecError::Overflow {
                    op,
                    ty: DataType::Int64,
                })?,
        );
    }
    Ok(Column::Int64(PrimitiveColumn::new(
        Buffer::from_vec(out),
        validity,
    )))
}

#[cfg(test)]
mod tests {
    use super::round_f64;

    #[test]
    fn gcd_of_extremes() {
        assert_eq!(super::gcd_u64(12, 18), 6);
        assert_eq!(super::gcd_u64(0, 0), 0);
        assert_eq!(super::gcd_u64(0, 7), 7);
        assert_eq!(super::gcd_u64(i64::MIN.unsigned_abs(), 6), 2);
    }

    #[test]
    fn rounds_half_away_from_zero() {
        assert_eq!(round_f64(2.5, 0), 3.0);
        assert_eq!(round_f64(-2.5, 0), -3.0);
        assert_eq!(round_f64(1.2345, 2), 1.23);
        assert_eq!(round_f64(1234.5, -2), 1200.0);
        // By exact value: 23.65 is stored as 23.6499..., 0.125 exactly.
        assert_eq!(round_f64(23.65, 1), 23.6);
        assert_eq!(round_f64(-23.65, 1), -23.6);
        assert_eq!(round_f64(0.125, 2), 0.13);
        assert_eq!(round_f64(2.675, 2), 2.67);
        assert_eq!(round_f64(1.005, 2), 1.0);
    }
}
