//! Filter: keeps the rows where the predicate is true (not false, not NULL). When every row
//! passes, the batch goes through untouched.

use morsel_storage::Batch;

use crate::error::ExecResult;
use crate::expr::PhysExpr;
use crate::kernels::{boolean, select};
use crate::scheduler::Operator;

pub struct FilterOp {
    pub predicate: PhysExpr,
}

impl Operator for FilterOp {
    fn name(&self) -> &'static str {
        "Filter"
    }

    fn execute(&self, batch: Batch) -> ExecResult<Batch> {
        let cond = self.predicate.evaluate(&batch)?;
        let mask = boolean::as_boolean(&cond)?.true_mask();
        select::filter_batch(&batch, &mask)
    }
}
