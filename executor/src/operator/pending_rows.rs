//! A morsel's rows left for the merge to group: the morsel's first batch has few rows
//! (under [`super::aggregate::MIN_SCATTER_ROWS`]: a selective filter or join upstream) and
//! its keys are mostly distinct, so a group table of its own would hold about as many groups
//! as rows, reduce nothing, and cost the merge as much per group as a row (TPC-H Q15: 731
//! morsels of ~300 line items each, over the same 10K suppliers). The rows keep their
//! evaluated keys (integer-like values as they are, other keys encoded with their hashes on
//! the worker) and arguments; the merge adds them to its table in morsel and row order, or,
//! when it runs by partition, scatters them first.

use morsel_storage::Column;

use super::aggregate::{encode_with_hashes, int_hash, BatchKeys};
use super::keys::{for_each_int, int_range, RowKeys};
use crate::error::ExecResult;

/// One batch's keys, kept: one integer-like column by value, or encoded with their hashes.
enum PendingKeys {
    Int(Column),
    Encoded(RowKeys, Vec<u64>),
}

/// A morsel's rows, batch by batch: keys and each aggregate's argument.
#[derive(Default)]
pub struct PendingRows {
    rows: usize,
    batches: Vec<(PendingKeys, Vec<Option<Column>>)>,
    /// The smallest and largest integer key held by value (read on the worker, so that the
    /// merge can size an array for their ids without reading them).
    range: Option<(i64, i64)>,
}

impl PendingRows {
    pub fn rows(&self) -> usize {
        self.rows
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

    /// Whether the keys are one integer-like column, held by value.
    pub fn by_value(&self) -> bool {
        matches!(self.batches.first(), Some((PendingKeys::Int(_), _)))
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

    /// Memory held: keys, hashes and arguments.
    pub fn heap_bytes(&self) -> usize {
        let batch = |(keys, args): &(PendingKeys, Vec<Option<Column>>)| {
            let keys = match keys {
                PendingKeys::Int(col) => col.allocated_bytes(),
                PendingKeys::Encoded(k, h) => k.heap_bytes() + h.capacity() * 8,
            };
            keys + args
                .iter()
                .flatten()
                .map(Column::allocated_bytes)
                .sum::<usize>()
        };
        self.batches.iter().map(batch).sum()
    }
}
