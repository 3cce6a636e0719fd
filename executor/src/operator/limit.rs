//! Limit / offset over the input in morsel order.

use morsel_storage::Batch;

use crate::error::ExecResult;
use crate::scheduler::Sink;

pub struct LimitSink {
    pub skip: usize,
    pub fetch: Option<usize>,
}

impl Sink for LimitSink {
    type Partial = Vec<Batch>;
    type Output = Vec<Batch>;

    fn name(&self) -> &'static str {
        "Limit"
    }

    fn consume(&self, _seq: u64, batches: Vec<Batch>) -> ExecResult<Vec<Batch>> {
        Ok(batches)
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
