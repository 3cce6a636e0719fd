//! Projection: evaluates one expression per output column. A projection that only picks
//! columns passes a selection on (its columns are the input's, so the live rows are the
//! same ones): a filter's survivors reach a join probe listed, not gathered, across the
//! projection that prunes the columns between them.

use morsel_storage::{Batch, SchemaRef};

use crate::error::ExecResult;
use crate::expr::PhysExpr;
use crate::scheduler::{Operator, Selected};

pub struct ProjectOp {
    pub exprs: Vec<PhysExpr>,
    pub schema: SchemaRef,
}

impl ProjectOp {
    /// Whether every output column is an input column as it is.
    fn picks_columns(&self) -> bool {
        self.exprs.iter().all(|e| matches!(e, PhysExpr::Column(_)))
    }
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

    fn takes_selection(&self) -> bool {
        self.picks_columns()
    }

    /// Picks the columns of the whole batch (no row is copied) and keeps the selection for
    /// a next operator that reads it, else gathers only the picked columns.
    fn execute_selected(
        &self,
        input: Selected,
        next_takes_selection: bool,
    ) -> ExecResult<Selected> {
        if !self.picks_columns() {
            return Ok(Selected::all(self.execute(input.gather()?)?));
        }
        let picked = Selected {
            batch: self.execute(input.batch)?,
            rows: input.rows,
        };
        match next_takes_selection {
            true => Ok(picked),
            false => Ok(Selected::all(picked.gather()?)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use morsel_planner::BinaryOp;
    use morsel_storage::{Batch, Column, DataType, Field, PrimitiveColumn, Schema};

    use super::ProjectOp;
    use crate::expr::PhysExpr;
    use crate::scheduler::{Operator, Selected};

    /// Picking columns keeps the selection for a next operator that reads it, and gives
    /// what gathering first gives otherwise; a computed column gathers first.
    #[test]
    fn picked_columns_pass_the_selection_on() {
        let field = |n: &str| Field::new(n, DataType::Int64, true);
        let input = Batch::try_new(
            Arc::new(Schema::new(vec![field("a"), field("b")])),
            vec![
                Column::Int64(PrimitiveColumn::from_vec((0..100).collect())),
                Column::Int64(PrimitiveColumn::from_options(
                    (0..100).map(|i| (i % 3 != 0).then_some(-i)),
                )),
            ],
            100,
        )
        .unwrap();
        let rows: Vec<u32> = (0..100).filter(|i| i % 7 == 2).collect();
        let selected = || Selected {
            batch: input.clone(),
            rows: Some(rows.clone()),
        };
        let pick = ProjectOp {
            exprs: vec![PhysExpr::Column(1)],
            schema: Arc::new(Schema::new(vec![field("b")])),
        };
        let sum = ProjectOp {
            exprs: vec![PhysExpr::Binary {
                left: Box::new(PhysExpr::Column(0)),
                op: BinaryOp::Plus,
                right: Box::new(PhysExpr::Column(1)),
            }],
            schema: Arc::new(Schema::new(vec![field("s")])),
        };
        assert!(pick.takes_selection() && !sum.takes_selection());
        for op in [&pick, &sum] {
            let want = op.execute(selected().gather().unwrap()).unwrap();
            let kept = op.execute_selected(selected(), true).unwrap();
            assert_eq!(kept.rows.is_some(), op.takes_selection());
            let gathered = op.execute_selected(selected(), false).unwrap();
            assert!(gathered.rows.is_none());
            for got in [kept.gather().unwrap(), gathered.gather().unwrap()] {
                assert_eq!(got.num_rows(), rows.len());
                for r in 0..rows.len() {
                    assert_eq!(got.column(0).scalar_at(r), want.column(0).scalar_at(r));
                }
            }
        }
    }
}
