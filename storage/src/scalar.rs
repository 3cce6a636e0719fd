//! Single typed values: literals, aggregate results, and cells read out of columns.

use std::fmt;

use crate::datatype::DataType;
use crate::error::{StorageError, StorageResult};
use crate::parse;
use crate::temporal;

/// Float order used by comparisons, sorting, MIN/MAX and constant folding: NaN equals NaN
/// and is greater than every other value (DuckDB's order); -0.0 equals 0.0.
#[inline]
pub fn cmp_f64(a: f64, b: f64) -> std::cmp::Ordering {
    a.partial_cmp(&b)
        .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
}

#[derive(Clone, Debug)]
pub enum ScalarValue {
    Null,
    Boolean(bool),
    Int32(i32),
    Int64(i64),
    Float64(f64),
    Utf8(String),
    Date32(i32),
    Timestamp(i64),
}

/// Equality in the float order of [`cmp_f64`]: NaN equals NaN and -0.0 equals 0.0 (so a
/// plan holding a NaN literal equals itself).
impl PartialEq for ScalarValue {
    fn eq(&self, other: &Self) -> bool {
        use ScalarValue as S;
        match (self, other) {
            (S::Null, S::Null) => true,
            (S::Boolean(a), S::Boolean(b)) => a == b,
            (S::Int32(a), S::Int32(b)) | (S::Date32(a), S::Date32(b)) => a == b,
            (S::Int64(a), S::Int64(b)) | (S::Timestamp(a), S::Timestamp(b)) => a == b,
            (S::Float64(a), S::Float64(b)) => cmp_f64(*a, *b).is_eq(),
            (S::Utf8(a), S::Utf8(b)) => a == b,
            _ => false,
        }
    }
}

impl ScalarValue {
    pub fn data_type(&self) -> DataType {
        match self {
            ScalarValue::Null => DataType::Null,
            ScalarValue::Boolean(_) => DataType::Boolean,
            ScalarValue::Int32(_) => DataType::Int32,
            ScalarValue::Int64(_) => DataType::Int64,
            ScalarValue::Float64(_) => DataType::Float64,
            ScalarValue::Utf8(_) => DataType::Utf8,
            ScalarValue::Date32(_) => DataType::Date32,
            ScalarValue::Timestamp(_) => DataType::Timestamp,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, ScalarValue::Null)
    }

    /// Converts this value to `to` with SQL CAST semantics; a failed conversion is an error.
    pub fn cast_to(&self, to: DataType) -> StorageResult<ScalarValue> {
        use ScalarValue as S;
        let fail = || StorageError::Cast {
            value: self.to_string(),
            to,
        };
        if self.data_type() == to || self.is_null() {
            return Ok(self.clone());
        }
        Ok(match (self, to) {
            (_, DataType::Utf8) => S::Utf8(self.to_string()),
            (S::Utf8(s), _) => parse_text(s.trim(), to).ok_or_else(fail)?,
            (S::Boolean(b), DataType::Int32) => S::Int32(*b as i32),
            (S::Boolean(b), DataType::Int64) => S::Int64(*b as i64),
            (S::Boolean(b), DataType::Float64) => S::Float64(*b as i64 as f64),
            (S::Int32(v), DataType::Int64) => S::Int64(*v as i64),
            (S::Int32(v), DataType::Float64) => S::Float64(*v as f64),
            (S::Int32(v), DataType::Boolean) => S::Boolean(*v != 0),
            (S::Int64(v), DataType::Int32) => S::Int32(i32::try_from(*v).map_err(|_| fail())?),
            (S::Int64(v), DataType::Float64) => S::Float64(*v as f64),
            (S::Int64(v), DataType::Boolean) => S::Boolean(*v != 0),
            (S::Float64(v), DataType::Int32) => S::Int32(
                float_to_int(*v)
                    .and_then(|i| i32::try_from(i).ok())
                    .ok_or_else(fail)?,
            ),
            (S::Float64(v), DataType::Int64) => S::Int64(float_to_int(*v).ok_or_else(fail)?),
            // Days since the epoch (used for date differences).
            (S::Date32(d), DataType::Int64) => S::Int64(*d as i64),
            (S::Date32(d), DataType::Timestamp) => {
                S::Timestamp(*d as i64 * temporal::MICROS_PER_DAY)
            }
            (S::Timestamp(t), DataType::Date32) => {
                S::Date32(t.div_euclid(temporal::MICROS_PER_DAY) as i32)
            }
            _ => return Err(fail()),
        })
    }
}

/// Rounds half to even, as DuckDB's casts from DOUBLE to integer types do (`-4.5` is `-4`,
/// `5.5` is `6`).
pub fn float_to_int(v: f64) -> Option<i64> {
    let r = v.round_ties_even();
    if r.is_finite() && r >= i64::MIN as f64 && r < i64::MAX as f64 {
        Some(r as i64)
    } else {
        None
    }
}

/// Parses text as a value of type `to` (None when it does not fit).
pub fn parse_text(s: &str, to: DataType) -> Option<ScalarValue> {
    let b = s.as_bytes();
    Some(match to {
        DataType::Null => return None,
        DataType::Boolean => ScalarValue::Boolean(parse::parse_bool(b)?),
        DataType::Int32 => ScalarValue::Int32(parse::parse_i32(b)?),
        DataType::Int64 => ScalarValue::Int64(parse::parse_i64(b)?),
        DataType::Float64 => ScalarValue::Float64(parse::parse_f64(b)?),
        DataType::Utf8 => ScalarValue::Utf8(s.to_string()),
        DataType::Date32 => ScalarValue::Date32(temporal::parse_date(b)?),
        DataType::Timestamp => ScalarValue::Timestamp(temporal::parse_timestamp(b)?),
    })
}

impl fmt::Display for ScalarValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScalarValue::Null => f.write_str("NULL"),
            ScalarValue::Boolean(b) => write!(f, "{b}"),
            ScalarValue::Int32(v) => write!(f, "{v}"),
            ScalarValue::Int64(v) => write!(f, "{v}"),
            ScalarValue::Float64(v) => write!(f, "{v}"),
            ScalarValue::Utf8(s) => f.write_str(s),
            ScalarValue::Date32(d) => f.write_str(&temporal::format_date(*d)),
            ScalarValue::Timestamp(t) => f.write_str(&temporal::format_timestamp(*t)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts() {
        let s = ScalarValue::Utf8("1998-12-01".into());
        assert_eq!(
            s.cast_to(DataType::Date32).unwrap(),
            ScalarValue::Date32(10561)
        );
        assert!(s.cast_to(DataType::Float64).is_err());
        // DOUBLE to integer rounds half to even, as DuckDB's DOUBLE casts do.
        for (x, want) in [(2.5, 2), (3.5, 4), (-4.5, -4), (-0.5, 0), (2.6, 3)] {
            assert_eq!(
                ScalarValue::Float64(x).cast_to(DataType::Int64).unwrap(),
                ScalarValue::Int64(want)
            );
        }
        assert!(ScalarValue::Int64(1 << 40)
            .cast_to(DataType::Int32)
            .is_err());
        assert_eq!(
            ScalarValue::Null.cast_to(DataType::Int32).unwrap(),
            ScalarValue::Null
        );
    }
}
