//! A morsel's group table when the only group key is integer-like (integers, dates,
//! timestamps): its groups are held by value, their keys never encoded, hashed as bytes or
//! interned; rows find their group through [`IntIds`]. Such tables also merge by value:
//! concatenated when their key ranges are apart (a column stored sorted or in runs), else one
//! after another into one table by value. A merge that needs encoded keys (by partition, when
//! the groups are many or some morsel was scattered) first turns a table into an encoded one
//! with the same ids ([`IntTable::into_encoded`]), so every merge combines the same states in
//! the same order.

use morsel_storage::{Batch, Column, DataType, PrimitiveColumn};

use super::accumulator::Accumulator;
use super::aggregate::{merge_accs, update_accs, AggregateSink, BatchKeys, GroupTable, Partial};
use super::group_ids::{intern_int, IntIds};
use super::keys::KeyInterner;
use super::pending_rows::LocalIds;
use crate::error::{ExecError, ExecResult};

/// Groups of one integer-like key, by value, with one accumulator per aggregate.
pub struct IntTable {
    /// The key column's type (how its values are encoded when they must be).
    ty: DataType,
    ids: IntIds,
    /// Each group's value by id, in first-seen order (NULL: `None`).
    values: Vec<Option<i64>>,
    accs: Vec<Accumulator>,
}

impl IntTable {
    pub fn new(ty: DataType, accs: Vec<Accumulator>) -> Self {
        Self {
            ty,
            ids: IntIds::default(),
            values: Vec::new(),
            accs,
        }
    }

    /// Groups held.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Each group's value, by id.
    pub fn values(&self) -> &[Option<i64>] {
        &self.values
    }

    /// Makes room for `groups` more groups.
    pub fn reserve(&mut self, groups: usize) {
        self.ids.reserve(groups);
        self.values.reserve(groups);
    }

    /// Memory held: the ids by value, the values and the states.
    pub fn heap_bytes(&self) -> usize {
        self.ids.heap_bytes()
            + self.values.capacity() * std::mem::size_of::<Option<i64>>()
            + self.accs.iter().map(Accumulator::heap_bytes).sum::<usize>()
    }

    /// Adds a batch's rows: `keys` is the key column, `args` each aggregate's argument.
    pub fn update(&mut self, keys: &Column, args: &[Option<Column>]) -> ExecResult<()> {
        let ids = self.ids(keys);
        update_accs(&mut self.accs, &ids, self.values.len(), args)
    }

    /// Each row's group id, adding values not seen before (no state is touched).
    fn ids(&mut self, keys: &Column) -> Vec<u32> {
        let values = &mut self.values;
        self.ids.ids(keys, |v| {
            values.push(v);
            (values.len() as u32 - 1, true)
        })
    }

    /// Each group's value (by id) and the states.
    pub fn into_parts(self) -> (Vec<Option<i64>>, Vec<Accumulator>) {
        (self.values, self.accs)
    }

    /// The same groups, ids and states as a table of encoded keys.
    pub fn into_encoded(self) -> GroupTable {
        let mut keys = KeyInterner::new();
        // A tag byte and up to eight value bytes per key.
        keys.reserve(self.values.len(), self.values.len() * 9);
        for &v in &self.values {
            intern_int(&mut keys, v, self.ty);
        }
        GroupTable::from_parts(keys, self.accs, self.ids)
    }
}

impl AggregateSink {
    /// Whether every partial is a table of integer keys without NULL whose values lie at or
    /// above the previous table's (a column stored sorted or in runs, as line items by
    /// order): then only a key at the seam of two neighbours can be in both. Empty tables
    /// (morsels without rows) are passed over.
    pub(super) fn ranges_apart(&self, partials: &[Partial]) -> bool {
        let mut last_max: Option<i64> = None;
        for p in partials {
            let t = match p {
                Partial::Ints(t) => t,
                Partial::Table(t) if t.keys.is_empty() => continue,
                _ => return false,
            };
            match t.ids.range() {
                (_, true) => return false,
                (None, false) => continue,
                (Some((min, max)), false) => {
                    if last_max.is_some_and(|m| m > min) {
                        return false;
                    }
                    last_max = Some(max);
                }
            }
        }
        last_max.is_some()
    }

    /// Merges tables whose key ranges are apart (see [`Self::ranges_apart`]) by
    /// concatenating their groups in morsel order, a key at a seam merged into its first
    /// group: the groups and their first-seen order are those of any other merge, with no
    /// table to look keys up in.
    pub(super) fn merge_apart(&self, partials: Vec<Partial>) -> ExecResult<Vec<Batch>> {
        let mut values = Vec::new();
        let mut accs = self.new_accs()?;
        // The largest key so far and its group.
        let mut seam: Option<(i64, u32)> = None;
        for p in partials {
            let mut t = match p {
                Partial::Ints(t) => t,
                Partial::Table(t) if t.keys.is_empty() => continue,
                _ => return Err(internal("a merge of sorted integer keys")),
            };
            let (Some((min, max)), _) = t.ids.range() else {
                continue;
            };
            let shared = match seam {
                Some((v, group)) if v == min => t.ids.get(min).map(|g| (g, group)),
                _ => None,
            };
            let mapping: Vec<u32> = (0..t.values.len() as u32)
                .map(|g| match shared {
                    Some((s, group)) if s == g => group,
                    _ => {
                        values.push(t.values[g as usize]);
                        values.len() as u32 - 1
                    }
                })
                .collect();
            merge_accs(&mut accs, &mut t.accs, values.len(), &mapping)?;
            let last = t
                .ids
                .get(max)
                .ok_or_else(|| internal("a group table that lacks its largest key"))?;
            seam = Some((max, mapping[last as usize]));
        }
        self.int_output(values, accs)
    }

    /// Merges tables of integer keys one after another into one table, by value, adding rows
    /// kept for the merge as they came. Empty tables (morsels without rows) are passed over.
    pub(super) fn merge_ints(&self, partials: Vec<Partial>) -> ExecResult<Vec<Batch>> {
        // Keys in a range of at most a few slots per group in the partials are looked up
        // in an array of that range instead of hashed (TPC-H Q15: 226K rows over 10K
        // suppliers numbered 1 to 10000).
        let groups: usize = partials.iter().map(Partial::table_groups).sum();
        let dense = int_bounds(&partials).filter(|&(lo, hi)| {
            (hi as i128 - lo as i128) < (MERGE_SLOTS_PER_GROUP * groups) as i128
        });
        let new_table = |ty| -> ExecResult<IntTable> {
            Ok(IntTable {
                ty,
                ids: dense.map_or_else(IntIds::default, |(lo, hi)| IntIds::over_range(lo, hi)),
                values: Vec::new(),
                accs: self.new_accs()?,
            })
        };
        let mut global: Option<IntTable> = None;
        let mut local = LocalIds::default();
        for p in partials {
            let mut t = match p {
                Partial::Ints(t) => t,
                Partial::Table(t) if t.keys.is_empty() => continue,
                Partial::Pending(rows) => {
                    let Some(ty) = rows.int_type() else {
                        return Err(internal("a merge of integer keys"));
                    };
                    let global = match &mut global {
                        Some(g) => g,
                        None => global.insert(new_table(ty)?),
                    };
                    let (mut states, mapping) =
                        rows.states(&mut local, self.new_accs()?, |keys| match keys {
                            BatchKeys::Int(col) => Ok(global.ids(col)),
                            _ => Err(internal("a merge of integer keys")),
                        })?;
                    merge_accs(&mut global.accs, &mut states, global.values.len(), mapping)?;
                    continue;
                }
                _ => return Err(internal("a merge of integer keys")),
            };
            let global = match &mut global {
                Some(g) => g,
                None => global.insert(new_table(t.ty)?),
            };
            let (ids, values) = (&mut global.ids, &mut global.values);
            let mapping: Vec<u32> = t
                .values
                .iter()
                .map(|&v| {
                    ids.id(v, || {
                        values.push(v);
                        (values.len() as u32 - 1, true)
                    })
                    .0
                })
                .collect();
            merge_accs(&mut global.accs, &mut t.accs, global.values.len(), &mapping)?;
        }
        match global {
            Some(g) => self.int_output(g.values, g.accs),
            None => self.int_output(Vec::new(), self.new_accs()?),
        }
    }

    /// The output batch of merged groups of integer keys `values`.
    /// One table's groups, as they are (see [`AggregateSink::whole_groups`]).
    pub(super) fn int_table_output(&self, t: IntTable) -> ExecResult<Vec<Batch>> {
        self.int_output(t.values, t.accs)
    }

    fn int_output(
        &self,
        values: Vec<Option<i64>>,
        accs: Vec<Accumulator>,
    ) -> ExecResult<Vec<Batch>> {
        let groups = values.len();
        let ty = self.key_types.first().copied().unwrap_or(DataType::Int64);
        let columns = self.output_columns(vec![int_key_column(ty, values)?], groups, accs)?;
        Ok(vec![Batch::try_new(self.schema.clone(), columns, groups)?])
    }
}

/// The key column of type `ty` (integer-like) of groups' values.
pub(super) fn int_key_column(ty: DataType, values: Vec<Option<i64>>) -> ExecResult<Column> {
    let narrow = || PrimitiveColumn::from_options(values.iter().map(|v| v.map(|x| x as i32)));
    Ok(match ty {
        DataType::Int32 => Column::Int32(narrow()),
        DataType::Date32 => Column::Date32(narrow()),
        DataType::Int64 => Column::Int64(PrimitiveColumn::from_options(values)),
        DataType::Timestamp => Column::Timestamp(PrimitiveColumn::from_options(values)),
        other => {
            return Err(ExecError::Internal(format!(
                "{other:?} is not an integer key"
            )))
        }
    })
}

/// A merge by value reads ids from an array when its keys span at most this many values
/// per group (or row) in the partials.
const MERGE_SLOTS_PER_GROUP: usize = 4;

/// The smallest and largest key over partials held by value (tables of integer keys, rows
/// kept with integer keys, empty tables); `None` when some partial is held otherwise, or no
/// key but NULL was seen.
pub(super) fn int_bounds(partials: &[Partial]) -> Option<(i64, i64)> {
    let mut bounds: Option<(i64, i64)> = None;
    for p in partials {
        let range = match p {
            Partial::Ints(t) => t.ids.range().0,
            Partial::Pending(r) => r.int_range()?,
            Partial::Table(t) if t.keys.is_empty() => None,
            Partial::Table(_) | Partial::Rows(_) | Partial::Global(_) => return None,
        };
        if let Some((lo, hi)) = range {
            bounds = Some(bounds.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
        }
    }
    bounds
}

fn internal(what: &str) -> ExecError {
    ExecError::Internal(format!("{what} received another kind of partial"))
}
