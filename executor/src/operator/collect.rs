//! Collect: gathers a pipeline's output batches in morsel order.

use morsel_storage::Batch;

use crate::error::ExecResult;
use crate::scheduler::Sink;

pub struct CollectSink;

impl Sink for CollectSink {
    type Partial = Vec<Batch>;
    type Output = Vec<Batch>;

    fn name(&self) -> &'static str {
        "Collect"
    }

    fn partial_bytes(&self, partial: &Vec<Batch>) -> usize {
        partial.iter().map(Batch::window_bytes).sum()
    }

    fn output_bytes(&self, output: &Vec<Batch>) -> usize {
        output.iter().map(Batch::window_bytes).sum()
    }

    fn consume(&self, _seq: u64, batches: Vec<Batch>) -> ExecResult<Vec<Batch>> {
        Ok(batches)
    }

    fn finish(&self, partials: Vec<Vec<Batch>>) -> ExecResult<Vec<Batch>> {
        Ok(partials
            .into_iter()
            .flatten()
            .filter(|b| b.num_rows() > 0)
            .collect())
    }
}
