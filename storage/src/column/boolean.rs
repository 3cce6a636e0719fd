//! Bit-packed boolean columns and their builder.

use crate::bitmap::{Bitmap, BitmapBuilder, ValidityBuilder};

#[derive(Clone, Debug)]
pub struct BooleanColumn {
    values: Bitmap,
    validity: Option<Bitmap>,
}

impl BooleanColumn {
    pub fn new(values: Bitmap, validity: Option<Bitmap>) -> Self {
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

    pub fn from_options(values: impl IntoIterator<Item = Option<bool>>) -> Self {
        let mut b = BooleanBuilder::default();
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

    pub fn values(&self) -> &Bitmap {
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
    pub fn get(&self, i: usize) -> Option<bool> {
        self.is_valid(i).then(|| self.values.get(i))
    }

    pub fn null_count(&self) -> usize {
        self.validity.as_ref().map_or(0, Bitmap::count_zeros)
    }

    /// Rows that are valid and true: the selection a filter keeps.
    pub fn true_mask(&self) -> Bitmap {
        match &self.validity {
            None => self.values.clone(),
            Some(v) => self.values.and(v),
        }
    }

    pub fn slice(&self, offset: usize, len: usize) -> Self {
        Self {
            values: self.values.slice(offset, len),
            validity: self.validity.as_ref().map(|v| v.slice(offset, len)),
        }
    }

    /// Keeps the rows whose bit is set in `mask`.
    pub fn filter(&self, mask: &Bitmap) -> Self {
        let validity = self.validity.as_ref().map(|v| v.filter(mask));
        Self::new(self.values.filter(mask), validity)
    }

    pub fn take(&self, indices: &[u32]) -> Self {
        let mut b = BooleanBuilder::with_capacity(indices.len());
        for &i in indices {
            b.push_option(if i == u32::MAX {
                None
            } else {
                self.get(i as usize)
            });
        }
        b.finish()
    }

    pub fn concat(parts: &[&Self]) -> Self {
        let mut b = BooleanBuilder::with_capacity(parts.iter().map(|p| p.len()).sum());
        for p in parts {
            for i in 0..p.len() {
                b.push_option(p.get(i));
            }
        }
        b.finish()
    }

    pub fn allocated_bytes(&self) -> usize {
        self.values.allocated_bytes() + self.validity.as_ref().map_or(0, Bitmap::allocated_bytes)
    }
}

#[derive(Clone, Debug, Default)]
pub struct BooleanBuilder {
    values: BitmapBuilder,
    validity: ValidityBuilder,
}

impl BooleanBuilder {
    pub fn with_capacity(n: usize) -> Self {
        Self {
            values: BitmapBuilder::with_capacity(n),
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
    pub fn push(&mut self, v: bool) {
        self.values.push(v);
        self.validity.push(true);
    }

    #[inline]
    pub fn push_null(&mut self) {
        self.values.push(false);
        self.validity.push(false);
    }

    #[inline]
    pub fn push_option(&mut self, v: Option<bool>) {
        match v {
            Some(v) => self.push(v),
            None => self.push_null(),
        }
    }

    pub fn truncate(&mut self, len: usize) {
        self.values.truncate(len);
        self.validity.truncate(len);
    }

    pub fn finish(self) -> BooleanColumn {
        BooleanColumn::new(self.values.finish(), self.validity.finish())
    }
}
