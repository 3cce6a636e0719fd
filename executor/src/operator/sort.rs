//! Sort and Top-K. Rows are ordered by a stable sort (ties keep their input order), NULLs
//! first or last per key as requested.
//!
//! A full sort collects its input in morsel order and sorts once. With a limit (`ORDER BY ...
//! LIMIT k`) each morsel keeps only its own first k rows (a selection, then a sort of those
//! k), and the partials are merged in morsel order and cut to k again. Ties are broken by
//! input position throughout, so Top-K returns exactly the rows a full stable sort would.

use std::cmp::Ordering;

use morsel_storage::{Batch, Column, SchemaRef};

use crate::error::ExecResult;
use crate::expr::PhysExpr;
use crate::kernels::compare::cmp_rows;
use crate::scheduler::Sink;

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

/// The row order of `n` rows by `keys`, ties by position; only the first `limit` if given.
pub fn sorted_rows(keys: &[KeyColumn], n: usize, limit: Option<usize>) -> Vec<u32> {
    let cmp = |a: &u32, b: &u32| cmp_keys(keys, *a as usize, *b as usize).then(a.cmp(b));
    let mut perm: Vec<u32> = (0..n as u32).collect();
    match limit {
        Some(k) if k < n => {
            if k == 0 {
                return Vec::new();
            }
            perm.select_nth_unstable_by(k - 1, cmp);
            perm.truncate(k);
            perm.sort_unstable_by(cmp);
        }
        _ => perm.sort_unstable_by(cmp),
    }
    perm
}

pub struct SortSink {
    pub keys: Vec<SortKey>,
    pub schema: SchemaRef,
    /// Keep only the first rows (Top-K: the limit plus offset above the sort).
    pub limit: Option<usize>,
}

impl SortSink {
    /// `batches` as one batch, ordered (and cut to the limit).
    fn sort(&self, batches: &[Batch]) -> ExecResult<Batch> {
        let all = Batch::concat(self.schema.clone(), batches)?;
        let keys = self
            .keys
            .iter()
            .map(|k| Ok((k.expr.evaluate(&all)?, k.asc, k.nulls_first)))
            .collect::<ExecResult<Vec<KeyColumn>>>()?;
        let perm = sorted_rows(&keys, all.num_rows(), self.limit);
        let columns = all.columns().iter().map(|c| c.take(&perm)).collect();
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
                "full sort by {} key(s) after the input ends (single-threaded)",
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
            Some(_) => Ok(vec![self.sort(&batches)?]),
            None => Ok(batches),
        }
    }

    fn finish(&self, partials: Vec<Vec<Batch>>) -> ExecResult<Vec<Batch>> {
        let batches: Vec<Batch> = partials.into_iter().flatten().collect();
        Ok(vec![self.sort(&batches)?])
    }
}

#[cfg(test)]
mod tests {
    use morsel_storage::{Buffer, Column, PrimitiveColumn};

    use super::sorted_rows;

    #[test]
    fn top_k_is_the_prefix_of_the_stable_sort() {
        // Many ties (values 0..7) so that stability decides which rows make the cut.
        let values: Vec<i64> = (0..1000).map(|i| (i * 7919 % 13) % 7).collect();
        let col = Column::Int64(PrimitiveColumn::new(Buffer::from_vec(values), None));
        for asc in [true, false] {
            let keys = vec![(col.clone(), asc, false)];
            let full = sorted_rows(&keys, 1000, None);
            for k in [0, 1, 5, 142, 999, 1000, 2000] {
                let top = sorted_rows(&keys, 1000, Some(k));
                assert_eq!(top, full[..k.min(1000)], "k = {k}, asc = {asc}");
            }
        }
    }
}
