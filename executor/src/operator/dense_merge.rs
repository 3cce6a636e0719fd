//! The merge for one integer-like group key whose values span a narrow range (no more than
//! [`DENSE_SLOTS_PER_ROW`] values per row or group the partials hold), when some morsel
//! kept its rows by value (their keys were mostly distinct): every key is an offset into
//! that range, and states are arrays indexed by offset. No key is hashed, encoded or
//! looked up in a table.
//!
//! The work is split by key offset into shares, one per worker (rounded up to a power of
//! two, at most the layout's partitions): share `s` of `2^b` owns the offsets whose low `b`
//! bits are `s`, at index `offset >> b` of its arrays, and so takes every `2^b`th value of
//! the range, which gives the shares about equal rows even when a few key values are far
//! more common (suite `skewed`). Each share reads the partials in morsel order and folds
//! into its arrays only what it owns. Up to four shares each read every kept row and take
//! their own; more find their rows in per-share lists that the workers made first, one
//! morsel each (a counting sort of each batch's rows by share, no argument copied). Which
//! share folds a group changes nothing of its states, so the bits never depend on the
//! workers.
//!
//! The partials are the ones the hash merge takes (tables of integer keys held by value,
//! rows kept for the merge), and they combine exactly as there: a table's states are
//! folded into the share's; a kept morsel's rows reduce into fresh states in row order,
//! which are then folded in. So the groups, their first-seen order and every float sum's
//! bits are those of the other merges. Where every aggregate's state takes one row as
//! exactly as it folds a fresh state holding it (sums, counts, averages, MIN, MAX), the
//! rows whose key no other row of the morsel has (most, when keys are mostly distinct) add
//! straight into the share's states (suite `high100k`: the fold took 5.2 ms with fresh
//! states for every row, 2.5 ms adding every row straight in); which keys are single a
//! share reads from its bitmaps of the key offsets the morsel holds once and more than
//! once ([`Occurrences`]). Where those bitmaps give every key of the share its own bit,
//! the fresh states of the keys a morsel repeats sit above the share's in the same arrays
//! (a power of two above), so that every row owned updates in one pass, its index raised
//! by its key's bit, and the repeated keys' states fold down after the morsel
//! ([`Accumulator::fold_upper`]). Arguments are read where the rows left them
//! ([`Accumulator::update_at`]).
//!
//! The output comes in partitions, a constant of the key range (never of the workers:
//! where nothing reads the groups' order, partition order is the output order): partition
//! `offset % partitions`, slot `offset / partitions`. A share holds whole partitions,
//! interleaved in its arrays.

use morsel_storage::{Column, DataType};

use super::accumulator::{with_args, Accumulator};
use super::aggregate::{merge_accs, AggregateSink, Partial};
use super::group_partitions::{by_partition, Dealt, Piece, ReducedPartition};
use super::int_groups::{int_bounds, int_key_column, IntTable};
use super::keys::for_each_int;
use super::pending_rows::{LocalIds, PendingRows};
use crate::error::{ExecError, ExecResult};
use crate::scheduler::parallel_map;

/// The dense merge runs when the key range (with a value for NULL) has at most this many
/// values per row or group held by the partials: the arrays then hold little more than the
/// hash merge's tables would.
const DENSE_SLOTS_PER_ROW: u64 = 4;

/// The dense merge runs when the partials hold at least this many rows and groups in all
/// (below, the serial merge by value is as fast).
const DENSE_MIN_ROWS: usize = 1 << 16;

/// A partition holds about this many slots...
const SLOTS_PER_PARTITION: u64 = 8192;

/// ...with at least this many partitions (the most shares, and so workers, the merge can
/// use) and at most this many (the output's pieces). A constant of the key range, never of
/// the workers: partition order is an output order.
const MIN_PARTITIONS: u64 = 8;
const MAX_PARTITIONS: u64 = 256;

/// Where each key value lives: its offset from the smallest key (NULL: the last offset),
/// partition `offset % partitions`, slot `offset / partitions`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Layout {
    lo: i64,
    /// Offsets in all: the range's values and one for NULL (at most `u32::MAX`).
    values: u64,
    /// log2 of the partition count.
    bits: u32,
}

impl Layout {
    /// Keys from `lo` to `hi`, and NULL (at most `u32::MAX` offsets in all).
    pub(super) fn over(lo: i64, hi: i64) -> Self {
        let values = (hi as i128 - lo as i128 + 2) as u64;
        let parts = values
            .div_ceil(SLOTS_PER_PARTITION)
            .next_power_of_two()
            .clamp(MIN_PARTITIONS, MAX_PARTITIONS);
        Layout {
            lo,
            values,
            bits: parts.trailing_zeros(),
        }
    }

    /// What EXPLAIN ANALYZE says of the merge.
    pub(super) fn describe(&self, threads: usize) -> String {
        format!(
            "merged by key offset: {} key values from {} (and NULL) into arrays by {} \
             share(s) of the offsets, no hashing; output in {} partitions",
            self.values - 1,
            self.lo,
            1 << self.share_bits(threads),
            self.partitions()
        )
    }

    /// log2 of the shares the merge splits the offsets into for `threads` workers: one per
    /// worker, rounded up to a power of two, at most the partitions.
    fn share_bits(&self, threads: usize) -> u32 {
        threads
            .max(1)
            .next_power_of_two()
            .trailing_zeros()
            .min(self.bits)
    }

    fn partitions(&self) -> usize {
        1 << self.bits
    }

    fn offset(&self, v: Option<i64>) -> u32 {
        match v {
            Some(x) => x.wrapping_sub(self.lo) as u32,
            None => (self.values - 1) as u32,
        }
    }

    /// The key value of partition `p`'s slot.
    fn value(&self, p: usize, slot: u32) -> Option<i64> {
        let offset = ((slot as u64) << self.bits) + p as u64;
        (offset != self.values - 1).then(|| self.lo.wrapping_add(offset as i64))
    }
}

/// A share of the key offsets: those whose low `bits` bits are `task`, held at index
/// `offset >> bits`. It holds the layout's partitions `p` with `p % 2^bits == task`,
/// interleaved: partition `p`'s slot `s` at index `s * (partitions >> bits) + (p >> bits)`.
#[derive(Clone, Copy, Debug)]
struct Share {
    task: u32,
    bits: u32,
}

impl Share {
    /// Indices in all: the layout's offsets this share owns.
    fn len(self, layout: &Layout) -> usize {
        layout
            .values
            .saturating_sub(self.task as u64)
            .div_ceil(1 << self.bits) as usize
    }

    /// The partition and slot of index `index`.
    fn place(self, layout: &Layout, index: u32) -> (usize, u32) {
        let stride = 1u32 << (layout.bits - self.bits);
        (
            (((index % stride) << self.bits) | self.task) as usize,
            index / stride,
        )
    }
}

/// A worker's record of which keys one morsel holds once and which more than once: two
/// bitmaps (`once`, `twice`) of one bit per key, 16 KB each at most, so marking a row
/// (`twice |= once & bit; once |= bit`, no branch) and asking after it stay in the
/// first-level cache. A key every few rows (suite `skewed`) chains its rows' updates of one
/// word, which costs a few cycles each; tables of each key's first and last row avoided
/// that chain but took two passes and two second-level-cache tables of 512 KB. A range
/// wider than the bitmaps shares bits between keys (by a multiplicative hash): a shared
/// bit is set twice when its keys hold two rows together, so a key it calls single is
/// single, and a missed single only takes the way of the others (fresh states), which
/// gives the same bits.
struct Occurrences {
    once: Vec<u64>,
    twice: Vec<u64>,
    /// Whether keys index the bits directly (the range fits the bitmaps).
    direct: bool,
}

/// log2 of [`Occurrences`]' bits per bitmap.
const OCCURRENCE_BITS: u32 = 17;

impl Occurrences {
    fn new() -> Self {
        Occurrences {
            once: vec![0; 1 << (OCCURRENCE_BITS - 6)],
            twice: vec![0; 1 << (OCCURRENCE_BITS - 6)],
            direct: true,
        }
    }

    /// Starts on a new morsel's rows, whose keys are below `keys`: clears the bits they
    /// use.
    fn start_morsel(&mut self, keys: usize) {
        self.direct = Self::direct_for(keys);
        let words = if self.direct {
            keys.div_ceil(64)
        } else {
            self.once.len()
        };
        self.once[..words].fill(0);
        self.twice[..words].fill(0);
    }

    /// Whether keys below `keys` each have their own bits.
    fn direct_for(keys: usize) -> bool {
        keys <= 1 << OCCURRENCE_BITS
    }

    /// 1 where key `key` (with its own bits) has rows more than once, else 0.
    #[inline(always)]
    fn repeats(&self, key: u32) -> u32 {
        (self.twice[(key >> 6) as usize] >> (key & 63)) as u32 & 1
    }

    /// The keys (below `keys`, each with its own bits) held more than once, ascending, into
    /// `out`.
    fn repeated(&self, keys: usize, out: &mut Vec<u32>) {
        out.clear();
        for (w, &word) in self.twice[..keys.div_ceil(64)].iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                out.push((w as u32) << 6 | bits.trailing_zeros());
                bits &= bits - 1;
            }
        }
    }

    #[inline(always)]
    fn bit(direct: bool, key: u32) -> (usize, u64) {
        let e = if direct {
            key
        } else {
            key.wrapping_mul(0x9E37_79B9) >> (32 - OCCURRENCE_BITS)
        };
        ((e >> 6) as usize, 1 << (e & 63))
    }

    /// Records the rows of keys `keys` (any order).
    fn mark(&mut self, keys: &[u32]) {
        #[inline(always)]
        fn each(once: &mut [u64], twice: &mut [u64], direct: bool, keys: &[u32]) {
            for &k in keys {
                let (w, b) = Occurrences::bit(direct, k);
                twice[w] |= once[w] & b;
                once[w] |= b;
            }
        }
        match self.direct {
            true => each(&mut self.once, &mut self.twice, true, keys),
            false => each(&mut self.once, &mut self.twice, false, keys),
        }
    }
}

/// Where a share's groups were first seen: a bit per index (in the first-level cache) and,
/// for each index seen, its (partial, position), in the order first seen.
struct FirstSeen {
    bits: Vec<u64>,
    seen: Vec<(u32, u32, u32)>,
}

impl FirstSeen {
    fn new(indices: usize) -> Self {
        FirstSeen {
            bits: vec![0; indices.div_ceil(64)],
            seen: Vec::new(),
        }
    }

    #[inline(always)]
    fn see(&mut self, index: u32, (partial, position): (u32, u32)) {
        let (w, b) = ((index >> 6) as usize, 1u64 << (index & 63));
        if self.bits[w] & b == 0 {
            self.bits[w] |= b;
            self.seen.push((index, partial, position));
        }
    }

    /// By index: where its group was first seen, packed (`u64::MAX`: never).
    fn by_index(&self, indices: usize) -> Vec<u64> {
        let mut first = vec![u64::MAX; indices];
        for &(index, partial, position) in &self.seen {
            first[index as usize] = (partial as u64) << 32 | position as u64;
        }
        first
    }
}

/// Up to this many shares (log2), each share reads every kept row and takes its own (a
/// pass over the keys for each share, on its worker: at two shares, 54.5 ms against 63 ms
/// listing the rows by share first, suite `skewed` at 10M rows); past it, the workers list
/// each morsel's rows by share first (two passes over the keys in all, shared out).
const MOST_SHARE_BITS_READING_ALL: u32 = 2;

/// A kept morsel's rows as the merge reads them: as kept, and, with many shares, each
/// batch's rows listed by share.
struct KeptRows {
    rows: PendingRows,
    by_share: Vec<ShareLists>,
}

/// One batch's rows by share: share `s`'s are at `starts[s]..starts[s + 1]` of `rows` (row
/// numbers within the batch, in row order) and `indices` (their indices in the share).
struct ShareLists {
    starts: Vec<u32>,
    rows: Vec<u32>,
    indices: Vec<u32>,
}

impl KeptRows {
    /// Lists each batch's rows by share (`2^share_bits` of them), past
    /// [`MOST_SHARE_BITS_READING_ALL`]: a pass for the offsets and the shares' sizes, one to
    /// place the rows.
    fn deal(layout: Layout, share_bits: u32, rows: PendingRows) -> ExecResult<Self> {
        let mut by_share = Vec::new();
        if share_bits > MOST_SHARE_BITS_READING_ALL {
            let shares = 1usize << share_bits;
            let mask = shares as u32 - 1;
            rows.each_int_batch(|col, _| {
                let mut offsets = vec![0u32; col.len()];
                let mut starts = vec![0u32; shares + 1];
                for_each_int(col, |i, v| {
                    let offset = layout.offset(v);
                    offsets[i] = offset;
                    starts[(offset & mask) as usize + 1] += 1;
                });
                for s in 0..shares {
                    starts[s + 1] += starts[s];
                }
                let mut next = starts.clone();
                let mut listed = vec![0u32; col.len()];
                let mut indices = vec![0u32; col.len()];
                for (i, &offset) in offsets.iter().enumerate() {
                    let at = &mut next[(offset & mask) as usize];
                    listed[*at as usize] = i as u32;
                    indices[*at as usize] = offset >> share_bits;
                    *at += 1;
                }
                by_share.push(ShareLists {
                    starts,
                    rows: listed,
                    indices,
                });
                Ok(())
            })?;
        }
        Ok(KeptRows { rows, by_share })
    }
}

/// One batch of a kept morsel's rows that a share owns, split into the rows whose key no
/// other row of the morsel has and the others, each in row order: row numbers within the
/// batch, and each row's index in the share. The buffers only grow (kept from morsel to
/// morsel, never cleared to zeros); the counts say how much of them holds the batch.
#[derive(Default)]
struct OwnedRows {
    single_rows: Vec<u32>,
    single_indices: Vec<u32>,
    singles: usize,
    other_rows: Vec<u32>,
    other_indices: Vec<u32>,
    others: usize,
}

/// Grows `v` to at least `n` values.
fn room_for(v: &mut Vec<u32>, n: usize) {
    if v.len() < n {
        v.resize(n, 0);
    }
}

impl OwnedRows {
    fn singles(&self) -> (&[u32], &[u32]) {
        (
            &self.single_rows[..self.singles],
            &self.single_indices[..self.singles],
        )
    }

    fn others(&self) -> (&[u32], &[u32]) {
        (
            &self.other_rows[..self.others],
            &self.other_indices[..self.others],
        )
    }

    /// Takes a batch's rows `rows` with their indices `indices`, all as the others.
    fn take_all(&mut self, rows: &[u32], indices: &[u32]) {
        self.other_rows.clear();
        self.other_rows.extend_from_slice(rows);
        self.other_indices.clear();
        self.other_indices.extend_from_slice(indices);
        self.singles = 0;
        self.others = rows.len();
    }

    /// Takes the rows of a batch with keys `col` whose offsets `share` owns, in row order,
    /// all as the others: every row written, the count advanced by whether it is owned (no
    /// branch); every row, for the one share.
    fn take_owned(&mut self, layout: Layout, share: Share, col: &Column) {
        let n = col.len();
        room_for(&mut self.other_rows, n);
        room_for(&mut self.other_indices, n);
        let (rows, indices) = (&mut self.other_rows[..n], &mut self.other_indices[..n]);
        let mut k = 0;
        if share.bits == 0 {
            for_each_int(col, |i, v| {
                rows[i] = i as u32;
                indices[i] = layout.offset(v);
            });
            k = n;
        } else {
            let mask = (1 << share.bits) - 1;
            for_each_int(col, |i, v| {
                let offset = layout.offset(v);
                rows[k] = i as u32;
                indices[k] = offset >> share.bits;
                k += usize::from(offset & mask == share.task);
            });
        }
        self.singles = 0;
        self.others = k;
    }

    /// Moves the rows whose key `seen` marked once to the singles, keeping the others in
    /// place, each in row order, branch-free: every row written to both, each count
    /// advanced by which it is.
    fn split(&mut self, seen: &Occurrences) {
        #[inline(always)]
        fn each(b: &mut OwnedRows, seen: &Occurrences, direct: bool) {
            let n = b.others;
            room_for(&mut b.single_rows, n);
            room_for(&mut b.single_indices, n);
            let (mut s, mut m) = (0, 0);
            for t in 0..n {
                let (row, index) = (b.other_rows[t], b.other_indices[t]);
                let (w, bit) = Occurrences::bit(direct, index);
                let single = seen.twice[w] & bit == 0;
                b.single_rows[s] = row;
                b.single_indices[s] = index;
                b.other_rows[m] = row;
                b.other_indices[m] = index;
                s += usize::from(single);
                m += usize::from(!single);
            }
            b.singles = s;
            b.others = m;
        }
        match seen.direct {
            true => each(self, seen, true),
            false => each(self, seen, false),
        }
    }
}

/// A share's room for folding kept morsels, kept from morsel to morsel.
#[derive(Default)]
struct FoldRoom {
    /// Each batch's rows owned, then split (as many as the morsel has batches).
    batches: Vec<OwnedRows>,
    /// Present where single rows add straight in.
    occurrences: Option<Occurrences>,
    /// Where the occurrences give every key its own bits (and so list the keys a morsel
    /// repeats): log2 of where a morsel's fresh states for its repeated keys start, above
    /// the share's (a power of two, so that a row's index is raised by a shift of its
    /// key's bit: a branch on it mispredicts for keys repeated at random).
    repeated_above: Option<u32>,
    local_of: LocalIds,
    ids: Vec<u32>,
}

/// One share's part of a run of tables: where each group came from (partial, id), its
/// index in the share, and its states, in morsel order.
struct DenseGroups {
    from: Vec<(u32, u32)>,
    indices: Vec<u32>,
    accs: Vec<Accumulator>,
}

/// Consecutive partials dealt together: a run of tables, or one morsel's kept rows.
enum Unit {
    /// Tables, each with its partial's number.
    Tables(Vec<(u32, IntTable)>),
    Kept(u32, PendingRows),
}

/// Tables dealt at a time by one task (so that a share receives one piece per run).
const TABLES_PER_PIECE: usize = 16;

impl AggregateSink {
    /// The layout of the dense merge, when it applies to `partials`: every partial holds
    /// one integer-like key by value, some morsel kept its rows, the partials hold at least
    /// [`DENSE_MIN_ROWS`] rows and groups, and the keys span at most
    /// [`DENSE_SLOTS_PER_ROW`] values for each.
    pub(super) fn dense_layout(&self, partials: &[Partial]) -> Option<Layout> {
        let kept = partials
            .iter()
            .any(|p| matches!(p, Partial::Pending(r) if r.int_type().is_some()));
        let held: usize = partials.iter().map(Partial::table_groups).sum();
        if !kept || held < DENSE_MIN_ROWS {
            return None;
        }
        let (lo, hi) = int_bounds(partials)?;
        let values = hi as i128 - lo as i128 + 2;
        let most = (DENSE_SLOTS_PER_ROW as i128 * held as i128).min(u32::MAX as i128);
        (values <= most).then(|| Layout::over(lo, hi))
    }

    /// Merges by shares of key offsets with array states (see the module docs).
    pub(super) fn merge_dense(
        &self,
        partials: Vec<Partial>,
        layout: Layout,
    ) -> ExecResult<Vec<morsel_storage::Batch>> {
        let ty = self.key_types.first().copied().unwrap_or(DataType::Int64);
        let mut sizes = Vec::with_capacity(partials.len());
        let mut units: Vec<Unit> = Vec::new();
        for (i, p) in partials.into_iter().enumerate() {
            let i = i as u32;
            sizes.push(p.table_groups());
            match p {
                Partial::Ints(t) => match units.last_mut() {
                    Some(Unit::Tables(run)) if run.len() < TABLES_PER_PIECE => run.push((i, t)),
                    _ => units.push(Unit::Tables(vec![(i, t)])),
                },
                Partial::Pending(r) => units.push(Unit::Kept(i, r)),
                // A morsel without rows.
                Partial::Table(t) if t.keys.is_empty() => {}
                Partial::Table(_) | Partial::Rows(_) | Partial::Global(_) => {
                    return Err(ExecError::Internal(
                        "a dense merge received keys not held by value".into(),
                    ))
                }
            }
        }
        // Whether a group's only row in a morsel may add straight into the share's states
        // (see `Accumulator::one_row_folds_exactly`).
        let singles_direct = self
            .new_accs()?
            .iter()
            .all(Accumulator::one_row_folds_exactly);
        let share_bits = layout.share_bits(self.threads);
        let dealt = parallel_map(self.threads, units, |_, unit| {
            Ok::<_, ExecError>(match unit {
                Unit::Tables(run) => Dealt::Groups(self.deal_dense(layout, share_bits, run)?),
                Unit::Kept(morsel, kept) => {
                    Dealt::Rows(morsel, KeptRows::deal(layout, share_bits, kept)?)
                }
            })
        });
        let (pieces, kept) = by_partition(1 << share_bits, dealt)?;
        let reduced = parallel_map(self.threads, pieces, |task, pieces| {
            let share = Share {
                task: task as u32,
                bits: share_bits,
            };
            self.reduce_share(layout, ty, share, pieces, &kept, singles_direct)
        });
        // The partitions in order: partition p is the (p >> share_bits)th of share
        // p % 2^share_bits.
        let mut by_share = reduced
            .into_iter()
            .map(|r| r.map(Vec::into_iter))
            .collect::<ExecResult<Vec<_>>>()?;
        let mask = (1 << share_bits) - 1;
        let merged = (0..layout.partitions())
            .map(|p| {
                by_share[p & mask]
                    .next()
                    .ok_or_else(|| ExecError::Internal("a share lost a partition".into()))
            })
            .collect();
        self.assemble(sizes, merged)
    }

    /// Deals the groups of a run of tables (each with its partial's number) into shares
    /// (`2^share_bits` of them) by their keys' offsets, moving their states.
    fn deal_dense(
        &self,
        layout: Layout,
        share_bits: u32,
        run: Vec<(u32, IntTable)>,
    ) -> ExecResult<Vec<DenseGroups>> {
        let shares = 1usize << share_bits;
        let mut pieces = (0..shares)
            .map(|_| {
                Ok(DenseGroups {
                    from: Vec::new(),
                    indices: Vec::new(),
                    accs: self.new_accs()?,
                })
            })
            .collect::<ExecResult<Vec<DenseGroups>>>()?;
        let mut ids: Vec<Vec<u32>> = vec![Vec::new(); shares];
        for (i, t) in run {
            let (values, mut accs) = t.into_parts();
            ids.iter_mut().for_each(Vec::clear);
            for (g, &v) in values.iter().enumerate() {
                let offset = layout.offset(v);
                let s = offset as usize & (shares - 1);
                ids[s].push(g as u32);
                pieces[s].indices.push(offset >> share_bits);
                pieces[s].from.push((i, g as u32));
            }
            for (piece, ids) in pieces.iter_mut().zip(&ids) {
                for (acc, into) in accs.iter_mut().zip(&mut piece.accs) {
                    acc.move_groups(ids, into)?;
                }
            }
        }
        Ok(pieces)
    }

    /// Reduces a share's pieces in morsel order into array states by index: for each of
    /// its partitions, in order, the groups' output columns and where each was first seen
    /// (partial, position), by slot.
    fn reduce_share(
        &self,
        layout: Layout,
        ty: DataType,
        share: Share,
        pieces: Vec<Piece<DenseGroups>>,
        kept: &[KeptRows],
        singles_direct: bool,
    ) -> ExecResult<Vec<ReducedPartition>> {
        let indices = share.len(&layout);
        let repeated_above = (singles_direct && Occurrences::direct_for(indices))
            .then(|| indices.next_power_of_two().trailing_zeros());
        let held = repeated_above.map_or(indices, |shift| (1 << shift) + indices);
        let mut accs = self.new_accs()?;
        accs.iter_mut().for_each(|a| a.resize(held));
        let mut first = FirstSeen::new(indices);
        let mut room = FoldRoom {
            occurrences: singles_direct.then(Occurrences::new),
            repeated_above,
            ..FoldRoom::default()
        };
        // A morsel's fresh states, reset for each morsel (their room kept).
        let mut local = self.new_accs()?;
        for piece in pieces {
            match piece {
                Piece::Groups(mut g) => {
                    for (&index, &from) in g.indices.iter().zip(&g.from) {
                        first.see(index, from);
                    }
                    merge_accs(&mut accs, &mut g.accs, held, &g.indices)?;
                }
                Piece::Rows { morsel, rows } => fold_kept(
                    (layout, share),
                    (morsel, &kept[rows]),
                    (&mut accs, &mut local, indices),
                    &mut first,
                    &mut room,
                )?,
            }
        }
        let first = first.by_index(indices);
        let finished = accs
            .into_iter()
            .map(Accumulator::finish)
            .collect::<ExecResult<Vec<Column>>>()?;
        // The share's partitions are interleaved by index: the (p >> share bits)th holds
        // the indices q, q + stride, ...
        let stride = layout.partitions() >> share.bits;
        (0..stride)
            .map(|q| {
                let seen: Vec<u32> = (q..indices)
                    .step_by(stride)
                    .filter(|&i| first[i] != u64::MAX)
                    .map(|i| i as u32)
                    .collect();
                let first_seen = seen
                    .iter()
                    .map(|&i| {
                        let f = first[i as usize];
                        ((f >> 32) as u32, f as u32)
                    })
                    .collect();
                let values = seen.iter().map(|&i| {
                    let (p, slot) = share.place(&layout, i);
                    layout.value(p, slot)
                });
                let mut columns = vec![int_key_column(ty, values.collect())?];
                columns.extend(finished.iter().map(|c| c.take(&seen)));
                if columns.len() != self.schema.len() {
                    return Err(ExecError::Internal(
                        "aggregate output does not match its schema".into(),
                    ));
                }
                Ok((first_seen, columns))
            })
            .collect()
    }
}

/// Folds the rows of kept morsel `morsel` that `share` owns into the share's states `accs`
/// (`indices` of them), as the morsel's own table would have been folded: rows whose key
/// no other row of the morsel has add straight in (where `room` tells them apart), the
/// others reduce into fresh states in row order, which are then folded in: the states
/// above the share's where the occurrences list the repeated keys (every row owned then
/// updates in one pass, its index raised where its key repeats, rather than the rows split
/// in two lists, each key of the others numbered for a compact state and folded through
/// the numbers: suite `skewed` at 10M rows, 2 threads, 72-77 -> 58-62 ms), else `local`,
/// numbered in the morsel's first-seen order.
fn fold_kept(
    (layout, share): (Layout, Share),
    (morsel, kept): (u32, &KeptRows),
    (accs, local, indices): (&mut Vec<Accumulator>, &mut Vec<Accumulator>, usize),
    first: &mut FirstSeen,
    room: &mut FoldRoom,
) -> ExecResult<()> {
    let FoldRoom {
        batches,
        occurrences,
        repeated_above,
        local_of,
        ids,
    } = room;
    if let Some(o) = occurrences.as_mut() {
        o.start_morsel(indices);
    }
    // The rows owned, batch by batch (held as the others until split), each key marked.
    let mut n_batches = 0;
    kept.rows.each_int_batch(|col, _| {
        if batches.len() == n_batches {
            batches.push(OwnedRows::default());
        }
        let b = &mut batches[n_batches];
        match kept.by_share.get(n_batches) {
            Some(lists) => {
                let s = share.task as usize;
                let range = lists.starts[s] as usize..lists.starts[s + 1] as usize;
                b.take_all(&lists.rows[range.clone()], &lists.indices[range]);
            }
            None => b.take_owned(layout, share, col),
        }
        n_batches += 1;
        if let Some(o) = occurrences.as_mut() {
            o.mark(b.others().1);
        }
        Ok(())
    })?;
    let batches = &mut batches[..n_batches];
    if let (Some(o), Some(shift)) = (occurrences.as_ref(), *repeated_above) {
        // Every row owned in one pass, at its index or (its key repeated) that index above
        // the share's states; then each repeated key's fresh state folds down.
        let (mut base, mut batch) = (0u32, 0);
        kept.rows.each_int_batch(|col, args| {
            let b = &mut batches[batch];
            batch += 1;
            let n = b.others;
            let (rows, at) = (&b.other_rows[..n], &mut b.other_indices[..n]);
            for (index, &row) in at.iter_mut().zip(rows) {
                first.see(*index, (morsel, base + row));
                *index |= o.repeats(*index) << shift;
            }
            for (acc, args) in with_args(accs, args) {
                acc.update_at(at, rows, args)?;
            }
            base += col.len() as u32;
            Ok(())
        })?;
        o.repeated(indices, ids);
        for acc in accs.iter_mut() {
            acc.fold_upper(1 << shift, ids)?;
        }
        return Ok(());
    }
    if let Some(o) = occurrences.as_ref() {
        batches.iter_mut().for_each(|b| b.split(o));
    }
    // Singles add straight into the share's states: the bits of adding each to fresh
    // states and folding those in.
    let (mut base, mut batch) = (0u32, 0);
    kept.rows.each_int_batch(|col, args| {
        let (rows, at) = batches[batch].singles();
        batch += 1;
        for (&index, &row) in at.iter().zip(rows) {
            first.see(index, (morsel, base + row));
        }
        if !rows.is_empty() {
            for (acc, args) in with_args(accs, args) {
                acc.update_at(at, rows, args)?;
            }
        }
        base += col.len() as u32;
        Ok(())
    })?;
    if batches.iter().all(|b| b.others == 0) {
        return Ok(());
    }
    // The others get ids in the morsel's first-seen order; their fresh states, updated in
    // row order, fold into the share's through them.
    local_of.start_morsel();
    local.iter_mut().for_each(|a| a.resize(0));
    let (mut base, mut batch) = (0u32, 0);
    kept.rows.each_int_batch(|col, args| {
        let (rows, at) = batches[batch].others();
        batch += 1;
        if !rows.is_empty() {
            for (&index, &row) in at.iter().zip(rows) {
                first.see(index, (morsel, base + row));
            }
            local_of.ids(at, ids);
            for (acc, args) in with_args(local, args) {
                acc.resize(local_of.groups());
                acc.update_at(ids, rows, args)?;
            }
        }
        base += col.len() as u32;
        Ok(())
    })?;
    merge_accs(accs, local, indices, local_of.mapping())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// For every number of shares, every value of a range, and NULL, lands at one index of
    /// one share, and in the partition and slot it has for every other number of shares
    /// (the output never depends on the workers); each gives its value back, and the
    /// shares' indices add up to the range.
    #[test]
    fn shares_place_every_value_once() {
        let cases = [
            (-5i64, 2u64),
            (0, 1),
            (7, 64),
            (-100, 65),
            (i64::MAX - 3, 5),
            (3, 100_003),
            (-1 << 40, 300_000),
        ];
        for (lo, values) in cases {
            let layout = Layout::over(lo, lo.wrapping_add(values as i64 - 2));
            let keys = || {
                (0..values - 1)
                    .map(|o| Some(lo.wrapping_add(o as i64)))
                    .chain([None])
            };
            let mut placed_by_one = Vec::new();
            for bits in 0..=layout.bits {
                let mut seen = std::collections::HashSet::new();
                let mut placed = Vec::new();
                for v in keys() {
                    let offset = layout.offset(v);
                    let share = Share {
                        task: offset & ((1 << bits) - 1),
                        bits,
                    };
                    let index = offset >> bits;
                    assert!((index as usize) < share.len(&layout), "{lo} {values} {v:?}");
                    assert!(seen.insert((share.task, index)));
                    let (p, slot) = share.place(&layout, index);
                    assert_eq!(p as u32 & ((1 << bits) - 1), share.task);
                    assert_eq!(layout.value(p, slot), v);
                    placed.push((p, slot));
                }
                let total: usize = (0..1 << bits)
                    .map(|task| Share { task, bits }.len(&layout))
                    .sum();
                assert_eq!(total as u64, values);
                if bits == 0 {
                    placed_by_one = placed;
                } else {
                    assert_eq!(placed, placed_by_one, "{lo} {values} {bits}");
                }
            }
        }
    }
}
