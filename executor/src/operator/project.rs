//! Projection: evaluates one expression per output column.

use morsel_storage::{Batch, SchemaRef};

use crate::error::ExecResult;
use crate::expr::PhysExpr;
use crate::scheduler::Operator;

pub struct ProjectOp {
    pub exprs: Vec<PhysExpr>,
    pub schema: SchemaRef,
}

impl Operator for ProjectOp {
    fn name(&self) -> &'static str {
        "Projection"
    }

    fn execute(&self, batch: Batch) -> ExecResult<Batch> {
        let columns = self
            .exprs
            .iter()
            .map(|e| e.evaluate(&batch))
            .collect::<ExecResult<Vec<_>>>()?;
        Ok(Batch::try_new(
            self.schema.clone(),
            columns,
            batch.num_rows(),
        )?)
    }
}
