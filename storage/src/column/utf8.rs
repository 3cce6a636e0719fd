//! UTF-8 string columns in Arrow's large_utf8 layout: one byte buffer plus `len + 1` i64
//! offsets into it. Every constructor guarantees the bytes between offsets are valid UTF-8.

use crate::bitmap::{Bitmap, ValidityBuilder};
use crate::buffer::Buffer;
use crate::cache_hint::prefetch;
use crate::error::{StorageError, StorageResult};

#[derive(Clone, Debug)]
pub struct Utf8Column {
    offsets: Buffer<i64>,
    data: Buffer<u8>,
    validity: Option<Bitmap>,
    /// `Some(w)`: every row (NULL rows included) is `w` bytes long, as known when the column
    /// was made (a flag or code column); `None`: not known to be.
    width: Option<u32>,
}

/// `Some(w)` when every row at the offsets `o` is `w` bytes long.
fn common_width(o: &[i64]) -> Option<u32> {
    let w = match o {
        [first, second, ..] => second - first,
        _ => return None,
    };
    rows_of_width(o, w).then(|| u32::try_from(w).ok()).flatten()
}

/// Whether every row at the offsets `o` is `width` bytes long. Reads the offsets a block at
/// a time (a loop that vectorizes), so rows of other widths are told after their block.
fn rows_of_width(o: &[i64], width: i64) -> bool {
    const BLOCK: usize = 1024;
    let n = o.len().saturating_sub(1);
    (0..n).step_by(BLOCK).all(|from| {
        let to = (from + BLOCK).min(n);
        let (starts, ends) = (&o[from..to], &o[from + 1..=to]);
        let off = starts
            .iter()
            .zip(ends)
            .fold(0, |acc, (s, e)| acc | ((e - s) ^ width));
        off == 0
    })
}

impl Utf8Column {
    pub fn from_strs<'a>(values: impl IntoIterator<Item = Option<&'a str>>) -> Self {
        let mut b = Utf8Builder::default();
        for v in values {
            b.push_option(v);
        }
        b.finish()
    }

    /// A column from rows of bytes laid end to end: row `i` is `data[offsets[i]..offsets[i +
    /// 1]]`. The bytes are checked once, as a whole (valid UTF-8, every offset at a character
    /// boundary, offsets from 0 rising to the end), which is far cheaper than checking short
    /// rows one by one.
    pub fn from_byte_rows(
        offsets: Vec<i64>,
        data: Vec<u8>,
        validity: Option<Bitmap>,
    ) -> StorageResult<Self> {
        let bad = |what: &str| Err(StorageError::InvalidText(what.into()));
        if offsets.first() != Some(&0) || offsets.last() != Some(&(data.len() as i64)) {
            return bad("offsets do not span the bytes");
        }
        if offsets.windows(2).any(|w| w[0] > w[1]) {
            return bad("offsets fall");
        }
        if validity
            .as_ref()
            .is_some_and(|v| v.len() != offsets.len() - 1)
        {
            return bad("validity of another length");
        }
        let text = match std::str::from_utf8(&data) {
            Ok(text) => text,
            Err(_) => return bad("invalid UTF-8"),
        };
        if !offsets.iter().all(|&o| text.is_char_boundary(o as usize)) {
            return bad("an offset inside a character");
        }
        let width = common_width(&offsets);
        Ok(Self {
            offsets: Buffer::from_vec(offsets),
            data: Buffer::from_vec(data),
            validity,
            width,
        })
    }

    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn offsets(&self) -> &[i64] {
        self.offsets.as_slice()
    }

    /// The shared byte buffer the offsets point into.
    pub fn data(&self) -> &[u8] {
        self.data.as_slice()
    }

    pub fn validity(&self) -> Option<&Bitmap> {
        self.validity.as_ref()
    }

    #[inline]
    pub fn is_valid(&self, i: usize) -> bool {
        self.validity.as_ref().is_none_or(|v| v.get(i))
    }

    #[inline]
    pub fn value_bytes(&self, i: usize) -> &[u8] {
        let o = self.offsets.as_slice();
        &self.data.as_slice()[o[i] as usize..o[i + 1] as usize]
    }

    /// The string at row `i` (empty for a null row).
    #[inline]
    pub fn value(&self, i: usize) -> &str {
        let bytes = self.value_bytes(i);
        // SAFETY: every constructor of Utf8Column appends only `&str` data (see Utf8Builder),
        // and offsets always fall on the boundaries of those appended strings, so the bytes
        // between two offsets are valid UTF-8.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }

    #[inline]
    pub fn get(&self, i: usize) -> Option<&str> {
        self.is_valid(i).then(|| self.value(i))
    }

    pub fn null_count(&self) -> usize {
        self.validity.as_ref().map_or(0, Bitmap::count_zeros)
    }

    pub fn slice(&self, offset: usize, len: usize) -> Self {
        Self {
            offsets: self.offsets.slice(offset, len + 1),
            data: self.data.clone(),
            validity: self.validity.as_ref().map(|v| v.slice(offset, len)),
            width: self.width,
        }
    }

    /// Whether every row (NULL rows included) is `width` bytes long, so that the rows'
    /// bytes lie `width` apart from the first offset on: known when the column was made,
    /// or else checked over the offsets.
    pub fn all_of_width(&self, width: usize) -> bool {
        self.width.is_some_and(|w| w as usize == width)
            || rows_of_width(self.offsets(), width as i64)
    }

    /// Keeps the rows whose bit is set in `mask`: each run of kept rows is one copy of its
    /// bytes and its offsets, shifted.
    pub fn filter(&self, mask: &Bitmap) -> Self {
        assert_eq!(mask.len(), self.len(), "filter mask length must match");
        let o = self.offsets();
        let validity = || {
            (self.validity.as_ref())
                .map(|v| v.filter(mask))
                .filter(|v| v.count_zeros() > 0)
        };
        // One byte a row (flags, codes: TPC-H Q1's two keys, kept at 98% of lineitem's
        // rows): the bytes compressed 64 at a time, where copying them run by run took
        // longer than the rest of the filter.
        if self.all_of_width(1) {
            let kept = mask.count_ones();
            let start = o[0] as usize;
            let bytes = &self.data()[start..start + self.len()];
            if let Some(data) = crate::compress::keep_bytes(bytes, mask, kept) {
                // Each kept byte is a whole one-byte value, so ASCII: valid UTF-8 alone.
                return Self {
                    offsets: Buffer::from_vec((0..=kept as i64).collect()),
                    data: Buffer::from_vec(data),
                    validity: validity(),
                    width: Some(1),
                };
            }
        }
        let runs = || mask.set_runs();
        let total: i64 = runs().map(|r| o[r.end] - o[r.start]).sum();
        let mut data = Vec::with_capacity(total as usize);
        let mut offsets = Vec::with_capacity(mask.count_ones() + 1);
        offsets.push(0i64);
        for r in runs() {
            let shift = data.len() as i64 - o[r.start];
            data.extend_from_slice(&self.data()[o[r.start] as usize..o[r.end] as usize]);
            offsets.extend(o[r.start + 1..=r.end].iter().map(|&x| x + shift));
        }
        let validity = validity();
        // Every byte range copied is whole values of this column (valid UTF-8), laid end to
        // end at the offsets pushed beside them.
        Self {
            offsets: Buffer::from_vec(offsets),
            data: Buffer::from_vec(data),
            validity,
            width: self.width,
        }
    }

    /// Gathers rows by index; `u32::MAX` yields a null row. The bytes are sized before
    /// copying (with room for one value's blocks past them), so the buffer never grows
    /// (and is never copied) on the way.
    pub fn take(&self, indices: &[u32]) -> Self {
        /// A single value is copied as whole blocks of this many bytes (see below)...
        const BLOCK: usize = 16;
        /// ...when it spans at most this many.
        const BLOCKS_MOST: usize = 8;
        /// Values hinted to the cache this many rows ahead of the copy.
        const VALUES_AHEAD: usize = 8;
        let o = self.offsets();
        let len = |i: u32| {
            if i == u32::MAX {
                0
            } else {
                (o[i as usize + 1] - o[i as usize]) as usize
            }
        };
        let total: usize = indices.iter().map(|&i| len(i)).sum();
        let src = self.data();
        let mut data: Vec<u8> = Vec::with_capacity(total + BLOCK * BLOCKS_MOST);
        let mut offsets = Vec::with_capacity(indices.len() + 1);
        offsets.push(0i64);
        // A run of consecutive rows (most of what a filter keeps) is one copy of its bytes.
        let mut k = 0;
        while k < indices.len() {
            // The value some rows ahead hinted to the cache (its offsets were read by the
            // sizing pass above): values at random rows, as a join gathers from its build
            // side, are each a miss that a copy would otherwise wait for in turn.
            if let Some(&ahead) = indices.get(k + VALUES_AHEAD) {
                if let Some(byte) = o.get(ahead as usize).and_then(|&at| src.get(at as usize)) {
                    prefetch(byte);
                }
            }
            let first = indices[k];
            if first == u32::MAX {
                offsets.push(data.len() as i64);
                k += 1;
                continue;
            }
            let mut end = k + 1;
            while end < indices.len() && indices[end] == first + (end - k) as u32 {
                end += 1;
            }
            let (from, to) = (o[first as usize] as usize, o[first as usize + 1] as usize);
            let blocks = (to - from).div_ceil(BLOCK);
            if end == k + 1 && blocks <= BLOCKS_MOST && from + blocks * BLOCK <= src.len() {
                // One value of up to a few blocks (a name, an address, a comment: most of
                // what a join gathers): fixed 16-byte copies in a short loop instead of a
                // call to copy its length, which costs more than the copy at these sizes.
                let at = data.len();
                for b in 0..blocks {
                    let block: [u8; BLOCK] = src[from + b * BLOCK..from + (b + 1) * BLOCK]
                        .try_into()
                        .expect("BLOCK");
                    // SAFETY: `data` holds at most `total` bytes once every value is copied
                    // and was made with room for `total + BLOCK * BLOCKS_MOST`; this value's
                    // blocks end less than `BLOCK * BLOCKS_MOST` bytes past `at + to - from`,
                    // so every block written is within its capacity.
                    unsafe {
                        std::ptr::write_unaligned(
                            data.as_mut_ptr().add(at + b * BLOCK).cast(),
                            block,
                        );
                    }
                }
                // SAFETY: the value's `to - from` bytes at `at` were written by the blocks
                // above (the bytes past them, also written, are not counted).
                unsafe { data.set_len(at + to - from) };
                offsets.push(data.len() as i64);
                k = end;
                continue;
            }
            let (from, to) = (first as usize, first as usize + (end - k));
            let shift = data.len() as i64 - o[from];
            data.extend_from_slice(&self.data()[o[from] as usize..o[to] as usize]);
            offsets.extend(o[from + 1..=to].iter().map(|&x| x + shift));
            k = end;
        }
        let validity =
            Bitmap::gather(self.validity.as_ref(), indices).filter(|v| v.count_zeros() > 0);
        // Every byte range copied is whole values of this column (valid UTF-8), laid end to
        // end at the offsets pushed beside them.
        Self {
            offsets: Buffer::from_vec(offsets),
            data: Buffer::from_vec(data),
            validity,
            // A row made NULL by `u32::MAX` is empty.
            width: self
                .width
                .filter(|&w| w == 0 || !indices.contains(&u32::MAX)),
        }
    }

    pub fn concat(parts: &[&Self]) -> Self {
        let rows = parts.iter().map(|p| p.len()).sum();
        let bytes = parts.iter().map(|p| p.value_bytes_total()).sum();
        let mut b = Utf8Builder::with_capacity(rows, bytes);
        for p in parts {
            for i in 0..p.len() {
                b.push_option(p.get(i));
            }
        }
        b.finish()
    }

    fn value_bytes_total(&self) -> usize {
        let o = self.offsets();
        (o[o.len() - 1] - o[0]) as usize
    }

    pub fn allocated_bytes(&self) -> usize {
        self.offsets.allocated_bytes()
            + self.data.allocated_bytes()
            + self.validity.as_ref().map_or(0, Bitmap::allocated_bytes)
    }
}

#[derive(Clone, Debug)]
pub struct Utf8Builder {
    offsets: Vec<i64>,
    data: Vec<u8>,
    validity: ValidityBuilder,
}

impl Default for Utf8Builder {
    fn default() -> Self {
        Self::with_capacity(0, 0)
    }
}

impl Utf8Builder {
    pub fn with_capacity(rows: usize, bytes: usize) -> Self {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        Self {
            offsets,
            data: Vec::with_capacity(bytes),
            validity: ValidityBuilder::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn push(&mut self, v: &str) {
        self.push_bytes(v.as_bytes());
        self.offsets.push(self.data.len() as i64);
        self.validity.push(true);
    }

    /// Appends a value's bytes; short ones (most CSV fields) by two overlapping copies of a
    /// fixed size instead of a call to `memcpy` each.
    #[inline(always)]
    fn push_bytes(&mut self, b: &[u8]) {
        let n = b.len();
        if !(4..=16).contains(&n) {
            match b {
                [x] => self.data.push(*x),
                _ => self.data.extend_from_slice(b),
            }
            return;
        }
        let at = self.data.len();
        self.data.reserve(n);
        let spare = &mut self.data.spare_capacity_mut()[..n];
        fn put<const W: usize>(to: &mut [std::mem::MaybeUninit<u8>], from: &[u8]) {
            let from: &[u8; W] = from.try_into().expect("W bytes");
            for (d, s) in to.iter_mut().zip(from) {
                d.write(*s);
            }
        }
        if n >= 8 {
            put::<8>(&mut spare[..8], &b[..8]);
            put::<8>(&mut spare[n - 8..], &b[n - 8..]);
        } else {
            put::<4>(&mut spare[..4], &b[..4]);
            put::<4>(&mut spare[n - 4..], &b[n - 4..]);
        }
        // SAFETY: the first and the last W bytes of the n after `at` were just written, and
        // with W >= n / 2 the two copies cover all n; the capacity was reserved.
        unsafe { self.data.set_len(at + n) };
    }

    #[inline]
    pub fn push_null(&mut self) {
        self.offsets.push(self.data.len() as i64);
        self.validity.push(false);
    }

    #[inline]
    pub fn push_option(&mut self, v: Option<&str>) {
        match v {
            Some(v) => self.push(v),
            None => self.push_null(),
        }
    }

    pub fn truncate(&mut self, len: usize) {
        if len < self.len() {
            self.offsets.truncate(len + 1);
            self.data.truncate(self.offsets[len] as usize);
            self.validity.truncate(len);
        }
    }

    pub fn finish(self) -> Utf8Column {
        let validity = self.validity.finish().filter(|v| v.count_zeros() > 0);
        let width = common_width(&self.offsets);
        Utf8Column {
            offsets: Buffer::from_vec(self.offsets),
            data: Buffer::from_vec(self.data),
            validity,
            width,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Utf8Builder, Utf8Column};
    use crate::Bitmap;

    /// Values of every length up to past the short copies' 16 bytes, pushed one after
    /// another (each short copy writes next to the last value), come back as pushed.
    #[test]
    fn pushed_values_of_every_length_come_back() {
        let text = "abcdefghijklmnopqrstuvwxyz0123456789";
        let values: Vec<&str> = (0..=24)
            .flat_map(|n| [&text[..n], &text[3..3 + n]])
            .collect();
        let mut b = Utf8Builder::default();
        for v in &values {
            b.push(v);
        }
        let col = b.finish();
        let got: Vec<&str> = (0..col.len()).map(|i| col.value(i)).collect();
        assert_eq!(got, values);
    }

    /// Rows of bytes become a column only when the whole is UTF-8 cut at character
    /// boundaries by offsets rising from 0 to the end.
    #[test]
    fn byte_rows_are_checked_as_a_whole() {
        let data = "aébc".as_bytes().to_vec(); // é is two bytes: 1..3
        let ok = |offsets: Vec<i64>| Utf8Column::from_byte_rows(offsets, data.clone(), None);
        let col = ok(vec![0, 1, 3, 3, 5]).unwrap();
        let rows: Vec<&str> = (0..col.len()).map(|i| col.value(i)).collect();
        assert_eq!(rows, ["a", "é", "", "bc"]);
        assert!(ok(vec![0, 2, 5]).is_err(), "an offset inside é");
        assert!(ok(vec![0, 3, 1, 5]).is_err(), "falling offsets");
        assert!(ok(vec![0, 3]).is_err(), "offsets short of the end");
        assert!(ok(vec![1, 5]).is_err(), "offsets not from 0");
        let invalid = Utf8Column::from_byte_rows(vec![0, 2], vec![0xC3, 0x28], None);
        assert!(invalid.is_err(), "invalid UTF-8");
        let nulls = Bitmap::from_bools([true, false]);
        let col = Utf8Column::from_byte_rows(vec![0, 1, 1], b"x".to_vec(), Some(nulls)).unwrap();
        assert_eq!((col.get(0), col.get(1)), (Some("x"), None));
        let wrong = Bitmap::from_bools([true]);
        assert!(Utf8Column::from_byte_rows(vec![0, 1, 1], b"x".to_vec(), Some(wrong)).is_err());
    }

    /// A column knows when every row is one width: from its builder or its byte rows, kept
    /// by slices, filters, takes and concatenation; a mix of widths, or a NULL row (empty)
    /// among wider ones, made or taken, leaves it unknown.
    #[test]
    fn a_common_width_is_known_where_every_row_has_it() {
        let codes = Utf8Column::from_strs(["A", "N", "R", "A"].map(Some));
        let mixed = Utf8Column::from_strs([Some("A"), Some("NO")]);
        let with_null = Utf8Column::from_strs([Some("A"), None]);
        assert_eq!(codes.width, Some(1));
        assert_eq!(mixed.width, None);
        assert_eq!(with_null.width, None);
        assert_eq!(codes.slice(1, 2).width, Some(1));
        let mask = Bitmap::from_bools([true, false, true, false]);
        assert_eq!(codes.filter(&mask).width, Some(1));
        assert_eq!(codes.take(&[3, 0, 0]).width, Some(1));
        assert_eq!(codes.take(&[3, u32::MAX]).width, None);
        let joined = Utf8Column::concat(&[&codes, &codes.slice(0, 1)]);
        assert_eq!(joined.width, Some(1));
        assert_eq!(Utf8Column::concat(&[&codes, &mixed]).width, None);
        let rows = Utf8Column::from_byte_rows(vec![0, 2, 4], b"abcd".to_vec(), None).unwrap();
        assert_eq!(rows.width, Some(2));
        let uneven = Utf8Column::from_byte_rows(vec![0, 1, 4], b"abcd".to_vec(), None).unwrap();
        assert_eq!(uneven.width, None);
    }

    /// One-byte rows are filtered by compressing their bytes: from a slice of a column at an
    /// odd offset, with NULL rows (one byte each too), at every density, what keeping the
    /// rows value by value gives, and still known to be one byte wide.
    #[test]
    fn one_byte_rows_filter_as_value_by_value() {
        let mut rng = crate::test_rng::Rng(7);
        let n = 300;
        let data: Vec<u8> = (0..n).map(|_| b'A' + rng.below(26) as u8).collect();
        let validity = Bitmap::from_bools((0..n).map(|i| i % 7 != 3));
        let whole =
            Utf8Column::from_byte_rows((0..=n as i64).collect(), data, Some(validity)).unwrap();
        let col = whole.slice(5, 200);
        assert_eq!(col.width, Some(1));
        for per_mille in [0, 10, 500, 980, 1000] {
            let mask = Bitmap::from_bools((0..200).map(|_| rng.below(1000) < per_mille));
            let got = col.filter(&mask);
            let want: Vec<Option<&str>> = (0..200)
                .filter(|&i| mask.get(i))
                .map(|i| col.get(i))
                .collect();
            let got_values: Vec<Option<&str>> = (0..got.len()).map(|i| got.get(i)).collect();
            assert_eq!(got_values, want, "{per_mille}/1000");
            assert_eq!(got.width, Some(1));
        }
    }

    /// A take copies runs of consecutive rows at once: from a slice of a column, with NULL
    /// rows, `u32::MAX` and runs broken anywhere it gives what gathering value by value gives.
    #[test]
    fn take_equals_gathering_value_by_value() {
        let values: Vec<Option<String>> = (0..40)
            .map(|i| (i % 9 != 4).then(|| "x".repeat(i % 5) + &i.to_string()))
            .collect();
        let whole = Utf8Column::from_strs(values.iter().map(Option::as_deref));
        let col = whole.slice(3, 30);
        let indices: [&[u32]; 5] = [
            &[0, 1, 2, 3, 7, 8, 9, 29],
            &[5, 6, u32::MAX, 7, 8, 2, 3, 4],
            &[],
            &[u32::MAX, u32::MAX],
            &[12, 11, 10, 10, 11, 12],
        ];
        for rows in indices {
            let got = col.take(rows);
            let want: Vec<Option<&str>> = rows
                .iter()
                .map(|&i| (i != u32::MAX).then(|| col.get(i as usize)).flatten())
                .collect();
            let got: Vec<Option<&str>> = (0..got.len()).map(|i| got.get(i)).collect();
            assert_eq!(got, want, "{rows:?}");
        }
    }

    /// Single values copied as 16-byte blocks (up to eight blocks, not at the very end of
    /// the bytes) and the rest copied by length give the same values: lengths 0 to 200
    /// around the block's size and the most blocks, picked in random order, the last values
    /// of the bytes included.
    #[test]
    fn short_values_copied_as_blocks_keep_their_bytes() {
        let mut rng = crate::test_rng::Rng(21);
        let values: Vec<String> = (0..300)
            .map(|i| {
                let n =
                    [0, 1, 15, 16, 17, 40, 127, 128, 129, 200][i % 10].min(rng.below(201) as usize);
                (0..n)
                    .map(|k| char::from(b'a' + ((i + k) % 26) as u8))
                    .collect()
            })
            .collect();
        let col = Utf8Column::from_strs(values.iter().map(|v| Some(v.as_str())));
        let rows: Vec<u32> = (0..600)
            .map(|_| rng.below(300) as u32)
            .chain([299, 298])
            .collect();
        let got = col.take(&rows);
        for (k, &r) in rows.iter().enumerate() {
            assert_eq!(got.get(k), Some(values[r as usize].as_str()), "row {r}");
        }
    }
}
