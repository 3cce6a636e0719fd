//! `mode(x)`: each group's most frequent non-NULL value; of values seen equally often, the
//! one seen first (in input order, partials merged in morsel order, so the same value at
//! any thread count). Values are counted by their encoded key, so -0.0 counts as 0.0 and
//! every NaN as one value, as GROUP BY groups them.

use hashbrown::HashMap;
use morsel_storage::{Column, ColumnBuilder, DataType, ScalarValue};

use super::{capacity_bytes, Args, GroupState};
use crate::error::ExecResult;
use crate::operator::keys::RowKeys;

/// One group's values in first-seen order with their counts, and where each key is.
#[derive(Debug, Default)]
struct Counts {
    at: HashMap<Box<[u8]>, usize>,
    values: Vec<(ScalarValue, u64)>,
}

impl Counts {
    fn add(&mut self, key: &[u8], value: impl FnOnce() -> ScalarValue, n: u64) {
        match self.at.get(key) {
            Some(&i) => self.values[i].1 += n,
            None => {
                self.at.insert(key.into(), self.values.len());
                self.values.push((value(), n));
            }
        }
    }

    /// The most frequent value, the first seen of those tied.
    fn mode(&self) -> Option<&ScalarValue> {
        let mut best: Option<&(ScalarValue, u64)> = None;
        for v in &self.values {
            if best.is_none_or(|b| v.1 > b.1) {
                best = Some(v);
            }
        }
        best.map(|b| &b.0)
    }
}

#[derive(Debug)]
pub struct ModeState {
    ty: DataType,
    groups: Vec<Counts>,
}

impl ModeState {
    pub fn new(ty: DataType) -> Self {
        ModeState {
            ty,
            groups: Vec::new(),
        }
    }
}

impl GroupState for ModeState {
    fn resize(&mut self, n: usize) {
        self.groups.resize_with(n, Counts::default);
    }

    fn update(&mut self, groups: &[u32], args: Args<'_>) -> ExecResult<()> {
        let x = args.required("mode")?;
        let keys = RowKeys::encode(std::slice::from_ref(x), groups.len());
        for (i, &g) in groups.iter().enumerate() {
            if !keys.has_null[i] {
                self.groups[g as usize].add(keys.key(i), || x.scalar_at(i), 1);
            }
        }
        Ok(())
    }

    fn merge(&mut self, other: &mut Self, mapping: &[u32]) {
        for (g, theirs) in other.groups.iter_mut().enumerate() {
            let theirs = std::mem::take(theirs);
            // Their keys in their first-seen order.
            let mut keys: Vec<Option<Box<[u8]>>> = vec![None; theirs.values.len()];
            for (k, i) in theirs.at {
                keys[i] = Some(k);
            }
            let mine = &mut self.groups[mapping[g] as usize];
            for (key, (value, n)) in keys.into_iter().zip(theirs.values) {
                if let Some(key) = key {
                    mine.add(&key, || value, n);
                }
            }
        }
    }

    fn move_groups(&mut self, ids: &[u32], into: &mut Self) {
        into.groups.extend(
            ids.iter()
                .map(|&g| std::mem::take(&mut self.groups[g as usize])),
        );
    }

    fn finish(self) -> ExecResult<Column> {
        let mut b = ColumnBuilder::with_capacity(self.ty, self.groups.len());
        for c in &self.groups {
            b.push_scalar(c.mode().unwrap_or(&ScalarValue::Null))?;
        }
        Ok(b.finish())
    }

    fn heap_bytes(&self) -> usize {
        capacity_bytes(&self.groups)
            + self
                .groups
                .iter()
                .map(|c| {
                    let keys: usize = c.at.keys().map(|k| k.len()).sum();
                    let text: usize = c
                        .values
                        .iter()
                        .map(|(v, _)| match v {
                            ScalarValue::Utf8(s) => s.capacity(),
                            _ => 0,
                        })
                        .sum();
                    c.at.capacity() * std::mem::size_of::<(Box<[u8]>, usize)>()
                        + keys
                        + capacity_bytes(&c.values)
                        + text
                })
                .sum::<usize>()
    }
}
