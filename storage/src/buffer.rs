//! Shared, sliceable buffers: a window (offset, len) onto a reference-counted `Vec<T>`.
//!
//! Cloning or slicing a [`Buffer`] bumps a reference count; the bytes are never copied.

use std::sync::Arc;

/// An immutable window onto shared, contiguous values.
#[derive(Clone)]
pub struct Buffer<T> {
    data: Arc<Vec<T>>,
    offset: usize,
    len: usize,
}

impl<T> Buffer<T> {
    /// Takes ownership of `values` without copying them.
    pub fn from_vec(values: Vec<T>) -> Self {
        let len = values.len();
        Self {
            data: Arc::new(values),
            offset: 0,
            len,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_slice(&self) -> &[T] {
        &self.data[self.offset..self.offset + self.len]
    }

    /// A window of `len` values starting at `offset` (relative to this window).
    ///
    /// Panics if the range is out of bounds: callers check lengths against the column first.
    pub fn slice(&self, offset: usize, len: usize) -> Self {
        assert!(offset + len <= self.len, "buffer slice out of bounds");
        Self {
            data: Arc::clone(&self.data),
            offset: self.offset + offset,
            len,
        }
    }

    /// Bytes held by the shared allocation (not just this window), for memory accounting.
    pub fn allocated_bytes(&self) -> usize {
        self.data.capacity() * std::mem::size_of::<T>()
    }
}

impl<T> std::ops::Deref for Buffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice().iter()).finish()
    }
}

impl<T> From<Vec<T>> for Buffer<T> {
    fn from(v: Vec<T>) -> Self {
        Self::from_vec(v)
    }
}

#[cfg(test)]
mod tests {
    use super::Buffer;

    #[test]
    fn slices_share_storage() {
        let b = Buffer::from_vec(vec![1, 2, 3, 4, 5]);
        let s = b.slice(1, 3);
        assert_eq!(s.as_slice(), &[2, 3, 4]);
        let t = s.slice(1, 2);
        assert_eq!(t.as_slice(), &[3, 4]);
        assert_eq!(t.allocated_bytes(), b.allocated_bytes());
    }
}
