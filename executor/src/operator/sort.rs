//! Sort: collects its input in morsel order and sorts row indexes with a stable sort, so rows
//! with equal keys keep their input order. NULLs go first or last per key as requested.

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

pub struct SortSink {
    pub keys: Vec<SortKey>,
    pub schema: SchemaRef,
}

/// Compares two rows of one evaluated key column (ascending, NULLs not handled).
fn value_order(c: &Column, a: usize, b: usize) -> Ordering {
    cmp_rows(c, a, c, b)
}

impl Sink for SortSink {
    type Partial = Vec<Batch>;
    type Output = Vec<Batch>;

    fn consume(&self, _seq: u64, batches: Vec<Batch>) -> ExecResult<Vec<Batch>> {
        Ok(batches)
    }

    fn finish(&self, partials: Vec<Vec<Batch>>) -> ExecResult<Vec<Batch>> {
        let batches: Vec<Batch> = partials.into_iter().flatten().collect();
        let all = Batch::concat(self.schema.clone(), &batches)?;
        let n = all.num_rows();
        let keys = self
            .keys
            .iter()
            .map(|k| k.expr.evaluate(&all))
            .collect::<ExecResult<Vec<_>>>()?;
        let mut perm: Vec<u32> = (0..n as u32).collect();
        perm.sort_by(|&a, &b| {
            let (a, b) = (a as usize, b as usize);
            for (k, c) in self.keys.iter().zip(&keys) {
                let ord = match (c.is_valid(a), c.is_valid(b)) {
                    (true, true) => {
                        let o = value_order(c, a, b);
                        if k.asc {
                            o
                        } else {
                            o.reverse()
                        }
                    }
                    (false, false) => Ordering::Equal,
                    (false, true) => {
                        if k.nulls_first {
                            Ordering::Less
                        } else {
                            Ordering::Greater
                        }
                    }
                    (true, false) => {
                        if k.nulls_first {
                            Ordering::Greater
                        } else {
                            Ordering::Less
                        }
                    }
                };
                if ord != Ordering::Equal {
                    return ord;
                }
            }
            Ordering::Equal
        });
        let columns = all.columns().iter().map(|c| c.take(&perm)).collect();
        Ok(vec![Batch::try_new(self.schema.clone(), columns, n)?])
    }
}
