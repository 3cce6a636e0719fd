//! Limit / offset over the input in morsel order. Once the morsels `0..=P` hold enough rows,
//! the sink is satisfied and the pipeline stops handing out morsels; what comes after `P`
//! (rows, and errors) cannot change the result, so the result is the same whether a worker
//! happened to start a later morsel or not. Morsels that finished out of order already rule
//! out what comes after them: once the finished morsels up to `S` hold enough rows, no
//! morsel after `S` starts, however long an earlier one takes.

use std::collections::BTreeMap;
use std::sync::Mutex;

use morsel_storage::Batch;

use crate::error::ExecResult;
use crate::scheduler::Sink;

pub struct LimitSink {
    pub skip: usize,
    pub fetch: Option<usize>,
    progress: Mutex<Progress>,
}

/// Rows per consumed morsel not yet part of the contiguous prefix `0..next`.
#[derive(Default)]
struct Progress {
    pending: BTreeMap<u64, usize>,
    next: u64,
    prefix_rows: usize,
    satisfied_at: Option<u64>,
    /// The first morsel by which the finished ones hold enough rows.
    enough_by: Option<u64>,
}

impl LimitSink {
    pub fn new(skip: usize, fetch: Option<usize>) -> Self {
        Self {
            skip,
            fetch,
            progress: Mutex::default(),
        }
    }
}

impl Sink for LimitSink {
    type Partial = Vec<Batch>;
    type Output = Vec<Batch>;

    fn name(&self) -> &'static str {
        "Limit"
    }

    fn details(&self) -> Vec<String> {
        vec!["stops the pipeline once the morsels so far hold enough rows".into()]
    }

    fn partial_bytes(&self, partial: &Vec<Batch>) -> usize {
        partial.iter().map(Batch::window_bytes).sum()
    }

    fn output_bytes(&self, output: &Vec<Batch>) -> usize {
        output.iter().map(Batch::window_bytes).sum()
    }

    fn consume(&self, seq: u64, batches: Vec<Batch>) -> ExecResult<Vec<Batch>> {
        if let Some(fetch) = self.fetch {
            let need = self.skip.saturating_add(fetch);
            let mut guard = self.progress.lock().expect("limit progress");
            let p = &mut *guard;
            p.pending
                .insert(seq, batches.iter().map(Batch::num_rows).sum());
            while let Some(rows) = p.pending.remove(&p.next) {
                p.prefix_rows += rows;
                if p.prefix_rows >= need && p.satisfied_at.is_none() {
                    p.satisfied_at = Some(p.next);
                }
                p.next += 1;
            }
            let mut rows = p.prefix_rows;
            let mut by = p.next.checked_sub(1).filter(|_| rows >= need);
            for (&s, &r) in &p.pending {
                if by.is_some() {
                    break;
                }
                rows += r;
                by = (rows >= need).then_some(s);
            }
            p.enough_by = match (p.enough_by, by) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        Ok(batches)
    }

    fn satisfied_through(&self) -> Option<u64> {
        self.progress.lock().expect("limit progress").satisfied_at
    }

    fn needless_after(&self) -> Option<u64> {
        self.progress.lock().expect("limit progress").enough_by
    }

    fn finish(&self, partials: Vec<Vec<Batch>>) -> ExecResult<Vec<Batch>> {
        let mut skip = self.skip;
        let mut left = self.fetch.unwrap_or(usize::MAX);
        let mut out = Vec::new();
        for batch in partials.into_iter().flatten() {
            if left == 0 {
                break;
            }
            let rows = batch.num_rows();
            if skip >= rows {
                skip -= rows;
                continue;
            }
            let take = (rows - skip).min(left);
            out.push(batch.slice(skip, take));
            left -= take;
            skip = 0;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use morsel_storage::{Batch, Column, DataType, Field, PrimitiveColumn, Schema};

    use super::LimitSink;
    use crate::scheduler::Sink;

    fn rows(n: i64) -> Vec<Batch> {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
        let column = Column::Int64(PrimitiveColumn::from_vec((0..n).collect()));
        vec![Batch::try_new(schema, vec![column], n as usize).unwrap()]
    }

    /// Morsels finishing out of order rule out the later ones as soon as the finished ones
    /// hold enough rows; the sink is satisfied only once the earlier ones are in.
    #[test]
    fn finished_morsels_rule_out_later_ones() {
        let sink = LimitSink::new(2, Some(5));
        sink.consume(3, rows(4)).unwrap();
        assert_eq!(sink.needless_after(), None);
        sink.consume(1, rows(3)).unwrap();
        assert_eq!(sink.needless_after(), Some(3));
        sink.consume(2, rows(1)).unwrap();
        assert_eq!(sink.needless_after(), Some(3));
        assert_eq!(sink.satisfied_through(), None);
        sink.consume(0, rows(0)).unwrap();
        assert_eq!(sink.satisfied_through(), Some(3));
        // A single morsel with enough rows, first in line: needless after itself.
        let sink = LimitSink::new(0, Some(5));
        sink.consume(0, rows(9)).unwrap();
        assert_eq!(
            (sink.satisfied_through(), sink.needless_after()),
            (Some(0), Some(0))
        );
        // Without a fetch count nothing is needless.
        let sink = LimitSink::new(3, None);
        sink.consume(0, rows(9)).unwrap();
        assert_eq!(sink.needless_after(), None);
    }
}
