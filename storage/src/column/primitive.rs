//! The generic fixed-width column (`Int32`, `Int64`, `Float64`, `Date32`, `Timestamp`) and its
//! builder. Kernels read `values()` as a plain slice; null slots hold `T::default()`.

use crate::bitmap::{Bitmap, ValidityBuilder};
use crate::buffer::Buffer;

/// A Rust type stored unboxed in a [`PrimitiveColumn`].
pub trait NativeType:
    Copy + Default + Send + Sync + PartialOrd + std::fmt::Debug + 'static
{
}

impl NativeType for i32 {}
impl NativeType for i64 {}
impl NativeType for f64 {}

#[derive(Clone, Debug)]
pub struct PrimitiveColumn<T> {
    values: Buffer<T>,
    validity: Option<Bitmap>,
}

impl<T: NativeType> PrimitiveColumn<T> {
    /// Panics if the validity length differs from the values length (a programming error).
    pub fn new(values: Buffer<T>, validity: Option<Bitmap>) -> Self {
        if let Some(v) = &validity {
            assert_eq!(
                v.len(),
                values.len(),
                "validity length must match values length"
            );
        }
        let validity = validity.filter(|v| v.count_zeros() > 0);
        Self { values, validity }
    }

    pub fn from_vec(values: Vec<T>) -> Self {
        Self::new(Buffer::from_vec(values), None)
    }

    pub fn from_options(values: impl IntoIterator<Item = Option<T>>) -> Self {
        let mut b = PrimitiveBuilder::new();
        for v in values {
            b.push_option(v);
        }
        b.finish()
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    #[inline]
    pub fn values(&self) -> &[T] {
        self.values.as_slice()
    }

    pub fn buffer(&self) -> &Buffer<T> {
        &self.values
    }

    pub fn validity(&self) -> Option<&Bitmap> {
        self.validity.as_ref()
    }

    #[inline]
    pub fn is_valid(&self, i: usize) -> bool {
        self.validity.as_ref().is_none_or(|v| v.get(i))
    }

    #[inline]
    pub fn get(&self, i: usize) -> Option<T> {
        self.is_valid(i).then(|| self.values()[i])
    }

    pub fn null_count(&self) -> usize {
        self.validity.as_ref().map_or(0, Bitmap::count_zeros)
    }

    pub fn slice(&self, offset: usize, len: usize) -> Self {
        Self {
            values: self.values.slice(offset, len),
            validity: self.validity.as_ref().map(|v| v.slice(offset, len)),
        }
    }

    /// Keeps the rows whose bit is set in `mask`: 8-byte values by AVX-512's compress where
    /// the processor has it (`crate::compress`); otherwise words of the mask that are all
    /// set copy 64 values at once, dense words write every value to a buffer on the stack
    /// and advance by its bit (no branch), sparse ones visit their set bits.
    pub fn filter(&self, mask: &Bitmap) -> Self {
        assert_eq!(mask.len(), self.len(), "filter mask length must match");
        let src = self.values();
        let kept = mask.count_ones();
        let validity = self.validity.as_ref().map(|v| v.filter(mask));
        if let Some(values) = crate::compress::keep_rows(src, mask, kept) {
            return Self::new(Buffer::from_vec(values), validity);
        }
        let mut values = Vec::with_capacity(kept);
        let mut word = [T::default(); 64];
        for wi in 0..mask.word_count() {
            let m = mask.word(wi);
            let base = wi * 64;
            if m == u64::MAX {
                values.extend_from_slice(&src[base..base + 64]);
            } else if m.count_ones() >= 16 {
                let end = (base + 64).min(src.len());
                let mut n = 0;
                for (j, &v) in src[base..end].iter().enumerate() {
                    word[n] = v;
                    n += ((m >> j) & 1) as usize;
                }
                values.extend_from_slice(&word[..n]);
            } else {
                let mut m = m;
                while m != 0 {
                    values.push(src[base + m.trailing_zeros() as usize]);
                    m &= m - 1;
                }
            }
        }
        Self::new(Buffer::from_vec(values), validity)
    }

    /// Gathers rows; an index of `u32::MAX` produces a null (used by outer joins).
    pub fn take(&self, indices: &[u32]) -> Self {
        let src = self.values();
        let mut values = Vec::with_capacity(indices.len());
        let needs_validity = self.validity.is_some() || indices.contains(&u32::MAX);
        if !needs_validity {
            values.extend(indices.iter().map(|&i| src[i as usize]));
            return Self::from_vec(values);
        }
        values.extend(indices.iter().map(|&i| {
            if i == u32::MAX {
                T::default()
            } else {
                src[i as usize]
            }
        }));
        Self::new(
            Buffer::from_vec(values),
            Bitmap::gather(self.validity.as_ref(), indices),
        )
    }

    pub fn concat(parts: &[&Self]) -> Self {
        let total = parts.iter().map(|p| p.len()).sum();
        let mut b = PrimitiveBuilder::with_capacity(total);
        for p in parts {
            b.extend_from(p);
        }
        b.finish()
    }

    pub fn allocated_bytes(&self) -> usize {
        self.values.allocated_bytes() + self.validity.as_ref().map_or(0, Bitmap::allocated_bytes)
    }
}

/// Appends values and nulls; the validity bitmap is only allocated once a null arrives.
#[derive(Clone, Debug, Default)]
pub struct PrimitiveBuilder<T> {
    values: Vec<T>,
    validity: ValidityBuilder,
}

impl<T: NativeType> PrimitiveBuilder<T> {
    pub fn new() -> Self {
        Self {
            values: Vec::new(),
            validity: ValidityBuilder::default(),
        }
    }

    pub fn with_capacity(n: usize) -> Self {
        Self {
            values: Vec::with_capacity(n),
            validity: ValidityBuilder::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    #[inline]
    pub fn push(&mut self, v: T) {
        self.values.push(v);
        self.validity.push(true);
    }

    #[inline]
    pub fn push_null(&mut self) {
        self.values.push(T::default());
        self.validity.push(false);
    }

    #[inline(always)]
    pub fn push_option(&mut self, v: Option<T>) {
        match v {
            Some(v) => self.push(v),
            None => self.push_null(),
        }
    }

    pub fn extend_from(&mut self, col: &PrimitiveColumn<T>) {
        self.values.extend_from_slice(col.values());
        match col.validity() {
            None => self.validity.push_n(true, col.len()),
            Some(v) => v.iter().for_each(|b| self.validity.push(b)),
        }
    }

    pub fn truncate(&mut self, len: usize) {
        self.values.truncate(len);
        self.validity.truncate(len);
    }

    pub fn finish(self) -> PrimitiveColumn<T> {
        PrimitiveColumn::new(Buffer::from_vec(self.values), self.validity.finish())
    }
}
