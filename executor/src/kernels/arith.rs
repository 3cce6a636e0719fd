//! Arithmetic: `+ - * / // %` on two columns of the same numeric type.
//!
//! Integers are checked: an overflow on a valid row is an error, never a wrapped value, and
//! so is an integer division or modulo by zero (as in DuckDB). `/` only ever sees floats (the
//! planner casts integer operands to DOUBLE); `//` truncates toward zero on integers. Float
//! arithmetic follows IEEE 754 (`1/0` is `inf`, `0/0` is `NaN`), as DuckDB does.

use morsel_planner::BinaryOp;
use morsel_storage::{Bitmap, Buffer, Column, DataType, NativeType, PrimitiveColumn};

use super::and_validity;
use crate::error::{ExecError, ExecResult};

trait Int: NativeType + Eq {
    const TYPE: DataType;
    const ZERO: Self;
    fn add(self, o: Self) -> Option<Self>;
    fn sub(self, o: Self) -> Option<Self>;
    fn mul(self, o: Self) -> Option<Self>;
    fn div(self, o: Self) -> Option<Self>;
    fn rem(self, o: Self) -> Option<Self>;
}

macro_rules! int_impl {
    ($t:ty, $dt:expr) => {
        impl Int for $t {
            const TYPE: DataType = $dt;
            const ZERO: Self = 0;
            fn add(self, o: Self) -> Option<Self> {
                self.checked_add(o)
            }
            fn sub(self, o: Self) -> Option<Self> {
                self.checked_sub(o)
            }
            fn mul(self, o: Self) -> Option<Self> {
                self.checked_mul(o)
            }
            fn div(self, o: Self) -> Option<Self> {
                self.checked_div(o)
            }
            fn rem(self, o: Self) -> Option<Self> {
                self.checked_rem(o)
            }
        }
    };
}
int_impl!(i32, DataType::Int32);
int_impl!(i64, DataType::Int64);

fn is_valid(v: &Option<Bitmap>, i: usize) -> bool {
    v.as_ref().is_none_or(|b| b.get(i))
}

fn int_arith<T: Int>(
    op: BinaryOp,
    a: &PrimitiveColumn<T>,
    b: &PrimitiveColumn<T>,
) -> ExecResult<PrimitiveColumn<T>> {
    let validity = and_validity(a.validity(), b.validity());
    let (x, y) = (a.values(), b.values());
    let n = x.len();
    let divides = matches!(
        op,
        BinaryOp::IntDivide | BinaryOp::Divide | BinaryOp::Modulo
    );
    if divides && (0..n).any(|i| y[i] == T::ZERO && is_valid(&validity, i)) {
        return Err(ExecError::DivisionByZero { op: op.symbol() });
    }
    // One loop per operator (a function item, not a pointer, so that it inlines).
    let (out, failed) = match op {
        BinaryOp::Plus => checked(x, y, T::add),
        BinaryOp::Minus => checked(x, y, T::sub),
        BinaryOp::Multiply => checked(x, y, T::mul),
        BinaryOp::IntDivide | BinaryOp::Divide => checked(x, y, T::div),
        BinaryOp::Modulo => checked(x, y, T::rem),
        other => {
            return Err(ExecError::Internal(format!(
                "{} is not arithmetic",
                other.symbol()
            )))
        }
    };
    // A failure counts only on a valid row (an invalid row's value is 0).
    if failed.into_iter().any(|i| is_valid(&validity, i)) {
        return Err(ExecError::Overflow {
            op: op_name(op),
            ty: T::TYPE,
        });
    }
    Ok(PrimitiveColumn::new(Buffer::from_vec(out), validity))
}

/// `f(x[i], y[i])` for every row, 0 where it fails, and the rows where it failed.
#[inline(always)]
fn checked<T: Int>(x: &[T], y: &[T], f: impl Fn(T, T) -> Option<T>) -> (Vec<T>, Vec<usize>) {
    let mut failed = Vec::new();
    let out = x
        .iter()
        .zip(y)
        .enumerate()
        .map(|(i, (&a, &b))| {
            f(a, b).unwrap_or_else(|| {
                failed.push(i);
                T::ZERO
            })
        })
        .collect();
    (out, failed)
}

fn op_name(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Plus => "addition",
        BinaryOp::Minus => "subtraction",
        BinaryOp::Multiply => "multiplication",
        BinaryOp::Modulo => "modulo",
        _ => "division",
    }
}

fn float_arith(
    op: BinaryOp,
    a: &PrimitiveColumn<f64>,
    b: &PrimitiveColumn<f64>,
) -> ExecResult<PrimitiveColumn<f64>> {
    if !op.is_arithmetic() {
        return Err(ExecError::Internal(format!(
            "{} is not arithmetic",
            op.symbol()
        )));
    }
    let validity = and_validity(a.validity(), b.validity());
    let mut out = vec![0.0; a.len()];
    float_zip(op, a.values(), b.values(), &mut out);
    Ok(PrimitiveColumn::new(Buffer::from_vec(out), validity))
}

/// `d[i] = x[i] op y[i]` over DOUBLE values for an arithmetic `op`: `+ - * %`, and `/` for
/// `/` and `//` (DuckDB: `//` on DOUBLE divides like `/`).
///
/// The kernels and the fused programs both compute through this one function, so that their
/// results agree bit for bit: LLVM orders the operands of `+` and `*` as it likes in each
/// loop it compiles, and that order decides which sign a NaN from two NaN operands keeps.
/// Where the processor has AVX-512 the same loops run eight values to an instruction (the
/// baseline build does two).
pub fn float_zip(op: BinaryOp, x: &[f64], y: &[f64], d: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if super::avx512() {
        // SAFETY: the processor has AVX-512F (`avx512`).
        return unsafe { float_zip_avx512(op, x, y, d) };
    }
    float_zip_loops(op, x, y, d)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn float_zip_avx512(op: BinaryOp, x: &[f64], y: &[f64], d: &mut [f64]) {
    float_zip_loops(op, x, y, d)
}

/// One loop per operator (a closure, not a pointer, so that each compiles to vector
/// instructions).
#[inline(always)]
fn float_zip_loops(op: BinaryOp, x: &[f64], y: &[f64], d: &mut [f64]) {
    match op {
        BinaryOp::Plus => zip_map(x, y, d, |a, b| a + b),
        BinaryOp::Minus => zip_map(x, y, d, |a, b| a - b),
        BinaryOp::Multiply => zip_map(x, y, d, |a, b| a * b),
        BinaryOp::Modulo => zip_map(x, y, d, |a, b| a % b),
        _ => zip_map(x, y, d, |a, b| a / b),
    }
}

/// `d[i] = f(x[i], y[i])`.
#[inline(always)]
fn zip_map(x: &[f64], y: &[f64], d: &mut [f64], f: impl Fn(f64, f64) -> f64) {
    for ((d, &a), &b) in d.iter_mut().zip(x).zip(y) {
        *d = f(a, b);
    }
}

/// `l op r` for two columns of the same numeric type.
pub fn arith(op: BinaryOp, l: &Column, r: &Column) -> ExecResult<Column> {
    Ok(match (l, r) {
        (Column::Int32(a), Column::Int32(b)) => Column::Int32(int_arith(op, a, b)?),
        (Column::Int64(a), Column::Int64(b)) => Column::Int64(int_arith(op, a, b)?),
        (Column::Float64(a), Column::Float64(b)) => Column::Float64(float_arith(op, a, b)?),
        (a, b) => {
            return Err(ExecError::Internal(format!(
                "{} on {} and {} (the planner should have cast them)",
                op.symbol(),
                a.data_type(),
                b.data_type()
            )))
        }
    })
}

/// `-x`; negating the smallest integer is an overflow.
pub fn negate(c: &Column) -> ExecResult<Column> {
    fn neg<T: Int>(c: &PrimitiveColumn<T>) -> ExecResult<PrimitiveColumn<T>> {
        let mut out = Vec::with_capacity(c.len());
        for (i, v) in c.values().iter().enumerate() {
            match T::ZERO.sub(*v) {
                Some(x) => out.push(x),
                None if !c.is_valid(i) => out.push(T::ZERO),
                None => {
                    return Err(ExecError::Overflow {
                        op: "negation",
                        ty: T::TYPE,
                    })
                }
            }
        }
        Ok(PrimitiveColumn::new(
            Buffer::from_vec(out),
            c.validity().cloned(),
        ))
    }
    Ok(match c {
        Column::Int32(x) => Column::Int32(neg(x)?),
        Column::Int64(x) => Column::Int64(neg(x)?),
        Column::Float64(x) => Column::Float64(PrimitiveColumn::new(
            Buffer::from_vec(x.values().iter().map(|v| -v).collect()),
            x.validity().cloned(),
        )),
        other => {
            return Err(ExecError::Internal(format!(
                "cannot negate {}",
                other.data_type()
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use morsel_storage::ScalarValue;

    #[test]
    fn overflow_is_an_error_but_not_on_null_rows() {
        let a = Column::Int64(PrimitiveColumn::from_options([Some(i64::MAX), Some(1)]));
        let b = Column::Int64(PrimitiveColumn::from_options([Some(1), Some(1)]));
        assert!(matches!(
            arith(BinaryOp::Plus, &a, &b),
            Err(ExecError::Overflow { .. })
        ));
        let a = Column::Int64(PrimitiveColumn::new(
            Buffer::from_vec(vec![i64::MAX, 1]),
            Some(Bitmap::from_bools([false, true])),
        ));
        let c = arith(BinaryOp::Plus, &a, &b).unwrap();
        assert_eq!(c.scalar_at(0), ScalarValue::Null);
        assert_eq!(c.scalar_at(1), ScalarValue::Int64(2));
    }

    #[test]
    fn integer_division_truncates_and_zero_divisor_is_an_error() {
        let a = Column::Int32(PrimitiveColumn::from_vec(vec![7, -7]));
        let b = Column::Int32(PrimitiveColumn::from_vec(vec![2, 2]));
        let q = arith(BinaryOp::IntDivide, &a, &b).unwrap();
        assert_eq!(
            (q.scalar_at(0), q.scalar_at(1)),
            (ScalarValue::Int32(3), ScalarValue::Int32(-3))
        );
        let m = arith(BinaryOp::Modulo, &a, &b).unwrap();
        assert_eq!(m.scalar_at(1), ScalarValue::Int32(-1));
        let z = Column::Int32(PrimitiveColumn::from_vec(vec![2, 0]));
        assert!(matches!(
            arith(BinaryOp::Modulo, &a, &z),
            Err(ExecError::DivisionByZero { .. })
        ));
        // A zero divisor on a NULL row is fine.
        let n = Column::Int32(PrimitiveColumn::from_options([Some(1), None]));
        assert_eq!(
            arith(BinaryOp::IntDivide, &n, &z).unwrap().scalar_at(1),
            ScalarValue::Null
        );
    }
}
