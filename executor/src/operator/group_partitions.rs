//! The partitioned side of hash aggregation, for inputs with many groups. Groups are split
//! into [`PARTITIONS`] partitions by a few bits of their key hash; each partition is reduced on
//! its own, on the workers, and the groups are then put back in first-seen order (or, where
//! nothing reads their order, handed on as a batch per partition).
//!
//! A partition receives one piece per morsel (or per run of morsels), in morsel order:
//! - from morsels whose rows share few keys, the groups of their partial tables (keys and
//!   states), dealt by the merge;
//! - from a morsel where nearly every row is a new group, the rows themselves (key bytes and
//!   argument values), scattered by the worker that read the morsel: no group table as large
//!   as the morsel is built, and each partition's table stays small enough for the cache.
//!
//! A morsel's scattered rows first reduce into fresh states, which are then folded into the
//! partition's: every group's states combine as they would from the morsel's partial table,
//! with one difference: a table adds a batch whose rows fall into few groups by lanes
//! ([`super::few_groups`]), scattered rows in row order, so a float sum can round
//! differently. A morsel is scattered only when its first batch's keys are mostly distinct
//! (no lanes), so this takes a later batch sixteen times as large as the morsel's groups.
//! Rows kept for the merge ([`super::pending_rows`]) are scattered when dealt only where
//! their morsel's table would have used no lanes, else grouped in that table, so they give
//! its bits exactly.

use morsel_storage::{Batch, Column, DataType};

use super::accumulator::{with_args, Accumulator};
use super::aggregate::{
    encode_with_hashes, merge_accs, AggregateSink, BatchKeys, GroupTable, Partial,
};
use super::group_ids::intern_int;
use super::keys::{encode_int, for_each_int, hash_fields, hash_key, KeyList, RowKeys};
use super::pending_rows::{LocalIds, PendingRows};
use crate::error::{ExecError, ExecResult};
use crate::scheduler::parallel_map;

/// Hash partitions (a constant: results never depend on it).
pub const PARTITIONS: usize = 64;

/// The partition of a key hash: bits the group tables' own probing does not lean on.
fn partition(hash: u64) -> usize {
    (hash >> 40) as usize % PARTITIONS
}

/// Partial tables dealt into partitions at a time by one task (so that a partition receives
/// one piece per run of tables, not one per table).
const TABLES_PER_PIECE: usize = 16;

/// One batch of a morsel, its rows ordered by partition.
struct ScatteredBatch {
    /// The batch's first row within the morsel.
    base: u32,
    /// Row numbers within the batch, grouped by partition (in row order within each);
    /// partition p's are at `starts[p]..starts[p + 1]`, here and in `keys` and `args`.
    order: Vec<u32>,
    starts: Vec<u32>,
    /// The keys in `order` (so each partition reads its own run).
    keys: SortedKeys,
    /// Each aggregate's argument gathered in `order` (`None` for `count(*)`).
    args: Vec<Option<Column>>,
}

/// A batch's group keys in partition order.
enum SortedKeys {
    /// Encoded keys with their hashes.
    Encoded(KeyList),
    /// The values of one integer-like key column of type `ty`, looked up by value.
    Int {
        ty: DataType,
        values: Vec<Option<i64>>,
    },
}

/// A batch's group keys as read for scattering: encoded with their hashes, or the values of
/// one integer-like column of a type.
enum Read {
    Encoded(RowKeys, Vec<u64>),
    Int(DataType, Vec<Option<i64>>),
}

/// A morsel's rows ordered by the partition of their key hash, batch by batch.
pub struct ScatteredRows {
    /// Rows of the morsel so far.
    rows: usize,
    batches: Vec<ScatteredBatch>,
}

impl ScatteredRows {
    pub fn new() -> Self {
        Self {
            rows: 0,
            batches: Vec::new(),
        }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Rows of the morsel in partition `p`.
    fn rows_in(&self, p: usize) -> usize {
        let batch = |b: &ScatteredBatch| (b.starts[p + 1] - b.starts[p]) as usize;
        self.batches.iter().map(batch).sum()
    }

    /// Bytes of the encoded keys of the morsel's rows in partition `p` (integer keys
    /// encode to at most nine).
    fn key_bytes_in(&self, p: usize) -> usize {
        let batch = |b: &ScatteredBatch| {
            let (start, end) = (b.starts[p] as usize, b.starts[p + 1] as usize);
            match &b.keys {
                SortedKeys::Encoded(k) => k.bytes_between(start, end),
                SortedKeys::Int { .. } => (end - start) * 9,
            }
        };
        self.batches.iter().map(batch).sum()
    }

    /// Memory held: keys, hashes, row order and argument values.
    pub fn heap_bytes(&self) -> usize {
        let batch = |b: &ScatteredBatch| {
            let keys = match &b.keys {
                SortedKeys::Encoded(k) => k.heap_bytes(),
                SortedKeys::Int { values, .. } => values.capacity() * 16,
            };
            keys + (b.order.capacity() + b.starts.capacity()) * 4
                + b.args
                    .iter()
                    .flatten()
                    .map(Column::allocated_bytes)
                    .sum::<usize>()
        };
        self.batches.iter().map(batch).sum()
    }

    /// Orders one batch's rows by partition (`part_of` an encoded key and its hash):
    /// `args` are each aggregate's argument.
    pub fn push_batch(
        &mut self,
        keys: BatchKeys,
        args: &[Option<Column>],
        part_of: impl Fn(&[u8], u64) -> usize,
    ) -> ExecResult<()> {
        let base = u32::try_from(self.rows)
            .map_err(|_| ExecError::Internal("a morsel of more than 2^32 rows".into()))?;
        // Integer keys are read out by value once; every row's partition comes from the hash
        // of its encoded key (as a table's groups' partitions do).
        let keys = match keys {
            BatchKeys::Encoded(keys, hashes) => Read::Encoded(keys, hashes),
            BatchKeys::Columns(cols) => {
                let (keys, hashes) = encode_with_hashes(cols);
                Read::Encoded(keys, hashes)
            }
            BatchKeys::Str(col) => {
                let (keys, hashes) = encode_with_hashes(&[Column::Utf8(col.clone())]);
                Read::Encoded(keys, hashes)
            }
            BatchKeys::Int(col) => {
                let mut values = Vec::with_capacity(col.len());
                for_each_int(col, |_, v| values.push(v));
                Read::Int(col.data_type(), values)
            }
        };
        let parts: Vec<u8> = match &keys {
            Read::Encoded(keys, hashes) => hashes
                .iter()
                .enumerate()
                .map(|(i, &h)| part_of(keys.key(i), h) as u8)
                .collect(),
            Read::Int(ty, values) => values
                .iter()
                .map(|&v| partition(hash_key(encode_int(v, *ty, &mut [0u8; 9]))) as u8)
                .collect(),
        };
        // A counting sort by partition, stable.
        let mut starts = vec![0u32; PARTITIONS + 1];
        for &p in &parts {
            starts[p as usize + 1] += 1;
        }
        for p in 0..PARTITIONS {
            starts[p + 1] += starts[p];
        }
        let mut next = starts.clone();
        let mut order = vec![0u32; parts.len()];
        for (i, &p) in parts.iter().enumerate() {
            let slot = &mut next[p as usize];
            order[*slot as usize] = i as u32;
            *slot += 1;
        }
        let keys = match keys {
            Read::Encoded(keys, hashes) => {
                let mut sorted = KeyList::with_capacity(order.len(), keys.bytes_len());
                for &i in &order {
                    sorted.push(keys.key(i as usize), hashes[i as usize]);
                }
                SortedKeys::Encoded(sorted)
            }
            Read::Int(ty, values) => SortedKeys::Int {
                ty,
                values: order.iter().map(|&i| values[i as usize]).collect(),
            },
        };
        let args = args
            .iter()
            .map(|a| a.as_ref().map(|c| c.take(&order)))
            .collect();
        self.rows += order.len();
        self.batches.push(ScatteredBatch {
            base,
            order,
            starts,
            keys,
            args,
        });
        Ok(())
    }
}

/// One partition's share of a run of partial tables: where each group came from (table,
/// id), its key and its states, in morsel order.
struct GroupPiece {
    from: Vec<(u32, u32)>,
    keys: KeyList,
    accs: Vec<Accumulator>,
}

/// What a partition receives from one morsel or run of morsels: its share `G` of their
/// groups (by hash: [`GroupPiece`]; by key offset: `super::dense_merge`'s), or a morsel's rows.
pub(super) enum Piece<G> {
    Groups(G),
    /// A morsel's rows, read by every partition: the `rows`th of the merge's scattered
    /// morsels, partial number `morsel` (held once by the merge and lent to the partitions,
    /// not shared by counted references, whose counts the workers would contend for).
    Rows {
        morsel: u32,
        rows: usize,
    },
}

/// A unit once dealt: a piece of groups for every partition, or a morsel's rows `R`
/// scattered.
pub(super) enum Dealt<G, R> {
    Groups(Vec<G>),
    Rows(u32, R),
}

/// Each partition's pieces, in unit order, and the scattered morsels the pieces of rows
/// point to.
pub(super) type Partitioned<G, R> = (Vec<Vec<Piece<G>>>, Vec<R>);

/// The dealt units' pieces by partition (`partitions` of them).
pub(super) fn by_partition<G, R>(
    partitions: usize,
    dealt: Vec<ExecResult<Dealt<G, R>>>,
) -> ExecResult<Partitioned<G, R>> {
    let mut by_partition: Vec<Vec<Piece<G>>> = (0..partitions).map(|_| Vec::new()).collect();
    let mut scattered = Vec::new();
    for unit in dealt {
        match unit? {
            Dealt::Groups(pieces) => {
                for (part, piece) in by_partition.iter_mut().zip(pieces) {
                    part.push(Piece::Groups(piece));
                }
            }
            Dealt::Rows(morsel, rows) => {
                let piece = || Piece::Rows {
                    morsel,
                    rows: scattered.len(),
                };
                by_partition.iter_mut().for_each(|part| part.push(piece()));
                scattered.push(rows);
            }
        }
    }
    Ok((by_partition, scattered))
}

/// Where each of a reduced partition's groups was first seen (partial, position), and its
/// output columns, groups in the same order.
pub(super) type ReducedPartition = (Vec<(u32, u32)>, Vec<Column>);

/// Consecutive partials to deal together: a run of tables, one morsel's scattered rows, or
/// one morsel's rows kept for the merge (scattered or grouped in a table when dealt).
enum Unit {
    Tables(u32, Vec<Partial>),
    Rows(u32, ScatteredRows),
    Pending(u32, PendingRows),
}

impl AggregateSink {
    /// Merges by hash partition on the workers, then restores first-seen order.
    pub(super) fn merge_partitioned(&self, partials: Vec<Partial>) -> ExecResult<Vec<Batch>> {
        // Each partial's positions (a table's groups, or a morsel's rows): first-seen order
        // is by partial, then by position.
        let mut sizes = Vec::with_capacity(partials.len());
        let mut units: Vec<Unit> = Vec::new();
        for (i, p) in partials.into_iter().enumerate() {
            let i = i as u32;
            match p {
                Partial::Table(_) | Partial::Ints(_) => {
                    sizes.push(p.table_groups());
                    match units.last_mut() {
                        Some(Unit::Tables(_, run)) if run.len() < TABLES_PER_PIECE => run.push(p),
                        _ => units.push(Unit::Tables(i, vec![p])),
                    }
                }
                Partial::Rows(r) => {
                    sizes.push(r.rows);
                    units.push(Unit::Rows(i, r));
                }
                Partial::Pending(r) => {
                    sizes.push(r.rows());
                    units.push(Unit::Pending(i, r));
                }
                Partial::Global(_) => {
                    return Err(ExecError::Internal(
                        "a global partial reached the partitioned merge".into(),
                    ))
                }
            }
        }
        let dealt = parallel_map(self.threads, units, |_, unit| {
            Ok::<_, ExecError>(match unit {
                Unit::Tables(first, run) => Dealt::Groups(self.deal_tables(first, run)?),
                Unit::Rows(morsel, rows) => Dealt::Rows(morsel, rows),
                Unit::Pending(morsel, pending) if pending.never_by_lanes() => {
                    let mut rows = ScatteredRows::new();
                    let part_of = |key: &[u8], hash| self.partition_of(key, hash);
                    pending.drain(|keys, args| rows.push_batch(keys, args, part_of))?;
                    Dealt::Rows(morsel, rows)
                }
                Unit::Pending(morsel, pending) => {
                    // Its table, as the worker that read it would have built (a table's
                    // batch of few groups adds by lanes, which scattered rows do not).
                    let mut table = self.new_table()?;
                    pending.drain(|keys, args| table.update(&keys, args))?;
                    Dealt::Groups(self.deal_tables(morsel, vec![Partial::Table(table)])?)
                }
            })
        });
        let (pieces, scattered) = by_partition(PARTITIONS, dealt)?;
        let merged = parallel_map(self.threads, pieces, |p, pieces| {
            self.reduce_partition(p, pieces, &scattered)
        });
        self.assemble(sizes, merged)
    }

    /// The output of a merge by partition: `merged` partitions' groups put back in
    /// first-seen order (the partials held `sizes` positions each: a table's groups, a
    /// morsel's rows), or, where nothing reads their order, a batch per partition.
    pub(super) fn assemble(
        &self,
        sizes: Vec<usize>,
        merged: Vec<ExecResult<ReducedPartition>>,
    ) -> ExecResult<Vec<Batch>> {
        if !self.keep_order {
            // Partition order, a batch per partition (not copied into one): nothing reads the
            // groups' order.
            let parts = merged
                .into_iter()
                .map(|m| m.map(|(_, columns)| columns))
                .collect::<ExecResult<Vec<_>>>()?;
            let batches = parts
                .into_iter()
                .filter_map(|columns| {
                    let rows = columns.first().map_or(0, Column::len);
                    (rows > 0).then(|| Batch::try_new(self.schema.clone(), columns, rows))
                })
                .collect::<Result<Vec<Batch>, _>>()?;
            if batches.is_empty() {
                return Ok(vec![Batch::empty(self.schema.clone())]);
            }
            return Ok(batches);
        }
        // Each group's row in the concatenated partitions, listed by the partial where it
        // was first seen, with its position there; reading them by partial and position
        // gives first-seen order (each partial's positions sorted on a worker).
        let mut firsts: Vec<Vec<(u32, u32)>> = vec![Vec::new(); sizes.len()];
        let mut parts = Vec::with_capacity(merged.len());
        let mut row = 0u32;
        for m in merged {
            let (first_seen, columns) = m?;
            for (i, g) in first_seen {
                firsts[i as usize].push((g, row));
                row += 1;
            }
            parts.push(columns);
        }
        let by_partial = firsts.into_iter().zip(sizes).collect();
        let order = parallel_map(self.threads, by_partial, |_, (mut groups, size)| {
            // Few groups first seen among many positions (a late morsel of a long input):
            // sorted; else placed by position in an array of them.
            if groups.len() * 16 < size {
                groups.sort_unstable();
                return groups.into_iter().map(|(_, row)| row).collect();
            }
            let mut row_of = vec![u32::MAX; size];
            for (g, row) in groups {
                row_of[g as usize] = row;
            }
            row_of.retain(|&r| r != u32::MAX);
            row_of
        })
        .concat();
        self.concat_parts(&parts, &order)
    }

    /// The partitions' output columns concatenated, their rows taken in `order`.
    fn concat_parts(&self, parts: &[Vec<Column>], order: &[u32]) -> ExecResult<Vec<Batch>> {
        let columns = parallel_map(self.threads, (0..self.schema.len()).collect(), |_, c| {
            let pieces: Vec<Column> = parts.iter().map(|p| p[c].clone()).collect();
            Ok(Column::concat(&pieces)?.take(order))
        })
        .into_iter()
        .collect::<ExecResult<Vec<Column>>>()?;
        let rows = columns.first().map_or(0, Column::len);
        Ok(vec![Batch::try_new(self.schema.clone(), columns, rows)?])
    }

    /// The partition of a group with encoded key `key` and key hash `hash`: by the hash of
    /// the keys [`AggregateSink::partition_keys`] names where it names some.
    pub(super) fn partition_of(&self, key: &[u8], hash: u64) -> usize {
        match &self.partition_keys {
            None => partition(hash),
            Some(keep) => partition(hash_fields(key, &self.key_types, keep)),
        }
    }

    /// Deals the groups of a run of tables (the first being partial number `first`) into
    /// partitions, copying their keys (encoded here for tables held by value) and moving
    /// their states.
    fn deal_tables(&self, first: u32, run: Vec<Partial>) -> ExecResult<Vec<GroupPiece>> {
        let mut pieces = (0..PARTITIONS)
            .map(|_| {
                Ok(GroupPiece {
                    from: Vec::new(),
                    keys: KeyList::new(),
                    accs: self.new_accs()?,
                })
            })
            .collect::<ExecResult<Vec<GroupPiece>>>()?;
        let mut ids: Vec<Vec<u32>> = vec![Vec::new(); PARTITIONS];
        for (k, t) in run.into_iter().enumerate() {
            let i = first + k as u32;
            let mut t: GroupTable = match t {
                Partial::Table(t) => t,
                Partial::Ints(t) => t.into_encoded(),
                Partial::Rows(_) | Partial::Pending(_) | Partial::Global(_) => {
                    return Err(ExecError::Internal(
                        "scattered rows or a global partial dealt as a table".into(),
                    ))
                }
            };
            ids.iter_mut().for_each(Vec::clear);
            for g in 0..t.keys.len() {
                ids[self.partition_of(t.keys.key(g), t.keys.hash(g))].push(g as u32);
            }
            for (piece, ids) in pieces.iter_mut().zip(&ids) {
                for &g in ids {
                    piece
                        .keys
                        .push(t.keys.key(g as usize), t.keys.hash(g as usize));
                    piece.from.push((i, g));
                }
                for (acc, into) in t.accs.iter_mut().zip(&mut piece.accs) {
                    acc.move_groups(ids, into)?;
                }
            }
        }
        Ok(pieces)
    }

    /// Reduces partition `p`'s pieces in morsel order: its output columns, and where each of
    /// its groups was first seen (partial, position), in output order.
    fn reduce_partition(
        &self,
        p: usize,
        pieces: Vec<Piece<GroupPiece>>,
        scattered: &[ScatteredRows],
    ) -> ExecResult<ReducedPartition> {
        let mut t = self.new_table()?;
        // Room for every group the pieces could hold (a scattered morsel's keys are mostly
        // distinct), so that the table is not rebuilt as it grows.
        let (room, bytes) = pieces
            .iter()
            .map(|piece| match piece {
                Piece::Groups(g) => (g.from.len(), g.keys.bytes_len()),
                Piece::Rows { rows, .. } => {
                    let rows = &scattered[*rows];
                    (rows.rows_in(p), rows.key_bytes_in(p))
                }
            })
            .fold((0, 0), |(r, b), (r2, b2)| (r + r2, b + b2));
        t.keys.reserve(room, bytes);
        let mut first_seen: Vec<(u32, u32)> = Vec::new();
        // A morsel's local group id for each of the partition's groups.
        let mut local_of = LocalIds::default();
        // A morsel's fresh states, reset for each morsel (their room kept).
        let mut local = self.new_accs()?;
        let (mut merge_ids, mut ids) = (Vec::new(), Vec::new());
        for piece in pieces {
            match piece {
                Piece::Groups(mut piece) => {
                    let mut mapping = Vec::with_capacity(piece.from.len());
                    for (k, &from) in piece.from.iter().enumerate() {
                        let (id, new) = t.keys.intern(piece.keys.key(k), piece.keys.hash(k));
                        if new {
                            first_seen.push(from);
                        }
                        mapping.push(id);
                    }
                    merge_accs(&mut t.accs, &mut piece.accs, t.keys.len(), &mapping)?;
                }
                Piece::Rows { rows, .. } if scattered[rows].rows_in(p) == 0 => {}
                Piece::Rows { morsel, rows } => {
                    let rows = &scattered[rows];
                    // The morsel's groups in this partition, in first-seen order, as the
                    // partition's ids: the fresh states' ids map through it.
                    local_of.start_morsel();
                    local.iter_mut().for_each(|a| a.resize(0));
                    for b in &rows.batches {
                        let (start, end) = (b.starts[p] as usize, b.starts[p + 1] as usize);
                        merge_ids.clear();
                        let mut add = |k: usize, (g, new): (u32, bool)| {
                            if new {
                                first_seen.push((morsel, b.base + b.order[k]));
                            }
                            merge_ids.push(g);
                        };
                        match &b.keys {
                            SortedKeys::Encoded(keys) => {
                                for k in start..end {
                                    add(k, t.keys.intern(keys.key(k), keys.hash(k)));
                                }
                            }
                            SortedKeys::Int { ty, values } => {
                                for (k, &v) in values.iter().enumerate().take(end).skip(start) {
                                    let keys = &mut t.keys;
                                    add(k, t.ints.id(v, || intern_int(keys, v, *ty)));
                                }
                            }
                        }
                        local_of.ids(&merge_ids, &mut ids);
                        let sliced: Vec<Option<Column>> = b
                            .args
                            .iter()
                            .map(|a| a.as_ref().map(|c| c.slice(start, end - start)))
                            .collect();
                        for (acc, args) in with_args(&mut local, &sliced) {
                            acc.resize(local_of.groups());
                            acc.update(&ids, args)?;
                        }
                    }
                    merge_accs(&mut t.accs, &mut local, t.keys.len(), local_of.mapping())?;
                }
            }
        }
        let columns = self.output(t.keys.keys(), t.accs)?;
        Ok((first_seen, columns))
    }
}
