//! A join's condition over the pair (`ON a.x = b.x AND a.y <> b.y`: the part that is not
//! keys), compiled over only the columns it reads: testing the candidate pairs gathers
//! those columns at the pairs, not every column of both sides.

use morsel_storage::{Batch, Bitmap, Column, SchemaRef};

use crate::error::ExecResult;
use crate::expr::PhysExpr;
use crate::kernels::boolean;

pub struct PairFilter {
    /// The pair columns the condition reads (the first side's columns, then the second's).
    pub columns: Vec<usize>,
    /// The condition, over those columns in that order.
    pub expr: PhysExpr,
    /// Their schema.
    pub schema: SchemaRef,
}

impl PairFilter {
    /// Which of the pairs (row `first_rows[i]` of `first`, row `second_rows[i]` of
    /// `second`) pass.
    pub fn passes(
        &self,
        (first, first_rows): (&Batch, &[u32]),
        second: (&Batch, &[u32]),
    ) -> ExecResult<Bitmap> {
        let first_column = |c: usize| first.column(c).take(first_rows);
        self.passes_by(first.num_columns(), first_column, second)
    }

    /// [`passes`](Self::passes) where the first side has `split` columns and
    /// `first_column(c)` gives its column `c` at the pairs' rows (for a side that is not a
    /// batch of its own: join matches not gathered).
    pub fn passes_by(
        &self,
        split: usize,
        first_column: impl Fn(usize) -> Column,
        (second, second_rows): (&Batch, &[u32]),
    ) -> ExecResult<Bitmap> {
        let columns = self
            .columns
            .iter()
            .map(|&c| match c.checked_sub(split) {
                None => first_column(c),
                Some(c) => second.column(c).take(second_rows),
            })
            .collect();
        let pairs = Batch::try_new(self.schema.clone(), columns, second_rows.len())?;
        Ok(boolean::as_boolean(&self.expr.evaluate(&pairs)?)?.true_mask())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use morsel_planner::BinaryOp;
    use morsel_storage::{Batch, Column, DataType, Field, PrimitiveColumn, Schema};

    use super::PairFilter;
    use crate::expr::PhysExpr;

    fn ints(columns: Vec<Vec<i64>>) -> Batch {
        let n = columns[0].len();
        let fields = (0..columns.len())
            .map(|i| Field::new(format!("c{i}"), DataType::Int64, true))
            .collect();
        let columns = columns
            .into_iter()
            .map(|c| Column::Int64(PrimitiveColumn::from_vec(c)))
            .collect();
        Batch::try_new(Arc::new(Schema::new(fields)), columns, n).unwrap()
    }

    /// The condition reads its columns from the side each belongs to, at each pair's rows.
    #[test]
    fn pairs_are_tested_on_the_columns_read() {
        // first: (a, b, c), second: (d, e); condition b <> e, i.e. pair columns 1 and 4.
        let first = ints(vec![vec![0, 1, 2], vec![5, 6, 7], vec![9, 9, 9]]);
        let second = ints(vec![vec![0, 0], vec![6, 7]]);
        let filter = PairFilter {
            columns: vec![1, 4],
            expr: PhysExpr::Binary {
                left: Box::new(PhysExpr::Column(0)),
                op: BinaryOp::NotEq,
                right: Box::new(PhysExpr::Column(1)),
            },
            schema: ints(vec![vec![0], vec![0]]).schema().clone(),
        };
        let (first_rows, second_rows) = ([0, 1, 1, 2, 2], [0, 0, 1, 0, 1]);
        let passes = filter
            .passes((&first, &first_rows), (&second, &second_rows))
            .unwrap();
        let got: Vec<bool> = (0..5).map(|i| passes.get(i)).collect();
        assert_eq!(got, [true, false, true, true, false]);
    }
}
