//! The join table's index of distinct integer build keys, by value: an array indexed by
//! value when the values span a small range ([`KeyIndex::Dense`]), a bit per value with a
//! running count per word when they span a larger one ([`KeyIndex::Ranked`]), a hash map
//! otherwise ([`KeyIndex::Int`]); other keys are interned as encoded bytes.

use morsel_storage::{Bitmap, Column};

use super::int_map::{IntMap, FIBONACCI};
use super::keys::{for_each_int, int_range, KeyInterner};
use crate::scheduler::parallel_map;

/// Distinct build keys, numbered in first-seen order (a dense index: in value order).
pub(super) enum KeyIndex {
    /// Any keys, as encoded bytes.
    Encoded(KeyInterner),
    /// One integer (or date / timestamp) key: looked up by value, no encoding; where the
    /// values span at most [`PRESENT_BITS`], a bit per value says whether a build row has
    /// it, so most probe values without a match skip the hash lookup; where they span more
    /// but the keys are few, a bit per hashed value ([`HashedBits`]) does the same.
    Int {
        map: IntMap,
        present: Option<ValueBits>,
        hashed: Option<HashedBits>,
    },
    /// One integer key whose values span a small range (at most [`DENSE_SLOTS_PER_ROW`] slots
    /// per build row): slot `v - min` holds the key's id, `u32::MAX` where no build row has
    /// the value. A lookup is one array read, no hashing.
    Dense {
        min: i64,
        slots: Vec<u32>,
        keys: usize,
    },
    /// One integer key whose values span a larger range (at most [`RANKED_BITS_PER_ROW`]
    /// values per build row, and [`PRESENT_BITS`]): a bit per value, and per word of bits
    /// the number of values set before it, so that a value's id is its rank among the
    /// keys (ids in value order). A lookup reads a bit and, for a match, a count: a few
    /// bytes per key, where a hash map's random reads would miss the cache.
    Ranked { bits: ValueBits, ranks: Vec<u32> },
}

/// A ranked index may span this many values per build row (3 bytes per 16 values).
const RANKED_BITS_PER_ROW: usize = 256;

/// A dense index may spend this many slots (4 bytes each) per build row.
const DENSE_SLOTS_PER_ROW: usize = 16;

/// A hashed integer index keeps a bit per value when its values span at most this many (4 MiB).
const PRESENT_BITS: u128 = 1 << 25;

/// A hashed integer index without a bit per value keeps a bit per hashed value when it has
/// at most this many keys: [`HASHED_BITS_PER_KEY`] bits each fill at most 32 KiB, which
/// stays in the first-level cache.
const HASHED_MAX_KEYS: usize = 1 << 14;

/// Bits per key of a [`HashedBits`]: about one probe value in sixteen without a build row
/// finds its bit set (TPC-H Q20: 8.5K packed (part, supplier) keys, which 99% of the 910K
/// probing line items lack).
const HASHED_BITS_PER_KEY: usize = 16;

/// One bit per hash of an integer value (Fibonacci hashing, as the map's), set for each
/// build key's: a clear bit says no build row has the value; a set bit says one may.
pub(super) struct HashedBits {
    bits: Vec<u64>,
    /// 64 minus log2 of the number of bits.
    shift: u32,
}

impl HashedBits {
    /// The bits of the keys of `map` (`None` when it has more than [`HASHED_MAX_KEYS`]).
    fn of(map: &IntMap) -> Option<Self> {
        if map.len() > HASHED_MAX_KEYS {
            return None;
        }
        let n = (map.len() * HASHED_BITS_PER_KEY)
            .next_power_of_two()
            .max(64);
        let mut hashed = Self {
            bits: vec![0; n / 64],
            shift: 64 - n.trailing_zeros(),
        };
        for key in map.keys() {
            let b = hashed.bit(key);
            hashed.bits[b / 64] |= 1 << (b % 64);
        }
        Some(hashed)
    }

    #[inline]
    fn bit(&self, v: i64) -> usize {
        ((v as u64).wrapping_mul(FIBONACCI) >> self.shift) as usize
    }

    /// Whether some build row may have `v` (false: none has).
    #[inline]
    pub(super) fn may_have(&self, v: i64) -> bool {
        let b = self.bit(v);
        self.bits[b / 64] >> (b % 64) & 1 != 0
    }
}

/// Whether an integer key has a build row, read from an index without hashing.
pub(super) enum CheapKeys<'a> {
    /// A dense index's slots (`u32::MAX`: no row).
    Slots { min: i64, slots: &'a [u32] },
    /// A bit per value.
    Bits(&'a ValueBits),
}

/// One bit per value of `min..min + 64 * bits.len()`: set where some build row has it.
pub(super) struct ValueBits {
    min: i64,
    pub(super) bits: Vec<u64>,
}

impl ValueBits {
    fn new(col: &Column, min: i64, span: usize) -> Self {
        let mut bits = vec![0u64; span.div_ceil(64)];
        for_each_int(col, |_, v| {
            if let Some(v) = v {
                let o = (v - min) as usize;
                bits[o / 64] |= 1 << (o % 64);
            }
        });
        Self { min, bits }
    }

    /// Whether some build row may have `v` (false: none has).
    #[inline]
    pub(super) fn has(&self, v: i64) -> bool {
        // Values below `min` wrap to offsets past the end.
        let o = v.wrapping_sub(self.min) as u64;
        self.bits
            .get((o / 64) as usize)
            .is_some_and(|w| w >> (o % 64) & 1 != 0)
    }

    /// Value `v`'s rank among the values set, `ranks` holding the number set before each
    /// word; `None` when it is not set.
    #[inline]
    pub(super) fn rank(&self, ranks: &[u32], v: i64) -> Option<u32> {
        let o = v.wrapping_sub(self.min) as u64;
        let w = (o / 64) as usize;
        let word = *self.bits.get(w)?;
        let below = word & ((1u64 << (o % 64)) - 1);
        (word >> (o % 64) & 1 != 0).then(|| ranks[w] + below.count_ones())
    }

    /// Which rows of integer-like column `col` hold a value some build row may have (bit
    /// `i` for row `i`, whatever its validity); `None` for other columns. Eight rows at a
    /// time where the processor has AVX-512 (their words of bits gathered at once: 1.0
    /// against 2.4-2.8 ns a row on lineitem's order keys).
    pub(super) fn column_mask(&self, col: &Column) -> Option<Bitmap> {
        Some(match col {
            Column::Int32(x) | Column::Date32(x) => self.mask(x.values()),
            Column::Int64(x) | Column::Timestamp(x) => self.mask(x.values()),
            _ => return None,
        })
    }

    fn mask<T: Copy + Into<i64>>(&self, values: &[T]) -> Bitmap {
        let chunk = |w: usize| &values[w * 64..(w * 64 + 64).min(values.len())];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Bitmap::from_word_fn(values.len(), |w| {
                    match <&[T; 64]>::try_from(chunk(w)) {
                        // SAFETY: the processor has AVX-512F (checked just above).
                        Ok(full) => unsafe { self.word_avx512(full) },
                        Err(_) => self.word(chunk(w)),
                    }
                });
            }
        }
        Bitmap::from_word_fn(values.len(), |w| self.word(chunk(w)))
    }

    /// Keeps the `rows` (each below the column's length) of integer-like column
    /// `col` whose value some build row may have, or whose value is NULL (the probe flags
    /// those); false, leaving them, for other columns. Eight rows at a time where the
    /// processor has AVX-512 (their values and then their words of bits gathered).
    pub(super) fn retain_listed(&self, col: &Column, rows: &mut Vec<u32>) -> bool {
        fn each<T: Copy + Into<i64>>(
            bits: &ValueBits,
            values: &[T],
            valid: Option<&Bitmap>,
            rows: &mut Vec<u32>,
        ) {
            // Checked whole (a pass far cheaper than the gathers): the gathers read at them.
            assert!(
                rows.iter().all(|&r| (r as usize) < values.len()),
                "listed rows lie in the column"
            );
            let keep = |r: u32| {
                valid.is_some_and(|m| !m.get(r as usize)) || bits.has(values[r as usize].into())
            };
            #[cfg(target_arch = "x86_64")]
            {
                // The gathers take rows as signed 32-bit indexes.
                let indexable = values.len() <= i32::MAX as usize;
                let avx512 = std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512vl");
                if valid.is_none() && indexable && avx512 {
                    // SAFETY: the processor has AVX-512F and VL (checked just above); every row
                    // listed is below `values.len()` (asserted above), itself within a
                    // signed 32-bit index.
                    let kept = unsafe { bits.retain_avx512(values, rows) };
                    rows.truncate(kept);
                    return;
                }
            }
            rows.retain(|&r| keep(r));
        }
        match col {
            Column::Int32(x) | Column::Date32(x) => each(self, x.values(), x.validity(), rows),
            Column::Int64(x) | Column::Timestamp(x) => each(self, x.values(), x.validity(), rows),
            _ => return false,
        }
        true
    }

    /// Moves the rows whose value has its bit set to the front of `rows`, in order, and
    /// returns how many: eight rows' values gathered, then their words of bits, then the
    /// kept rows compressed into place (eight rows stored, never past the eight just read).
    ///
    /// # Safety
    /// The processor must have AVX-512F and VL, and every row in `rows` be below
    /// `values.len()`, itself at most `i32::MAX`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vl")]
    unsafe fn retain_avx512<T: Copy + Into<i64>>(&self, values: &[T], rows: &mut [u32]) -> usize {
        use std::arch::x86_64::{
            _mm256_loadu_si256, _mm256_maskz_compress_epi32, _mm256_mmask_i32gather_epi32,
            _mm256_setzero_si256, _mm256_storeu_si256, _mm512_cvtepi32_epi64,
            _mm512_i32gather_epi64,
        };
        let wide = match std::mem::size_of::<T>() {
            8 => true,
            4 => false,
            _ => unreachable!("integer keys are four or eight bytes"),
        };
        let mut kept = 0;
        let full = rows.len() / 8 * 8;
        for k in (0..full).step_by(8) {
            let at = rows[k..k + 8].as_ptr();
            // SAFETY: eight `u32` rows in bounds (k + 8 <= rows.len()), read unaligned; the
            // gathers read `values` at those rows, each below its length (the caller's
            // promise), as `i64` (8-byte values) or `i32` (4-byte ones).
            let (index, v) = unsafe {
                let index = _mm256_loadu_si256(at.cast());
                let v = match wide {
                    true => _mm512_i32gather_epi64::<8>(index, values.as_ptr().cast()),
                    false => _mm512_cvtepi32_epi64(_mm256_mmask_i32gather_epi32::<4>(
                        _mm256_setzero_si256(),
                        0xFF,
                        index,
                        values.as_ptr().cast(),
                    )),
                };
                (index, v)
            };
            let hit = self.test8(v);
            // Compressed in a register and stored whole (the kept rows packed low), not
            // compressed straight to memory, which is slow on AMD's Zen cores.
            // SAFETY: the store writes eight rows at `kept..kept + 8`, and kept <= k, so
            // inside `rows` and never past the eight rows read into `index` above.
            unsafe {
                _mm256_storeu_si256(
                    rows.as_mut_ptr().add(kept).cast(),
                    _mm256_maskz_compress_epi32(hit, index),
                )
            };
            kept += hit.count_ones() as usize;
        }
        for k in full..rows.len() {
            let r = rows[k];
            rows[kept] = r;
            kept += usize::from(self.has(values[r as usize].into()));
        }
        kept
    }

    /// The bits of eight values, as a lane mask: each value's offset from `min`, in range
    /// (unsigned, so values below wrap past it), picks a word of bits, gathered for all
    /// eight, and its low six bits the bit.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn test8(&self, values: std::arch::x86_64::__m512i) -> u8 {
        use std::arch::x86_64::{
            _mm512_and_si512, _mm512_cmplt_epu64_mask, _mm512_mask_i64gather_epi64,
            _mm512_mask_test_epi64_mask, _mm512_set1_epi64, _mm512_setzero_si512,
            _mm512_srli_epi64, _mm512_srlv_epi64, _mm512_sub_epi64,
        };
        let offset = _mm512_sub_epi64(values, _mm512_set1_epi64(self.min));
        let span = _mm512_set1_epi64((self.bits.len() as i64).saturating_mul(64));
        let inside = _mm512_cmplt_epu64_mask(offset, span);
        // SAFETY: only lanes in `inside` are read, whose offsets are below 64 bits per word
        // of `self.bits`, so their word indexes lie in it (8-byte words).
        let words = unsafe {
            _mm512_mask_i64gather_epi64::<8>(
                _mm512_setzero_si512(),
                inside,
                _mm512_srli_epi64::<6>(offset),
                self.bits.as_ptr().cast(),
            )
        };
        let shift = _mm512_and_si512(offset, _mm512_set1_epi64(63));
        let bit = _mm512_and_si512(_mm512_srlv_epi64(words, shift), _mm512_set1_epi64(1));
        _mm512_mask_test_epi64_mask(inside, bit, bit)
    }

    /// The bits of up to 64 values, one at a time.
    #[inline]
    fn word<T: Copy + Into<i64>>(&self, values: &[T]) -> u64 {
        values
            .iter()
            .enumerate()
            .fold(0, |w, (j, &v)| w | u64::from(self.has(v.into())) << j)
    }

    /// The bits of 64 values, eight at a time (see [`ValueBits::test8`]).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn word_avx512<T: Copy + Into<i64>>(&self, values: &[T; 64]) -> u64 {
        use std::arch::x86_64::{
            __m512i, _mm256_loadu_si256, _mm512_cvtepi32_epi64, _mm512_loadu_epi64,
        };
        let load = |k: usize| -> __m512i {
            let at = values[8 * k..8 * k + 8].as_ptr();
            match std::mem::size_of::<T>() {
                // SAFETY: `at` points at eight values of `T` (in bounds: the slice above);
                // eight bytes each are `i64`s, four bytes `i32`s (the only integer types
                // `Into<i64>` that wide), read unaligned.
                8 => unsafe { _mm512_loadu_epi64(at.cast()) },
                4 => unsafe { _mm512_cvtepi32_epi64(_mm256_loadu_si256(at.cast())) },
                _ => unreachable!("integer keys are four or eight bytes"),
            }
        };
        if !matches!(std::mem::size_of::<T>(), 4 | 8) {
            return self.word(values);
        }
        let mut word = 0u64;
        for k in 0..8 {
            word |= u64::from(self.test8(load(k))) << (8 * k);
        }
        word
    }

    /// The number of values set before each word.
    fn ranks(&self) -> Vec<u32> {
        let mut before = 0u32;
        self.bits
            .iter()
            .map(|w| {
                let r = before;
                before += w.count_ones();
                r
            })
            .collect()
    }
}

/// For keys packed from several columns: a bit per value of the first column, where its
/// values span at most [`PRESENT_BITS`] and [`RANKED_BITS_PER_ROW`] per row. A probe row
/// whose first key has no bit set finds no match, so a scan can rule it out before the
/// probe reads and packs the other keys (TPC-H Q20: 1% of line items have one of the 2.1K
/// parts of its 8.5K (part, supplier) pairs).
pub(super) fn first_key_bits(first: &Column) -> Option<ValueBits> {
    let (lo, hi) = int_range(first)?;
    let span = (hi as i128 - lo as i128 + 1) as u128;
    let per_row = (first.len() * RANKED_BITS_PER_ROW) as u128;
    (span <= PRESENT_BITS && span <= per_row).then(|| ValueBits::new(first, lo, span as usize))
}

/// A dense index is always allowed this many slots, however few the rows.
const DENSE_MIN_SLOTS: usize = 1 << 16;

impl KeyIndex {
    pub(super) fn len(&self) -> usize {
        match self {
            KeyIndex::Encoded(k) => k.len(),
            KeyIndex::Int { map, .. } => map.len(),
            KeyIndex::Dense { keys, .. } => *keys,
            KeyIndex::Ranked { bits, ranks } => {
                ranks.last().map_or(0, |&r| r as usize)
                    + bits.bits.last().map_or(0, |w| w.count_ones() as usize)
            }
        }
    }

    /// Interns the integer keys of a build column: each row's key id (`u32::MAX` for NULL).
    /// When the range is small the keys are indexed by value in an array, built on up to
    /// `threads` workers, ids in value order; otherwise hashed, ids in first-seen order.
    pub(super) fn int_keys(
        col: &Column,
        key_of_row: &mut [u32],
        threads: usize,
    ) -> (KeyIndex, bool) {
        let has_null = col.null_count() > 0;
        let range = int_range(col);
        let rows = key_of_row.len();
        let span = range.map_or(0, |(lo, hi)| (hi as i128 - lo as i128 + 1) as u128);
        let budget = (rows * DENSE_SLOTS_PER_ROW).max(DENSE_MIN_SLOTS);
        if span <= budget as u128 {
            let min = range.map_or(0, |(lo, _)| lo);
            let (slots, keys) = dense_slots(col, min, span as usize, key_of_row, threads);
            return (KeyIndex::Dense { min, slots, keys }, has_null);
        }
        let min = range.map_or(0, |(lo, _)| lo);
        if span <= PRESENT_BITS && span <= (rows * RANKED_BITS_PER_ROW) as u128 {
            let bits = ValueBits::new(col, min, span as usize);
            let ranks = bits.ranks();
            key_ids_by_chunks(col, key_of_row, threads, |v| bits.rank(&ranks, v));
            return (KeyIndex::Ranked { bits, ranks }, has_null);
        }
        // Room for every row's key up front (up to 4M): growing by rehashing cost more than
        // the build's other steps together (Q21's 729K unique order keys).
        let mut map = IntMap::with_capacity(rows.min(1 << 22));
        for_each_int(col, |r, v| {
            if let Some(v) = v {
                let next = map.len() as u32;
                key_of_row[r] = map.get_or_insert(v, || next);
            }
        });
        let present = (span <= PRESENT_BITS).then(|| ValueBits::new(col, min, span as usize));
        let hashed = match present {
            Some(_) => None,
            None => HashedBits::of(&map),
        };
        let index = KeyIndex::Int {
            map,
            present,
            hashed,
        };
        (index, has_null)
    }

    /// For unique keys: makes every entry hold its key's row instead of its id (an array
    /// index by ranges on up to `threads` workers). A ranked index keeps ids (its entries
    /// are counts): its lookups read the row of an id.
    pub(super) fn ids_to_rows(&mut self, rows: &[u32], threads: usize) {
        match self {
            KeyIndex::Int { map, .. } => map.ids_mut().for_each(|v| *v = rows[*v as usize]),
            KeyIndex::Dense { slots, .. } => {
                let per_task = slots.len().div_ceil(threads.max(1)).max(1);
                parallel_map(threads, slots.chunks_mut(per_task).collect(), |_, chunk| {
                    chunk
                        .iter_mut()
                        .filter(|v| **v != u32::MAX)
                        .for_each(|v| *v = rows[*v as usize])
                });
            }
            KeyIndex::Encoded(_) | KeyIndex::Ranked { .. } => {}
        }
    }

    /// A test of whether an integer key has a build row that costs about a comparison (an
    /// array slot or a bit); `None` for the hashed and encoded indexes.
    pub(super) fn cheap_keys(&self) -> Option<CheapKeys<'_>> {
        match self {
            KeyIndex::Dense { min, slots, .. } => Some(CheapKeys::Slots { min: *min, slots }),
            KeyIndex::Ranked { bits, .. }
            | KeyIndex::Int {
                present: Some(bits),
                ..
            } => Some(CheapKeys::Bits(bits)),
            KeyIndex::Int { present: None, .. } | KeyIndex::Encoded(_) => None,
        }
    }

    /// How keys are looked up, for EXPLAIN ANALYZE.
    pub(super) fn describe(&self) -> String {
        match self {
            KeyIndex::Encoded(_) => "hashed as encoded bytes".into(),
            KeyIndex::Int {
                present: None,
                hashed: Some(h),
                ..
            } => format!(
                "hashed by integer value, a bit per hashed value ({} bits) tested first",
                h.bits.len() * 64
            ),
            KeyIndex::Int { present: None, .. } => "hashed by integer value".into(),
            KeyIndex::Int {
                present: Some(p), ..
            } => format!(
                "hashed by integer value, a bit per value in a range of {}",
                p.bits.len() * 64
            ),
            KeyIndex::Dense { slots, .. } => {
                format!("indexed by value (an array of {} slots)", slots.len())
            }
            KeyIndex::Ranked { bits, .. } => format!(
                "indexed by value (a bit per value in a range of {}, ranked)",
                bits.bits.len() * 64
            ),
        }
    }

    /// Memory held by the index.
    pub(super) fn heap_bytes(&self) -> usize {
        match self {
            KeyIndex::Encoded(k) => k.heap_bytes(),
            KeyIndex::Int {
                map,
                present,
                hashed,
            } => {
                map.heap_bytes()
                    + present.as_ref().map_or(0, |p| p.bits.len() * 8)
                    + hashed.as_ref().map_or(0, |h| h.bits.len() * 8)
            }
            KeyIndex::Dense { slots, .. } => slots.capacity() * 4,
            KeyIndex::Ranked { bits, ranks } => bits.bits.len() * 8 + ranks.len() * 4,
        }
    }
}

/// A dense index over integer keys `min..min + span`: slot `v - min` holds value `v`'s id
/// (ids in value order), `u32::MAX` where no row has it; each row's id goes to `key_of_row`.
/// Returns the slots and the number of distinct keys. The slots are split into one range per
/// worker (each marks the values of its range, then numbers them from its range's base), and
/// the rows into chunks, so the result is the same on any number of workers.
fn dense_slots(
    col: &Column,
    min: i64,
    span: usize,
    key_of_row: &mut [u32],
    threads: usize,
) -> (Vec<u32>, usize) {
    // Zeroed (0: no row has the value) memory comes untouched from the system, so the
    // workers touch its pages each in its own range.
    let mut slots = vec![0u32; span];
    let mut ranges = Vec::new();
    let mut rest = slots.as_mut_slice();
    for (lo, hi) in even_ranges(span, threads) {
        let (range, after) = rest.split_at_mut(hi - lo);
        ranges.push((lo, range));
        rest = after;
    }
    // Mark each range's values (1), counting them. Values outside the range (those below
    // wrap to offsets past its end) and NULLs mark one place past it: no branch per row
    // (with two workers, whether a value is a worker's own is a coin toss).
    let marked = parallel_map(threads, ranges, |_, (lo, range)| {
        let past = range.len();
        let mut marks = vec![0u8; past + 1];
        for_each_int(col, |_, v| {
            let at = v.map_or(past, |v| ((v - min) as usize).wrapping_sub(lo).min(past));
            marks[at] = 1;
        });
        let mut distinct = 0u32;
        for (slot, &m) in range.iter_mut().zip(&marks) {
            *slot = u32::from(m);
            distinct += u32::from(m);
        }
        (range, distinct)
    });
    let keys: u32 = marked.iter().map(|(_, d)| d).sum();
    let mut base = 0u32;
    let numbered: Vec<(u32, &mut [u32])> = marked
        .into_iter()
        .map(|(range, distinct)| {
            let b = base;
            base += distinct;
            (b, range)
        })
        .collect();
    parallel_map(threads, numbered, |_, (base, range)| {
        let mut id = base;
        for slot in range.iter_mut() {
            if *slot == 0 {
                *slot = u32::MAX;
            } else {
                *slot = id;
                id += 1;
            }
        }
    });
    let slots_ref = &slots;
    key_ids_by_chunks(col, key_of_row, threads, |v| {
        Some(slots_ref[(v - min) as usize])
    });
    (slots, keys as usize)
}

/// Every non-NULL row's key id, `id(value)`, into `key_of_row`, a chunk of rows per task.
fn key_ids_by_chunks(
    col: &Column,
    key_of_row: &mut [u32],
    threads: usize,
    id: impl Fn(i64) -> Option<u32> + Sync,
) {
    const ROWS_PER_TASK: usize = 1 << 16;
    let chunks: Vec<(usize, &mut [u32])> = key_of_row
        .chunks_mut(ROWS_PER_TASK)
        .enumerate()
        .map(|(i, c)| (i * ROWS_PER_TASK, c))
        .collect();
    parallel_map(threads, chunks, |_, (offset, chunk)| {
        let part = col.slice(offset, chunk.len());
        for_each_int(&part, |r, v| {
            if let Some(id) = v.and_then(&id) {
                chunk[r] = id;
            }
        });
    });
}

/// `0..n` cut into one range per worker (at least one range), as even as they come.
pub(super) fn even_ranges(n: usize, threads: usize) -> impl Iterator<Item = (usize, usize)> {
    let parts = threads.clamp(1, n.max(1));
    (0..parts).map(move |t| (n * t / parts, n * (t + 1) / parts))
}

#[cfg(test)]
mod tests {
    use morsel_storage::test_rng::Rng;
    use morsel_storage::{DataType, PrimitiveColumn};

    use super::*;

    /// A column's mask of values with a bit set equals testing each value alone, for 4- and
    /// 8-byte values, below, inside and past the range (and far past it, where the offset
    /// wraps), at lengths around the 8- and 64-value steps.
    #[test]
    fn a_columns_mask_tests_each_value() {
        let mut r = Rng(77);
        let set: Vec<i64> = (0..300).map(|_| -1000 + r.below(5000) as i64).collect();
        let build = Column::Int64(PrimitiveColumn::from_options(set.iter().map(|&v| Some(v))));
        let bits = ValueBits::new(&build, -1000, 5000);
        for len in [0, 1, 7, 8, 63, 64, 65, 200, 1000] {
            let values: Vec<i64> = (0..len)
                .map(|_| match r.below(8) {
                    0 => i64::MIN + r.below(100) as i64,
                    1 => i64::MAX - r.below(100) as i64,
                    _ => -1100 + r.below(5300) as i64,
                })
                .collect();
            let want: Vec<bool> = values.iter().map(|&v| bits.has(v)).collect();
            let wide = Column::Int64(PrimitiveColumn::from_options(
                values.iter().map(|&v| Some(v)),
            ));
            let got: Vec<bool> = bits.column_mask(&wide).unwrap().iter().collect();
            assert_eq!(got, want, "8-byte values, {len}");
            let narrow: Vec<i32> = values
                .iter()
                .map(|&v| v.clamp(-5000, 5000) as i32)
                .collect();
            let want: Vec<bool> = narrow.iter().map(|&v| bits.has(v.into())).collect();
            let col = Column::Int32(PrimitiveColumn::from_options(
                narrow.iter().map(|&v| Some(v)),
            ));
            let got: Vec<bool> = bits.column_mask(&col).unwrap().iter().collect();
            assert_eq!(got, want, "4-byte values, {len}");
        }
        assert!(bits
            .column_mask(&Column::new_null(DataType::Utf8, 3))
            .is_none());
    }

    /// Keeping the listed rows whose value has its bit set equals testing each row alone,
    /// for 4- and 8-byte values, with NULLs (kept, for the probe to flag) and without, at
    /// list lengths around the 8-row step.
    #[test]
    fn listed_rows_keep_those_whose_value_may_match() {
        let mut r = Rng(78);
        let set: Vec<i64> = (0..200).map(|_| r.below(3000) as i64).collect();
        let build = Column::Int64(PrimitiveColumn::from_options(set.iter().map(|&v| Some(v))));
        let bits = ValueBits::new(&build, 0, 3000);
        for len in [0, 5, 8, 9, 64, 301] {
            let values: Vec<Option<i64>> = (0..len + 40)
                .map(|_| (r.below(8) != 0).then(|| r.below(3500) as i64 - 100))
                .collect();
            let rows: Vec<u32> = (0..values.len() as u32)
                .filter(|_| r.below(3) != 0)
                .collect();
            for nulls in [false, true] {
                let values: Vec<Option<i64>> = match nulls {
                    true => values.clone(),
                    false => values.iter().map(|v| Some(v.unwrap_or(7))).collect(),
                };
                let want: Vec<u32> = rows
                    .iter()
                    .copied()
                    .filter(|&i| values[i as usize].is_none_or(|v| bits.has(v)))
                    .collect();
                let wide = Column::Int64(PrimitiveColumn::from_options(values.iter().copied()));
                let narrow = Column::Int32(PrimitiveColumn::from_options(
                    values.iter().map(|v| v.map(|v| v as i32)),
                ));
                for col in [wide, narrow] {
                    let mut got = rows.clone();
                    assert!(bits.retain_listed(&col, &mut got));
                    assert_eq!(got, want, "{len} rows, NULLs {nulls}");
                }
            }
        }
        let mut rows = vec![0, 1];
        assert!(!bits.retain_listed(&Column::new_null(DataType::Utf8, 3), &mut rows));
        assert_eq!(rows, vec![0, 1]);
    }
}
