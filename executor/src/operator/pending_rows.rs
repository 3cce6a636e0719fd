//! A morsel's rows left for the merge to group: its keys are mostly distinct, so a group
//! table of its own would hold about as many groups as rows, reduce nothing, and cost the
//! merge as much per group as a row; and either the morsel's first batch has few rows
//! (under [`super::aggregate::MIN_SCATTER_ROWS`]: a selective filter or join upstream; TPC-H
//! Q15: 731 morsels of ~300 line items each, over the same 10K suppliers), or the key is one
//! integer-like column (the merge may then take the rows by key offset, see
//! [`super::dense_merge`], or else scatters them by key hash). The rows keep their
//! evaluated keys (integer-like values as they are, other keys encoded with their hashes on
//! the worker) and arguments. The merge folds each kept morsel into its table exactly as the
//! morsel's own table would have been folded: the rows' groups get ids in the morsel's
//! first-seen order, their states start fresh and are updated batch by batch as a table's
//! (lanes included), and are then combined into the merge's. So whether a morsel's rows were
//! kept changes the cost, never the bits of a float sum. A merge by hash partition scatters a
//! kept morsel's rows when its table would have added no batch by lanes (a lower bound of
//! its groups, from the sketch that decided to keep it, rules lanes out), and otherwise
//! builds the morsel's table on a worker and deals it.

use morsel_storage::{Column, DataType};

use super::accumulator::Accumulator;
use super::aggregate::{encode_with_hashes, int_hash, update_accs, BatchKeys};
use super::few_groups::FewGroups;
use super::keys::{for_each_int, int_range, RowKeys};
use crate::error::{ExecError, ExecResult};

/// One batch's keys, kept: one integer-like column by value, or encoded with their hashes.
enum PendingKeys {
    Int(Column),
    Encoded(RowKeys, Vec<u64>),
}

/// A morsel's rows, batch by batch: keys and each aggregate's argument.
pub struct PendingRows {
    rows: usize,
    /// A lower bound of the morsel's distinct keys (its first batch's, counted when the
    /// morsel was decided to be kept).
    min_groups: usize,
    batches: Vec<(PendingKeys, Vec<Option<Column>>)>,
    /// The smallest and largest integer key held by value (read on the worker, so that the
    /// merge can size an array for their ids without reading them).
    range: Option<(i64, i64)>,
}

impl PendingRows {
    /// No rows yet, of a morsel with at least `min_groups` distinct keys.
    pub fn new(min_groups: usize) -> Self {
        Self {
            rows: 0,
            min_groups,
            batches: Vec::new(),
            range: None,
        }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Whether the morsel's table would add no batch by lanes (each has too few rows for
    /// the morsel's groups): then its rows, scattered and reduced by partition, give that
    /// table's bits.
    pub fn never_by_lanes(&self) -> bool {
        self.batches.iter().all(|(keys, _)| {
            let rows = match keys {
                PendingKeys::Int(col) => col.len(),
                PendingKeys::Encoded(_, hashes) => hashes.len(),
            };
            FewGroups::ruled_out(self.min_groups, rows)
        })
    }

    /// Keeps a batch's rows: `keys` as evaluated, `args` each aggregate's argument.
    pub fn push(&mut self, keys: BatchKeys, args: Vec<Option<Column>>) {
        self.rows += keys.rows();
        let keys = match keys {
            BatchKeys::Int(col) => {
                if let Some((lo, hi)) = int_range(col) {
                    let (a, b) = self.range.unwrap_or((lo, hi));
                    self.range = Some((a.min(lo), b.max(hi)));
                }
                PendingKeys::Int(col.clone())
            }
            BatchKeys::Str(col) => {
                let (keys, hashes) = encode_with_hashes(&[Column::Utf8(col.clone())]);
                PendingKeys::Encoded(keys, hashes)
            }
            BatchKeys::Columns(cols) => {
                let (keys, hashes) = encode_with_hashes(cols);
                PendingKeys::Encoded(keys, hashes)
            }
            BatchKeys::Encoded(keys, hashes) => PendingKeys::Encoded(keys, hashes),
        };
        self.batches.push((keys, args));
    }

    /// The smallest and largest key when the keys are held by value (`Some(None)`: no key
    /// but NULL, or no rows); `None` for encoded keys.
    pub fn int_range(&self) -> Option<Option<(i64, i64)>> {
        match self.batches.first() {
            Some((PendingKeys::Encoded(..), _)) => None,
            _ => Some(self.range),
        }
    }

    /// The key column's type when the keys are one integer-like column, held by value.
    pub fn int_type(&self) -> Option<DataType> {
        match self.batches.first() {
            Some((PendingKeys::Int(col), _)) => Some(col.data_type()),
            _ => None,
        }
    }

    /// The morsel's groups as its own table would hold them: fresh states `accs` updated
    /// batch by batch, and for each of the morsel's groups (in first-seen order) its id in
    /// the merge's table, which `merge_ids` gives for a batch's keys (interning new ones).
    pub fn states(
        self,
        local: &mut LocalIds,
        mut accs: Vec<Accumulator>,
        mut merge_ids: impl FnMut(BatchKeys) -> ExecResult<Vec<u32>>,
    ) -> ExecResult<(Vec<Accumulator>, &[u32])> {
        local.start_morsel();
        let mut ids: Vec<u32> = Vec::with_capacity(self.rows);
        self.drain(|keys, args| {
            local.ids(&merge_ids(keys)?, &mut ids);
            update_accs(&mut accs, &ids, local.groups(), args)
        })?;
        Ok((accs, local.mapping()))
    }

    /// Hands each batch's keys and arguments to `f`, in order.
    pub fn drain(
        self,
        mut f: impl FnMut(BatchKeys, &[Option<Column>]) -> ExecResult<()>,
    ) -> ExecResult<()> {
        for (keys, args) in self.batches {
            match keys {
                PendingKeys::Int(col) => f(BatchKeys::Int(&col), &args)?,
                PendingKeys::Encoded(k, h) => f(BatchKeys::Encoded(k, h), &args)?,
            }
        }
        Ok(())
    }

    /// Hands each batch's keys, held by value, and arguments to `f`, in order, leaving them
    /// kept (several merge tasks read one morsel's rows).
    pub fn each_int_batch(
        &self,
        mut f: impl FnMut(&Column, &[Option<Column>]) -> ExecResult<()>,
    ) -> ExecResult<()> {
        for (keys, args) in &self.batches {
            match keys {
                PendingKeys::Int(col) => f(col, args)?,
                PendingKeys::Encoded(..) => {
                    return Err(ExecError::Internal(
                        "a dense merge over keys not held by value".into(),
                    ))
                }
            }
        }
        Ok(())
    }

    /// Each row's key hash, as a table's groups give theirs (encoded keys' hashes; integers
    /// held by value hashed by value), for estimating the distinct keys of all partials.
    pub fn for_each_hash(&self, mut f: impl FnMut(u64)) {
        for (keys, _) in &self.batches {
            match keys {
                PendingKeys::Int(col) => for_each_int(col, |_, v| f(int_hash(v))),
                PendingKeys::Encoded(_, hashes) => hashes.iter().for_each(|&h| f(h)),
            }
        }
    }

    /// Memory held: keys, hashes and arguments (a column as evaluated may be a window onto
    /// its input's buffers, which counts only its rows: each morsel of a batch would
    /// otherwise count the whole batch).
    pub fn heap_bytes(&self) -> usize {
        let batch = |(keys, args): &(PendingKeys, Vec<Option<Column>>)| {
            let keys = match keys {
                PendingKeys::Int(col) => col.window_bytes(),
                PendingKeys::Encoded(k, h) => k.heap_bytes() + h.capacity() * 8,
            };
            keys + args
                .iter()
                .flatten()
                .map(Column::window_bytes)
                .sum::<usize>()
        };
        self.batches.iter().map(batch).sum()
    }
}

/// For each group of a merge's table, its id among the groups of the morsel being folded,
/// and the other way round. Kept between morsels and cleared of each morsel's groups only,
/// so that folding a morsel costs its rows, not the table's groups.
#[derive(Default)]
pub struct LocalIds {
    /// By the merge's id: the morsel's (`u32::MAX`: not among its groups).
    of: Vec<u32>,
    /// By the morsel's id (the first `groups`): the merge's. Longer than that, so that
    /// every row writes its group there whether new or not.
    mapping: Vec<u32>,
    groups: usize,
}

impl LocalIds {
    /// Forgets the last morsel's groups.
    pub(super) fn start_morsel(&mut self) {
        for &g in &self.mapping[..self.groups] {
            self.of[g as usize] = u32::MAX;
        }
        self.groups = 0;
    }

    /// The morsel's ids for the merge's groups `merge` (new ones for groups new to the
    /// morsel, in order), into `out`. No branch on whether a group is new (a key seen a
    /// few times in a morsel is new at random): each row writes its id and its group.
    pub(super) fn ids(&mut self, merge: &[u32], out: &mut Vec<u32>) {
        out.clear();
        let Some(&top) = merge.iter().max() else {
            return;
        };
        if top as usize >= self.of.len() {
            self.of.resize(top as usize + 1, u32::MAX);
        }
        let room = self.groups + merge.len();
        if self.mapping.len() < room {
            self.mapping.resize(room, 0);
        }
        let (of, mapping) = (&mut self.of[..], &mut self.mapping[..]);
        let mut n = self.groups;
        out.extend(merge.iter().map(|&g| {
            let local = of[g as usize];
            let new = local == u32::MAX;
            let id = if new { n as u32 } else { local };
            of[g as usize] = id;
            mapping[n] = g;
            n += usize::from(new);
            id
        }));
        self.groups = n;
    }

    /// The morsel's groups so far.
    pub(super) fn groups(&self) -> usize {
        self.groups
    }

    /// The merge's id of each of the morsel's groups, by the morsel's id.
    pub(super) fn mapping(&self) -> &[u32] {
        &self.mapping[..self.groups]
    }
}
