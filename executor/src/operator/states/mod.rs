//! Per-group aggregate states kept as plain structs behind one interface, [`GroupState`]:
//! the aggregates that pick a row's value (first, last, any_value, arg_min, arg_max), mode,
//! product, and the two-column statistics (covariances, correlation, regressions).
//! [`super::accumulator::Accumulator`] holds one as its `State` variant and forwards to it,
//! so a new state is one file here and one arm in [`State`], not an arm in every match of
//! the accumulator.
//!
//! Like every aggregate state, these merge partials in morsel order, so that "first", "last"
//! and the tie-breaks of arg_min / arg_max / mode mean the same rows at any thread count.

mod comoments;
mod mode;
mod pick;
mod product;

use morsel_planner::AggFunc;
use morsel_storage::{Column, DataType};

use crate::error::{ExecError, ExecResult};

pub use comoments::CoMoments;
pub use mode::ModeState;
pub use pick::PickState;
pub use product::ProductState;

/// One aggregate's argument columns over a batch: none for `count(*)`; a second only for
/// the aggregates that take two columns (arg_min's key, the `x` of `corr(y, x)`, the FILTER
/// mask of first / last).
#[derive(Clone, Copy, Default)]
pub struct Args<'a> {
    pub first: Option<&'a Column>,
    pub second: Option<&'a Column>,
}

impl<'a> Args<'a> {
    /// The arguments of a one-column aggregate.
    pub fn one(first: Option<&'a Column>) -> Self {
        Args {
            first,
            second: None,
        }
    }

    /// An aggregate's arguments from its slots of a batch's argument columns (one slot per
    /// argument column, see [`super::aggregate::AggSpec::inputs`]).
    pub fn of(slots: &'a [Option<Column>]) -> Self {
        Args {
            first: slots.first().and_then(Option::as_ref),
            second: slots.get(1).and_then(Option::as_ref),
        }
    }

    /// The first column, which every state but `count(*)`'s needs.
    pub fn required(&self, func: &str) -> ExecResult<&'a Column> {
        self.first
            .ok_or_else(|| ExecError::Internal(format!("{func}() without its argument")))
    }
}

/// The interface of one kind of per-group state: `n` groups by id, updated a batch at a
/// time and merged partial into partial.
pub trait GroupState: Sized {
    /// Makes room for `n` groups (new groups start empty).
    fn resize(&mut self, n: usize);
    /// Adds row i of `args` to group `groups[i]`.
    fn update(&mut self, groups: &[u32], args: Args<'_>) -> ExecResult<()>;
    /// Folds `other`'s group g into this state's group `mapping[g]`; `other` is only fit to
    /// be reset (`resize(0)`) after.
    fn merge(&mut self, other: &mut Self, mapping: &[u32]);
    /// Appends the states of groups `ids` (in that order) to `into`, leaving empty ones.
    fn move_groups(&mut self, ids: &[u32], into: &mut Self);
    /// The final value of every group.
    fn finish(self) -> ExecResult<Column>;
    /// Memory held by the states.
    fn heap_bytes(&self) -> usize;
}

/// The states of this module, one variant per kind.
#[derive(Debug)]
pub enum State {
    Pick(PickState),
    Mode(ModeState),
    Product(ProductState),
    CoMoments(CoMoments),
}

/// `$body` with `$s` bound to the state inside, whichever kind it is.
macro_rules! each_state {
    ($state:expr, $s:ident => $body:expr) => {
        match $state {
            State::Pick($s) => $body,
            State::Mode($s) => $body,
            State::Product($s) => $body,
            State::CoMoments($s) => $body,
        }
    };
}

/// `$body` with `$a` and `$b` bound to two states of the same kind; an internal error for
/// states of different kinds.
macro_rules! both_states {
    ($x:expr, $y:expr, $a:ident, $b:ident => $body:expr) => {
        match ($x, $y) {
            (State::Pick($a), State::Pick($b)) => $body,
            (State::Mode($a), State::Mode($b)) => $body,
            (State::Product($a), State::Product($b)) => $body,
            (State::CoMoments($a), State::CoMoments($b)) => $body,
            _ => {
                return Err(ExecError::Internal(
                    "combining different aggregate states".into(),
                ))
            }
        }
    };
}

impl State {
    /// The state for `func` over a first argument of type `ty`, if this module keeps it;
    /// `second`: whether a second argument column comes along.
    pub fn new(func: AggFunc, ty: DataType, second: bool) -> Option<State> {
        Some(match func {
            AggFunc::First
            | AggFunc::Last
            | AggFunc::AnyValue
            | AggFunc::ArgMin
            | AggFunc::ArgMax => State::Pick(PickState::new(func, ty, second)),
            AggFunc::Mode => State::Mode(ModeState::new(ty)),
            AggFunc::Product => State::Product(ProductState::default()),
            f if f.is_two_column_statistic() => State::CoMoments(CoMoments::new(f)),
            _ => return None,
        })
    }

    /// How many argument columns an update takes.
    pub fn inputs(&self) -> usize {
        match self {
            State::Pick(p) => p.inputs(),
            State::Mode(_) | State::Product(_) => 1,
            State::CoMoments(_) => 2,
        }
    }

    pub fn resize(&mut self, n: usize) {
        each_state!(self, s => s.resize(n))
    }

    pub fn update(&mut self, groups: &[u32], args: Args<'_>) -> ExecResult<()> {
        each_state!(self, s => s.update(groups, args))
    }

    pub fn merge(&mut self, other: &mut State, mapping: &[u32]) -> ExecResult<()> {
        both_states!(self, other, a, b => a.merge(b, mapping));
        Ok(())
    }

    pub fn move_groups(&mut self, ids: &[u32], into: &mut State) -> ExecResult<()> {
        both_states!(self, into, a, b => a.move_groups(ids, b));
        Ok(())
    }

    pub fn finish(self) -> ExecResult<Column> {
        each_state!(self, s => s.finish())
    }

    pub fn heap_bytes(&self) -> usize {
        each_state!(self, s => s.heap_bytes())
    }
}

/// Memory of a vector's allocation.
fn capacity_bytes<T>(v: &Vec<T>) -> usize {
    v.capacity() * std::mem::size_of::<T>()
}

#[cfg(test)]
mod tests {
    use morsel_storage::test_rng::Rng;
    use morsel_storage::{PrimitiveColumn, ScalarValue};

    use super::*;

    const ROWS: usize = 3000;
    const GROUPS: u32 = 17;

    /// Small integers as DOUBLE (so products and sums are exact in any order), a tenth of
    /// them NULL.
    fn floats(rng: &mut Rng) -> Column {
        let v: Vec<Option<f64>> = (0..ROWS)
            .map(|_| (rng.below(10) != 0).then(|| rng.below(5) as f64 - 1.0))
            .collect();
        Column::Float64(PrimitiveColumn::from_options(v))
    }

    fn finish_all(state: State) -> Vec<ScalarValue> {
        let col = state.finish().unwrap();
        (0..col.len()).map(|i| col.scalar_at(i)).collect()
    }

    /// Every state, updated with all rows at once, equals (for the exact states) or comes
    /// within rounding of (the co-moments) the same rows in three partials merged in order,
    /// one of them moved group by group into a fresh state first.
    #[test]
    fn partials_merged_in_order_equal_one_pass() {
        let mut rng = Rng(11);
        let groups: Vec<u32> = (0..ROWS).map(|_| rng.below(GROUPS as u64) as u32).collect();
        let (a, b) = (floats(&mut rng), floats(&mut rng));
        let funcs = [
            AggFunc::First,
            AggFunc::Last,
            AggFunc::AnyValue,
            AggFunc::ArgMin,
            AggFunc::ArgMax,
            AggFunc::Mode,
            AggFunc::Product,
            AggFunc::CovarSamp,
            AggFunc::Corr,
            AggFunc::RegrIntercept,
            AggFunc::RegrCount,
        ];
        for func in funcs {
            let new = || State::new(func, DataType::Float64, func.arity() == 2).unwrap();
            let mut whole = new();
            whole.resize(GROUPS as usize);
            let args = |a: &Column, b: &Column| [Some(a.clone()), Some(b.clone())];
            let all = args(&a, &b);
            whole.update(&groups, Args::of(&all)).unwrap();

            let mut merged = new();
            merged.resize(GROUPS as usize);
            let identity: Vec<u32> = (0..GROUPS).collect();
            for (start, end) in [(0, 1000), (1000, 1001), (1001, ROWS)] {
                let part = args(&a.slice(start, end - start), &b.slice(start, end - start));
                let mut p = new();
                p.resize(GROUPS as usize);
                p.update(&groups[start..end], Args::of(&part)).unwrap();
                if start == 1000 {
                    let mut moved = new();
                    p.move_groups(&identity, &mut moved).unwrap();
                    p = moved;
                }
                merged.merge(&mut p, &identity).unwrap();
            }
            let (x, y) = (finish_all(whole), finish_all(merged));
            for (g, (x, y)) in x.iter().zip(&y).enumerate() {
                let close = match (x, y) {
                    (ScalarValue::Float64(p), ScalarValue::Float64(q)) => {
                        (p.is_nan() && q.is_nan()) || (p - q).abs() <= 1e-9 * p.abs().max(1.0)
                    }
                    _ => x == y,
                };
                assert!(close, "{}() group {g}: {x:?} vs {y:?}", func.name());
            }
        }
    }
}
