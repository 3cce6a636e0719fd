//! Hash join. The build side is collected and indexed once: distinct keys are interned (one
//! integer or date key by value, see `join_index`; anything else as encoded bytes) and the
//! rows of each key laid out contiguously (CSR: `starts[key]..starts[key + 1]` into `rows`), in
//! build-row order, with no allocation per key. The probe is a streaming operator: each probe
//! batch is matched independently, so output follows probe order and, per probe row, matches
//! follow build-row order. NULL keys never match. With no keys the join is a cross product.
//!
//! One probe serves every join kind: inner and left emit pairs (left NULL-extends probe rows
//! without a match); semi, anti and mark emit probe rows (mark with a boolean column); right
//! and full record matched build rows in a shared bitmap, and the build rows never matched
//! are emitted after the probe side is exhausted.
//!
//! A semi, anti or mark join without a filter asks only whether a key has a build row: its
//! table keeps the keys and no rows per key, and each matching probe row yields one pair.
//!
//! An inner or semi probe followed by an operator that reads selections gathers nothing:
//! it hands on its matches as row numbers (`selected::Joined`), and the next probe in a
//! chain gathers only its key columns.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use morsel_planner::JoinKind;
use morsel_storage::{
    Batch, Bitmap, BooleanColumn, Column, NativeType, PrimitiveColumn, SchemaRef,
};

use super::join_index::{even_ranges, first_key_bits, CheapKeys, KeyIndex, ValueBits};
use super::keys::{
    for_each_int, hash_key, hint_listed, is_int_column, IntPacking, KeyInterner, RowKeys,
};
use super::pair_filter::PairFilter;
use super::range_index::RangeIndex;
use crate::error::ExecResult;
use crate::expr::PhysExpr;
use crate::scheduler::{parallel_map, Operator, Sink};
use crate::selected::{BuildRows, Joined, Live, Selected};

/// A hashed integer index larger than this gets its probe keys' slots prefetched first (about
/// half this machine's 2 MiB of L2 per core: smaller maps stay in cache).
const PREFETCH_MIN_MAP_BYTES: usize = 1 << 20;

/// A batch is probed only at the rows whose key may match (see
/// [`JoinTable::sparse_hits`]) where at most one in this many of its first rows may.
const SPARSE_HITS: usize = 4;

/// Listed rows are tested by reading their whole span of the key column where at least
/// one in this many of the span's rows is listed, else at the listed rows alone.
const DENSE_LISTED: usize = 4;

/// `$body` with `$has` bound to the table's cheap test of integer keys (one expansion per
/// kind of index, so the test inlines into the loop): `Some` of its value, or `None` where
/// the table has no such test.
macro_rules! with_cheap_keys {
    ($table:expr, |$has:ident| $body:expr) => {{
        let t: &JoinTable = $table;
        match (t.packing.is_some(), t.keys.cheap_keys()) {
            (false, Some(CheapKeys::Slots { min, slots })) => {
                // Values below `min` wrap to offsets past the end.
                let $has = |v: i64| {
                    slots
                        .get(v.wrapping_sub(min) as u64 as usize)
                        .is_some_and(|&id| id != u32::MAX)
                };
                Some($body)
            }
            (false, Some(CheapKeys::Bits(bits))) => {
                let $has = |v: i64| bits.has(v);
                Some($body)
            }
            (true, _) => match &t.first_key {
                Some(bits) => {
                    let $has = |v: i64| bits.has(v);
                    Some($body)
                }
                None => None,
            },
            _ => None,
        }
    }};
}

/// The indexed build side.
pub struct JoinTable {
    build: Batch,
    keys: KeyIndex,
    starts: Vec<u32>,
    rows: Vec<u32>,
    /// Whether some build row has a NULL key (decides `NOT IN`).
    has_null_key: bool,
    /// Every key has exactly one row (a primary key): key id `k`'s row is `rows[k]`, and an
    /// integer index maps values straight to rows.
    unique: bool,
    /// Only whether a key has a row is kept (`starts` and `rows` are empty).
    keys_only: bool,
    /// Integer keys of two to four columns, packed into one integer key.
    packing: Option<IntPacking>,
    /// With packed keys: a bit per value of the first key column (see
    /// `join_index::first_key_bits`).
    first_key: Option<ValueBits>,
}

impl JoinTable {
    /// Indexes `build` by `key_exprs`; with `keys_only`, for a join that asks only whether
    /// a key has a row, without laying out the rows per key.
    /// The rows per key are laid out on up to `threads` workers (the layout is the same for
    /// any number).
    pub fn new(
        build: Batch,
        key_exprs: &[PhysExpr],
        keys_only: bool,
        threads: usize,
    ) -> ExecResult<Self> {
        let n = build.num_rows();
        let cols = key_exprs
            .iter()
            .map(|e| e.evaluate(&build))
            .collect::<ExecResult<Vec<_>>>()?;
        let packing = IntPacking::of(&cols);
        let first_key = packing.as_ref().and_then(|_| first_key_bits(&cols[0]));
        let cols = match &packing {
            Some(p) => vec![p.pack(&cols, None)],
            None => cols,
        };
        let mut key_of_row = vec![u32::MAX; n];
        let (mut keys, has_null_key) = match cols.as_slice() {
            [one] if is_int_column(one) => KeyIndex::int_keys(one, &mut key_of_row, threads),
            _ => {
                let encoded = RowKeys::encode(&cols, n);
                let mut keys = KeyInterner::new();
                for (r, slot) in key_of_row.iter_mut().enumerate() {
                    if !encoded.has_null[r] {
                        let k = encoded.key(r);
                        *slot = keys.intern(k, hash_key(k)).0;
                    }
                }
                let has_null = encoded.has_null.iter().any(|&x| x);
                (KeyIndex::Encoded(keys), has_null)
            }
        };
        if keys_only {
            return Ok(Self {
                build,
                keys,
                starts: Vec::new(),
                rows: Vec::new(),
                has_null_key,
                unique: false,
                keys_only,
                packing,
                first_key,
            });
        }
        // Every row its own key, numbered in row order (a primary key without NULLs, the
        // usual build side): key k's one row is row k, and an index of ids is already one
        // of rows. Nothing to lay out (at 500K rows the layout took 4-5 ms).
        let own_rows = keys.len() == n && (0..n as u32).eq(key_of_row.iter().copied());
        let (starts, rows) = match own_rows {
            true => ((0..=n as u32).collect(), (0..n as u32).collect()),
            false => lay_out_rows(&key_of_row, keys.len(), threads),
        };
        let unique = rows.len() == keys.len();
        if unique && !own_rows {
            // Unique integer keys: the index holds each key's row itself.
            keys.ids_to_rows(&rows, threads);
        }
        Ok(Self {
            build,
            keys,
            starts,
            rows,
            has_null_key,
            unique,
            keys_only,
            packing,
            first_key,
        })
    }

    /// Memory held: the build rows (their values) and the index over them.
    pub fn heap_bytes(&self) -> usize {
        let first_key = self.first_key.as_ref().map_or(0, |b| b.bits.len() * 8);
        let index = self.keys.heap_bytes() + first_key;
        self.build.window_bytes() + index + (self.starts.capacity() + self.rows.capacity()) * 4
    }

    /// The build rows, as collected.
    pub fn build(&self) -> &Batch {
        &self.build
    }

    pub fn num_rows(&self) -> usize {
        self.build.num_rows()
    }

    /// The number of distinct non-NULL keys.
    pub fn distinct_keys(&self) -> usize {
        self.keys.len()
    }

    /// How the keys are indexed, for EXPLAIN ANALYZE.
    pub fn index_kind(&self) -> String {
        let mut kind = self.keys.describe();
        if self.packing.is_some() {
            kind.push_str(" (the integer keys packed into one)");
        }
        if let Some(bits) = &self.first_key {
            let range = bits.bits.len() * 64;
            kind.push_str(&format!(
                ", a bit per first key value in a range of {range}"
            ));
        }
        if self.keys_only {
            kind.push_str(", keys only (no rows per key)");
        }
        kind
    }

    /// Whether a probe row's key can be tested for a match as cheaply as a comparison,
    /// before the probe: one integer key (not packed), indexed by an array or a bit per
    /// value; or, of packed keys, the first, by a bit per value (a row it keeps may still
    /// find no match in the others).
    pub fn tests_keys_cheaply(&self) -> bool {
        match self.packing {
            None => self.keys.cheap_keys().is_some(),
            Some(_) => self.first_key.is_some(),
        }
    }

    /// The bit per value that tests keys cheaply, where that is how (see
    /// [`JoinTable::tests_keys_cheaply`]).
    fn cheap_bits(&self) -> Option<&ValueBits> {
        match (&self.packing, self.keys.cheap_keys()) {
            (None, Some(CheapKeys::Bits(bits))) => Some(bits),
            (None, _) => None,
            (Some(_), _) => self.first_key.as_ref(),
        }
    }

    /// The rows of key column `col` whose key some build row may have, where the batch's
    /// first 64 rows say few do (at most one in [`SPARSE_HITS`]): found eight at a time,
    /// ahead of the probe, which then looks up only them (`None`: probe every row). For
    /// one integer key tested by a bit per value.
    fn sparse_hits(&self, col: &Column) -> Option<Vec<u32>> {
        let bits = self.cheap_bits().filter(|_| self.packing.is_none())?;
        let head = bits.column_mask(&col.slice(0, col.len().min(64)))?;
        if head.count_ones() * SPARSE_HITS > head.len() {
            return None;
        }
        let hits = bits.column_mask(col)?;
        let hits = match col.validity() {
            Some(m) => hits.and(m),
            None => hits,
        };
        Some(hits.set_positions())
    }

    /// The listed `rows` of key column `col` whose key some build row may have, or is
    /// NULL, where the first 64 say few may (as [`JoinTable::sparse_hits`]); `None`: probe
    /// all of them.
    fn sparse_listed(&self, col: &Column, rows: &[u32]) -> Option<Vec<u32>> {
        let bits = self.cheap_bits().filter(|_| self.packing.is_none())?;
        let mut head = rows[..rows.len().min(64)].to_vec();
        let listed = head.len();
        if !bits.retain_listed(col, &mut head) || head.len() * SPARSE_HITS > listed {
            return None;
        }
        let (lo, hi) = rows
            .iter()
            .fold((u32::MAX, 0), |(lo, hi), &r| (lo.min(r), hi.max(r)));
        let span = (hi - lo) as usize + 1;
        if rows.len() * DENSE_LISTED < span {
            let mut hits = rows.to_vec();
            bits.retain_listed(col, &mut hits);
            return Some(hits);
        }
        // Most rows of their span listed: the span tested whole, its values read in order,
        // is cheaper than gathering the listed ones (lineitem's order keys after Q3's date
        // filter, 54% listed: 5.2 ns a listed row gathered).
        let mask = bits.column_mask(&col.slice(lo as usize, span))?;
        let valid = col.validity();
        let hit = |r: u32| mask.get((r - lo) as usize) || valid.is_some_and(|m| !m.get(r as usize));
        Some(rows.iter().copied().filter(|&r| hit(r)).collect())
    }

    /// Whether the cheap test reads only the first of several key columns (see
    /// [`JoinTable::tests_keys_cheaply`]).
    pub fn tests_first_key_only(&self) -> bool {
        self.packing.is_some() && self.first_key.is_some()
    }

    /// Which rows of integer-like column `col` hold a key with a build row (with packed
    /// keys: a first key some build row has), never a NULL; `None` where the table cannot
    /// test keys cheaply (see [`JoinTable::tests_keys_cheaply`]). Other columns' values
    /// match no row.
    pub fn key_mask(&self, col: &Column) -> Option<Bitmap> {
        if let Some(bits) = self.cheap_bits() {
            let keys = bits
                .column_mask(col)
                .unwrap_or_else(|| Bitmap::new_filled(col.len(), false));
            return Some(match col.validity() {
                Some(m) => keys.and(m),
                None => keys,
            });
        }
        #[inline(always)]
        fn each<T: NativeType + Into<i64>>(
            x: &PrimitiveColumn<T>,
            has: impl Fn(i64) -> bool,
        ) -> Bitmap {
            let keys = Bitmap::from_values(x.values(), |v| has(v.into()));
            match x.validity() {
                Some(m) => keys.and(m),
                None => keys,
            }
        }
        with_cheap_keys!(self, |has| match col {
            Column::Int32(x) | Column::Date32(x) => each(x, has),
            Column::Int64(x) | Column::Timestamp(x) => each(x, has),
            other => Bitmap::from_bools(std::iter::repeat_n(false, other.len())),
        })
    }

    /// Keeps the `rows` of integer-like column `col` that hold a key with a build row (as
    /// [`JoinTable::key_mask`]); false, leaving them as they are, where the table cannot
    /// test keys cheaply.
    pub fn retain_key_rows(&self, col: &Column, rows: &mut Vec<u32>) -> bool {
        #[inline(always)]
        fn each<T: NativeType + Into<i64>>(
            x: &PrimitiveColumn<T>,
            rows: &mut Vec<u32>,
            has: impl Fn(i64) -> bool,
        ) {
            let (values, valid) = (x.values(), x.validity());
            // As `retain`, with the values of rows ahead hinted to the cache.
            let mut n = 0;
            for k in 0..rows.len() {
                hint_listed(values, rows, k);
                let r = rows[k];
                rows[n] = r;
                let i = r as usize;
                n += usize::from(valid.is_none_or(|m| m.get(i)) && has(values[i].into()));
            }
            rows.truncate(n);
        }
        with_cheap_keys!(self, |has| match col {
            Column::Int32(x) | Column::Date32(x) => each(x, rows, has),
            Column::Int64(x) | Column::Timestamp(x) => each(x, rows, has),
            _ => rows.clear(),
        })
        .is_some()
    }

    /// Whether integer key `v` has a build row (false where the table cannot test keys
    /// cheaply: see [`JoinTable::tests_keys_cheaply`]).
    pub fn has_int_key(&self, v: i64) -> bool {
        with_cheap_keys!(self, |has| has(v)).unwrap_or(false)
    }

    /// Pairs probe row `i` with every build row of key `id`, in build order (a table of keys
    /// only pairs it once, with row 0: its joins never read the build row).
    #[inline]
    fn emit(&self, i: usize, id: u32, p: &mut Vec<u32>, b: &mut Vec<u32>) {
        if self.keys_only {
            p.push(i as u32);
            b.push(0);
            return;
        }
        if self.unique {
            p.push(i as u32);
            b.push(self.rows[id as usize]);
            return;
        }
        let (s, e) = (
            self.starts[id as usize] as usize,
            self.starts[id as usize + 1] as usize,
        );
        for &r in &self.rows[s..e] {
            p.push(i as u32);
            b.push(r);
        }
    }
}

impl JoinTable {
    /// The (probe row, build row) pairs of `n` probe rows with key columns `cols`, appended
    /// to `p` and `b` in probe order then build order; with `rows`, of those rows only (a
    /// filter's survivors: integer keys are read at them, other keys gathered first).
    fn candidates(
        &self,
        cols: &[Column],
        n: usize,
        rows: Option<&[u32]>,
        mut p: Vec<u32>,
        mut b: Vec<u32>,
    ) -> ExecResult<Candidates> {
        // Listed rows' packed keys lie side by side: they are probed as a whole column, and
        // the pairs' probe positions mapped back to rows after.
        let (packed, listed);
        // Rows probed instead of all (`all_rows_hit`) or of those listed, where few may match.
        let hit_rows;
        let mut all_rows_hit = false;
        let first_pair = p.len();
        let (cols, rows) = match &self.packing {
            Some(p) if cols.iter().all(is_int_column) => {
                packed = [p.pack(cols, rows)];
                listed = rows;
                (&packed[..], None)
            }
            _ => {
                listed = None;
                match (rows, cols) {
                    (None, [one]) => {
                        hit_rows = self.sparse_hits(one);
                        all_rows_hit = hit_rows.is_some();
                        (cols, hit_rows.as_deref())
                    }
                    (Some(listed), [one]) => {
                        hit_rows = self.sparse_listed(one, listed);
                        (cols, hit_rows.as_deref().or(rows))
                    }
                    _ => (cols, rows),
                }
            }
        };
        let null_key = match (&self.keys, cols) {
            // One loop per kind of integer index (each inlines its lookup).
            (KeyIndex::Dense { min, slots, .. }, [one]) if is_int_column(one) => {
                let find = |v: i64| {
                    // Values below `min` wrap to offsets past the end.
                    let id = *slots.get(v.wrapping_sub(*min) as u64 as usize)?;
                    (id != u32::MAX).then_some(id)
                };
                self.probe_ints(one, rows, find, &mut p, &mut b)
            }
            (
                KeyIndex::Int {
                    map,
                    present,
                    hashed,
                },
                [one],
            ) if is_int_column(one) => match present {
                Some(bits) => {
                    // The keys that may match are hinted first (their misses overlap), where
                    // the map is too large to stay in cache: a pass over the probe keys that
                    // small maps (TPC-H Q17's 204 keys) would pay for nothing.
                    if map.heap_bytes() > PREFETCH_MIN_MAP_BYTES {
                        let hint = |v: Option<i64>| {
                            if let Some(v) = v.filter(|&v| bits.has(v)) {
                                map.prefetch(v);
                            }
                        };
                        match rows {
                            None => for_each_int(one, |_, v| hint(v)),
                            Some(rows) => rows.iter().for_each(|&r| hint(int_at(one, r as usize))),
                        }
                    }
                    let find = |v| bits.has(v).then(|| map.get(v)).flatten();
                    self.probe_ints(one, rows, find, &mut p, &mut b)
                }
                None => match hashed {
                    Some(h) => {
                        let find = |v| h.may_have(v).then(|| map.get(v)).flatten();
                        self.probe_ints(one, rows, find, &mut p, &mut b)
                    }
                    None => self.probe_ints(one, rows, |v| map.get(v), &mut p, &mut b),
                },
            },
            (KeyIndex::Ranked { bits, ranks }, [one]) if is_int_column(one) => {
                if self.unique {
                    let find = |v| bits.rank(ranks, v).map(|id| self.rows[id as usize]);
                    self.probe_ints(one, rows, find, &mut p, &mut b)
                } else {
                    self.probe_ints(one, rows, |v| bits.rank(ranks, v), &mut p, &mut b)
                }
            }
            (KeyIndex::Encoded(keys), _) => {
                let gathered: Vec<Column>;
                let (cols, count) = match rows {
                    Some(r) => {
                        gathered = cols.iter().map(|c| c.take(r)).collect();
                        (&gathered[..], r.len())
                    }
                    None => (cols, n),
                };
                let encoded = RowKeys::encode(cols, count);
                for i in 0..count {
                    if encoded.has_null[i] {
                        continue;
                    }
                    let k = encoded.key(i);
                    if let Some(id) = keys.find(k, hash_key(k)) {
                        let row = rows.map_or(i, |r| r[i] as usize);
                        self.emit(row, id, &mut p, &mut b);
                    }
                }
                match rows {
                    None => encoded.has_null,
                    // NULL keys only matter to anti and mark joins, which read no selection.
                    Some(_) => vec![false; n],
                }
            }
            _ => {
                return Err(crate::error::ExecError::Internal(
                    "join probe keys do not match the build keys".into(),
                ))
            }
        };
        let null_key = match listed {
            Some(rows) => {
                for i in &mut p[first_pair..] {
                    *i = rows[*i as usize];
                }
                // NULL keys only matter to anti and mark joins, which read no selection.
                vec![false; n]
            }
            // Only the rows that may match were probed: the others' NULL keys are read here.
            None if all_rows_hit => match cols[0].validity() {
                Some(valid) => (0..n).map(|i| !valid.get(i)).collect(),
                None => vec![false; n],
            },
            None => null_key,
        };
        Ok(Candidates {
            probe: p,
            build: b,
            null_key,
        })
    }

    /// The pairs of the probe rows of integer column `col` (with `rows`, of those rows
    /// only), whose key ids `find` looks up (with unique keys, the build rows), appended to
    /// `p` and `b`. Returns which probe rows have a NULL key. One loop per column type, the
    /// lookup inlined in it.
    #[inline]
    fn probe_ints(
        &self,
        col: &Column,
        rows: Option<&[u32]>,
        find: impl Fn(i64) -> Option<u32>,
        p: &mut Vec<u32>,
        b: &mut Vec<u32>,
    ) -> Vec<bool> {
        #[inline(always)]
        fn each<T: NativeType + Into<i64>>(
            t: &JoinTable,
            x: &PrimitiveColumn<T>,
            rows: Option<&[u32]>,
            find: impl Fn(i64) -> Option<u32>,
            p: &mut Vec<u32>,
            b: &mut Vec<u32>,
        ) -> Vec<bool> {
            let mut null_key = vec![false; x.len()];
            let (values, valid) = (x.values(), x.validity());
            macro_rules! probe_row {
                ($i:expr) => {{
                    let i = $i;
                    if valid.is_some_and(|m| !m.get(i)) {
                        null_key[i] = true;
                    } else {
                        match find(values[i].into()) {
                            Some(row) if t.unique => {
                                p.push(i as u32);
                                b.push(row);
                            }
                            Some(id) => t.emit(i, id, p, b),
                            None => {}
                        }
                    }
                }};
            }
            match rows {
                None => (0..values.len()).for_each(|i| probe_row!(i)),
                Some(rows) => {
                    for (k, &r) in rows.iter().enumerate() {
                        hint_listed(values, rows, k);
                        probe_row!(r as usize)
                    }
                }
            }
            null_key
        }
        match col {
            Column::Int32(x) | Column::Date32(x) => each(self, x, rows, find, p, b),
            Column::Int64(x) | Column::Timestamp(x) => each(self, x, rows, find, p, b),
            other => vec![false; other.len()],
        }
    }
}

/// The pairs `(p[i], b[i])` whose bit is set in `keep`.
fn keep_pairs(keep: &Bitmap, p: &[u32], b: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let n = keep.count_ones();
    let (mut p2, mut b2) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in keep.set_indices() {
        p2.push(p[i]);
        b2.push(b[i]);
    }
    (p2, b2)
}

/// Row `i` of an integer-like column, widened (`None` for NULL or another type).
fn int_at(col: &Column, i: usize) -> Option<i64> {
    match col {
        Column::Int32(x) | Column::Date32(x) => x.get(i).map(i64::from),
        Column::Int64(x) | Column::Timestamp(x) => x.get(i),
        _ => None,
    }
}

/// The build rows of each key id, in build order, as CSR: key `k`'s rows are
/// `rows[starts[k]..starts[k + 1]]` (`key_of_row` holds each row's key id, `u32::MAX` for
/// none). The ids are split into one range per worker; each worker counts, then places, the
/// rows of its own ids (reading every row's id, writing only its share), so the layout is
/// the serial one whatever the number of workers.
fn lay_out_rows(key_of_row: &[u32], keys: usize, threads: usize) -> (Vec<u32>, Vec<u32>) {
    let bounds: Vec<(u32, u32)> = even_ranges(keys, threads)
        .map(|(lo, hi)| (lo as u32, hi as u32))
        .collect();
    // A worker's slot of key `k`: its own keys' slots, and one more past them for every other
    // key (a NULL key's `u32::MAX` included), so that no row takes a branch (with two
    // workers, whether a row is a worker's own is a coin toss: a mispredicted branch on
    // every other row).
    let slot = |k: u32, lo: u32, hi: u32| (k.wrapping_sub(lo)).min(hi - lo) as usize;
    let counts = parallel_map(threads, bounds.clone(), |_, (lo, hi)| {
        let mut c = vec![0u32; (hi - lo) as usize + 1];
        for &k in key_of_row {
            c[slot(k, lo, hi)] += 1;
        }
        c.pop();
        c
    });
    let mut starts = Vec::with_capacity(keys + 1);
    starts.push(0u32);
    let mut total = 0u32;
    for &c in counts.iter().flatten() {
        total += c;
        starts.push(total);
    }
    let mut rows = vec![0u32; total as usize];
    let mut shares = Vec::with_capacity(bounds.len());
    let mut rest = rows.as_mut_slice();
    for &(lo, hi) in &bounds {
        let (share, after) =
            rest.split_at_mut((starts[hi as usize] - starts[lo as usize]) as usize);
        shares.push((lo, hi, share));
        rest = after;
    }
    parallel_map(threads, shares, |_, (lo, hi, share)| {
        let base = starts[lo as usize];
        // Rows of other keys are all written to one place past the share's end.
        let mut placed = vec![0u32; share.len() + 1];
        let mut fill: Vec<u32> = starts[lo as usize..hi as usize]
            .iter()
            .map(|s| s - base)
            .chain([share.len() as u32])
            .collect();
        for (r, &k) in key_of_row.iter().enumerate() {
            let s = slot(k, lo, hi);
            let f = &mut fill[s];
            placed[*f as usize] = r as u32;
            // The place past the end stays put.
            *f += u32::from(s < (hi - lo) as usize);
        }
        share.copy_from_slice(&placed[..share.len()]);
    });
    (starts, rows)
}

/// Build rows that found a match, set from any worker (right and full joins).
pub struct MatchedRows(Vec<AtomicU64>);

impl MatchedRows {
    pub fn new(rows: usize) -> Self {
        Self((0..rows.div_ceil(64)).map(|_| AtomicU64::new(0)).collect())
    }

    fn set(&self, r: u32) {
        self.0[r as usize / 64].fetch_or(1 << (r % 64), Ordering::Relaxed);
    }

    fn get(&self, r: usize) -> bool {
        self.0[r / 64].load(Ordering::Relaxed) & (1 << (r % 64)) != 0
    }

    /// Rows `0..n` whose mark is `marked`, in order.
    fn rows(&self, n: usize, marked: bool) -> Vec<u32> {
        (0..n)
            .filter(|&r| self.get(r) == marked)
            .map(|r| r as u32)
            .collect()
    }
}

impl JoinTable {
    /// The build rows no probe row matched, NULL-extended on the probe side (`probe` is the
    /// probe side's schema), in build order: the tail of a right or full join.
    pub fn unmatched(
        &self,
        matched: &MatchedRows,
        probe: &SchemaRef,
        schema: &SchemaRef,
    ) -> ExecResult<Batch> {
        let rows = matched.rows(self.num_rows(), false);
        let mut columns: Vec<Column> = probe
            .fields
            .iter()
            .map(|f| Column::new_null(f.data_type, rows.len()))
            .collect();
        columns.extend(self.build.columns().iter().map(|c| c.take(&rows)));
        Ok(Batch::try_new(schema.clone(), columns, rows.len())?)
    }
}

/// The sink of a semi or anti join built on its left input (the smaller one): the left rows
/// are indexed by the left keys, and every right row marks the left rows it matches (a pair
/// that passes the residual filter). Marking is idempotent, so the marks, and the rows a
/// semi join keeps (the marked ones) or an anti join keeps (the others), are the same
/// whichever worker saw which morsel. NULL keys match nothing.
pub struct MarkSink {
    /// The left rows, indexed by the left keys.
    pub table: Arc<JoinTable>,
    /// The right input's keys.
    pub keys: Vec<PhysExpr>,
    /// Residual condition over the pair (left columns, then right columns).
    pub filter: Option<PairFilter>,
    pub matched: Arc<MatchedRows>,
    /// How the join runs, for EXPLAIN.
    pub details: Vec<String>,
}

impl MarkSink {
    /// Marks the build rows that rows `rows` of `batch` (`None`: every row) match.
    fn mark(&self, batch: &Batch, rows: Option<&[u32]>) -> ExecResult<()> {
        let n = batch.num_rows();
        let cols = self
            .keys
            .iter()
            .map(|e| e.evaluate(batch))
            .collect::<ExecResult<Vec<_>>>()?;
        // The pairs' right rows are rows of `batch`.
        let found = self
            .table
            .candidates(&cols, n, rows, Vec::new(), Vec::new())?;
        let (right, left) = (found.probe, found.build);
        if right.is_empty() {
            return Ok(());
        }
        let Some(f) = &self.filter else {
            left.iter().for_each(|&r| self.matched.set(r));
            return Ok(());
        };
        let keep = f.passes((&self.table.build, &left), (batch, &right))?;
        keep.set_indices().for_each(|i| self.matched.set(left[i]));
        Ok(())
    }
}

impl Sink for MarkSink {
    type Partial = ();
    type Output = ();

    fn name(&self) -> &'static str {
        "HashJoin mark"
    }

    fn details(&self) -> Vec<String> {
        self.details.clone()
    }

    fn consume(&self, _seq: u64, batches: Vec<Batch>) -> ExecResult<()> {
        batches.iter().try_for_each(|b| self.mark(b, None))
    }

    /// A filter's survivors are marked from without being gathered.
    fn takes_selection(&self) -> bool {
        true
    }

    fn consume_selected(&self, _seq: u64, batches: Vec<Selected>) -> ExecResult<()> {
        batches.into_iter().try_for_each(|s| match s.live {
            Live::All => self.mark(&s.batch, None),
            Live::Rows(rows) => self.mark(&s.batch, Some(&rows)),
            Live::Mask(mask) => self.mark(&s.batch, Some(&mask.set_positions())),
            Live::Joined(_) => self.mark(&s.gather()?, None),
        })
    }

    fn output_bytes(&self, _output: &()) -> usize {
        self.table.heap_bytes()
    }

    fn finish(&self, _partials: Vec<()>) -> ExecResult<()> {
        Ok(())
    }
}

impl JoinTable {
    /// The build rows whose mark is `marked`, in build order (a semi join built on its left
    /// input keeps the marked rows, an anti join the others).
    pub fn marked_rows(
        &self,
        matched: &MatchedRows,
        marked: bool,
        schema: &SchemaRef,
    ) -> ExecResult<Batch> {
        let rows = matched.rows(self.num_rows(), marked);
        let columns = self.build.columns().iter().map(|c| c.take(&rows)).collect();
        Ok(Batch::try_new(schema.clone(), columns, rows.len())?)
    }
}

pub struct HashProbeOp {
    pub table: Arc<JoinTable>,
    pub probe_keys: Vec<PhysExpr>,
    pub kind: JoinKind,
    /// Residual condition over the joined row (probe columns, then build columns),
    /// evaluated on candidate pairs.
    pub filter: Option<PairFilter>,
    pub schema: SchemaRef,
    /// Where right and full joins record matched build rows.
    pub matched: Option<Arc<MatchedRows>>,
    /// Without keys: the build rows sorted by a key the join's inequalities bound, whose
    /// runs are a probe row's candidates (else every build row is).
    pub range: Option<Arc<RangeIndex>>,
}

/// Candidate pairs of a probe batch and which probe rows have a NULL key.
struct Candidates {
    probe: Vec<u32>,
    build: Vec<u32>,
    null_key: Vec<bool>,
}

impl HashProbeOp {
    /// Candidate (probe row, build row) pairs, in probe order then build order.
    fn candidates(&self, batch: &Batch) -> ExecResult<Candidates> {
        let n = batch.num_rows();
        let (mut p, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let build_rows = self.table.num_rows() as u32;
        if self.probe_keys.is_empty() {
            // Without keys every pair is a candidate (or every pair of a run of the range
            // index); a semi, anti or mark join without a filter only needs to know
            // whether there is one.
            let one_enough = self.filter.is_none() && !self.kind.needs_every_match();
            if let Some(range) = &self.range {
                range.candidates(batch, one_enough, &mut p, &mut b)?;
                return Ok(Candidates {
                    probe: p,
                    build: b,
                    null_key: vec![false; n],
                });
            }
            let per_row = if one_enough {
                build_rows.min(1)
            } else {
                build_rows
            };
            for i in 0..n as u32 {
                for r in 0..per_row {
                    p.push(i);
                    b.push(r);
                }
            }
            return Ok(Candidates {
                probe: p,
                build: b,
                null_key: vec![false; n],
            });
        }
        let cols = self
            .probe_keys
            .iter()
            .map(|e| e.evaluate(batch))
            .collect::<ExecResult<Vec<_>>>()?;
        self.table.candidates(&cols, n, None, p, b)
    }

    fn assemble(
        &self,
        batch: &Batch,
        p: &[u32],
        b: &[u32],
        schema: &SchemaRef,
    ) -> ExecResult<Batch> {
        // Every probe row once, in order (an inner join on a key every row finds): the probe
        // columns pass through as they are.
        let identity =
            p.len() == batch.num_rows() && p.iter().enumerate().all(|(i, &r)| r == i as u32);
        let mut columns: Vec<Column> = if identity {
            batch.columns().to_vec()
        } else {
            batch.columns().iter().map(|c| c.take(p)).collect()
        };
        columns.extend(self.table.build.columns().iter().map(|c| c.take(b)));
        Ok(Batch::try_new(schema.clone(), columns, p.len())?)
    }

    /// Whether each probe row has at least one surviving pair.
    fn has_match(rows: usize, p: &[u32]) -> Vec<bool> {
        let mut m = vec![false; rows];
        for &i in p {
            m[i as usize] = true;
        }
        m
    }

    /// Probes with the rows `rows` of `batch` (`None`: every row); the matches are left
    /// ungathered.
    fn probe_rows_of(&self, batch: Batch, rows: Option<Vec<u32>>) -> ExecResult<Selected> {
        let cols = self
            .probe_keys
            .iter()
            .map(|e| e.evaluate(&batch))
            .collect::<ExecResult<Vec<_>>>()?;
        let (n, room) = (
            batch.num_rows(),
            rows.as_ref().map_or(batch.num_rows(), Vec::len),
        );
        let found = self.table.candidates(
            &cols,
            n,
            rows.as_deref(),
            Vec::with_capacity(room),
            Vec::with_capacity(room),
        )?;
        // The pairs' probe rows are rows of `batch`, in its order.
        let (probe, build) = match self.filter.as_ref().filter(|_| !found.probe.is_empty()) {
            Some(f) => {
                let keep = f.passes((&batch, &found.probe), (&self.table.build, &found.build))?;
                keep_pairs(&keep, &found.probe, &found.build)
            }
            None => (found.probe, found.build),
        };
        let live = match self.kind {
            JoinKind::Semi => {
                let mut kept = probe;
                kept.dedup();
                Live::Rows(kept)
            }
            _ => {
                let build = BuildRows {
                    batch: self.table.build.clone(),
                    rows: build,
                };
                let joined = Joined::new(self.schema.clone(), &batch, probe, build);
                Live::Joined(Box::new(joined))
            }
        };
        Ok(Selected { batch, live })
    }

    /// Probes with the matches of earlier joins, gathering only the key columns; the
    /// matches are left ungathered. Keys computed from columns are computed on the
    /// matches gathered.
    fn probe_joined(&self, batch: Batch, mut joined: Joined) -> ExecResult<Selected> {
        let key_columns: Option<Vec<usize>> =
            self.probe_keys.iter().map(PhysExpr::as_column).collect();
        let Some(key_columns) = key_columns else {
            return self.probe_rows_of(joined.gather(&batch)?, None);
        };
        // Where few matches may find their first key, the other keys are read at those
        // alone (`at`), and the pairs' positions among them mapped back.
        let (cols, at) = match self.first_key_hits(&batch, &joined, &key_columns) {
            Some((first, at)) => {
                let mut cols = vec![first];
                for &c in &key_columns[1..] {
                    cols.push(joined.column_at_positions(&batch, c, &at));
                }
                (cols, Some(at))
            }
            None => {
                let cols = key_columns.iter().map(|&c| joined.column(&batch, c));
                (cols.collect(), None)
            }
        };
        let n = at.as_ref().map_or(joined.num_rows(), Vec::len);
        let mut found =
            self.table
                .candidates(&cols, n, None, Vec::with_capacity(n), Vec::with_capacity(n))?;
        if let Some(at) = &at {
            found.probe.iter_mut().for_each(|i| *i = at[*i as usize]);
        }
        // The pairs' probe rows are positions among the matches so far; the condition over
        // the pair reads its columns of them at those positions.
        let (probe, build) = match self.filter.as_ref().filter(|_| !found.probe.is_empty()) {
            Some(f) => {
                let split = joined.columns.len();
                let first = |c| joined.column_at_positions(&batch, c, &found.probe);
                let keep = f.passes_by(split, first, (&self.table.build, &found.build))?;
                keep_pairs(&keep, &found.probe, &found.build)
            }
            None => (found.probe, found.build),
        };
        match self.kind {
            JoinKind::Semi => {
                let mut kept = probe;
                kept.dedup();
                joined.keep(&kept);
            }
            _ => {
                joined.keep(&probe);
                joined = joined.with_build(BuildRows {
                    batch: self.table.build.clone(),
                    rows: build,
                });
            }
        }
        joined.schema = self.schema.clone();
        Ok(Selected {
            batch,
            live: Live::Joined(Box::new(joined)),
        })
    }

    /// Where keys are packed from several columns and the table tests the first cheaply:
    /// the first key column at the matches whose first key some build row has, and those
    /// matches' positions, when they are at most half of them (`None`: read every key
    /// column at every match). TPC-H Q5's supplier join on (supplier, nation) keeps a
    /// fifth of the line items' matches by supplier, and reads their customers' nations
    /// (scattered over the orders' build rows) only there.
    fn first_key_hits(
        &self,
        batch: &Batch,
        joined: &Joined,
        key_columns: &[usize],
    ) -> Option<(Column, Vec<u32>)> {
        if key_columns.len() < 2 || !self.table.tests_first_key_only() {
            return None;
        }
        let first = joined.column(batch, key_columns[0]);
        let hits = self.table.key_mask(&first)?;
        if hits.count_ones() * 2 > hits.len() {
            return None;
        }
        let at = hits.set_positions();
        Some((first.take(&at), at))
    }

    /// The probe rows where `keep` holds, with the probe side's columns only (the batch
    /// as it is when every row is kept).
    fn probe_rows(&self, batch: Batch, keep: impl Fn(usize) -> bool) -> ExecResult<Batch> {
        let rows: Vec<u32> = (0..batch.num_rows())
            .filter(|&i| keep(i))
            .map(|i| i as u32)
            .collect();
        if rows.len() == batch.num_rows() {
            return Ok(Batch::try_new(
                self.schema.clone(),
                batch.into_columns(),
                rows.len(),
            )?);
        }
        let columns = batch.columns().iter().map(|c| c.take(&rows)).collect();
        Ok(Batch::try_new(self.schema.clone(), columns, rows.len())?)
    }
}

impl Operator for HashProbeOp {
    fn name(&self) -> &'static str {
        "HashProbe"
    }

    /// Inner and semi joins on keys read a selection (a condition over the pair is tested
    /// on the columns it reads, gathered at the candidate pairs).
    fn takes_selection(&self) -> bool {
        matches!(self.kind, JoinKind::Inner | JoinKind::Semi) && !self.probe_keys.is_empty()
    }

    /// The keys are read at the selected rows only. The matches are handed on as row
    /// numbers when the next operator reads selections, else every column is gathered once,
    /// at the matches' rows.
    fn execute_selected(
        &self,
        input: Selected,
        next_takes_selection: bool,
    ) -> ExecResult<Selected> {
        if !self.takes_selection() {
            return Ok(Selected::all(self.execute(input.gather()?)?));
        }
        let batch = input.batch;
        let out = match input.live {
            Live::Joined(j) => self.probe_joined(batch, *j)?,
            Live::All if !next_takes_selection => return Ok(Selected::all(self.execute(batch)?)),
            Live::All => self.probe_rows_of(batch, None)?,
            Live::Rows(rows) => self.probe_rows_of(batch, Some(rows))?,
            Live::Mask(mask) => self.probe_rows_of(batch, Some(mask.set_positions()))?,
        };
        match next_takes_selection {
            true => Ok(out),
            false => Ok(Selected::all(out.gather()?)),
        }
    }

    fn execute(&self, batch: Batch) -> ExecResult<Batch> {
        if let (JoinKind::Count, Some(range), None) = (self.kind, &self.range, &self.filter) {
            // Each probe row's matches are one run of the sorted build rows: its length is
            // the count, without a pair formed.
            let counts = range.match_counts(&batch)?;
            let rows = batch.num_rows();
            let mut columns = batch.into_columns();
            columns.push(Column::Int64(PrimitiveColumn::from_vec(counts)));
            return Ok(Batch::try_new(self.schema.clone(), columns, rows)?);
        }
        let Candidates {
            probe: mut p,
            build: mut b,
            null_key,
        } = self.candidates(&batch)?;
        // Without candidates there is nothing to test (most probe batches of a selective
        // join: evaluating the condition on no rows still costs its setup).
        if let Some(f) = self.filter.as_ref().filter(|_| !p.is_empty()) {
            let keep = f.passes((&batch, &p), (&self.table.build, &b))?;
            (p, b) = keep_pairs(&keep, &p, &b);
        }
        if let Some(m) = &self.matched {
            b.iter().for_each(|&r| m.set(r));
        }
        let rows = batch.num_rows();
        let t = &self.table;
        match self.kind {
            JoinKind::Inner | JoinKind::Right => {}
            JoinKind::Left | JoinKind::Full => {
                // Probe rows without a surviving match appear once, with NULLs for the build side.
                let (mut p2, mut b2) = (Vec::with_capacity(p.len()), Vec::with_capacity(b.len()));
                let mut j = 0;
                for i in 0..rows as u32 {
                    if j < p.len() && p[j] == i {
                        while j < p.len() && p[j] == i {
                            p2.push(i);
                            b2.push(b[j]);
                            j += 1;
                        }
                    } else {
                        p2.push(i);
                        b2.push(u32::MAX);
                    }
                }
                (p, b) = (p2, b2);
            }
            JoinKind::Semi => {
                let m = Self::has_match(rows, &p);
                return self.probe_rows(batch, |i| m[i]);
            }
            JoinKind::Anti { null_aware } => {
                let m = Self::has_match(rows, &p);
                if !null_aware || t.num_rows() == 0 {
                    return self.probe_rows(batch, |i| !m[i]);
                }
                // NOT IN: a NULL on either side makes the comparison unknown, never true.
                let build_null = t.has_null_key;
                return self.probe_rows(batch, |i| !m[i] && !build_null && !null_key[i]);
            }
            JoinKind::Mark { null_aware } => {
                let m = Self::has_match(rows, &p);
                let unknown =
                    |i: usize| null_aware && t.num_rows() > 0 && (t.has_null_key || null_key[i]);
                let mark = BooleanColumn::from_options((0..rows).map(|i| {
                    if m[i] {
                        Some(true)
                    } else if unknown(i) {
                        None
                    } else {
                        Some(false)
                    }
                }));
                let mut columns = batch.into_columns();
                columns.push(Column::Boolean(mark));
                return Ok(Batch::try_new(self.schema.clone(), columns, rows)?);
            }
            JoinKind::Count => {
                let mut counts = vec![0i64; rows];
                p.iter().for_each(|&i| counts[i as usize] += 1);
                let mut columns = batch.into_columns();
                columns.push(Column::Int64(PrimitiveColumn::from_vec(counts)));
                return Ok(Batch::try_new(self.schema.clone(), columns, rows)?);
            }
        }
        self.assemble(&batch, &p, &b, &self.schema)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use morsel_storage::{DataType, Field, PrimitiveColumn, Schema};

    use super::*;
    use crate::selected::Live;
    use morsel_storage::test_rng::Rng;

    fn batch(keys: &[Option<i64>]) -> Batch {
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true)]));
        let col = Column::Int64(PrimitiveColumn::from_options(keys.iter().copied()));
        Batch::try_new(schema, vec![col], keys.len()).expect("batch")
    }

    /// The index kind of a table over `build` (keys only, or with rows per key) and the
    /// candidates a `kind` join's probe with `probe` finds in it.
    fn probe(
        build: &[Option<i64>],
        probe: &[Option<i64>],
        kind: JoinKind,
        keys_only: bool,
    ) -> (String, Candidates) {
        let table =
            JoinTable::new(batch(build), &[PhysExpr::Column(0)], keys_only, 1).expect("table");
        let index = table.index_kind();
        let schema = batch(probe).schema().clone();
        let op = HashProbeOp {
            table: Arc::new(table),
            probe_keys: vec![PhysExpr::Column(0)],
            kind,
            filter: None,
            schema,
            matched: None,
            range: None,
        };
        (index, op.candidates(&batch(probe)).expect("probe"))
    }

    /// Inner and semi probes of a selection (a filter's survivors, listed) give the rows
    /// that probing the survivors gathered gives, with duplicate build keys and NULLs, for
    /// every density of selection.
    #[test]
    fn probing_a_selection_equals_probing_its_rows_gathered() {
        let mut r = Rng(23);
        let build = keys(&mut r, 300, 100, 1);
        let input = keys(&mut r, 2000, 150, 1);
        let table =
            Arc::new(JoinTable::new(batch(&build), &[PhysExpr::Column(0)], false, 1).unwrap());
        let probe_schema = batch(&input).schema().clone();
        let pair_schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("b", DataType::Int64, true),
        ]));
        for kind in [JoinKind::Inner, JoinKind::Semi] {
            let schema = match kind {
                JoinKind::Inner => pair_schema.clone(),
                _ => probe_schema.clone(),
            };
            let op = HashProbeOp {
                table: table.clone(),
                probe_keys: vec![PhysExpr::Column(0)],
                kind,
                filter: None,
                schema,
                matched: None,
                range: None,
            };
            assert!(op.takes_selection());
            for keep_in_10 in [0, 1, 5, 10] {
                let rows: Vec<u32> = (0..input.len() as u32)
                    .filter(|_| (r.below(10) as usize) < keep_in_10)
                    .collect();
                let selected = Selected {
                    batch: batch(&input),
                    live: Live::Rows(rows.clone()),
                };
                let got = op
                    .execute_selected(selected, false)
                    .unwrap()
                    .gather()
                    .unwrap();
                let gathered = crate::kernels::select::take_batch(&batch(&input), &rows).unwrap();
                let want = op.execute(gathered).unwrap();
                assert_eq!(got.num_rows(), want.num_rows(), "{kind:?} {keep_in_10}");
                for c in 0..want.num_columns() {
                    for i in 0..want.num_rows() {
                        assert_eq!(got.column(c).scalar_at(i), want.column(c).scalar_at(i));
                    }
                }
            }
        }
    }

    /// A batch of nullable integer columns named `c0`, `c1`, ...
    fn int_batch(cols: &[&[Option<i64>]]) -> Batch {
        let fields = (0..cols.len())
            .map(|i| Field::new(format!("c{i}"), DataType::Int64, true))
            .collect();
        let columns = cols
            .iter()
            .map(|c| Column::Int64(PrimitiveColumn::from_options(c.iter().copied())))
            .collect();
        Batch::try_new(Arc::new(Schema::new(fields)), columns, cols[0].len()).unwrap()
    }

    /// A probe on key column `key` against `build` (keyed by its column 0) of a `width`-column
    /// input.
    fn probe_op(build: &Batch, key: usize, kind: JoinKind, width: usize) -> HashProbeOp {
        let keys_only = kind == JoinKind::Semi;
        let table = JoinTable::new(build.clone(), &[PhysExpr::Column(0)], keys_only, 1).unwrap();
        let field = |i| Field::new(format!("c{i}"), DataType::Int64, true);
        let pair_width = width + build.num_columns();
        let pair_schema = Arc::new(Schema::new((0..pair_width).map(field).collect()));
        let schema = match kind {
            JoinKind::Semi => Arc::new(Schema::new((0..width).map(field).collect())),
            _ => pair_schema.clone(),
        };
        HashProbeOp {
            table: Arc::new(table),
            probe_keys: vec![PhysExpr::Column(key)],
            kind,
            filter: None,
            schema,
            matched: None,
            range: None,
        }
    }

    /// A chain of probes (inner and semi, duplicate keys, NULLs, with and without conditions
    /// over the pair) with a projection that picks columns between them, handing matches on
    /// ungathered, gives what running each operator on the previous one's gathered output
    /// gives, from every kind of selection.
    #[test]
    fn chained_probes_left_ungathered_equal_probes_gathered_at_each_step() {
        use crate::operator::pair_filter::PairFilter;
        use crate::operator::project::ProjectOp;
        use morsel_planner::BinaryOp;
        let mut r = Rng(31);
        let n = 3000;
        let input = keys(&mut r, n, 200, 1);
        let build1 = int_batch(&[&keys(&mut r, 150, 200, 1), &keys(&mut r, 150, 90, 1)]);
        let build2 = int_batch(&[&keys(&mut r, 60, 90, 1), &keys(&mut r, 60, 1000, 7)]);
        // Pair column `a` compared with pair column `b`.
        let condition = |a: usize, op: BinaryOp, b: usize| PairFilter {
            columns: vec![a, b],
            expr: PhysExpr::Binary {
                left: Box::new(PhysExpr::Column(0)),
                op,
                right: Box::new(PhysExpr::Column(1)),
            },
            schema: int_batch(&[&[None], &[None]]).schema().clone(),
        };
        let kinds = [JoinKind::Inner, JoinKind::Semi];
        for (second, filtered) in kinds.into_iter().flat_map(|k| [(k, false), (k, true)]) {
            // (k) x build1 -> (k, b0, b1); pick (b1, k); (b1, k) x build2 on b1; then on k
            // against build1 again.
            let mut first = probe_op(&build1, 0, JoinKind::Inner, 1);
            let pick = ProjectOp {
                exprs: vec![PhysExpr::Column(2), PhysExpr::Column(0)],
                schema: Arc::new(Schema::new(vec![
                    Field::new("c0", DataType::Int64, true),
                    Field::new("c1", DataType::Int64, true),
                ])),
            };
            let mut mid = probe_op(&build2, 0, second, 2);
            let width = mid.schema.fields.len();
            let mut last = probe_op(&build1, 1, JoinKind::Inner, width);
            if filtered {
                // The key against build1's b1 (pair columns 0 and 2).
                first.filter = Some(condition(0, BinaryOp::NotEq, 2));
                // The first build's b1 (picked as c0) against build2's second column; then,
                // when build2's columns are there, its second column against the last
                // build's b1.
                mid.filter = Some(condition(0, BinaryOp::Lt, 3));
                last.filter = Some(match second {
                    JoinKind::Semi => condition(0, BinaryOp::NotEq, width + 1),
                    _ => condition(3, BinaryOp::Gt, width + 1),
                });
            }
            assert!(first.takes_selection() && mid.takes_selection() && last.takes_selection());
            let ops: [&dyn Operator; 4] = [&first, &pick, &mid, &last];
            let rows: Vec<u32> = (0..n as u32).filter(|_| r.below(3) != 0).collect();
            let lives = [
                Live::All,
                Live::Rows(rows.clone()),
                Live::Mask(morsel_storage::Bitmap::from_bools(
                    (0..n as u32).map(|i| rows.binary_search(&i).is_ok()),
                )),
            ];
            for live in lives {
                let mut want = Selected {
                    batch: int_batch(&[&input]),
                    live: match &live {
                        Live::All => Live::All,
                        Live::Rows(r) => Live::Rows(r.clone()),
                        _ => Live::Rows(rows.clone()),
                    },
                }
                .gather()
                .unwrap();
                for op in ops {
                    want = op.execute(want).unwrap();
                }
                let mut got = Selected {
                    batch: int_batch(&[&input]),
                    live,
                };
                for (i, op) in ops.iter().enumerate() {
                    got = op.execute_selected(got, i + 1 < ops.len()).unwrap();
                    let ungathered = matches!(got.live, Live::Joined(_));
                    assert_eq!(ungathered, i + 1 < ops.len());
                }
                let got = got.gather().unwrap();
                assert!(want.num_rows() > 0);
                assert_eq!(got.num_rows(), want.num_rows(), "{second:?} {filtered}");
                for c in 0..want.num_columns() {
                    for i in 0..want.num_rows() {
                        assert_eq!(got.column(c).scalar_at(i), want.column(c).scalar_at(i));
                    }
                }
            }
        }
    }

    /// A probe on two integer keys packed into one, one key of its input and one of an
    /// earlier probe's build, over that probe's matches left ungathered: where at most half
    /// the matches have a first key some build row has, the second key is read at those
    /// alone; either way the rows are those of the probe of the matches gathered (inner
    /// and semi, with NULLs and repeated keys).
    #[test]
    fn packed_keys_over_matches_read_later_keys_at_first_key_hits() {
        let mut r = Rng(53);
        let n = 4000;
        let input = int_batch(&[&keys(&mut r, n, 300, 1), &keys(&mut r, n, 40, 1)]);
        let build1 = int_batch(&[&keys(&mut r, 200, 300, 1), &keys(&mut r, 200, 12, 1)]);
        for (first_keys, few) in [(10, true), (40, false)] {
            let build2 = int_batch(&[
                &keys(&mut r, 150, first_keys, 1),
                &keys(&mut r, 150, 12, 1),
                &keys(&mut r, 150, 1000, 1),
            ]);
            for kind in [JoinKind::Inner, JoinKind::Semi] {
                // (c0, c1) x build1 on c0 -> (c0, c1, b0, b1); then x build2 on (c1, b1).
                let first = probe_op(&build1, 0, JoinKind::Inner, 2);
                let mut second = probe_op(&build2, 1, kind, 4);
                let keys = [PhysExpr::Column(0), PhysExpr::Column(1)];
                let table = JoinTable::new(build2.clone(), &keys, kind == JoinKind::Semi, 1);
                second.table = Arc::new(table.unwrap());
                second.probe_keys = vec![PhysExpr::Column(1), PhysExpr::Column(3)];
                assert!(second.table.tests_first_key_only());
                let want = first.execute(input.clone()).unwrap();
                let got = Selected {
                    batch: input.clone(),
                    live: Live::All,
                };
                let got = first.execute_selected(got, true).unwrap();
                let Live::Joined(joined) = &got.live else {
                    panic!("the first probe's matches are left ungathered");
                };
                let hits = second.first_key_hits(&got.batch, joined, &[1, 3]);
                assert_eq!(hits.is_some(), few, "{first_keys} first keys");
                let want = second.execute(want).unwrap();
                let got = second
                    .execute_selected(got, false)
                    .unwrap()
                    .gather()
                    .unwrap();
                assert!(want.num_rows() > 0);
                assert_eq!(got.num_rows(), want.num_rows(), "{kind:?} {first_keys}");
                for c in 0..want.num_columns() {
                    for i in 0..want.num_rows() {
                        assert_eq!(got.column(c).scalar_at(i), want.column(c).scalar_at(i));
                    }
                }
            }
        }
    }

    /// A mark sink marks from a selection (listed or masked), with and without a condition
    /// over the pair, the build rows it marks from the selected rows gathered.
    #[test]
    fn marking_from_a_selection_equals_marking_its_rows_gathered() {
        use crate::operator::pair_filter::PairFilter;
        let mut r = Rng(41);
        let n = 2000;
        let build = int_batch(&[&keys(&mut r, 300, 150, 1), &keys(&mut r, 300, 5, 1)]);
        let input = int_batch(&[&keys(&mut r, n, 150, 1), &keys(&mut r, n, 5, 1)]);
        let table =
            Arc::new(JoinTable::new(build.clone(), &[PhysExpr::Column(0)], false, 1).unwrap());
        // build.c1 <> input.c1: pair columns 1 and 3.
        let condition = || PairFilter {
            columns: vec![1, 3],
            expr: PhysExpr::Binary {
                left: Box::new(PhysExpr::Column(0)),
                op: morsel_planner::BinaryOp::NotEq,
                right: Box::new(PhysExpr::Column(1)),
            },
            schema: int_batch(&[&[None], &[None]]).schema().clone(),
        };
        for with_filter in [false, true] {
            let sink = |filter| MarkSink {
                table: table.clone(),
                keys: vec![PhysExpr::Column(0)],
                filter,
                matched: Arc::new(MatchedRows::new(table.num_rows())),
                details: Vec::new(),
            };
            let rows: Vec<u32> = (0..n as u32).filter(|_| r.below(3) == 0).collect();
            let mask = morsel_storage::Bitmap::from_bools(
                (0..n as u32).map(|i| rows.binary_search(&i).is_ok()),
            );
            let gathered = sink(with_filter.then(condition));
            let selected = crate::kernels::select::take_batch(&input, &rows).unwrap();
            gathered.consume(0, vec![selected]).unwrap();
            let want = gathered.matched.rows(table.num_rows(), true);
            assert!(!want.is_empty() && want.len() < table.num_rows());
            for live in [Live::Rows(rows.clone()), Live::Mask(mask)] {
                let marked = sink(with_filter.then(condition));
                let batch = Selected {
                    batch: input.clone(),
                    live,
                };
                marked.consume_selected(0, vec![batch]).unwrap();
                assert_eq!(
                    marked.matched.rows(table.num_rows(), true),
                    want,
                    "{with_filter}"
                );
            }
        }
    }

    /// `n` keys, one in ten NULL, the others multiples of `spread` below `values * spread`.
    fn keys(r: &mut Rng, n: usize, values: u64, spread: i64) -> Vec<Option<i64>> {
        (0..n)
            .map(|_| (r.below(10) != 0).then(|| r.below(values) as i64 * spread))
            .collect()
    }

    /// The (probe row, build row) pairs of an inner join, probe order then build order.
    fn pairs(build: &[Option<i64>], probe: &[Option<i64>]) -> (String, Vec<(u32, u32)>) {
        let (index, c) = self::probe(build, probe, JoinKind::Inner, false);
        (index, c.probe.into_iter().zip(c.build).collect())
    }

    /// The rows per key laid out on 2, 3 or 8 workers are the serial layout: every key's rows
    /// in build order, NULL keys nowhere (dense, hashed and encoded indexes).
    #[test]
    fn rows_per_key_are_laid_out_the_same_on_any_number_of_workers() {
        let mut r = Rng(23);
        for spread in [1i64, 1 << 40] {
            let build = keys(&mut r, 5000, 700, spread);
            let layout = |threads: usize, key: PhysExpr| {
                let t = JoinTable::new(batch(&build), &[key], false, threads).expect("table");
                (t.keys.describe(), t.starts, t.rows)
            };
            let two_keys = || vec![PhysExpr::Column(0), PhysExpr::Column(0)];
            let serial = layout(1, PhysExpr::Column(0));
            assert_eq!(serial.2.len(), build.iter().flatten().count());
            for k in 0..serial.1.len() - 1 {
                let rows = &serial.2[serial.1[k] as usize..serial.1[k + 1] as usize];
                assert!(
                    rows.windows(2).all(|w| w[0] < w[1]),
                    "key {k} out of build order"
                );
            }
            for threads in [2, 3, 8] {
                assert_eq!(
                    layout(threads, PhysExpr::Column(0)),
                    serial,
                    "{threads} workers"
                );
                let encoded = |threads| {
                    let t = JoinTable::new(batch(&build), &two_keys(), false, threads).unwrap();
                    (t.starts, t.rows)
                };
                assert_eq!(encoded(threads), encoded(1), "{threads} workers, encoded");
            }
        }
    }

    /// A table of keys only (for a semi join without a filter) pairs each probe row that has
    /// a match once, whether its key is indexed by value or hashed, unique or repeated.
    #[test]
    fn a_table_of_keys_only_finds_each_matching_probe_row_once() {
        let mut r = Rng(17);
        for spread in [1i64, 1 << 40] {
            let build = keys(&mut r, 400, 150, spread);
            let probe = keys(&mut r, 600, 200, spread);
            let (index, c) = self::probe(&build, &probe, JoinKind::Semi, true);
            assert!(index.ends_with("keys only (no rows per key)"), "{index}");
            let got = c.probe;
            let mut want: Vec<u32> = nested_loop(&build, &probe)
                .iter()
                .map(|&(i, _)| i)
                .collect();
            want.dedup();
            assert_eq!(got, want, "spread {spread}");
        }
    }

    fn nested_loop(build: &[Option<i64>], probe: &[Option<i64>]) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for (i, p) in probe.iter().enumerate() {
            for (r, b) in build.iter().enumerate() {
                if p.is_some() && p == b {
                    out.push((i as u32, r as u32));
                }
            }
        }
        out
    }

    /// Two integer key columns (the first Int64, the second Int32).
    fn pairs_batch(keys: &[(Option<i64>, Option<i64>)]) -> Batch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Int32, true),
        ]));
        let a = Column::Int64(PrimitiveColumn::from_options(keys.iter().map(|k| k.0)));
        let b = Column::Int32(PrimitiveColumn::from_options(
            keys.iter().map(|k| k.1.map(|v| v as i32)),
        ));
        Batch::try_new(schema, vec![a, b], keys.len()).expect("batch")
    }

    /// Two integer keys packed into one find what a nested loop over both finds: NULL in
    /// either key matches nothing, probe values outside a build column's range (below and
    /// above, in either column) match nothing, negative and huge values included; ranges
    /// too wide to pack fall back to encoded keys with the same answer; of listed rows, only
    /// theirs. Packed keys spanning too wide a range for a bit per value are tested first
    /// by a bit per hashed value.
    #[test]
    fn packed_integer_keys_match_a_nested_loop() {
        let mut r = Rng(29);
        for (spread, offset) in [(1i64, 0i64), (7, -300), (1 << 20, 5), (1 << 56, -9)] {
            let key = |r: &mut Rng, n: u64| {
                (r.below(12) != 0).then(|| offset + (r.below(n) as i64 - 3) * spread)
            };
            let small = |r: &mut Rng, n: u64| (r.below(12) != 0).then(|| r.below(n) as i64 - 2);
            let build: Vec<_> = (0..400)
                .map(|_| (key(&mut r, 60), small(&mut r, 9)))
                .collect();
            let probe: Vec<_> = (0..700)
                .map(|_| (key(&mut r, 70), small(&mut r, 12)))
                .collect();
            let keys = [PhysExpr::Column(0), PhysExpr::Column(1)];
            let table = JoinTable::new(pairs_batch(&build), &keys, false, 2).expect("table");
            let packed = table.index_kind().contains("packed");
            assert_eq!(
                packed,
                spread < 1 << 56,
                "spread {spread}: {}",
                table.index_kind()
            );
            assert_eq!(
                table.index_kind().contains("a bit per hashed value"),
                spread == 1 << 20,
                "spread {spread}: {}",
                table.index_kind()
            );
            let found = table
                .candidates(
                    &[
                        keys[0].evaluate(&pairs_batch(&probe)).unwrap(),
                        keys[1].evaluate(&pairs_batch(&probe)).unwrap(),
                    ],
                    probe.len(),
                    None,
                    Vec::new(),
                    Vec::new(),
                )
                .expect("probe");
            let got: Vec<(u32, u32)> = found.probe.into_iter().zip(found.build).collect();
            let mut want = Vec::new();
            for (i, p) in probe.iter().enumerate() {
                for (j, b) in build.iter().enumerate() {
                    if p.0.is_some() && p.1.is_some() && p == b {
                        want.push((i as u32, j as u32));
                    }
                }
            }
            assert!(!want.is_empty());
            assert_eq!(got, want, "spread {spread}");
            let nulls: Vec<bool> = probe
                .iter()
                .map(|p| p.0.is_none() || p.1.is_none())
                .collect();
            assert_eq!(found.null_key, nulls);
            // Of listed rows only (a filter's survivors): their pairs, the others' keys
            // not packed.
            let listed: Vec<u32> = (0..probe.len() as u32).filter(|i| i % 3 != 1).collect();
            let cols = keys.map(|k| k.evaluate(&pairs_batch(&probe)).unwrap());
            let found = table
                .candidates(&cols, probe.len(), Some(&listed), Vec::new(), Vec::new())
                .expect("probe");
            let got: Vec<(u32, u32)> = found.probe.into_iter().zip(found.build).collect();
            let want: Vec<(u32, u32)> = want.into_iter().filter(|(i, _)| i % 3 != 1).collect();
            assert_eq!(got, want, "spread {spread}, listed rows");
        }
    }

    /// Of packed keys, the first is tested cheaply (by a bit per value) where its range
    /// allows: the rows kept, whole or listed, are those whose first key some build row has
    /// (NULL never), a superset of the rows that find a match.
    #[test]
    fn packed_keys_test_their_first_key_cheaply() {
        let mut r = Rng(31);
        let pair = |r: &mut Rng, n: u64| {
            let first = (r.below(10) != 0).then(|| r.below(n) as i64 * 3 - 50);
            (first, Some(r.below(7) as i64))
        };
        let build: Vec<_> = (0..300).map(|_| pair(&mut r, 400)).collect();
        let probe: Vec<_> = (0..2000).map(|_| pair(&mut r, 1000)).collect();
        let keys = [PhysExpr::Column(0), PhysExpr::Column(1)];
        let table = JoinTable::new(pairs_batch(&build), &keys, false, 2).expect("table");
        assert!(table.tests_keys_cheaply() && table.tests_first_key_only());
        let first = keys[0].evaluate(&pairs_batch(&probe)).unwrap();
        let has = |i: usize| probe[i].0.is_some() && build.iter().any(|b| b.0 == probe[i].0);
        let mask = table.key_mask(&first).expect("a cheap test");
        let want: Vec<u32> = (0..probe.len() as u32)
            .filter(|&i| has(i as usize))
            .collect();
        assert_eq!(mask.set_positions(), want);
        let mut listed: Vec<u32> = (0..probe.len() as u32).filter(|i| i % 3 != 0).collect();
        assert!(table.retain_key_rows(&first, &mut listed));
        let want: Vec<u32> = want.into_iter().filter(|i| i % 3 != 0).collect();
        assert_eq!(listed, want);
        // A first key spanning too wide a range for its bits: no cheap test.
        let wide: Vec<_> = build.iter().map(|b| (b.0.map(|v| v << 40), b.1)).collect();
        let table = JoinTable::new(pairs_batch(&wide), &keys, false, 2).expect("table");
        assert!(!table.tests_keys_cheaply() && table.key_mask(&first).is_none());
    }

    #[test]
    fn integer_keys_match_a_nested_loop_whether_indexed_by_value_or_hashed() {
        let mut r = Rng(11);
        // (spread between distinct values, offset): small spreads index by value in an
        // array, larger ones by a bit per value and its rank, larger still hash with a bit
        // per value in the range, the largest hash alone; negative offsets and probe values
        // outside the range are included.
        let spreads = [
            (1i64, 0i64),
            (3, -500),
            (200, 3),
            (1000, -7),
            (1 << 40, 7),
            (1, i64::MIN / 2),
        ];
        for (spread, offset) in spreads {
            for unique in [true, false] {
                let n = 400;
                let mut build: Vec<Option<i64>> = (0..n)
                    .map(|i| {
                        let v = if unique { i } else { r.below(n as u64) as i64 };
                        (r.below(10) != 0).then_some(offset + v * spread)
                    })
                    .collect();
                if unique {
                    build.retain(Option::is_some);
                }
                let probe: Vec<Option<i64>> = (0..500)
                    .map(|_| {
                        let v = r.below(n as u64 + 50) as i64 - 20;
                        (r.below(10) != 0).then_some(offset + v * spread)
                    })
                    .collect();
                let (kind, got) = pairs(&build, &probe);
                let want_kind = match spread {
                    ..200 => "indexed by value (an array",
                    200 => "indexed by value (a bit per value",
                    1000 => "hashed by integer value, a bit per value",
                    _ => "hashed by integer value",
                };
                assert!(kind.starts_with(want_kind), "{kind} for spread {spread}");
                assert_eq!(
                    got,
                    nested_loop(&build, &probe),
                    "spread {spread} unique {unique}"
                );
            }
        }
    }

    /// A probe whose keys mostly have no build row looks up only the rows that may match,
    /// and finds the pairs a nested loop finds, NULL keys flagged on every row; where the
    /// first rows mostly match, it probes every row, with the same result (keys ranked by a
    /// bit per value, and hashed with one).
    #[test]
    fn sparse_matches_are_probed_at_their_rows_only() {
        let mut r = Rng(31);
        for spread in [200i64, 1000] {
            for unique in [true, false] {
                let build: Vec<Option<i64>> = (0..400)
                    .map(|i| Some(if unique { i } else { r.below(400) as i64 } * spread))
                    .collect();
                for dense_head in [false, true] {
                    // One row in twenty holds a build key (all of the first 64 where
                    // `dense_head`), one in ten is NULL, the others miss the keys.
                    let probe: Vec<Option<i64>> = (0..3000)
                        .map(|i| match r.below(20) {
                            _ if dense_head && i < 64 => Some(r.below(400) as i64 * spread),
                            0 => Some(r.below(400) as i64 * spread),
                            1 | 2 => None,
                            _ => Some(r.below(400) as i64 * spread + 1 + r.below(5) as i64),
                        })
                        .collect();
                    let table =
                        JoinTable::new(batch(&build), &[PhysExpr::Column(0)], false, 1).unwrap();
                    let col = batch(&probe).column(0).clone();
                    assert_eq!(
                        table.sparse_hits(&col).is_some(),
                        !dense_head,
                        "spread {spread}, {}",
                        table.index_kind()
                    );
                    let (_, c) = self::probe(&build, &probe, JoinKind::Inner, false);
                    let got: Vec<(u32, u32)> = c.probe.into_iter().zip(c.build).collect();
                    assert_eq!(got, nested_loop(&build, &probe), "spread {spread}");
                    let nulls: Vec<bool> = probe.iter().map(Option::is_none).collect();
                    assert_eq!(c.null_key, nulls, "spread {spread}");
                    // A selection of the rows, most of their span (its keys read whole)
                    // or few of it (read at the rows): probed at those that may match.
                    for every in [3, 7] {
                        let listed: Vec<u32> = (0..probe.len() as u32)
                            .filter(|i| (every == 3) == (i % every != 1))
                            .collect();
                        // (Every seventh row reads past the dense head: no claim.)
                        if every == 3 {
                            assert_eq!(
                                table.sparse_listed(&col, &listed).is_some(),
                                !dense_head,
                                "spread {spread}"
                            );
                        }
                        let c = table
                            .candidates(
                                std::slice::from_ref(&col),
                                probe.len(),
                                Some(&listed),
                                vec![],
                                vec![],
                            )
                            .unwrap();
                        let got: Vec<(u32, u32)> = c.probe.into_iter().zip(c.build).collect();
                        let want: Vec<(u32, u32)> = nested_loop(&build, &probe)
                            .into_iter()
                            .filter(|(i, _)| listed.contains(i))
                            .collect();
                        assert_eq!(got, want, "spread {spread}, every {every}");
                    }
                }
            }
        }
    }

    #[test]
    fn extreme_integer_keys_do_not_overflow_the_range() {
        let build = [Some(i64::MIN), Some(i64::MAX), None, Some(0)];
        let probe = [Some(i64::MAX), Some(0), Some(i64::MIN), None, Some(1)];
        let (kind, got) = pairs(&build, &probe);
        assert!(kind.starts_with("hashed"), "{kind}");
        assert_eq!(got, nested_loop(&build, &probe));
    }
}
