//! Limit / offset over the input in morsel order. Once the morsels `0..=P` hold enough rows,
//! the sink is satisfied and the pipeline stops handing out morsels; what comes after `P`
//! (rows, and errors) cannot change the result, so the result is the same whether a worker
//! happened to start a later morsel or not.

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
        }
        Ok(batches)
    }

    fn satisfied_through(&self) -> Option<u64> {
        self.progress.lock().expect("limit progress").satisfied_at
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
