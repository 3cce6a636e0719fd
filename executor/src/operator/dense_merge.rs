//! The merge by partition for one integer-like group key whose values span a narrow range
//! (no more than [`DENSE_SLOTS_PER_ROW`] values per row or group the partials hold), when
//! some morsel kept its rows by value (their keys were mostly distinct): every key is an
//! offset into that range, partition `offset % partitions` holds it in slot
//! `offset / partitions`, and each partition's states are arrays indexed by slot. No key is
//! hashed, encoded or looked up in a table; a partition's arrays (about
//! [`SLOTS_PER_PARTITION`] slots) stay in the cache, and the partitions, taking the range's
//! values in turn, get about equal shares of rows even when a few key values are far more
//! common (suite `skewed`).
//!
//! The partials are the ones the hash merge takes (tables of integer keys held by value,
//! rows kept for the merge), taken in morsel order, each partition on a worker, and they
//! combine exactly as there: a table's states are folded into the partition's; a kept
//! morsel's rows, scattered by partition on the workers first, reduce into fresh states in
//! row order, which are then folded in. So the groups, their first-seen order and every
//! float sum's bits are those of the other merges. The scatter puts first the rows whose
//! key no other row of the morsel has (most, when keys are mostly distinct): where every
//! aggregate's state takes one row as exactly as it folds a fresh state holding it (sums,
//! counts, averages, MIN, MAX), those rows add straight into the partition's states
//! (suite `high100k`: the fold took 5.2 ms with fresh states for every row, 2.5 ms adding
//! every row straight in). Which keys are single the scatter reads from a worker's bitmaps
//! of the key offsets the morsel holds once and more than once ([`Occurrences`]).

use morsel_storage::{Column, DataType};

use super::accumulator::Accumulator;
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

/// A partition holds about this many slots (its arrays stay in the second-level cache)...
const SLOTS_PER_PARTITION: u64 = 8192;

/// ...with at least this many partitions (so that the workers share them out evenly) and at
/// most this many (each morsel's rows are dealt to all of them). A constant of the key
/// range, never of the workers: partition order is an output order.
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
    pub(super) fn describe(&self) -> String {
        format!(
            "merged by key offset: {} key values from {} (and NULL) in {} partitions of \
             array states, no hashing",
            self.values - 1,
            self.lo,
            self.partitions()
        )
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

    /// The partition and slot of an offset.
    fn place(&self, offset: u32) -> (usize, u32) {
        (
            (offset & ((1 << self.bits) - 1)) as usize,
            offset >> self.bits,
        )
    }

    /// Slots of partition `p`: the offsets below `values` that leave `p` modulo the
    /// partition count.
    fn slots(&self, p: usize) -> usize {
        (self.values.saturating_sub(p as u64)).div_ceil(1 << self.bits) as usize
    }

    /// The key value of partition `p`'s slot.
    fn value(&self, p: usize, slot: u32) -> Option<i64> {
        let offset = ((slot as u64) << self.bits) + p as u64;
        (offset != self.values - 1).then(|| self.lo.wrapping_add(offset as i64))
    }
}

/// One batch of a kept morsel, its rows ordered by partition.
struct DenseBatch {
    /// The batch's first row within the morsel.
    base: u32,
    /// Partition p's rows are at `starts[p]..starts[p + 1]` of `order`, `slots` and `args`:
    /// first those whose key no other row of the morsel has (to `singles[p]`), then the
    /// others, each in row order.
    starts: Vec<u32>,
    singles: Vec<u32>,
    /// Row numbers within the batch.
    order: Vec<u32>,
    /// Each row's slot in its partition.
    slots: Vec<u32>,
    /// Each aggregate's argument gathered in `order` (`None` for `count(*)`).
    args: Vec<Option<Column>>,
}

/// A kept morsel's rows by partition.
struct DenseRows(Vec<DenseBatch>);

impl DenseRows {
    /// Orders the morsel's rows by partition, each partition's rows split into those whose
    /// key no other row of the morsel has and the rest, when `seen` is given to tell them
    /// (else all count as the rest). Passes over each batch: its key offsets, each row's
    /// key marked as seen (once, or more), each row's run (partition, and whether single)
    /// with the runs' sizes, and the rows placed in their runs; then the arguments gathered
    /// in that order.
    fn scatter(
        layout: Layout,
        pending: PendingRows,
        mut seen: Option<&mut Occurrences>,
    ) -> ExecResult<Self> {
        let parts = layout.partitions();
        let mut offsets_of = Vec::new();
        let mut args_of = Vec::new();
        if let Some(s) = seen.as_deref_mut() {
            s.start_morsel(layout);
        }
        let mut rows = 0u32;
        pending.drain(|keys, args| {
            let super::aggregate::BatchKeys::Int(col) = keys else {
                return Err(ExecError::Internal(
                    "a dense merge over keys not held by value".into(),
                ));
            };
            let mut offsets = vec![0u32; col.len()];
            for_each_int(col, |i, v| offsets[i] = layout.offset(v));
            if let Some(s) = seen.as_deref_mut() {
                s.mark(&offsets);
            }
            rows = u32::try_from(col.len())
                .ok()
                .and_then(|n| rows.checked_add(n))
                .ok_or_else(|| ExecError::Internal("a morsel of more than 2^32 rows".into()))?;
            offsets_of.push(offsets);
            args_of.push(args.to_vec());
            Ok(())
        })?;
        let mut batches = Vec::with_capacity(offsets_of.len());
        let mut base = 0u32;
        for (offsets, args) in offsets_of.into_iter().zip(args_of) {
            let n = offsets.len();
            // Run 2p holds partition p's rows whose key is single in the morsel, run 2p + 1
            // the others.
            let mut runs = vec![0u16; n];
            let mut starts = vec![0u32; 2 * parts + 1];
            for (r, &o) in runs.iter_mut().zip(&offsets) {
                let other = seen.as_deref().is_none_or(|s| !s.single(o));
                let run = 2 * layout.place(o).0 + usize::from(other);
                starts[run + 1] += 1;
                *r = run as u16;
            }
            for r in 0..2 * parts {
                starts[r + 1] += starts[r];
            }
            let mut next = starts.clone();
            let mut order = vec![0u32; n];
            let mut slots = vec![0u32; n];
            for (i, (&o, &run)) in offsets.iter().zip(&runs).enumerate() {
                let at = next[run as usize] as usize;
                order[at] = i as u32;
                slots[at] = layout.place(o).1;
                next[run as usize] += 1;
            }
            let args = args
                .iter()
                .map(|a| a.as_ref().map(|c| c.take(&order)))
                .collect();
            batches.push(DenseBatch {
                base,
                singles: (0..parts).map(|p| starts[2 * p + 1]).collect(),
                starts: (0..=parts).map(|p| starts[2 * p]).collect(),
                order,
                slots,
                args,
            });
            base += n as u32;
        }
        Ok(DenseRows(batches))
    }

    fn rows_in(&self, p: usize) -> usize {
        self.0
            .iter()
            .map(|b| (b.starts[p + 1] - b.starts[p]) as usize)
            .sum()
    }
}

/// A worker's record of which key offsets one morsel holds once and which more than once:
/// two bitmaps (`once`, `twice`) of one bit per offset, 16 KB each at most, so marking a
/// row (`twice |= once & bit; once |= bit`, no branch) and asking after it stay in the
/// first-level cache. A key every few rows (suite `skewed`) chains its rows' updates of one
/// word, which costs a few cycles each; tables of each offset's first and last row avoided
/// that chain but took two passes and two second-level-cache tables of 512 KB (a third of
/// the scatter's time at 10M rows). A range wider than the bitmaps shares bits between
/// offsets (by a multiplicative hash): a shared bit is set twice when its offsets hold two
/// rows together, so a key it calls single is single, and a missed single only takes the
/// way of the others (fresh states), which gives the same bits.
struct Occurrences {
    once: Vec<u64>,
    twice: Vec<u64>,
    /// Whether offsets index the bits directly (the range fits the bitmaps).
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

    /// Starts on a new morsel's rows: clears the bits the range uses.
    fn start_morsel(&mut self, layout: Layout) {
        self.direct = layout.values <= 1 << OCCURRENCE_BITS;
        let words = if self.direct {
            layout.values.div_ceil(64) as usize
        } else {
            self.once.len()
        };
        self.once[..words].fill(0);
        self.twice[..words].fill(0);
    }

    #[inline(always)]
    fn bit(direct: bool, offset: u32) -> (usize, u64) {
        let e = if direct {
            offset
        } else {
            offset.wrapping_mul(0x9E37_79B9) >> (32 - OCCURRENCE_BITS)
        };
        ((e >> 6) as usize, 1 << (e & 63))
    }

    /// Records the rows of keys `offsets` (any order).
    fn mark(&mut self, offsets: &[u32]) {
        #[inline(always)]
        fn each(once: &mut [u64], twice: &mut [u64], direct: bool, offsets: &[u32]) {
            for &o in offsets {
                let (w, b) = Occurrences::bit(direct, o);
                twice[w] |= once[w] & b;
                once[w] |= b;
            }
        }
        match self.direct {
            true => each(&mut self.once, &mut self.twice, true, offsets),
            false => each(&mut self.once, &mut self.twice, false, offsets),
        }
    }

    /// Whether key `offset` has only one row in the morsel (after the morsel's rows were all
    /// marked).
    #[inline(always)]
    fn single(&self, offset: u32) -> bool {
        let (w, b) = Self::bit(self.direct, offset);
        self.twice[w] & b == 0
    }
}

/// One partition's share of a run of tables: where each group came from (partial, id), its
/// slot, and its states, in morsel order.
struct DenseGroups {
    from: Vec<(u32, u32)>,
    slots: Vec<u32>,
    accs: Vec<Accumulator>,
}

/// Consecutive partials dealt together: a run of tables, or one morsel's kept rows.
enum Unit {
    /// Tables, each with its partial's number.
    Tables(Vec<(u32, IntTable)>),
    Kept(u32, PendingRows),
}

/// Tables dealt at a time by one task (so that a partition receives one piece per run).
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

    /// Merges by partition of key offset with array states (see the module docs).
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
        // Whether a group's only row in a morsel may add straight into the partition's
        // states (see `Accumulator::one_row_folds_exactly`).
        let singles_direct = self
            .new_accs()?
            .iter()
            .all(Accumulator::one_row_folds_exactly);
        // Where keys occur in a morsel, for the scatter's split: tables for each task running
        // at a time.
        let spare = std::sync::Mutex::new(Vec::new());
        let dealt = parallel_map(self.threads, units, |_, unit| {
            Ok::<_, ExecError>(match unit {
                Unit::Tables(run) => Dealt::Groups(self.deal_dense(layout, run)?),
                Unit::Kept(morsel, kept) if singles_direct => {
                    let taken = spare.lock().ok().and_then(|mut s| s.pop());
                    let mut seen = taken.unwrap_or_else(Occurrences::new);
                    let rows = DenseRows::scatter(layout, kept, Some(&mut seen));
                    if let Ok(mut s) = spare.lock() {
                        s.push(seen);
                    }
                    Dealt::Rows(morsel, rows?)
                }
                Unit::Kept(morsel, kept) => {
                    Dealt::Rows(morsel, DenseRows::scatter(layout, kept, None)?)
                }
            })
        });
        let (pieces, scattered) = by_partition(layout.partitions(), dealt)?;
        let merged = parallel_map(self.threads, pieces, |p, pieces| {
            self.reduce_dense(layout, ty, p, pieces, &scattered)
        });
        self.assemble(sizes, merged)
    }

    /// Deals the groups of a run of tables (each with its partial's number) into
    /// partitions by their keys' offsets, moving their states.
    fn deal_dense(
        &self,
        layout: Layout,
        run: Vec<(u32, IntTable)>,
    ) -> ExecResult<Vec<DenseGroups>> {
        let mut pieces = (0..layout.partitions())
            .map(|_| {
                Ok(DenseGroups {
                    from: Vec::new(),
                    slots: Vec::new(),
                    accs: self.new_accs()?,
                })
            })
            .collect::<ExecResult<Vec<DenseGroups>>>()?;
        let mut ids: Vec<Vec<u32>> = vec![Vec::new(); layout.partitions()];
        for (i, t) in run {
            let (values, mut accs) = t.into_parts();
            ids.iter_mut().for_each(Vec::clear);
            for (g, &v) in values.iter().enumerate() {
                let (p, slot) = layout.place(layout.offset(v));
                ids[p].push(g as u32);
                pieces[p].slots.push(slot);
                pieces[p].from.push((i, g as u32));
            }
            for (piece, ids) in pieces.iter_mut().zip(&ids) {
                for (acc, into) in accs.iter_mut().zip(&mut piece.accs) {
                    acc.move_groups(ids, into)?;
                }
            }
        }
        Ok(pieces)
    }

    /// Reduces partition `p`'s pieces in morsel order into array states by slot: its
    /// groups' output columns, and where each was first seen (partial, position), in the
    /// same order (by slot).
    fn reduce_dense(
        &self,
        layout: Layout,
        ty: DataType,
        p: usize,
        pieces: Vec<Piece<DenseGroups>>,
        scattered: &[DenseRows],
    ) -> ExecResult<ReducedPartition> {
        let slots = layout.slots(p);
        let mut accs = self.new_accs()?;
        accs.iter_mut().for_each(|a| a.resize(slots));
        // By slot: where its group was first seen, partial and position packed (`u64::MAX`:
        // not seen).
        let mut first = vec![u64::MAX; slots];
        let mut see = |slot: u32, (partial, position): (u32, u32)| {
            let f = &mut first[slot as usize];
            if *f == u64::MAX {
                *f = (partial as u64) << 32 | position as u64;
            }
        };
        let mut local_of = LocalIds::default();
        // A morsel's fresh states, reset for each morsel (their room kept).
        let mut local = self.new_accs()?;
        let mut ids = Vec::new();
        for piece in pieces {
            match piece {
                Piece::Groups(mut g) => {
                    for (&slot, &from) in g.slots.iter().zip(&g.from) {
                        see(slot, from);
                    }
                    merge_accs(&mut accs, &mut g.accs, slots, &g.slots)?;
                }
                Piece::Rows { rows, .. } if scattered[rows].rows_in(p) == 0 => {}
                Piece::Rows { morsel, rows } => {
                    let batches = &scattered[rows].0;
                    // Groups with one row in the morsel: that row adds straight into the
                    // partition's states, which gives the bits of adding it to fresh states
                    // and folding those in.
                    for b in batches {
                        let (start, end) = (b.starts[p] as usize, b.singles[p] as usize);
                        if start == end {
                            continue;
                        }
                        let batch_slots = &b.slots[start..end];
                        for (&slot, &row) in batch_slots.iter().zip(&b.order[start..end]) {
                            see(slot, (morsel, b.base + row));
                        }
                        for (acc, arg) in accs.iter_mut().zip(&b.args) {
                            let arg = arg.as_ref().map(|c| c.slice(start, end - start));
                            acc.update(batch_slots, arg.as_ref())?;
                        }
                    }
                    // The other groups get ids in the morsel's first-seen order; their fresh
                    // states, updated in row order, fold into the partition's through them.
                    let many = |b: &DenseBatch| b.starts[p + 1] > b.singles[p];
                    if !batches.iter().any(many) {
                        continue;
                    }
                    local_of.start_morsel();
                    local.iter_mut().for_each(|a| a.resize(0));
                    for b in batches.iter().filter(|b| many(b)) {
                        let (start, end) = (b.singles[p] as usize, b.starts[p + 1] as usize);
                        let batch_slots = &b.slots[start..end];
                        for (&slot, &row) in batch_slots.iter().zip(&b.order[start..end]) {
                            see(slot, (morsel, b.base + row));
                        }
                        local_of.ids(batch_slots, &mut ids);
                        for (acc, arg) in local.iter_mut().zip(&b.args) {
                            let arg = arg.as_ref().map(|c| c.slice(start, end - start));
                            acc.resize(local_of.groups());
                            acc.update(&ids, arg.as_ref())?;
                        }
                    }
                    merge_accs(&mut accs, &mut local, slots, local_of.mapping())?;
                }
            }
        }
        let seen: Vec<u32> = (0..slots as u32)
            .filter(|&s| first[s as usize] != u64::MAX)
            .collect();
        let first_seen = seen
            .iter()
            .map(|&s| {
                let f = first[s as usize];
                ((f >> 32) as u32, f as u32)
            })
            .collect();
        let keys = int_key_column(ty, seen.iter().map(|&s| layout.value(p, s)).collect())?;
        let mut columns = vec![keys];
        for acc in accs {
            columns.push(acc.finish()?.take(&seen));
        }
        if columns.len() != self.schema.len() {
            return Err(ExecError::Internal(
                "aggregate output does not match its schema".into(),
            ));
        }
        Ok((first_seen, columns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value of a range, and NULL, lands in one slot of one partition, each slot
    /// gives its value back, and the partitions' slots add up to the range.
    #[test]
    fn layout_places_every_value_once() {
        let cases = [
            (-5i64, 2u64),
            (0, 1),
            (7, 64),
            (-100, 65),
            (i64::MAX - 3, 5),
            (3, 100_003),
            (-1 << 40, 3_000_000),
        ];
        for (lo, values) in cases {
            let layout = Layout::over(lo, lo.wrapping_add(values as i64 - 2));
            let mut seen = std::collections::HashSet::new();
            let keys = (0..values - 1)
                .map(|o| Some(lo.wrapping_add(o as i64)))
                .chain([None]);
            for v in keys {
                let (p, slot) = layout.place(layout.offset(v));
                assert!((slot as usize) < layout.slots(p), "{lo} {values} {v:?}");
                assert_eq!(layout.value(p, slot), v);
                assert!(seen.insert((p, slot)));
            }
            let total: usize = (0..layout.partitions()).map(|p| layout.slots(p)).sum();
            assert_eq!(total as u64, values);
        }
    }
}
