//! Precise evaluation of CASE and COALESCE: each WHEN only at the rows no earlier WHEN
//! took, each THEN and the ELSE only at the rows that chose it, each COALESCE argument only
//! at the rows every earlier argument left NULL (DuckDB's semantics). In a filter's
//! predicate, also the right side of AND (OR) only at the rows its left side did not make
//! FALSE (TRUE).
//!
//! It matters only for errors: a branch that would fail at a row that never reaches it
//! (`CASE WHEN x <> 0 THEN 10 // x END`) must not fail the query. Evaluating every operand
//! over the whole batch gives the same values for every row that does reach it and is
//! faster, so [`super::PhysExpr::evaluate`] runs this only after that fails.

use morsel_planner::BinaryOp;
use morsel_storage::{Batch, Bitmap, BooleanColumn, Column, DataType, ScalarValue};

use super::{Mode, PhysExpr};
use crate::error::ExecResult;
use crate::kernels::{boolean, cast};

/// The rows of a batch an operand is evaluated at: all of them, or the listed ones.
enum Rows {
    All(usize),
    Listed(Vec<u32>),
}

impl Rows {
    fn len(&self) -> usize {
        match self {
            Rows::All(n) => *n,
            Rows::Listed(v) => v.len(),
        }
    }

    /// Row `i` of the batch (these rows' `i`-th).
    fn get(&self, i: usize) -> u32 {
        match self {
            Rows::All(_) => i as u32,
            Rows::Listed(v) => v[i],
        }
    }

    /// These rows of `batch`, as a batch of their own.
    fn of(&self, batch: &Batch) -> ExecResult<Batch> {
        Ok(match self {
            Rows::All(_) => batch.clone(),
            Rows::Listed(v) => {
                let cols = batch.columns().iter().map(|c| c.take(v)).collect();
                Batch::try_new(batch.schema().clone(), cols, v.len())?
            }
        })
    }

    /// Splits these rows by `keep` (one bit per row listed here): (kept, the others).
    fn split(&self, keep: &[bool]) -> (Rows, Rows) {
        let (mut kept, mut rest) = (Vec::new(), Vec::new());
        for (i, &k) in keep.iter().enumerate() {
            if k {
                kept.push(self.get(i));
            } else {
                rest.push(self.get(i));
            }
        }
        (Rows::Listed(kept), Rows::Listed(rest))
    }
}

/// Values computed at some rows of the batch: the pieces of the result.
struct Pieces {
    rows: usize,
    ty: DataType,
    parts: Vec<(Column, Rows)>,
}

impl Pieces {
    fn new(rows: usize, ty: DataType) -> Self {
        Self {
            rows,
            ty,
            parts: Vec::new(),
        }
    }

    /// Computes `e` at `at` (if any row is there) and keeps the values.
    fn add(&mut self, e: &PhysExpr, at: Rows, batch: &Batch, mode: Mode) -> ExecResult<()> {
        if at.len() > 0 {
            let values = e.eval(&at.of(batch)?, mode)?;
            self.parts.push((values, at));
        }
        Ok(())
    }

    /// The result: each row's value from the piece that holds it, NULL elsewhere.
    fn assemble(self) -> ExecResult<Column> {
        if let [(values, Rows::All(_))] = self.parts.as_slice() {
            return Ok(values.clone());
        }
        if self.parts.is_empty() {
            return cast::broadcast(&ScalarValue::Null, self.ty, self.rows);
        }
        let mut take = vec![u32::MAX; self.rows];
        let mut offset = 0u32;
        let mut columns = Vec::with_capacity(self.parts.len());
        for (values, at) in self.parts {
            for i in 0..at.len() {
                take[at.get(i) as usize] = offset + i as u32;
            }
            offset += at.len() as u32;
            columns.push(values);
        }
        Ok(Column::concat(&columns)?.take(&take))
    }
}

/// `CASE WHEN .. THEN .. [ELSE ..] END`, each part at the rows that reach it.
pub(super) fn case(
    branches: &[(PhysExpr, PhysExpr)],
    otherwise: Option<&PhysExpr>,
    ty: DataType,
    batch: &Batch,
    mode: Mode,
) -> ExecResult<Column> {
    let mut pieces = Pieces::new(batch.num_rows(), ty);
    let mut open = Rows::All(batch.num_rows());
    for (when, then) in branches {
        if open.len() == 0 {
            break;
        }
        let cond = when.eval(&open.of(batch)?, mode)?;
        let taken: Vec<bool> = boolean::as_boolean(&cond)?.true_mask().iter().collect();
        let (chosen, rest) = open.split(&taken);
        pieces.add(then, chosen, batch, mode)?;
        open = rest;
    }
    if let Some(o) = otherwise {
        pieces.add(o, open, batch, mode)?;
    }
    pieces.assemble()
}

/// `coalesce(a, b, ..)`, each argument at the rows the ones before left NULL.
pub(super) fn coalesce(
    args: &[PhysExpr],
    ty: DataType,
    batch: &Batch,
    mode: Mode,
) -> ExecResult<Column> {
    let mut pieces = Pieces::new(batch.num_rows(), ty);
    let mut open = Rows::All(batch.num_rows());
    for a in args {
        if open.len() == 0 {
            break;
        }
        let values = a.eval(&open.of(batch)?, mode)?;
        let valid: Vec<bool> = (0..values.len()).map(|i| values.is_valid(i)).collect();
        let (set, rest) = open.split(&valid);
        if set.len() > 0 {
            let positions: Vec<u32> = (0..valid.len() as u32)
                .filter(|&i| valid[i as usize])
                .collect();
            pieces.parts.push((values.take(&positions), set));
        }
        open = rest;
    }
    pieces.assemble()
}

/// `left AND right` (`is_and`) or `left OR right`, `right` only at the rows `left` leaves
/// open; elsewhere `right` counts as TRUE (AND) or FALSE (OR), which leaves `left`'s value.
pub(super) fn and_or(
    left: &PhysExpr,
    is_and: bool,
    right: &PhysExpr,
    batch: &Batch,
) -> ExecResult<Column> {
    let l = left.eval(batch, Mode::Predicate)?;
    let lb = boolean::as_boolean(&l)?;
    let open: Vec<bool> = (0..batch.num_rows())
        .map(|i| !(lb.is_valid(i) && lb.values().get(i) != is_and))
        .collect();
    let (open, decided) = Rows::All(batch.num_rows()).split(&open);
    let mut pieces = Pieces::new(batch.num_rows(), DataType::Boolean);
    pieces.add(right, open, batch, Mode::Predicate)?;
    let neutral = PhysExpr::Literal {
        value: ScalarValue::Boolean(is_and),
        ty: DataType::Boolean,
    };
    pieces.add(&neutral, decided, batch, Mode::Predicate)?;
    let r = pieces.assemble()?;
    let rb = boolean::as_boolean(&r)?;
    Ok(Column::Boolean(if is_and {
        boolean::and(lb, rb)
    } else {
        boolean::or(lb, rb)
    }))
}

/// A filter's predicate: its top-level conjuncts in order, each only at the rows every
/// earlier one kept (a row where one is NULL is not kept either), the rest precisely.
pub(super) fn filter(predicate: &PhysExpr, batch: &Batch) -> ExecResult<Column> {
    let mut conjuncts = Vec::new();
    split_and(predicate, &mut conjuncts);
    let rows = batch.num_rows();
    let mut open = Rows::All(rows);
    for c in conjuncts {
        if open.len() == 0 {
            break;
        }
        let cond = c.eval(&open.of(batch)?, Mode::Predicate)?;
        let kept: Vec<bool> = boolean::as_boolean(&cond)?.true_mask().iter().collect();
        open = open.split(&kept).0;
    }
    let mut keep = vec![false; rows];
    for i in 0..open.len() {
        keep[open.get(i) as usize] = true;
    }
    Ok(Column::Boolean(BooleanColumn::new(
        Bitmap::from_bools(keep),
        None,
    )))
}

/// The conjuncts of `e` (looking through fused programs), in order.
#[recursive::recursive]
fn split_and<'a>(e: &'a PhysExpr, out: &mut Vec<&'a PhysExpr>) {
    match e {
        PhysExpr::Binary {
            left,
            op: BinaryOp::And,
            right,
        } => {
            split_and(left, out);
            split_and(right, out);
        }
        PhysExpr::Fused(p) => split_and(p.plain(), out),
        other => out.push(other),
    }
}
