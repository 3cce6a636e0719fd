//! Sort and Top-K. Rows are ordered by a stable sort (ties keep their input order), NULLs
//! first or last per key as requested.
//!
//! A full sort collects its input in morsel order and sorts once. With a limit (`ORDER BY ...
//! LIMIT k`) each morsel keeps only its own first k rows (a selection, then a sort of those
//! k), and the partials are merged in morsel order and cut to k again. Ties are broken by
//! input position throughout, so Top-K returns exactly the rows a full stable sort would.
//! With one key that normalizes to one word, the morsels share a bound: the smallest k-th
//! word any morsel has kept. A row whose word is above it has k rows before it already and
//! is dropped before the selection; rows equal to it stay (position decides among them), so
//! the answer is the same whichever morsels set the bound first.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use hashbrown::HashMap;
use morsel_storage::{Batch, Column, SchemaRef, Utf8Column};

use super::par_sort::{par_sort_by, par_sort_by_buckets};
use crate::error::ExecResult;
use crate::expr::PhysExpr;
use crate::kernels::compare::cmp_rows;
use crate::scheduler::{parallel_map, Sink};

pub struct SortKey {
    pub expr: PhysExpr,
    pub asc: bool,
    pub nulls_first: bool,
}

/// An evaluated sort key: the column, ascending, NULLs first.
pub type KeyColumn = (Column, bool, bool);

/// Compares rows `a` and `b` on `keys` (direction and NULL placement applied).
pub fn cmp_keys(keys: &[KeyColumn], a: usize, b: usize) -> Ordering {
    for (c, asc, nulls_first) in keys {
        let ord = match (c.is_valid(a), c.is_valid(b)) {
            (true, true) => {
                let o = cmp_rows(c, a, c, b);
                if *asc {
                    o
                } else {
                    o.reverse()
                }
            }
            (false, false) => Ordering::Equal,
            (false, true) if *nulls_first => Ordering::Less,
            (false, true) => Ordering::Greater,
            (true, false) if *nulls_first => Ordering::Greater,
            (true, false) => Ordering::Less,
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    Ordering::Equal
}

/// At most this many words (8 bytes each) hold a string key's prefix.
const STRING_WORDS: usize = 4;

/// Each row's sort keys as words that compare, as unsigned integers in order, the way the
/// keys do: per key, a word placing NULLs (only for a key that has any) and a word holding
/// the value's bits mapped to an order-preserving unsigned integer (inverted for DESC). When
/// packing, a string with few distinct values takes its rank among them ([`text_ranks`]);
/// otherwise as many words as its longest value needs, up to [`STRING_WORDS`], its bytes
/// big-endian and zero-padded. Where a string may not fit (longer values, or NUL bytes that
/// padding would confuse), its words end the words: rows whose words differ are in word
/// order, but equal words may still differ from that key on. Returns the words, row-major,
/// the words per row, and the first key the words do not decide (`None`: they decide all).
fn normalized_keys(keys: &[KeyColumn], n: usize, pack: bool) -> (Vec<u64>, usize, Option<usize>) {
    let mut words_per_key: Vec<Vec<u64>> = Vec::with_capacity(keys.len());
    let mut undecided = None;
    for (key, (c, asc, nulls_first)) in keys.iter().enumerate() {
        // The validity bitmap, when some row is NULL.
        let validity = c.validity().filter(|_| c.null_count() > 0);
        if let Some(bits) = validity {
            let (null, valid) = if *nulls_first { (0, 1) } else { (1, 0) };
            words_per_key.push(
                (0..n)
                    .map(|i| if bits.get(i) { valid } else { null })
                    .collect(),
            );
        }
        let invert = |v: u64| if *asc { v } else { !v };
        let ranks = match c {
            Column::Utf8(x) if pack => text_ranks(x, n),
            _ => None,
        };
        if let (Column::Utf8(x), None) = (c, &ranks) {
            let values = (0..n).filter(|&i| x.is_valid(i)).map(|i| x.value_bytes(i));
            let (longest, nul) = values.fold((0, false), |(l, z), b| {
                (l.max(b.len()), z || b.contains(&0))
            });
            let fits = longest <= 8 * STRING_WORDS && !nul;
            for k in 0..longest.div_ceil(8).clamp(1, STRING_WORDS) {
                words_per_key.push(
                    (0..n)
                        .map(|i| {
                            if !x.is_valid(i) {
                                return 0;
                            }
                            let bytes = x.value_bytes(i);
                            let mut word = [0u8; 8];
                            let from = (8 * k).min(bytes.len());
                            let to = (8 * k + 8).min(bytes.len());
                            word[..to - from].copy_from_slice(&bytes[from..to]);
                            invert(u64::from_be_bytes(word))
                        })
                        .collect(),
                );
            }
            if !fits {
                // Later keys must not decide before the whole string does.
                undecided = Some(key);
                break;
            }
            continue;
        }
        let mut value: Vec<u64> = match c {
            // Ranked (a string without ranks took its words above).
            Column::Utf8(_) => ranks.unwrap_or_default().into_iter().map(invert).collect(),
            Column::Boolean(x) => (0..n)
                .map(|i| invert(u64::from(x.values().get(i))))
                .collect(),
            Column::Int32(x) | Column::Date32(x) => x
                .values()
                .iter()
                .map(|&v| invert(int_word(v.into())))
                .collect(),
            Column::Int64(x) | Column::Timestamp(x) => {
                x.values().iter().map(|&v| invert(int_word(v))).collect()
            }
            Column::Float64(x) => x.values().iter().map(|&v| invert(float_word(v))).collect(),
        };
        if let Some(bits) = validity {
            // NULLs are told apart by their own word: their value word takes the smallest
            // valid value, so that it widens nothing when words are packed.
            let valid = (0..n).filter(|&i| bits.get(i));
            let fill = valid.map(|i| value[i]).min().unwrap_or(0);
            for (i, v) in value.iter_mut().enumerate() {
                if !bits.get(i) {
                    *v = fill;
                }
            }
        }
        words_per_key.push(value);
    }
    let (words, w) = pack_words(&words_per_key, n, pack);
    (words, w, undecided)
}

/// An integer's order-preserving word.
#[inline(always)]
fn int_word(v: i64) -> u64 {
    (v as u64) ^ (1 << 63)
}

/// A double's order-preserving word: -0.0 sorts with 0.0 and every NaN after +inf, as
/// `cmp_f64` orders them. Without a branch on the value: a column's NULL rows hold 0.0, and
/// a branch on zero mispredicted on each of them.
#[inline(always)]
fn float_word(v: f64) -> u64 {
    // Adding 0.0 turns -0.0 into 0.0 and leaves every other value as it is.
    let v = v + 0.0;
    let bits = if v.is_nan() {
        f64::NAN.to_bits()
    } else {
        v.to_bits()
    };
    // A negative value's bits all flip; a positive one's sign bit is set.
    bits ^ (((bits as i64) >> 63) as u64 | 1 << 63)
}

/// Each row's rank among the distinct valid values of a string column, in byte order (any
/// number for a NULL row), when the column has few distinct values: a key of a few bits
/// that packs beside the others, where its bytes would take up to [`STRING_WORDS`] words and
/// leave a full sort comparing slices (TPC-H Q16 sorts 18K rows by two such strings). `None`
/// once more than one in [`RANK_SHARE`] rows is a distinct value.
fn text_ranks(x: &Utf8Column, n: usize) -> Option<Vec<u64>> {
    let most = (n / RANK_SHARE).max(16);
    let mut ids: HashMap<&[u8], u32> = HashMap::new();
    let mut row_ids = Vec::with_capacity(n);
    for i in 0..n {
        let id = if x.is_valid(i) {
            let next = ids.len() as u32;
            *ids.entry(x.value_bytes(i)).or_insert(next)
        } else {
            0
        };
        if ids.len() > most {
            return None;
        }
        row_ids.push(id);
    }
    let mut distinct: Vec<(&[u8], u32)> = ids.into_iter().collect();
    distinct.sort_unstable();
    let mut rank = vec![0u64; distinct.len().max(1)];
    for (r, &(_, id)) in distinct.iter().enumerate() {
        rank[id as usize] = r as u64;
    }
    Some(row_ids.into_iter().map(|id| rank[id as usize]).collect())
}

/// A string sort key is ranked ([`text_ranks`]) while at most one in this many rows is a
/// distinct value.
const RANK_SHARE: usize = 8;

/// Packs word columns into as few row-major words as they fit: each column keeps only the
/// bits its values span (less its minimum), and columns share a word while they fit. Rows
/// compare in the same order, and are equal in the same cases, as they did over the columns;
/// a column that is constant drops out. Without `pack`, one word per column, as they are.
fn pack_words(columns: &[Vec<u64>], n: usize, pack: bool) -> (Vec<u64>, usize) {
    // (column, its minimum, its bits), grouped into words.
    let mut layout: Vec<Vec<(&[u64], u64, u32)>> = Vec::new();
    let mut used = 64;
    for column in columns {
        let (min, bits) = if pack {
            let (min, max) = column
                .iter()
                .fold((u64::MAX, 0), |(lo, hi), &v| (lo.min(v), hi.max(v)));
            (min, 64 - max.wrapping_sub(min).leading_zeros())
        } else {
            (0, 64)
        };
        if n == 0 || bits == 0 {
            continue;
        }
        if used + bits > 64 {
            layout.push(Vec::new());
            used = 0;
        }
        used += bits;
        if let Some(word) = layout.last_mut() {
            word.push((column.as_slice(), min, bits));
        }
    }
    let w = layout.len();
    let mut words = vec![0u64; n * w];
    for (k, fields) in layout.iter().enumerate() {
        for &(column, min, bits) in fields {
            for (row, &v) in column.iter().enumerate() {
                let word = &mut words[row * w + k];
                *word = word.checked_shl(bits).unwrap_or(0) | (v - min);
            }
        }
    }
    (words, w)
}

/// Sorts `(key, row)` pairs (so ties keep row order) and returns the rows; only the first
/// `limit` if given.
fn sort_pairs<K: Ord + Copy + Send + Sync>(
    pairs: Vec<(K, u32)>,
    limit: Option<usize>,
    threads: usize,
) -> Vec<u32> {
    let sorted = sort_distinct(pairs, limit, threads);
    sorted.into_iter().map(|(_, r)| r).collect()
}

/// [`sort_pairs`] for keys that start with `lead(key)`, a number below `2^bits`: a full
/// sort deals the pairs into buckets by it first.
fn sort_pairs_led<K: Ord + Copy + Send + Sync>(
    pairs: Vec<(K, u32)>,
    limit: Option<usize>,
    threads: usize,
    bits: u32,
    lead: impl Fn(&K) -> u64,
) -> Vec<u32> {
    match limit {
        None => par_sort_by_buckets(pairs, threads, bits, |(k, _)| lead(k))
            .into_iter()
            .map(|(_, r)| r)
            .collect(),
        Some(_) => sort_pairs(pairs, limit, threads),
    }
}

/// Sorts elements that are all distinct; only the first `limit` if given.
fn sort_distinct<T: Ord + Copy + Send + Sync>(
    mut v: Vec<T>,
    limit: Option<usize>,
    threads: usize,
) -> Vec<T> {
    match limit {
        Some(k) if k < v.len() => {
            if k == 0 {
                return Vec::new();
            }
            v.select_nth_unstable(k - 1);
            v.truncate(k);
            v.sort_unstable();
        }
        _ => par_sort_by(&mut v, threads, |a, b| a.cmp(b)),
    }
    v
}

/// The row order of `n` rows by `keys`, ties by position; only the first `limit` if given;
/// a full sort runs on up to `threads` workers (the order is the same for any number).
/// Keys are first normalized to unsigned words, so the sort compares integers (up to four
/// words per row as one integer or array, more as slices); after a string longer than the
/// words hold, rows whose words tie compare the keys themselves.
pub fn sorted_rows(keys: &[KeyColumn], n: usize, limit: Option<usize>, threads: usize) -> Vec<u32> {
    // Packing pays for a full sort; a Top-K selects among few rows per morsel.
    let normalized = normalized_keys(keys, n, limit.is_none());
    sorted_by_words(keys, normalized, n, limit, threads)
}

/// [`sorted_rows`] once the keys are normalized (`words`, `w` words a row, and the first
/// key the words leave undecided).
fn sorted_by_words(
    keys: &[KeyColumn],
    (words, w, undecided): (Vec<u64>, usize, Option<usize>),
    n: usize,
    limit: Option<usize>,
    threads: usize,
) -> Vec<u32> {
    if let Some(from) = undecided {
        // A long string key: the words order most pairs; equal words compare the keys
        // from that one on (the earlier ones are equal when their words are).
        let rest = &keys[from..];
        let cmp = |a: &u32, b: &u32| {
            let (a, b) = (*a as usize, *b as usize);
            words[a * w..(a + 1) * w]
                .cmp(&words[b * w..(b + 1) * w])
                .then_with(|| cmp_keys(rest, a, b))
                .then(a.cmp(&b))
        };
        return sorted_by(n, limit, threads, cmp);
    }
    match w {
        // Every row equal: position order.
        0 => (0..n.min(limit.unwrap_or(n)) as u32).collect(),
        1 => {
            let bits = bits_of(words.iter().copied());
            let row_bits = 64 - (n as u64).leading_zeros();
            if bits + row_bits <= 64 {
                // Key and row in one integer.
                let keys = (0..n).map(|r| (words[r] << row_bits) | r as u64).collect();
                let mask = (1u64 << row_bits) - 1;
                let sorted = match limit {
                    None => par_sort_by_buckets(keys, threads, bits + row_bits, |&k| k),
                    Some(_) => sort_distinct(keys, limit, threads),
                };
                return sorted.into_iter().map(|k| (k & mask) as u32).collect();
            }
            let pairs = (0..n).map(|r| (words[r], r as u32)).collect();
            sort_pairs_led(pairs, limit, threads, bits, |&k| k)
        }
        2 => {
            let bits = bits_of((0..n).map(|r| words[2 * r]));
            let pairs = (0..n)
                .map(|r| {
                    let key = (u128::from(words[2 * r]) << 64) | u128::from(words[2 * r + 1]);
                    (key, r as u32)
                })
                .collect();
            sort_pairs_led(pairs, limit, threads, bits, |&k| (k >> 64) as u64)
        }
        3 => sort_pairs(word_arrays::<3>(&words, n), limit, threads),
        4 => sort_pairs(word_arrays::<4>(&words, n), limit, threads),
        _ => {
            let cmp = |a: &u32, b: &u32| {
                let (a, b) = (*a as usize, *b as usize);
                words[a * w..(a + 1) * w]
                    .cmp(&words[b * w..(b + 1) * w])
                    .then(a.cmp(&b))
            };
            sorted_by(n, limit, threads, cmp)
        }
    }
}

/// A morsel's first `k` rows by `keys` for Top-K. Where the keys normalize to one word a
/// row, rows whose word is above `bound` are skipped (k rows of other morsels come before
/// them) and `bound` is lowered to this morsel's k-th word; other keys select as
/// [`sorted_rows`] does.
fn top_rows(keys: &[KeyColumn], n: usize, k: usize, bound: &AtomicU64, threads: usize) -> Vec<u32> {
    let limit = bound.load(AtomicOrdering::Relaxed);
    let mut kept = match keys {
        // One number key without NULLs: words made and tested in one pass (the words of
        // `normalized_keys`, without its arrays).
        [(c, asc, _)] if c.null_count() == 0 => {
            let flip = if *asc { 0 } else { u64::MAX };
            match c {
                Column::Float64(x) => {
                    under(x.values()[..n].iter().map(|&v| float_word(v) ^ flip), limit)
                }
                Column::Int64(x) | Column::Timestamp(x) => {
                    under(x.values()[..n].iter().map(|&v| int_word(v) ^ flip), limit)
                }
                Column::Int32(x) | Column::Date32(x) => under(
                    x.values()[..n].iter().map(|&v| int_word(v.into()) ^ flip),
                    limit,
                ),
                _ => return top_rows_normalized(keys, n, k, bound, threads),
            }
        }
        // One double key with NULLs: every valid word lies strictly between 0 and
        // `u64::MAX` either way round (the extremes are NaN's and -inf's words, inverted or
        // not), so a NULL takes 0 to come first or `u64::MAX` to come last, which orders the
        // rows as the NULL word and value word of `normalized_keys` do.
        [(Column::Float64(x), asc, nulls_first)] => {
            let flip = if *asc { 0 } else { u64::MAX };
            let null = if *nulls_first { 0 } else { u64::MAX };
            let values = &x.values()[..n];
            // A row's word or the NULL word picked by a mask from its validity bit: a NULL
            // here or there is as good as random, and a branch on it mispredicts.
            let valid = |w: usize| x.validity().map_or(u64::MAX, |v| v.word(w));
            let mut bits = (0, valid(0));
            let word = |i: usize| {
                if i / 64 != bits.0 {
                    bits = (i / 64, valid(i / 64));
                }
                let keep = ((bits.1 >> (i % 64)) & 1).wrapping_neg();
                (float_word(values[i]) ^ flip) & keep | null & !keep
            };
            under((0..n).map(word), limit)
        }
        _ => return top_rows_normalized(keys, n, k, bound, threads),
    };
    keep_first(&mut kept, k, bound)
}

/// Each row's word and number where the word is at or below `limit`.
#[inline(always)]
fn under(words: impl Iterator<Item = u64>, limit: u64) -> Vec<(u64, u32)> {
    let mut kept = Vec::new();
    for (r, w) in words.enumerate() {
        if w <= limit {
            kept.push((w, r as u32));
        }
    }
    kept
}

/// [`top_rows`] through [`normalized_keys`].
fn top_rows_normalized(
    keys: &[KeyColumn],
    n: usize,
    k: usize,
    bound: &AtomicU64,
    threads: usize,
) -> Vec<u32> {
    let (words, w, undecided) = normalized_keys(keys, n, false);
    if w != 1 || undecided.is_some() || k == 0 {
        return sorted_by_words(keys, (words, w, undecided), n, Some(k), threads);
    }
    let limit = bound.load(AtomicOrdering::Relaxed);
    let mut kept: Vec<(u64, u32)> = (0..n as u32)
        .filter(|&r| words[r as usize] <= limit)
        .map(|r| (words[r as usize], r))
        .collect();
    keep_first(&mut kept, k, bound)
}

/// The first `k` of a morsel's rows under the bound (word and row), in order; lowers the
/// bound to the k-th word when there are `k`.
fn keep_first(kept: &mut Vec<(u64, u32)>, k: usize, bound: &AtomicU64) -> Vec<u32> {
    if k == 0 {
        return Vec::new();
    }
    if kept.len() > k {
        kept.select_nth_unstable(k - 1);
        kept.truncate(k);
    }
    kept.sort_unstable();
    if kept.len() == k {
        bound.fetch_min(kept[k - 1].0, AtomicOrdering::Relaxed);
    }
    kept.iter().map(|&(_, r)| r).collect()
}

/// The bits the largest of `words` needs.
fn bits_of(words: impl Iterator<Item = u64>) -> u32 {
    64 - words.max().map_or(0, u64::leading_zeros)
}

/// Each row's `W` key words as one array (arrays compare word by word), with the row.
fn word_arrays<const W: usize>(words: &[u64], n: usize) -> Vec<([u64; W], u32)> {
    (0..n)
        .map(|r| (std::array::from_fn(|k| words[r * W + k]), r as u32))
        .collect()
}

/// Rows `0..n` in `cmp` order (a total order); only the first `limit` if given.
fn sorted_by(
    n: usize,
    limit: Option<usize>,
    threads: usize,
    cmp: impl Fn(&u32, &u32) -> Ordering + Sync,
) -> Vec<u32> {
    let mut perm: Vec<u32> = (0..n as u32).collect();
    match limit {
        Some(k) if k < n => {
            if k == 0 {
                return Vec::new();
            }
            perm.select_nth_unstable_by(k - 1, &cmp);
            perm.truncate(k);
            perm.sort_unstable_by(&cmp);
        }
        _ => par_sort_by(&mut perm, threads, cmp),
    }
    perm
}

pub struct SortSink {
    pub keys: Vec<SortKey>,
    pub schema: SchemaRef,
    /// Keep only the first rows (Top-K: the limit plus offset above the sort).
    pub limit: Option<usize>,
    /// Workers for the final sort.
    pub threads: usize,
    /// Top-K over one single-word key: the smallest k-th word a morsel has kept so far
    /// (`u64::MAX` until one has; see the module docs).
    pub bound: AtomicU64,
}

impl SortSink {
    /// `batches` as one batch, ordered (and cut to the limit); `bounded`: a morsel's rows
    /// for Top-K, which may skip rows past the shared bound.
    fn sort(&self, batches: &[Batch], bounded: bool) -> ExecResult<Batch> {
        let all = Batch::concat(self.schema.clone(), batches)?;
        let keys = self
            .keys
            .iter()
            .map(|k| Ok((k.expr.evaluate(&all)?, k.asc, k.nulls_first)))
            .collect::<ExecResult<Vec<KeyColumn>>>()?;
        let perm = match (self.limit, bounded) {
            (Some(k), true) => top_rows(&keys, all.num_rows(), k, &self.bound, self.threads),
            _ => sorted_rows(&keys, all.num_rows(), self.limit, self.threads),
        };
        let columns = parallel_map(self.threads, all.columns().iter().collect(), |_, c| {
            c.take(&perm)
        });
        Ok(Batch::try_new(self.schema.clone(), columns, perm.len())?)
    }
}

impl Sink for SortSink {
    type Partial = Vec<Batch>;
    type Output = Vec<Batch>;

    fn name(&self) -> &'static str {
        if self.limit.is_some() {
            "TopK"
        } else {
            "Sort"
        }
    }

    fn details(&self) -> Vec<String> {
        let mut d = vec![match self.limit {
            Some(k) => format!(
                "top {k} by {} key(s): each morsel keeps its first {k} rows, then one final sort",
                self.keys.len()
            ),
            None => format!(
                "full sort by {} key(s) after the input ends, on the workers (keys packed into \
                 integers)",
                self.keys.len()
            ),
        }];
        d.extend(crate::physical::fused_details(
            self.keys.iter().map(|k| &k.expr),
        ));
        d
    }

    fn partial_bytes(&self, partial: &Vec<Batch>) -> usize {
        partial.iter().map(Batch::window_bytes).sum()
    }

    fn output_bytes(&self, output: &Vec<Batch>) -> usize {
        output.iter().map(Batch::window_bytes).sum()
    }

    fn consume(&self, _seq: u64, batches: Vec<Batch>) -> ExecResult<Vec<Batch>> {
        match self.limit {
            // Top-K: each morsel keeps only its own first k rows.
            Some(_) => Ok(vec![self.sort(&batches, true)?]),
            None => Ok(batches),
        }
    }

    fn finish(&self, partials: Vec<Vec<Batch>>) -> ExecResult<Vec<Batch>> {
        let batches: Vec<Batch> = partials.into_iter().flatten().collect();
        Ok(vec![self.sort(&batches, false)?])
    }
}

#[cfg(test)]
mod tests {
    use morsel_storage::{BooleanColumn, Buffer, Column, PrimitiveColumn};

    use super::{cmp_keys, sorted_rows, KeyColumn};

    #[test]
    fn top_k_with_a_shared_bound_is_the_prefix_of_the_stable_sort_in_any_morsel_order() {
        use std::sync::Arc;

        use morsel_storage::{Batch, DataType, Field, Schema, Utf8Column};

        use super::{SortKey, SortSink};
        use crate::expr::PhysExpr;
        use crate::scheduler::Sink;

        // Doubles with many ties, NaN and both zeros, and a row number to identify rows;
        // short texts (one word) too; runs of equal doubles (morsels read in reverse then
        // meet rows equal to the bound that belong in the answer); 20 morsels of 100 rows.
        let n = 2000usize;
        let mut rng = morsel_storage::test_rng::Rng(7);
        let special = [f64::NAN, 0.0, -0.0, f64::INFINITY, -1.0];
        let x: Vec<f64> = (0..n)
            .map(|_| match rng.below(10) {
                0 => special[rng.below(5) as usize],
                _ => (rng.below(50) as f64) / 4.0,
            })
            .collect();
        let t: Vec<String> = (0..n).map(|_| format!("k{}", rng.below(40))).collect();
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", DataType::Float64, false),
            Field::new("t", DataType::Utf8, false),
            Field::new("row", DataType::Int64, false),
            Field::new("c", DataType::Float64, false),
            Field::new("xn", DataType::Float64, true),
        ]));
        // The doubles again, NULL in one row of six.
        let xn: Vec<Option<f64>> = x
            .iter()
            .enumerate()
            .map(|(i, &v)| (i % 6 != 2).then_some(v))
            .collect();
        let batch = |from: usize, to: usize| {
            Batch::try_new(
                schema.clone(),
                vec![
                    Column::Float64(PrimitiveColumn::new(
                        Buffer::from_vec(x[from..to].to_vec()),
                        None,
                    )),
                    Column::Utf8(Utf8Column::from_strs(
                        t[from..to].iter().map(|s| Some(s.as_str())),
                    )),
                    Column::Int64(PrimitiveColumn::new(
                        Buffer::from_vec((from as i64..to as i64).collect()),
                        None,
                    )),
                    // Runs of 500 equal values: the bound ties rows of earlier morsels.
                    Column::Float64(PrimitiveColumn::new(
                        Buffer::from_vec((from..to).map(|i| (i / 500) as f64).collect()),
                        None,
                    )),
                    Column::Float64(PrimitiveColumn::from_options(xn[from..to].to_vec())),
                ],
                to - from,
            )
            .unwrap()
        };
        let rows_of = |b: &Batch| -> Vec<i64> {
            (0..b.num_rows())
                .map(|i| match b.column(2).scalar_at(i) {
                    morsel_storage::ScalarValue::Int64(v) => v,
                    other => panic!("{other:?}"),
                })
                .collect()
        };
        // (key, ascending, NULLs first, k); the last key has NULLs (among the first k rows
        // or not).
        let cases = [
            (0, true, false, 10),
            (0, false, false, 10),
            (0, true, false, 150),
            (1, false, false, 25),
            (2, false, false, 15),
            (2, true, false, 21),
            (3, true, false, 10),
            (3, false, false, 30),
            (4, true, false, 15),
            (4, false, false, 9),
            (4, true, true, 15),
            (4, false, true, 401),
            (4, true, false, 1801),
        ];
        for (key, asc, nulls_first, k) in cases {
            let whole = batch(0, n);
            let full = sorted_rows(&[(whole.column(key).clone(), asc, nulls_first)], n, None, 1);
            let want: Vec<i64> = full[..k].iter().map(|&r| r as i64).collect();
            for reversed in [false, true] {
                let sink = SortSink {
                    keys: vec![SortKey {
                        expr: PhysExpr::Column(key),
                        asc,
                        nulls_first,
                    }],
                    schema: schema.clone(),
                    limit: Some(k),
                    threads: 1,
                    bound: u64::MAX.into(),
                };
                let mut seqs: Vec<usize> = (0..n / 100).collect();
                if reversed {
                    seqs.reverse();
                }
                let mut partials: Vec<(usize, Vec<Batch>)> = seqs
                    .into_iter()
                    .map(|m| {
                        let part = sink.consume(m as u64, vec![batch(m * 100, m * 100 + 100)]);
                        (m, part.unwrap())
                    })
                    .collect();
                partials.sort_by_key(|(m, _)| *m);
                let out = sink
                    .finish(partials.into_iter().map(|(_, p)| p).collect())
                    .unwrap();
                assert_eq!(
                    rows_of(&out[0]),
                    want,
                    "key {key} asc {asc} nulls first {nulls_first} k {k} reversed {reversed}"
                );
                // The bound was taken (a morsel of 100 rows can keep k rows).
                let bound = sink.bound.load(std::sync::atomic::Ordering::Relaxed);
                assert_eq!(bound < u64::MAX, k <= 100, "key {key} k {k}");
            }
        }
    }

    #[test]
    fn top_k_is_the_prefix_of_the_stable_sort() {
        // Many ties (values 0..7) so that stability decides which rows make the cut.
        let values: Vec<i64> = (0..1000).map(|i| (i * 7919 % 13) % 7).collect();
        let col = Column::Int64(PrimitiveColumn::new(Buffer::from_vec(values), None));
        for asc in [true, false] {
            let keys = vec![(col.clone(), asc, false)];
            let full = sorted_rows(&keys, 1000, None, 1);
            for k in [0, 1, 5, 142, 999, 1000, 2000] {
                let top = sorted_rows(&keys, 1000, Some(k), 1);
                assert_eq!(top, full[..k.min(1000)], "k = {k}, asc = {asc}");
            }
        }
    }

    #[test]
    fn normalized_keys_sort_like_the_column_comparator_strings_included() {
        let mut rng = morsel_storage::test_rng::Rng(0x2545_F491_4F6C_DD1D);
        let mut next = move |n: u64| rng.below(n);
        let floats = [
            0.0,
            -0.0,
            1.5,
            -1.5,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            2.0,
        ];
        for round in 0..300 {
            // Now and then enough rows for the full sort to run on several workers.
            let n = if round % 60 == 0 {
                40_000 + next(100) as usize
            } else {
                1 + next(60) as usize
            };
            let mut keys: Vec<KeyColumn> = Vec::new();
            for _ in 0..1 + next(3) {
                let nulls = next(2) == 0;
                let valid = |next: &mut dyn FnMut(u64) -> u64| !nulls || next(4) > 0;
                let strings = [
                    "",
                    "a",
                    "ab",
                    "ab\0",
                    "abcdefgh",
                    "abcdefghi",
                    "abcdefghijklmnop",
                    "abcdefghijklmnopq",
                    "abcdefghijklmnopr",
                    "b",
                    "é",
                    "\u{ff}x",
                    "abcdefghijklmnopqrstuvwxyz0123456",
                    "abcdefghijklmnopqrstuvwxyz0123457",
                ];
                let column = match next(6) {
                    4 => Column::Utf8(morsel_storage::Utf8Column::from_strs(
                        (0..n)
                            .map(|_| {
                                valid(&mut next)
                                    .then(|| strings[next(strings.len() as u64) as usize])
                            })
                            .collect::<Vec<_>>(),
                    )),
                    // Mostly distinct values: too many to rank, so sorted by their words.
                    5 => {
                        let values: Vec<Option<String>> = (0..n)
                            .map(|_| {
                                valid(&mut next).then(|| {
                                    let s = strings[next(strings.len() as u64) as usize];
                                    format!("{s}{}", next(1 << 20))
                                })
                            })
                            .collect();
                        Column::Utf8(morsel_storage::Utf8Column::from_strs(
                            values.iter().map(|v| v.as_deref()),
                        ))
                    }
                    0 => Column::Int64(PrimitiveColumn::from_options(
                        (0..n)
                            .map(|_| valid(&mut next).then(|| next(7) as i64 - 3))
                            .collect::<Vec<_>>(),
                    )),
                    1 => Column::Int32(PrimitiveColumn::from_options(
                        (0..n)
                            .map(|_| valid(&mut next).then(|| next(5) as i32 - 2))
                            .collect::<Vec<_>>(),
                    )),
                    2 => Column::Float64(PrimitiveColumn::from_options(
                        (0..n)
                            .map(|_| valid(&mut next).then(|| floats[next(8) as usize]))
                            .collect::<Vec<_>>(),
                    )),
                    _ => Column::Boolean(BooleanColumn::from_options(
                        (0..n)
                            .map(|_| valid(&mut next).then(|| next(2) == 0))
                            .collect::<Vec<_>>(),
                    )),
                };
                keys.push((column, next(2) == 0, next(2) == 0));
            }
            let mut expect: Vec<u32> = (0..n as u32).collect();
            expect.sort_by(|a, b| cmp_keys(&keys, *a as usize, *b as usize));
            for threads in [1, 3] {
                assert_eq!(sorted_rows(&keys, n, None, threads), expect);
            }
            let k = next(n as u64 + 1) as usize;
            assert_eq!(sorted_rows(&keys, n, Some(k), 1), expect[..k]);
        }
    }
}
