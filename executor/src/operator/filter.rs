//! Filter: keeps the rows where the predicate is true (not false, not NULL). The predicate's
//! conjuncts run in order; once they have ruled out most rows, the survivors are gathered and
//! the remaining conjuncts run on those alone. When every row passes, the batch goes through
//! untouched.

use morsel_storage::{Batch, Bitmap};

use crate::error::ExecResult;
use crate::expr::PhysExpr;
use crate::kernels::{boolean, select};
use crate::scheduler::Operator;

pub struct FilterOp {
    /// `a AND b AND ...`, one expression per conjunct (never empty).
    pub conjuncts: Vec<PhysExpr>,
}

/// A conjunct that keeps at most one row in this many has the survivors gathered before the
/// next one runs; above that the masks are ANDed and the rows gathered once at the end.
const GATHER_BELOW: usize = 4;

impl Operator for FilterOp {
    fn name(&self) -> &'static str {
        "Filter"
    }

    fn execute(&self, batch: Batch) -> ExecResult<Batch> {
        let mut batch = batch;
        let mut kept: Option<Bitmap> = None;
        for conjunct in &self.conjuncts {
            let cond = conjunct.evaluate(&batch)?;
            let mask = boolean::as_boolean(&cond)?.true_mask();
            let mask = match kept.take() {
                Some(k) => k.and(&mask),
                None => mask,
            };
            let survivors = mask.count_ones();
            if survivors * GATHER_BELOW <= batch.num_rows() {
                batch = select::filter_batch(&batch, &mask)?;
                if survivors == 0 {
                    break;
                }
            } else {
                kept = Some(mask);
            }
        }
        match kept {
            Some(mask) => select::filter_batch(&batch, &mask),
            None => Ok(batch),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use morsel_planner::BinaryOp;
    use morsel_storage::{Batch, Column, DataType, Field, PrimitiveColumn, ScalarValue, Schema};

    use super::FilterOp;
    use crate::expr::PhysExpr;
    use crate::scheduler::Operator;

    fn less_than(column: usize, value: i64) -> PhysExpr {
        PhysExpr::Binary {
            left: Box::new(PhysExpr::Column(column)),
            op: BinaryOp::Lt,
            right: Box::new(PhysExpr::Literal {
                value: ScalarValue::Int64(value),
                ty: DataType::Int64,
            }),
        }
    }

    /// Conjuncts run one after another (gathering the survivors of a selective one, ANDing
    /// the masks of the others) keep exactly the rows where all are true: not false, not NULL.
    #[test]
    fn conjuncts_keep_the_rows_where_all_are_true() {
        let n = 1000i64;
        let x: Vec<Option<i64>> = (0..n).map(|i| (i % 7 != 3).then_some(i)).collect();
        let y: Vec<Option<i64>> = (0..n).map(|i| (i % 5 != 1).then_some(i % 10)).collect();
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", DataType::Int64, true),
            Field::new("y", DataType::Int64, true),
        ]));
        let batch = Batch::try_new(
            schema,
            vec![
                Column::Int64(PrimitiveColumn::from_options(x.clone())),
                Column::Int64(PrimitiveColumn::from_options(y.clone())),
            ],
            n as usize,
        )
        .unwrap();
        // x < 100 keeps a tenth (gathered at once), y < 8 most, x < 900 most (ANDed masks).
        for (bounds, order) in [
            ([(0, 100), (1, 8), (0, 900)], "selective first"),
            ([(0, 900), (1, 8), (0, 100)], "selective last"),
            ([(0, 900), (1, 8), (0, -1)], "none survive"),
        ] {
            let op = FilterOp {
                conjuncts: bounds.iter().map(|&(c, v)| less_than(c, v)).collect(),
            };
            let out = op.execute(batch.clone()).unwrap();
            let want: Vec<i64> = (0..n as usize)
                .filter(|&i| {
                    let vals = [x[i], y[i]];
                    bounds.iter().all(|&(c, v)| vals[c].is_some_and(|a| a < v))
                })
                .map(|i| x[i].unwrap())
                .collect();
            let got: Vec<i64> = (0..out.num_rows())
                .map(|i| match out.column(0).scalar_at(i) {
                    ScalarValue::Int64(v) => v,
                    other => panic!("{other:?}"),
                })
                .collect();
            assert_eq!(got, want, "{order}");
        }
    }
}
