//! Row keys for hashing: the values of several key columns of one row, encoded into one byte
//! string, plus a hash table that interns distinct keys as dense ids in first-seen order.
//!
//! Encoding per column: a tag byte (0 = NULL, 1 = value), then the value: fixed-width
//! little-endian for numbers and dates (floats normalized so -0.0 = 0.0 and all NaNs are one
//! key), one byte for booleans, a u32 length and the bytes for strings. Equal keys have equal
//! bytes, so grouping and joining compare plain byte strings.

use std::hash::{BuildHasher, Hasher};

use foldhash::fast::FixedState;
use hashbrown::HashTable;
use morsel_storage::{
    BitmapBuilder, Column, ColumnBuilder, DataType, NativeType, PrimitiveColumn, Utf8Column,
};

pub use morsel_storage::cache_hint::prefetch;

use crate::error::{ExecError, ExecResult};
use crate::kernels::compare::bytes_eq;

/// Hash state fixed at compile time: the same key hashes the same in every table, so partial
/// tables can hand their stored hashes to the table they merge into.
const HASHER: FixedState = FixedState::with_seed(0x6d6f_7273_656c_2121);

pub fn hash_key(key: &[u8]) -> u64 {
    HASHER.hash_one(key)
}

/// Encoded keys of every row of a batch.
pub struct RowKeys {
    bytes: Vec<u8>,
    offsets: Vec<usize>,
    /// Rows where some key column is NULL (joins never match these).
    pub has_null: Vec<bool>,
}

impl RowKeys {
    pub fn encode(cols: &[Column], rows: usize) -> RowKeys {
        // Each key's length first (one pass per column, the type matched once per column).
        let mut offsets = vec![0usize; rows + 1];
        let mut has_null = vec![false; rows];
        for c in cols {
            let lens = &mut offsets[1..];
            match (c, fixed_width(c)) {
                (Column::Utf8(s), _) => {
                    for (i, len) in lens.iter_mut().enumerate() {
                        let valid = s.is_valid(i);
                        has_null[i] |= !valid;
                        *len += 1 + if valid { 4 + s.value_bytes(i).len() } else { 0 };
                    }
                }
                (_, width) => match c.validity() {
                    None => lens.iter_mut().for_each(|len| *len += 1 + width),
                    Some(v) => {
                        for (i, len) in lens.iter_mut().enumerate() {
                            let valid = v.get(i);
                            has_null[i] |= !valid;
                            *len += 1 + usize::from(valid) * width;
                        }
                    }
                },
            }
        }
        for i in 0..rows {
            offsets[i + 1] += offsets[i];
        }
        let mut bytes = vec![0u8; offsets[rows]];
        let mut pos: Vec<usize> = offsets[..rows].to_vec();
        for c in cols {
            match c {
                Column::Boolean(b) => {
                    for (i, p) in pos.iter_mut().enumerate() {
                        *p += put(&mut bytes[*p..], b.get(i).map(|v| [v as u8]));
                    }
                }
                Column::Int32(x) | Column::Date32(x) => {
                    put_all(&mut bytes, &mut pos, x, |v| v.to_le_bytes())
                }
                Column::Int64(x) | Column::Timestamp(x) => {
                    put_all(&mut bytes, &mut pos, x, |v| v.to_le_bytes())
                }
                Column::Float64(x) => put_all(&mut bytes, &mut pos, x, |v| {
                    let v = if v == 0.0 {
                        0.0
                    } else if v.is_nan() {
                        f64::NAN
                    } else {
                        v
                    };
                    v.to_bits().to_le_bytes()
                }),
                Column::Utf8(s) => {
                    for (i, p) in pos.iter_mut().enumerate() {
                        if !s.is_valid(i) {
                            *p += put::<0>(&mut bytes[*p..], None);
                            continue;
                        }
                        let b = s.value_bytes(i);
                        *p += put(&mut bytes[*p..], Some((b.len() as u32).to_le_bytes()));
                        bytes[*p..*p + b.len()].copy_from_slice(b);
                        *p += b.len();
                    }
                }
            }
        }
        RowKeys {
            bytes,
            offsets,
            has_null,
        }
    }

    /// Bytes of all keys together.
    pub fn bytes_len(&self) -> usize {
        self.bytes.len()
    }

    /// Memory held: the key bytes, their offsets and the NULL flags.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.offsets.capacity() * 8 + self.has_null.capacity()
    }

    #[inline]
    pub fn key(&self, i: usize) -> &[u8] {
        &self.bytes[self.offsets[i]..self.offsets[i + 1]]
    }

    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The encoded width of a fixed-width column's values (0 for text, whose width varies).
fn fixed_width(c: &Column) -> usize {
    match c {
        Column::Boolean(_) => 1,
        Column::Int32(_) | Column::Date32(_) => 4,
        Column::Int64(_) | Column::Timestamp(_) | Column::Float64(_) => 8,
        Column::Utf8(_) => 0,
    }
}

/// Writes one encoded value (tag, then the bytes; the tag alone for NULL) at the start of
/// `out`; returns how many bytes it wrote.
#[inline(always)]
fn put<const N: usize>(out: &mut [u8], value: Option<[u8; N]>) -> usize {
    match value {
        None => {
            out[0] = 0;
            1
        }
        Some(v) => {
            out[0] = 1;
            out[1..=N].copy_from_slice(&v);
            1 + N
        }
    }
}

/// Writes every row's value of a fixed-width column at its position, advancing it.
#[inline(always)]
fn put_all<T: NativeType, const N: usize>(
    bytes: &mut [u8],
    pos: &mut [usize],
    x: &PrimitiveColumn<T>,
    encode: impl Fn(T) -> [u8; N],
) {
    let values = x.values();
    for (i, p) in pos.iter_mut().enumerate() {
        let v = x.is_valid(i).then(|| encode(values[i]));
        *p += put(&mut bytes[*p..], v);
    }
}

/// The encoded key of one integer-like value, as [`RowKeys::encode`] writes it for a
/// column of type `ty` alone (4 bytes for INTEGER and DATE, 8 for BIGINT and TIMESTAMP).
pub fn encode_int(v: Option<i64>, ty: DataType, out: &mut [u8; 9]) -> &[u8] {
    let n = match (v, ty) {
        (None, _) => put::<0>(out, None),
        (Some(v), DataType::Int32 | DataType::Date32) => put(out, Some((v as i32).to_le_bytes())),
        (Some(v), _) => put(out, Some(v.to_le_bytes())),
    };
    &out[..n]
}

/// The encoded key of one string, as [`RowKeys::encode`] writes it for a text column alone.
pub fn encode_str(v: Option<&[u8]>, out: &mut Vec<u8>) {
    out.clear();
    match v {
        None => out.push(0),
        Some(b) => {
            out.push(1);
            out.extend_from_slice(&(b.len() as u32).to_le_bytes());
            out.extend_from_slice(b);
        }
    }
}

/// The hash of some of an encoded key's fields: the key holds one field per column of
/// `types` (as [`RowKeys::encode`] writes them), and the fields at `keep` are hashed, in
/// order. Keys equal in those columns hash equal, whatever their other fields hold.
pub fn hash_fields(key: &[u8], types: &[DataType], keep: &[bool]) -> u64 {
    let mut hasher = HASHER.build_hasher();
    let mut rest = key;
    for (&ty, &kept) in types.iter().zip(keep) {
        let len = match (rest.first(), ty) {
            (None | Some(0), _) | (Some(_), DataType::Null) => 1,
            (Some(_), DataType::Utf8) => {
                let n = rest
                    .get(1..5)
                    .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
                5 + n
            }
            (Some(_), DataType::Boolean) => 2,
            (Some(_), DataType::Int32 | DataType::Date32) => 5,
            (Some(_), DataType::Int64 | DataType::Timestamp | DataType::Float64) => 9,
        };
        let (field, tail) = rest.split_at(len.min(rest.len()));
        if kept {
            hasher.write(field);
        }
        rest = tail;
    }
    hasher.finish()
}

/// The bytes of a string from its encoded key (see [`encode_str`]).
#[inline]
pub fn str_of_key(key: &[u8]) -> &[u8] {
    key.get(5..).unwrap_or(&[])
}

/// Whether `c` holds integer-like values (integers, dates, timestamps).
pub fn is_int_column(c: &Column) -> bool {
    matches!(
        c,
        Column::Int32(_) | Column::Date32(_) | Column::Int64(_) | Column::Timestamp(_)
    )
}

/// The smallest and largest non-NULL value of an integer-like column (`None`: none).
pub fn int_range(c: &Column) -> Option<(i64, i64)> {
    let mut range: Option<(i64, i64)> = None;
    for_each_int(c, |_, v| {
        if let Some(v) = v {
            range = Some(range.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))));
        }
    });
    range
}

/// Calls `f(k, value)` for the `k`-th of rows `rows` of an integer-like column, in their
/// order, widened to i64 (`None` for NULL); does nothing for other columns.
#[inline]
fn for_each_listed_int(c: &Column, rows: &[u32], mut f: impl FnMut(usize, Option<i64>)) {
    fn each<T>(x: &PrimitiveColumn<T>, rows: &[u32], f: &mut impl FnMut(usize, Option<i64>))
    where
        T: NativeType + Into<i64>,
    {
        let values = x.values();
        let valid = x.validity();
        for (k, &r) in rows.iter().enumerate() {
            hint_listed(values, rows, k);
            let r = r as usize;
            f(k, valid.is_none_or(|v| v.get(r)).then(|| values[r].into()));
        }
    }
    match c {
        Column::Int32(x) | Column::Date32(x) => each(x, rows, &mut f),
        Column::Int64(x) | Column::Timestamp(x) => each(x, rows, &mut f),
        _ => {}
    }
}

/// How far ahead of their reading listed rows' values are hinted to the cache: rows listed
/// at gaps (a filter's survivors) outrun the hardware prefetcher, and reading them stalled
/// on each value (TPC-H Q3's and Q20's lineitem keys).
const PREFETCH_ROWS_AHEAD: usize = 64;

/// Hints to the cache the value of the listed row [`PREFETCH_ROWS_AHEAD`] after the `k`-th
/// of `rows`, for a loop reading `values` at listed rows in order.
#[inline(always)]
pub fn hint_listed<T>(values: &[T], rows: &[u32], k: usize) {
    if let Some(&ahead) = rows.get(k + PREFETCH_ROWS_AHEAD) {
        prefetch(&values[ahead as usize]);
    }
}

/// Calls `f(row, value)` for every row of an integer-like column, widened to i64 (`None`
/// for NULL); does nothing for other columns.
#[inline]
pub fn for_each_int(c: &Column, mut f: impl FnMut(usize, Option<i64>)) {
    fn each<T>(x: &PrimitiveColumn<T>, f: &mut impl FnMut(usize, Option<i64>))
    where
        T: NativeType + Into<i64>,
    {
        let values = x.values();
        match x.validity() {
            None => values
                .iter()
                .enumerate()
                .for_each(|(i, &v)| f(i, Some(v.into()))),
            Some(valid) => values
                .iter()
                .enumerate()
                .for_each(|(i, &v)| f(i, valid.get(i).then(|| v.into()))),
        }
    }
    match c {
        Column::Int32(x) | Column::Date32(x) => each(x, &mut f),
        Column::Int64(x) | Column::Timestamp(x) => each(x, &mut f),
        _ => {}
    }
}

/// Two to four integer key columns packed into one integer, so a multi-column key is looked
/// up like a single integer key: column `i`'s value less `mins[i]`, in mixed radix with the
/// build side's ranges `spans` as digits. A value outside its column's build range matches
/// nothing: its row packs to -1, which no build row has.
pub struct IntPacking {
    mins: Vec<i64>,
    spans: Vec<u64>,
}

impl IntPacking {
    /// The packing of build key columns `cols`: two to four integer columns whose ranges
    /// multiply to at most 2^62.
    pub fn of(cols: &[Column]) -> Option<Self> {
        if !(2..=4).contains(&cols.len()) || !cols.iter().all(is_int_column) {
            return None;
        }
        let (mut mins, mut spans) = (Vec::new(), Vec::new());
        let mut product: u128 = 1;
        for c in cols {
            let (lo, hi) = int_range(c).unwrap_or((0, 0));
            let span = (hi as i128 - lo as i128 + 1) as u128;
            product = product.checked_mul(span).filter(|&p| p <= 1 << 62)?;
            mins.push(lo);
            spans.push(span as u64);
        }
        Some(Self { mins, spans })
    }

    /// Every row's packed key (NULL where some key is NULL); with `rows`, only those rows'
    /// keys, side by side (a filter's survivors: key `k` is row `rows[k]`'s).
    pub fn pack(&self, cols: &[Column], rows: Option<&[u32]>) -> Column {
        let n = rows.map_or(cols.first().map_or(0, Column::len), <[u32]>::len);
        let mut packed = vec![0i64; n];
        let mut valid = vec![true; n];
        for (c, (&min, &span)) in cols.iter().zip(self.mins.iter().zip(&self.spans)) {
            let put = |k: usize, v: Option<i64>| match v {
                None => valid[k] = false,
                Some(v) => {
                    // Below `min` wraps past the span.
                    let offset = v.wrapping_sub(min) as u64;
                    let p = &mut packed[k];
                    *p = match *p >= 0 && offset < span {
                        true => *p * span as i64 + offset as i64,
                        false => -1,
                    };
                }
            };
            match rows {
                None => for_each_int(c, put),
                Some(rows) => for_each_listed_int(c, rows, put),
            }
        }
        // Only a key column with NULLs can have made a row NULL.
        let validity = cols
            .iter()
            .any(|c| c.null_count() > 0)
            .then(|| morsel_storage::Bitmap::from_bools(valid));
        Column::Int64(PrimitiveColumn::new(packed.into(), validity))
    }
}

/// Encoded keys with their hashes, in the order pushed.
#[derive(Default)]
pub struct KeyList {
    arena: Vec<u8>,
    offsets: Vec<usize>,
    hashes: Vec<u64>,
}

impl KeyList {
    pub fn new() -> Self {
        Self {
            arena: Vec::new(),
            offsets: vec![0],
            hashes: Vec::new(),
        }
    }

    /// Room for `keys` keys of `bytes` bytes in all.
    pub fn with_capacity(keys: usize, bytes: usize) -> Self {
        let mut offsets = Vec::with_capacity(keys + 1);
        offsets.push(0);
        Self {
            arena: Vec::with_capacity(bytes),
            offsets,
            hashes: Vec::with_capacity(keys),
        }
    }

    /// Memory held: the key bytes, their offsets and hashes.
    pub fn heap_bytes(&self) -> usize {
        self.arena.capacity() + (self.offsets.capacity() + self.hashes.capacity()) * 8
    }

    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    #[inline]
    pub fn key(&self, id: usize) -> &[u8] {
        &self.arena[self.offsets[id]..self.offsets[id + 1]]
    }

    /// Bytes of all keys together.
    pub fn bytes_len(&self) -> usize {
        self.arena.len()
    }

    /// Bytes of keys `from..to` together.
    pub fn bytes_between(&self, from: usize, to: usize) -> usize {
        self.offsets[to] - self.offsets[from]
    }

    #[inline]
    pub fn hash(&self, id: usize) -> u64 {
        self.hashes[id]
    }

    pub fn push(&mut self, key: &[u8], hash: u64) {
        self.arena.extend_from_slice(key);
        self.offsets.push(self.arena.len());
        self.hashes.push(hash);
    }
}

/// A key column being decoded: text rows are copied as bytes and checked as UTF-8 once, at
/// the end (checking each short value costs more than copying it).
enum Decoded {
    Values(ColumnBuilder),
    Text {
        offsets: Vec<i64>,
        data: Vec<u8>,
        validity: BitmapBuilder,
    },
}

impl Decoded {
    /// A column of `ty` for `keys`; a text column starts with room for its share of the
    /// keys' bytes (`text_columns` share them).
    fn new(ty: DataType, keys: &KeyList, text_columns: usize) -> Self {
        match ty {
            DataType::Utf8 => {
                let mut offsets = Vec::with_capacity(keys.len() + 1);
                offsets.push(0);
                Decoded::Text {
                    offsets,
                    data: Vec::with_capacity(keys.bytes_len() / text_columns.max(1)),
                    validity: BitmapBuilder::with_capacity(keys.len()),
                }
            }
            ty => Decoded::Values(ColumnBuilder::with_capacity(ty, keys.len())),
        }
    }

    fn finish(self) -> ExecResult<Column> {
        match self {
            Decoded::Values(b) => Ok(b.finish()),
            Decoded::Text {
                offsets,
                data,
                validity,
            } => {
                let validity = validity.finish();
                let validity = (validity.count_zeros() > 0).then_some(validity);
                Ok(Column::Utf8(Utf8Column::from_byte_rows(
                    offsets, data, validity,
                )?))
            }
        }
    }
}

/// The key columns back from encoded keys, one row per key in `keys` (floats come back
/// normalized: -0.0 as 0.0, every NaN as the one NaN).
pub fn decode_keys(keys: &KeyList, types: &[DataType]) -> ExecResult<Vec<Column>> {
    let text_columns = types.iter().filter(|t| **t == DataType::Utf8).count();
    let mut columns: Vec<Decoded> = types
        .iter()
        .map(|t| Decoded::new(*t, keys, text_columns))
        .collect();
    let bad = || ExecError::Internal("a group key does not decode".into());
    for k in 0..keys.len() {
        let mut rest = keys.key(k);
        let mut take = |n: usize| -> ExecResult<&[u8]> {
            let (head, tail) = rest.split_at_checked(n).ok_or_else(bad)?;
            rest = tail;
            Ok(head)
        };
        for c in &mut columns {
            let valid = take(1)?[0] != 0;
            let mut fixed = |n: usize| -> ExecResult<[u8; 8]> {
                let mut out = [0u8; 8];
                out[..n].copy_from_slice(take(n)?);
                Ok(out)
            };
            let b = match c {
                Decoded::Text {
                    offsets,
                    data,
                    validity,
                } => {
                    if valid {
                        let x = fixed(4)?;
                        let len = u32::from_le_bytes([x[0], x[1], x[2], x[3]]) as usize;
                        data.extend_from_slice(take(len)?);
                    }
                    offsets.push(data.len() as i64);
                    validity.push(valid);
                    continue;
                }
                Decoded::Values(b) => b,
            };
            if !valid {
                b.push_null();
                continue;
            }
            match b {
                ColumnBuilder::Boolean(b) => b.push(fixed(1)?[0] != 0),
                ColumnBuilder::Int32(b) | ColumnBuilder::Date32(b) => {
                    let x = fixed(4)?;
                    b.push(i32::from_le_bytes([x[0], x[1], x[2], x[3]]))
                }
                ColumnBuilder::Int64(b) | ColumnBuilder::Timestamp(b) => {
                    b.push(i64::from_le_bytes(fixed(8)?))
                }
                ColumnBuilder::Float64(b) => b.push(f64::from_bits(u64::from_le_bytes(fixed(8)?))),
                ColumnBuilder::Utf8(_) => return Err(bad()),
            }
        }
    }
    columns.into_iter().map(Decoded::finish).collect()
}

/// Interns distinct keys as ids 0, 1, 2, ... in first-seen order.
#[derive(Default)]
pub struct KeyInterner {
    table: HashTable<u32>,
    keys: KeyList,
}

impl KeyInterner {
    /// Memory held: the hash table and the keys.
    pub fn heap_bytes(&self) -> usize {
        self.table.capacity() * std::mem::size_of::<u32>() + self.keys.heap_bytes()
    }

    pub fn new() -> Self {
        Self {
            table: HashTable::new(),
            keys: KeyList::new(),
        }
    }

    /// Makes room for `more` keys of `bytes` bytes together beyond those interned.
    pub fn reserve(&mut self, more: usize, bytes: usize) {
        let keys = &self.keys;
        self.table.reserve(more, |&g| keys.hash(g as usize));
        self.keys.offsets.reserve(more);
        self.keys.hashes.reserve(more);
        self.keys.arena.reserve(bytes);
    }

    /// The interned keys, by id.
    pub fn keys(&self) -> &KeyList {
        &self.keys
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn key(&self, id: usize) -> &[u8] {
        self.keys.key(id)
    }

    pub fn hash(&self, id: usize) -> u64 {
        self.keys.hash(id)
    }

    /// The id of `key`, if it has been interned.
    #[inline]
    pub fn find(&self, key: &[u8], hash: u64) -> Option<u32> {
        let keys = &self.keys;
        self.table
            .find(hash, |&id| bytes_eq(keys.key(id as usize), key))
            .copied()
    }

    /// The id of `key`, and whether it is new.
    #[inline]
    pub fn intern(&mut self, key: &[u8], hash: u64) -> (u32, bool) {
        if let Some(id) = self.find(key, hash) {
            return (id, false);
        }
        let id = self.keys.len() as u32;
        self.keys.push(key, hash);
        let keys = &self.keys;
        self.table
            .insert_unique(hash, id, |&g| keys.hash(g as usize));
        (id, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use morsel_storage::{PrimitiveColumn, ScalarValue, Utf8Column};

    #[test]
    fn equal_rows_get_equal_keys_and_nulls_are_tagged() {
        let a = Column::Float64(PrimitiveColumn::from_options([
            Some(0.0),
            Some(-0.0),
            None,
            Some(f64::NAN),
        ]));
        let b = Column::Utf8(Utf8Column::from_strs([
            Some("x"),
            Some("x"),
            Some("x"),
            None,
        ]));
        let k = RowKeys::encode(&[a, b], 4);
        assert_eq!(k.key(0), k.key(1));
        assert_ne!(k.key(0), k.key(2));
        assert_eq!(k.has_null, vec![false, false, true, true]);
        let mut t = KeyInterner::new();
        let ids: Vec<u32> = (0..4)
            .map(|i| t.intern(k.key(i), hash_key(k.key(i))).0)
            .collect();
        assert_eq!(ids, vec![0, 0, 1, 2]);
        let back = decode_keys(t.keys(), &[DataType::Float64, DataType::Utf8]).unwrap();
        let row = |i: usize| (back[0].scalar_at(i), back[1].scalar_at(i));
        assert_eq!(
            row(0),
            (ScalarValue::Float64(0.0), ScalarValue::Utf8("x".into()))
        );
        assert_eq!(row(1), (ScalarValue::Null, ScalarValue::Utf8("x".into())));
        assert!(matches!(row(2), (ScalarValue::Float64(f), ScalarValue::Null) if f.is_nan()));
    }
}
