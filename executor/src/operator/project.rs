//! Projection: evaluates one expression per output column. A projection that only picks
//! columns reads a selection as it is (its columns are the input's, so the live rows are
//! the same ones): it hands the selection on to an operator that reads one (a filter's
//! survivors reach a join probe across the projection that prunes the columns between
//! them), and otherwise gathers only the columns it picks. Join matches not gathered yet
//! are picked from where each column is read.

use morsel_storage::{Batch, SchemaRef};

use crate::error::ExecResult;
use crate::expr::PhysExpr;
use crate::scheduler::Operator;
use crate::selected::{Live, Selected};

pub struct ProjectOp {
    pub exprs: Vec<PhysExpr>,
    pub schema: SchemaRef,
}

impl ProjectOp {
    /// The input column of each output column, when every one is an input column as it is.
    fn picked_columns(&self) -> Option<Vec<usize>> {
        self.exprs.iter().map(PhysExpr::as_column).collect()
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
        self.exprs.iter().all(|e| e.as_column().is_some())
    }

    /// Picks the columns of the whole batch (no row is copied) and keeps the selection for
    /// a next operator that reads it, else gathers only the picked columns. Join matches not
    /// gathered yet are picked from where each column is read.
    fn execute_selected(
        &self,
        input: Selected,
        next_takes_selection: bool,
    ) -> ExecResult<Selected> {
        let picked = match self.picked_columns() {
            None => return Ok(Selected::all(self.execute(input.gather()?)?)),
            Some(picked) => picked,
        };
        let picked = match input.live {
            Live::Joined(j) => Selected {
                batch: input.batch,
                live: Live::Joined(Box::new(j.pick(&picked, self.schema.clone()))),
            },
            live => Selected {
                batch: self.execute(input.batch)?,
                live,
            },
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
    use morsel_storage::{Batch, Bitmap, Column, DataType, Field, PrimitiveColumn, Schema};

    use super::ProjectOp;
    use crate::expr::PhysExpr;
    use crate::scheduler::Operator;
    use crate::selected::{Live, Selected};

    /// Picking columns keeps a selection (listed or masked) for a next operator that reads
    /// it, and gives what gathering first gives otherwise; a computed column gathers first.
    #[test]
    fn picked_columns_keep_the_selection() {
        let field = |n: &str| Field::new(n, DataType::Int64, true);
        let b = (0..100).map(|i| (i % 3 != 0).then_some(-i));
        let input = Batch::try_new(
            Arc::new(Schema::new(vec![field("a"), field("b")])),
            vec![
                Column::Int64(PrimitiveColumn::from_vec((0..100).collect())),
                Column::Int64(PrimitiveColumn::from_options(b)),
            ],
            100,
        )
        .unwrap();
        let mask = Bitmap::from_bools((0..100).map(|i| i % 7 == 2 || i > 80));
        let lives = || [Live::Rows(mask.set_positions()), Live::Mask(mask.clone())];
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
        let selected = |live| Selected {
            batch: input.clone(),
            live,
        };
        for op in [&pick, &sum] {
            let rows = mask.count_ones();
            let want = op
                .execute(selected(Live::Mask(mask.clone())).gather().unwrap())
                .unwrap();
            for (live, next_takes) in lives()
                .into_iter()
                .chain(lives())
                .zip([true, true, false, false])
            {
                let out = op.execute_selected(selected(live), next_takes).unwrap();
                let kept = !matches!(out.live, Live::All);
                assert_eq!(kept, next_takes && op.takes_selection());
                let got = out.gather().unwrap();
                assert_eq!(got.num_rows(), rows);
                for r in 0..rows {
                    assert_eq!(got.column(0).scalar_at(r), want.column(0).scalar_at(r));
                }
            }
        }
    }
}
