//! A batch's group ids looked up by the key values themselves, not by encoding every row's
//! key: one integer-like key by value ([`IntIds`]), one text key by its bytes ([`StrIds`]),
//! and two to four integer-like or text keys by small ids per column packed into one integer
//! ([`MultiIds`]). The ids are the group table's: a key's encoded bytes are interned only the
//! first time it is seen, so every path gives the ids, key bytes and hashes encoding the rows
//! would. [`IntIds`] asks its caller for a new value's id instead, so that a table of one
//! integer key can hold its values without encoding them (see [`super::int_groups`]).

use std::hash::BuildHasher;

use foldhash::fast::FixedState;
use hashbrown::{HashMap, HashTable};
use morsel_storage::{Column, DataType, Utf8Column};

use super::int_map::IntMap;
use super::keys::{
    encode_int, encode_str, for_each_int, hash_key, int_range, str_of_key, KeyInterner,
};
use crate::kernels::compare::bytes_eq;

/// Hashes a string's bytes for [`StrIds`] (its own table; interned keys keep the hash of
/// their encoding).
pub(super) const STR_HASHER: FixedState = FixedState::with_seed(0x7374_7269_6e67_7321);

/// Group ids of a single text key by the string's bytes (NULL has its own), the ids being
/// the partial's interned ids: a row is looked up without encoding its key.
#[derive(Default)]
pub struct StrIds {
    /// Strings of eight bytes or more, by their bytes (compared with the interned key's).
    table: HashTable<u32>,
    /// Strings under eight bytes, by the word of their bytes and length ([`short_word`]),
    /// held beside the id: found with one comparison of words.
    short: HashTable<(u64, u32)>,
    null: Option<u32>,
}

/// Mixes a short string's word into a hash (a multiplication folded to 64 bits).
fn word_hash(word: u64) -> u64 {
    let m = u128::from(word) * 0x9E37_79B9_7F4A_7C15;
    (m as u64) ^ ((m >> 64) as u64)
}

impl StrIds {
    /// Makes room for `groups` strings.
    pub(super) fn reserve(&mut self, groups: usize) {
        self.short.reserve(groups, |&(w, _)| word_hash(w));
    }

    /// Distinct strings under eight bytes seen.
    #[cfg(test)]
    pub(super) fn short_strings(&self) -> usize {
        self.short.len()
    }

    /// Every row's group id, interning each new string's encoded key in `keys`.
    pub(super) fn ids(&mut self, col: &Utf8Column, keys: &mut KeyInterner) -> Vec<u32> {
        let mut ids = Vec::with_capacity(col.len());
        let mut encoded = Vec::new();
        let (offsets, data) = (col.offsets(), col.data());
        for i in 0..col.len() {
            if !col.is_valid(i) {
                let id = *self.null.get_or_insert_with(|| {
                    encode_str(None, &mut encoded);
                    keys.intern(&encoded, hash_key(&encoded)).0
                });
                ids.push(id);
                continue;
            }
            let (start, end) = (offsets[i] as usize, offsets[i + 1] as usize);
            let bytes = &data[start..end];
            if let Some(word) = short_key(data, start, end) {
                let hash = word_hash(word);
                let id = match self.short.find(hash, |&(w, _)| w == word) {
                    Some(&(_, id)) => id,
                    None => {
                        encode_str(Some(bytes), &mut encoded);
                        let id = keys.intern(&encoded, hash_key(&encoded)).0;
                        self.short
                            .insert_unique(hash, (word, id), |&(w, _)| word_hash(w));
                        id
                    }
                };
                ids.push(id);
                continue;
            }
            let hash = STR_HASHER.hash_one(bytes);
            let found = self.table.find(hash, |&id| {
                bytes_eq(str_of_key(keys.key(id as usize)), bytes)
            });
            let id = match found {
                Some(&id) => id,
                None => {
                    encode_str(Some(bytes), &mut encoded);
                    let id = keys.intern(&encoded, hash_key(&encoded)).0;
                    self.table.insert_unique(hash, id, |&g| {
                        STR_HASHER.hash_one(str_of_key(keys.key(g as usize)))
                    });
                    id
                }
            };
            ids.push(id);
        }
        ids
    }
}

/// A batch's integer keys are read through an array of their range when it holds at most
/// this many slots per row.
const BATCH_SLOTS_PER_ROW: usize = 4;

/// Group ids of a single integer-like key by value (NULL has its own), the ids being given by
/// the caller the first time a value is seen.
#[derive(Default)]
pub struct IntIds {
    map: IntMap,
    null: Option<u32>,
    /// The smallest and largest value seen.
    range: Option<(i64, i64)>,
    /// Ids by value minus the smallest, for values known to lie in a small range (ahead of
    /// a merge, from its partials): read without hashing. Values outside go to `map`.
    dense: Option<(i64, Vec<u32>)>,
}

/// An empty slot of [`IntIds`]'s dense ids.
const NO_ID: u32 = u32::MAX;

impl IntIds {
    /// Ids for values expected within `min..=max` (a small range), held in an array.
    pub(super) fn over_range(min: i64, max: i64) -> Self {
        let span = (max as i128 - min as i128 + 1).max(0) as usize;
        Self {
            dense: Some((min, vec![NO_ID; span])),
            ..Self::default()
        }
    }

    /// The dense slot of value `v`, if ids are held in an array that covers it.
    #[inline]
    fn dense_slot(&mut self, v: i64) -> Option<&mut u32> {
        let (min, slots) = self.dense.as_mut()?;
        slots.get_mut(usize::try_from(v.checked_sub(*min)?).ok()?)
    }

    /// The smallest and largest non-NULL value, and whether NULL has an id too.
    pub(super) fn range(&self) -> (Option<(i64, i64)>, bool) {
        (self.range, self.null.is_some())
    }

    /// The id of value `v`, if it has one.
    pub(super) fn get(&self, v: i64) -> Option<u32> {
        if let Some((min, slots)) = &self.dense {
            let slot = v
                .checked_sub(*min)
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| slots.get(i));
            if let Some(&id) = slot.filter(|&&id| id != NO_ID) {
                return Some(id);
            }
        }
        self.map.get(v)
    }

    /// Makes room for `more` values.
    pub(super) fn reserve(&mut self, more: usize) {
        self.map.reserve(more);
    }

    /// Memory held.
    pub(super) fn heap_bytes(&self) -> usize {
        self.map.heap_bytes() + self.dense.as_ref().map_or(0, |(_, slots)| slots.len() * 4)
    }

    /// Every row's group id; `first(v)` gives the id (and whether it is a new group) of a
    /// value not seen here before. When the batch's values span a small range (sorted or
    /// clustered keys, few values), a value's id is looked up in the map once per batch and
    /// then read from an array.
    pub(super) fn ids(
        &mut self,
        col: &Column,
        mut first: impl FnMut(Option<i64>) -> (u32, bool),
    ) -> Vec<u32> {
        let rows = col.len();
        let mut ids = Vec::with_capacity(rows);
        // (Ids held in an array need no range of their own.)
        let range = self.dense.is_none().then(|| int_range(col)).flatten();
        let span = range.map_or(0, |(lo, hi)| hi as i128 - lo as i128 + 1);
        let small = span <= (BATCH_SLOTS_PER_ROW * rows) as i128;
        let fresh = self.map.len() == 0 && self.null.is_none();
        match range {
            Some((min, _)) if small && fresh => {
                // A fresh table's ids for a small range are held in an array of it, no
                // hashing (a morsel's table when keys are clustered: TPC-H Q18's order keys);
                // values of later batches outside the range go to the map.
                let mut slots = vec![NO_ID; span as usize];
                let mut null = None;
                for_each_int(col, |_, v| {
                    let slot = match v {
                        Some(x) => &mut slots[(x - min) as usize],
                        None => null.get_or_insert(NO_ID),
                    };
                    if *slot == NO_ID {
                        *slot = first(v).0;
                    }
                    ids.push(*slot);
                });
                self.dense = Some((min, slots));
                self.null = null;
                self.range = range;
            }
            Some((min, _)) if small => {
                let mut seen = vec![u32::MAX; span as usize];
                for_each_int(col, |_, v| {
                    let id = match v {
                        Some(x) => {
                            let slot = &mut seen[(x - min) as usize];
                            if *slot == u32::MAX {
                                *slot = self.id(v, || first(v)).0;
                            }
                            *slot
                        }
                        None => self.id(None, || first(None)).0,
                    };
                    ids.push(id);
                });
            }
            _ => for_each_int(col, |_, v| ids.push(self.id(v, || first(v)).0)),
        }
        ids
    }

    /// The group id of one value, and whether it is a new group; `first()` gives both the
    /// first time the value is seen here.
    #[inline]
    pub(super) fn id(
        &mut self,
        v: Option<i64>,
        first: impl FnOnce() -> (u32, bool),
    ) -> (u32, bool) {
        match v {
            Some(x) => {
                if let Some(slot) = self.dense_slot(x) {
                    if *slot != NO_ID {
                        return (*slot, false);
                    }
                    let (id, new) = first();
                    *slot = id;
                    self.range = Some(self.range.map_or((x, x), |(lo, hi)| (lo.min(x), hi.max(x))));
                    return (id, new);
                }
                let mut new = None;
                let id = self.map.get_or_insert(x, || {
                    let (id, is_new) = first();
                    new = Some(is_new);
                    id
                });
                match new {
                    None => (id, false),
                    Some(new) => {
                        self.range =
                            Some(self.range.map_or((x, x), |(lo, hi)| (lo.min(x), hi.max(x))));
                        (id, new)
                    }
                }
            }
            None => match self.null {
                Some(id) => (id, false),
                None => {
                    let (id, new) = first();
                    self.null = Some(id);
                    (id, new)
                }
            },
        }
    }
}

/// Interns the encoded key of integer-like value `v` of type `ty` in `keys`: its id and
/// whether it is new (the first sighting [`IntIds`] asks for when ids are interned keys).
pub(super) fn intern_int(keys: &mut KeyInterner, v: Option<i64>, ty: DataType) -> (u32, bool) {
    let mut buf = [0u8; 9];
    let key = encode_int(v, ty, &mut buf);
    keys.intern(key, hash_key(key))
}

/// The most key columns [`MultiIds`] packs (each gets 64 / columns bits).
pub const MULTI_MAX_COLUMNS: usize = 4;

/// Whether [`MultiIds`] should group by `cols`: two to [`MULTI_MAX_COLUMNS`] columns, each
/// integer-like or short text (under eight bytes a value on average: longer text is hashed
/// once per column and again in the key, slower than encoding the key once; TPC-H Q16).
pub fn multi_key_columns(cols: &[Column]) -> bool {
    (2..=MULTI_MAX_COLUMNS).contains(&cols.len())
        && cols.iter().all(|c| match c {
            Column::Int32(_) | Column::Date32(_) | Column::Int64(_) | Column::Timestamp(_) => true,
            Column::Utf8(s) => {
                let o = s.offsets();
                o[o.len() - 1] - o[0] < 8 * s.len() as i64
            }
            _ => false,
        })
}

/// Group ids of two to four integer-like or text key columns. Each column's values get small
/// ids of their own (NULL one too); a row's column ids, packed side by side into one integer,
/// find its group, and the row's key is encoded only when that integer is new. Once a column
/// has more values than its share of the 64 bits holds, the table is `full` and its rows are
/// encoded as any other multi-column key's.
#[derive(Default)]
pub struct MultiIds {
    columns: Vec<ValueIds>,
    groups: HashMap<u64, u32, FixedState>,
    full: bool,
    /// With few value combinations, the group of each by [`dense_index`] (`u32::MAX`: not
    /// seen), for the columns' value counts `dense_counts`.
    dense: Vec<u32>,
    dense_counts: Vec<u32>,
}

impl MultiIds {
    /// Whether a column outgrew its bits (rows are encoded from then on).
    #[cfg(test)]
    pub fn full(&self) -> bool {
        self.full
    }

    /// Every row's group id, or `None` once the table is full (the caller encodes the rows).
    /// Columns other than [`multi_key_columns`] admits also give `None`.
    pub fn ids(&mut self, cols: &[Column], keys: &mut KeyInterner) -> Option<Vec<u32>> {
        if self.full || !multi_key_columns(cols) {
            return None;
        }
        let rows = cols.first().map_or(0, Column::len);
        let bits = 64 / cols.len() as u32;
        let limit = if bits >= 32 {
            u32::MAX
        } else {
            (1u32 << bits) - 1
        };
        self.columns.resize_with(cols.len(), ValueIds::default);
        if let Some(ids) = self.ids_of_bytes(cols, bits, limit, keys) {
            return Some(ids);
        }
        let mut packed = vec![0u64; rows];
        for (k, (col, ids)) in cols.iter().zip(&mut self.columns).enumerate() {
            if !ids.pack(col, bits * k as u32, limit, &mut packed) {
                self.full = true;
                return None;
            }
        }
        let counts: Vec<u32> = self.columns.iter().map(|c| c.count).collect();
        let combinations = counts
            .iter()
            .try_fold(1usize, |n, &c| n.checked_mul(c as usize));
        let dense = combinations.filter(|&n| n <= DENSE_GROUPS.min(rows));
        // Few value combinations: groups are read through an array indexed by the column
        // ids in mixed radix, filled from the map when the columns' value counts change.
        if let Some(n) = dense {
            self.refresh_dense(counts, n, bits, limit);
        }
        let Self {
            groups,
            dense: array,
            dense_counts,
            ..
        } = self;
        let mut encoded = Vec::new();
        let mut group_of = |row: usize, p: u64| {
            *groups.entry(p).or_insert_with(|| {
                encode_row(cols, row, &mut encoded);
                keys.intern(&encoded, hash_key(&encoded)).0
            })
        };
        let rows_ids = packed.iter().enumerate();
        let ids = if dense.is_some() {
            rows_ids
                .map(|(row, &p)| {
                    let slot = &mut array[dense_index(p, bits, limit, dense_counts)];
                    if *slot == u32::MAX {
                        *slot = group_of(row, p);
                    }
                    *slot
                })
                .collect()
        } else {
            rows_ids.map(|(row, &p)| group_of(row, p)).collect()
        };
        Some(ids)
    }

    /// Sizes the array of groups for `n` combinations of the columns' value counts `counts`
    /// and fills it from the map, unless it is already for those counts.
    fn refresh_dense(&mut self, counts: Vec<u32>, n: usize, bits: u32, limit: u32) {
        if self.dense_counts != counts {
            self.dense = vec![u32::MAX; n];
            for (&p, &id) in &self.groups {
                self.dense[dense_index(p, bits, limit, &counts)] = id;
            }
            self.dense_counts = counts;
        }
    }

    /// Every row's group id when each key column is text of one byte a row without NULLs
    /// (flags and codes: TPC-H Q1's two) whose values have few combinations: a row's slot in
    /// the array of groups is computed from its bytes' value ids directly, where packing
    /// the ids first took a pass over a word a row per column and another to read them
    /// (Q1: 14% of its profile). `None` for other columns or many combinations, which the
    /// caller packs (the value ids given here stay: they are what packing would give).
    fn ids_of_bytes(
        &mut self,
        cols: &[Column],
        bits: u32,
        limit: u32,
        keys: &mut KeyInterner,
    ) -> Option<Vec<u32>> {
        let bytes: Vec<&[u8]> = cols
            .iter()
            .map(|c| match c {
                Column::Utf8(s) if s.validity().is_none() && s.all_of_width(1) => {
                    let start = s.offsets()[0] as usize;
                    Some(&s.data()[start..start + s.len()])
                }
                _ => None,
            })
            .collect::<Option<_>>()?;
        let rows = bytes.first().map_or(0, |b| b.len());
        for (ids, b) in self.columns.iter_mut().zip(&bytes) {
            ids.number_bytes(b);
        }
        let counts: Vec<u32> = self.columns.iter().map(|c| c.count).collect();
        let n = (counts.iter())
            .try_fold(1usize, |n, &c| n.checked_mul(c as usize))
            .filter(|&n| n <= DENSE_GROUPS.min(rows))?;
        self.refresh_dense(counts, n, bits, limit);
        let strides: Vec<usize> = (self.dense_counts.iter())
            .scan(1usize, |stride, &c| {
                let s = *stride;
                *stride *= c as usize;
                Some(s)
            })
            .collect();
        let Self {
            columns,
            groups,
            dense,
            ..
        } = self;
        let tables: Vec<&[u32]> = columns.iter().map(|c| c.bytes.as_slice()).collect();
        let mut encoded = Vec::new();
        let mut group_of = |row: usize| {
            // The packed column ids, as the map keys groups.
            let p = (tables.iter().zip(&bytes).enumerate())
                .map(|(k, (t, b))| u64::from(t[b[row] as usize]) << (bits * k as u32))
                .fold(0, |p, id| p | id);
            *groups.entry(p).or_insert_with(|| {
                encode_row(cols, row, &mut encoded);
                keys.intern(&encoded, hash_key(&encoded)).0
            })
        };
        let mut ids = Vec::with_capacity(rows);
        match (tables.as_slice(), bytes.as_slice()) {
            // Two columns (the most common shape) without the loop.
            ([t0, t1], [b0, b1]) => {
                for (row, (&x, &y)) in b0.iter().zip(*b1).enumerate() {
                    let slot =
                        &mut dense[t0[x as usize] as usize + t1[y as usize] as usize * strides[1]];
                    if *slot == u32::MAX {
                        *slot = group_of(row);
                    }
                    ids.push(*slot);
                }
            }
            _ => {
                for row in 0..rows {
                    let at = (tables.iter().zip(&bytes).zip(&strides))
                        .map(|((t, b), &s)| t[b[row] as usize] as usize * s)
                        .sum::<usize>();
                    if dense[at] == u32::MAX {
                        dense[at] = group_of(row);
                    }
                    ids.push(dense[at]);
                }
            }
        }
        Some(ids)
    }
}

/// [`MultiIds`] reads groups through an array when the columns' values have at most this
/// many combinations (and no more than the batch has rows).
const DENSE_GROUPS: usize = 4096;

/// The column ids packed in `p` (`bits` apiece, each at most `limit`) as one number in mixed
/// radix, column k's digit running to `counts[k]`.
#[inline]
fn dense_index(p: u64, bits: u32, limit: u32, counts: &[u32]) -> usize {
    if let [first, _] = counts {
        // Two columns (the most common shape) without the loop.
        return (p & u64::from(limit)) as usize + (p >> bits) as usize * *first as usize;
    }
    let mut index = 0;
    let mut stride = 1;
    for (k, &c) in counts.iter().enumerate() {
        let id = (p >> (bits * k as u32)) & u64::from(limit);
        index += id as usize * stride;
        stride *= c as usize;
    }
    index
}

/// One key column's values and their small ids, in first-seen order.
#[derive(Default)]
struct ValueIds {
    ints: HashMap<i64, u32, FixedState>,
    /// Text of one byte (flags, codes), by that byte; `u32::MAX` where not yet seen.
    bytes: Vec<u32>,
    /// Text of up to seven bytes, by a word holding its bytes and length.
    short: HashMap<u64, u32, FixedState>,
    long: HashMap<Box<[u8]>, u32, FixedState>,
    null: Option<u32>,
    count: u32,
}

impl ValueIds {
    /// Numbers the bytes of a one-byte text column not seen before, in row order (as
    /// [`ValueIds::pack`] would).
    fn number_bytes(&mut self, bytes: &[u8]) {
        if self.bytes.is_empty() {
            self.bytes.resize(256, u32::MAX);
        }
        for &b in bytes {
            let slot = &mut self.bytes[b as usize];
            if *slot == u32::MAX {
                *slot = self.count;
                self.count += 1;
            }
        }
    }

    /// ORs every row's value id, shifted left by `shift`, into `packed`; false (and `packed`
    /// unusable) once the column has more than `limit` + 1 values.
    fn pack(&mut self, col: &Column, shift: u32, limit: u32, packed: &mut [u64]) -> bool {
        let Self {
            ints,
            bytes: by_byte,
            short,
            long,
            null,
            count,
        } = self;
        let mut fresh = || {
            let id = *count;
            *count = count.saturating_add(1);
            id
        };
        match col {
            Column::Utf8(s) if s.validity().is_none() && s.all_of_width(1) => {
                // Flags and codes: each row's byte is its value.
                if by_byte.is_empty() {
                    by_byte.resize(256, u32::MAX);
                }
                let start = s.offsets()[0] as usize;
                let bytes = &s.data()[start..start + packed.len()];
                for (p, &b) in packed.iter_mut().zip(bytes) {
                    let slot = &mut by_byte[b as usize];
                    if *slot == u32::MAX {
                        *slot = fresh();
                    }
                    *p |= u64::from(*slot) << shift;
                }
            }
            Column::Utf8(s) => {
                for (i, p) in packed.iter_mut().enumerate() {
                    let id = if !s.is_valid(i) {
                        *null.get_or_insert_with(&mut fresh)
                    } else {
                        let bytes = s.value_bytes(i);
                        if let [b] = bytes {
                            if by_byte.is_empty() {
                                by_byte.resize(256, u32::MAX);
                            }
                            let slot = &mut by_byte[*b as usize];
                            if *slot == u32::MAX {
                                *slot = fresh();
                            }
                            *slot
                        } else if bytes.len() < 8 {
                            *short.entry(short_word(bytes)).or_insert_with(&mut fresh)
                        } else if let Some(&id) = long.get(bytes) {
                            id
                        } else {
                            let id = fresh();
                            long.insert(bytes.into(), id);
                            id
                        }
                    };
                    *p |= u64::from(id) << shift;
                }
            }
            _ => for_each_int(col, |i, v| {
                let id = match v {
                    Some(x) => *ints.entry(x).or_insert_with(&mut fresh),
                    None => *null.get_or_insert_with(&mut fresh),
                };
                packed[i] |= u64::from(id) << shift;
            }),
        }
        // Ids run 0..count: all fit while the last one does.
        *count == 0 || *count - 1 <= limit
    }
}

/// The word ([`short_word`]) of the string at `start..end` of `data` when it is under eight
/// bytes, read at once where eight bytes lie in the buffer (its bytes past the string's
/// masked off); `None` for a longer one.
#[inline]
fn short_key(data: &[u8], start: usize, end: usize) -> Option<u64> {
    let len = end - start;
    if len >= 8 {
        return None;
    }
    Some(match data.get(start..start + 8) {
        Some(eight) => {
            let w = u64::from_le_bytes(eight.try_into().expect("eight bytes"));
            (w & ((1u64 << (8 * len)) - 1)) | (len as u64) << 56
        }
        None => short_word(&data[start..end]),
    })
}

/// Hands `f` each row of `col` in `rows` with a hash of its string as cheap as [`StrIds`]
/// makes one (a short string's word mixed by one multiplication, a longer string's bytes
/// hashed), or `null` for a NULL.
pub(super) fn for_each_str_hash(
    col: &Utf8Column,
    rows: std::ops::Range<usize>,
    null: u64,
    mut f: impl FnMut(usize, u64),
) {
    let (offsets, data) = (col.offsets(), col.data());
    for i in rows {
        let (start, end) = (offsets[i] as usize, offsets[i + 1] as usize);
        let hash = match short_key(data, start, end) {
            _ if !col.is_valid(i) => null,
            Some(word) => word_hash(word),
            None => STR_HASHER.hash_one(&data[start..end]),
        };
        f(i, hash);
    }
}

/// Up to seven bytes and their length in one word (no two such strings share a word).
fn short_word(bytes: &[u8]) -> u64 {
    let mut w = (bytes.len() as u64) << 56;
    for (k, &b) in bytes.iter().enumerate() {
        w |= u64::from(b) << (8 * k);
    }
    w
}

/// Row `row`'s key as [`super::keys::RowKeys::encode`] writes it: each column's encoding in
/// turn (integer-like and text columns only).
fn encode_row(cols: &[Column], row: usize, out: &mut Vec<u8>) {
    out.clear();
    let mut text = Vec::new();
    for col in cols {
        let valid = col.is_valid(row);
        match col {
            Column::Utf8(s) => {
                encode_str(valid.then(|| s.value_bytes(row)), &mut text);
                out.extend_from_slice(&text);
            }
            Column::Int32(x) | Column::Date32(x) => {
                let v = valid.then(|| i64::from(x.values()[row]));
                out.extend_from_slice(encode_int(v, col.data_type(), &mut [0u8; 9]));
            }
            Column::Int64(x) | Column::Timestamp(x) => {
                let v = valid.then(|| x.values()[row]);
                out.extend_from_slice(encode_int(v, col.data_type(), &mut [0u8; 9]));
            }
            // `MultiIds::ids` admits no other type.
            _ => {}
        }
    }
}
