//! Typed columns. [`Column`] is a closed enum over the concrete layouts; kernels match on it
//! once per batch and then run over plain slices, never dispatching per element.

mod boolean;
mod builder;
mod primitive;
mod utf8;

pub use boolean::{BooleanBuilder, BooleanColumn};
pub use builder::ColumnBuilder;
pub use primitive::{NativeType, PrimitiveBuilder, PrimitiveColumn};
pub use utf8::{Utf8Builder, Utf8Column};

use crate::bitmap::Bitmap;
use crate::datatype::DataType;
use crate::error::{StorageError, StorageResult};
use crate::scalar::ScalarValue;

#[derive(Clone, Debug)]
pub enum Column {
    Boolean(BooleanColumn),
    Int32(PrimitiveColumn<i32>),
    Int64(PrimitiveColumn<i64>),
    Float64(PrimitiveColumn<f64>),
    Utf8(Utf8Column),
    Date32(PrimitiveColumn<i32>),
    Timestamp(PrimitiveColumn<i64>),
}

/// Applies the same expression to whichever concrete column is inside, rebuilding the variant.
macro_rules! map_column {
    ($col:expr, $c:ident => $body:expr) => {
        match $col {
            Column::Boolean($c) => Column::Boolean($body),
            Column::Int32($c) => Column::Int32($body),
            Column::Int64($c) => Column::Int64($body),
            Column::Float64($c) => Column::Float64($body),
            Column::Utf8($c) => Column::Utf8($body),
            Column::Date32($c) => Column::Date32($body),
            Column::Timestamp($c) => Column::Timestamp($body),
        }
    };
}

/// Evaluates the same expression on whichever concrete column is inside.
macro_rules! with_column {
    ($col:expr, $c:ident => $body:expr) => {
        match $col {
            Column::Boolean($c) => $body,
            Column::Int32($c) => $body,
            Column::Int64($c) => $body,
            Column::Float64($c) => $body,
            Column::Utf8($c) => $body,
            Column::Date32($c) => $body,
            Column::Timestamp($c) => $body,
        }
    };
}

impl Column {
    pub fn data_type(&self) -> DataType {
        match self {
            Column::Boolean(_) => DataType::Boolean,
            Column::Int32(_) => DataType::Int32,
            Column::Int64(_) => DataType::Int64,
            Column::Float64(_) => DataType::Float64,
            Column::Utf8(_) => DataType::Utf8,
            Column::Date32(_) => DataType::Date32,
            Column::Timestamp(_) => DataType::Timestamp,
        }
    }

    pub fn len(&self) -> usize {
        with_column!(self, c => c.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn validity(&self) -> Option<&Bitmap> {
        with_column!(self, c => c.validity())
    }

    pub fn null_count(&self) -> usize {
        with_column!(self, c => c.null_count())
    }

    #[inline]
    pub fn is_valid(&self, i: usize) -> bool {
        with_column!(self, c => c.is_valid(i))
    }

    /// A zero-copy window of `len` rows starting at `offset`.
    pub fn slice(&self, offset: usize, len: usize) -> Column {
        map_column!(self, c => c.slice(offset, len))
    }

    /// Gathers rows by index; `u32::MAX` yields a null row.
    pub fn take(&self, indices: &[u32]) -> Column {
        map_column!(self, c => c.take(indices))
    }

    /// Keeps the rows whose bit is set in `mask`.
    pub fn filter(&self, mask: &Bitmap) -> Column {
        let kept = mask.count_ones();
        if kept == self.len() {
            return self.clone();
        }
        map_column!(self, c => c.filter(mask))
    }

    /// Concatenates columns of one type, in order.
    pub fn concat(parts: &[Column]) -> StorageResult<Column> {
        let first = parts.first().expect("concat needs at least one column");
        let ty = first.data_type();
        if let Some(bad) = parts.iter().find(|p| p.data_type() != ty) {
            return Err(StorageError::ConcatTypes(ty, bad.data_type()));
        }
        if parts.len() == 1 {
            return Ok(first.clone());
        }
        macro_rules! cat {
            ($variant:ident, $ty:ty) => {{
                let v: Vec<&$ty> = parts
                    .iter()
                    .map(|p| match p {
                        Column::$variant(c) => c,
                        _ => unreachable!("types checked above"),
                    })
                    .collect();
                Column::$variant(<$ty>::concat(&v))
            }};
        }
        Ok(match first {
            Column::Boolean(_) => cat!(Boolean, BooleanColumn),
            Column::Int32(_) => cat!(Int32, PrimitiveColumn<i32>),
            Column::Int64(_) => cat!(Int64, PrimitiveColumn<i64>),
            Column::Float64(_) => cat!(Float64, PrimitiveColumn<f64>),
            Column::Utf8(_) => cat!(Utf8, Utf8Column),
            Column::Date32(_) => cat!(Date32, PrimitiveColumn<i32>),
            Column::Timestamp(_) => cat!(Timestamp, PrimitiveColumn<i64>),
        })
    }

    /// The value at row `i` as a scalar (slow path: display, tests, constant folding).
    pub fn scalar_at(&self, i: usize) -> ScalarValue {
        if !self.is_valid(i) {
            return ScalarValue::Null;
        }
        match self {
            Column::Boolean(c) => ScalarValue::Boolean(c.values().get(i)),
            Column::Int32(c) => ScalarValue::Int32(c.values()[i]),
            Column::Int64(c) => ScalarValue::Int64(c.values()[i]),
            Column::Float64(c) => ScalarValue::Float64(c.values()[i]),
            Column::Utf8(c) => ScalarValue::Utf8(c.value(i).to_string()),
            Column::Date32(c) => ScalarValue::Date32(c.values()[i]),
            Column::Timestamp(c) => ScalarValue::Timestamp(c.values()[i]),
        }
    }

    /// A column of `len` copies of `value` (which must be of type `ty` or NULL).
    pub fn from_scalar(value: &ScalarValue, ty: DataType, len: usize) -> StorageResult<Column> {
        let mut b = ColumnBuilder::with_capacity(ty, len);
        for _ in 0..len {
            b.push_scalar(value)?;
        }
        Ok(b.finish())
    }

    pub fn new_null(ty: DataType, len: usize) -> Column {
        let mut b = ColumnBuilder::with_capacity(ty, len);
        for _ in 0..len {
            b.push_null();
        }
        b.finish()
    }

    /// Bytes of the buffers this column holds a share of.
    pub fn allocated_bytes(&self) -> usize {
        with_column!(self, c => c.allocated_bytes())
    }

    /// Bytes of the values this column shows (a slice counts only its window, not the
    /// shared buffers behind it): what a state holding it adds to memory at most.
    pub fn window_bytes(&self) -> usize {
        let validity = self.validity().map_or(0, |_| self.len().div_ceil(8));
        let values = match self {
            Column::Boolean(c) => c.len().div_ceil(8),
            Column::Int32(c) | Column::Date32(c) => c.len() * 4,
            Column::Int64(c) | Column::Timestamp(c) => c.len() * 8,
            Column::Float64(c) => c.len() * 8,
            Column::Utf8(c) => {
                let o = c.offsets();
                (o.len() * 8) + (o[o.len() - 1] - o[0]) as usize
            }
        };
        values + validity
    }

    pub fn as_boolean(&self) -> Option<&BooleanColumn> {
        match self {
            Column::Boolean(c) => Some(c),
            _ => None,
        }
    }

    pub fn as_utf8(&self) -> Option<&Utf8Column> {
        match self {
            Column::Utf8(c) => Some(c),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_take_concat_keep_nulls() {
        let c = Column::Int64(PrimitiveColumn::from_options([
            Some(1),
            None,
            Some(3),
            Some(4),
        ]));
        let s = c.slice(1, 3);
        assert_eq!(s.scalar_at(0), ScalarValue::Null);
        assert_eq!(s.scalar_at(2), ScalarValue::Int64(4));
        let t = c.take(&[3, u32::MAX, 0]);
        assert_eq!(t.scalar_at(1), ScalarValue::Null);
        assert_eq!(t.scalar_at(2), ScalarValue::Int64(1));
        let cat = Column::concat(&[s, t]).unwrap();
        assert_eq!(cat.len(), 6);
        assert_eq!(cat.null_count(), 2);

        let u = Column::Utf8(Utf8Column::from_strs([Some("a"), None, Some("ccc")]));
        let us = u.slice(1, 2);
        assert_eq!(us.scalar_at(1), ScalarValue::Utf8("ccc".into()));
        let cat = Column::concat(&[us.clone(), us]).unwrap();
        assert_eq!(cat.scalar_at(3), ScalarValue::Utf8("ccc".into()));
        assert_eq!(cat.null_count(), 2);
    }

    /// Filtering by a mask keeps exactly the rows a gather of its set positions keeps, for
    /// every column type, with NULLs, in windows at unaligned offsets, at every density
    /// (all-set words, dense and sparse words, none).
    #[test]
    fn filter_equals_take_of_set_positions() {
        let mut rng = crate::test_rng::Rng(11);
        let n = 700;
        let null = |rng: &mut crate::test_rng::Rng| rng.below(5) == 0;
        let ints: Vec<Option<i64>> = (0..n)
            .map(|i| (!null(&mut rng)).then_some(i as i64))
            .collect();
        let texts: Vec<Option<String>> = (0..n)
            .map(|i| (!null(&mut rng)).then(|| "x".repeat(i % 4)))
            .collect();
        let bools: Vec<Option<bool>> = (0..n)
            .map(|i| (!null(&mut rng)).then_some(i % 3 == 0))
            .collect();
        let columns = [
            Column::Int64(PrimitiveColumn::from_options(ints.clone())),
            Column::Float64(PrimitiveColumn::from_vec(
                (0..n).map(|i| i as f64).collect(),
            )),
            Column::Utf8(Utf8Column::from_strs(texts.iter().map(|t| t.as_deref()))),
            Column::Boolean(BooleanColumn::from_options(bools)),
        ];
        for keep_in_8 in [0, 1, 4, 7, 8] {
            // Long all-kept stretches too, so whole words are copied.
            let keep: Vec<bool> = (0..n)
                .map(|i| (i / 128) % 3 == 1 || (rng.below(8) as usize) < keep_in_8)
                .collect();
            for off in [0, 1, 64, 100] {
                let mask = Bitmap::from_bools(keep.iter().copied()).slice(off, n - off);
                let rows: Vec<u32> = mask.set_positions();
                for col in &columns {
                    let col = col.slice(off, n - off);
                    let got = col.filter(&mask);
                    let want = col.take(&rows);
                    assert_eq!(got.len(), want.len());
                    assert_eq!(got.null_count(), want.null_count());
                    for i in 0..got.len() {
                        assert_eq!(got.scalar_at(i), want.scalar_at(i), "{keep_in_8}/8, {off}");
                    }
                }
            }
        }
    }

    #[test]
    fn concat_rejects_mixed_types() {
        let a = Column::Int64(PrimitiveColumn::from_vec(vec![1]));
        let b = Column::Float64(PrimitiveColumn::from_vec(vec![1.0]));
        assert!(Column::concat(&[a, b]).is_err());
    }
}
