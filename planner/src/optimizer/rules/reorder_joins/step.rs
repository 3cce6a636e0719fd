//! One join of an order being built: which side builds, and which conditions it places as
//! hash keys or as its residual filter. A search estimates many candidate steps and commits
//! one; a candidate holds condition positions only, so estimating it builds and clones
//! nothing.

use super::condition::Condition;
use super::inputs::InputSet;
use crate::expr::Expr;
use crate::optimizer::cardinality::{estimate_rows, inner_join_rows, keyed_join_rows, selectivity};
use crate::plan::{JoinKind, LogicalPlan};

/// A candidate join of the inputs joined so far (`current`) with more (`next`).
pub(super) struct Step {
    /// `next` builds (is the right side); otherwise `current` does.
    next_builds: bool,
    /// The conditions that become keys, each with whether its sides swap (its left side
    /// reads the join's right input).
    keys: Vec<(usize, bool)>,
    /// The conditions of the residual filter.
    filter: Vec<usize>,
}

impl Step {
    /// Joins `next` (covering `next_inputs`) onto `current` (covering `joined`): the side
    /// with fewer estimated rows builds (right), and every condition `among` not placed yet
    /// whose inputs both now cover is placed on this join: equalities across the sides as
    /// keys, the rest as the residual filter. `among` lists condition positions ascending;
    /// a caller passes fewer than all where it knows the others are placed or not covered.
    pub(super) fn new(
        current: &LogicalPlan,
        joined: &InputSet,
        next: &LogicalPlan,
        next_inputs: &InputSet,
        conds: &[Condition],
        among: impl Iterator<Item = usize>,
    ) -> Step {
        let rows = (estimate_rows(current), estimate_rows(next));
        Self::of_rows(rows, joined, next_inputs, conds, among)
    }

    /// [`Step::new`] for sides of `rows` (the inputs joined so far, the next ones) estimated
    /// already.
    pub(super) fn of_rows(
        (current_rows, next_rows): (f64, f64),
        joined: &InputSet,
        next_inputs: &InputSet,
        conds: &[Condition],
        among: impl Iterator<Item = usize>,
    ) -> Step {
        let next_builds = next_rows <= current_rows;
        let (left, right) = sides(next_builds, joined, next_inputs);
        let covered = joined.union(next_inputs);
        let (mut keys, mut filter) = (Vec::new(), Vec::new());
        for i in among {
            let c = &conds[i];
            if c.placed || !c.inputs.is_subset(&covered) {
                continue;
            }
            match &c.sides {
                Some((a, b)) if a.is_subset(left) && b.is_subset(right) => keys.push((i, false)),
                Some((a, b)) if b.is_subset(left) && a.is_subset(right) => keys.push((i, true)),
                _ => filter.push(i),
            }
        }
        Step {
            next_builds,
            keys,
            filter,
        }
    }

    /// The estimated rows of this join of `current` and `next`.
    pub(super) fn estimate(
        &self,
        current: &LogicalPlan,
        next: &LogicalPlan,
        conds: &[Condition],
    ) -> f64 {
        let (left, right) = sides(self.next_builds, current, next);
        let keys = self.keys.iter().filter_map(|&(i, swap)| {
            let (a, b) = conds[i].operands()?;
            Some(if swap { (b, a) } else { (a, b) })
        });
        let filter = self.filter.iter().map(|&i| &conds[i].expr);
        inner_join_rows(left, right, keys, filter)
    }

    /// The estimated rows of this join of sides of `rows` (the inputs joined so far, the
    /// next ones), with `key_distinct(i)` the distinct count of condition `i` as a key (the
    /// larger of its sides' counts; `None` without statistics): what [`Step::estimate`]
    /// gives where those are the plans' estimates.
    pub(super) fn estimate_of(
        &self,
        (current_rows, next_rows): (f64, f64),
        key_distinct: impl Fn(usize) -> Option<f64>,
        conds: &[Condition],
    ) -> f64 {
        let (l, r) = sides(self.next_builds, current_rows, next_rows);
        let distinct = self
            .keys
            .iter()
            .filter_map(|&(i, _)| key_distinct(i))
            .reduce(f64::max);
        // A conjunction's selectivity is its parts' product, in the same order.
        let kept: f64 = self
            .filter
            .iter()
            .map(|&i| selectivity(&conds[i].expr))
            .product();
        keyed_join_rows(l, r, !self.keys.is_empty(), distinct) * kept
    }

    /// Builds the join and marks its conditions placed.
    pub(super) fn commit(
        self,
        conds: &mut [Condition],
        current: LogicalPlan,
        next: LogicalPlan,
    ) -> LogicalPlan {
        let on: Vec<(Expr, Expr)> = self
            .keys
            .iter()
            .filter_map(|&(i, swap)| {
                let (a, b) = conds[i].operands()?;
                let (a, b) = (a.clone(), b.clone());
                Some(if swap { (b, a) } else { (a, b) })
            })
            .collect();
        let filter =
            Expr::conjunction(self.filter.iter().map(|&i| conds[i].expr.clone()).collect());
        for &i in self.keys.iter().map(|(i, _)| i).chain(&self.filter) {
            conds[i].placed = true;
        }
        let (left, right) = sides(self.next_builds, current, next);
        let schema = JoinKind::Inner.output_schema(left.schema(), right.schema(), None);
        LogicalPlan::Join {
            left: Box::new(left),
            right: Box::new(right),
            kind: JoinKind::Inner,
            on,
            filter,
            schema,
        }
    }
}

/// The (left, right) inputs of a join of the inputs joined so far and the next ones: the
/// next on the right (they build) when `next_builds`.
fn sides<T>(next_builds: bool, current: T, next: T) -> (T, T) {
    match next_builds {
        true => (current, next),
        false => (next, current),
    }
}
