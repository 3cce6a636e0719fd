//! The left-deep order of a region: the linked pair whose join is estimated smallest first,
//! then, step by step, the linked input whose join onto the part joined so far is estimated
//! smallest. Ordering a 64-table clique this way estimates about 40,000 candidate joins;
//! each is estimated from what the search keeps of the joined part ([`Joined`]), not from
//! the part's plan, which is rebuilt at every step (re-estimating it made planning cubic
//! in the inputs times the keys).

use std::collections::HashMap;

use foldhash::fast::FixedState;

use super::condition::{Condition, Links};
use super::inputs::InputSet;
use super::step::Step;
use crate::expr::Expr;
use crate::optimizer::cardinality::{estimate_rows, expr_distinct, memoized};
use crate::plan::LogicalPlan;

/// The left-deep order: the linked pair whose join is estimated smallest first, then, step
/// by step, the linked input giving the smallest estimated join onto what is joined so far
/// (an unlinked one only when nothing linked is left). The conditions come back with those
/// placed marked.
///
/// After the first join, candidates are estimated from what the search keeps of the joined
/// part (see [`Joined`]) rather than from its plan, which changes at every step: the same
/// numbers the plan's estimates give, in time linear in the candidate's keys.
pub(super) fn left_deep(
    leaves: Vec<LogicalPlan>,
    mut conds: Vec<Condition>,
) -> Option<(LogicalPlan, Vec<Condition>)> {
    let rows: Vec<f64> = leaves.iter().map(estimate_rows).collect();
    let n = leaves.len();
    let links = Links::new(n, &conds);
    let single: Vec<InputSet> = (0..n).map(|i| InputSet::of(n, [i])).collect();
    // The conditions reading each input: after the first join every condition the joined
    // inputs cover is placed, so a candidate input can place only conditions reading it.
    let mut reading: Vec<Vec<usize>> = vec![Vec::new(); n];
    // The conditions a first join may place, by the inputs they read: none, one, or two.
    let (mut constant, mut alone) = (Vec::new(), vec![Vec::new(); n]);
    let mut pairs: HashMap<(usize, usize), Vec<usize>, FixedState> = HashMap::default();
    for (i, c) in conds.iter().enumerate() {
        c.inputs.iter().for_each(|l| reading[l].push(i));
        let mut read = c.inputs.iter();
        match (read.next(), read.next(), read.next()) {
            (None, ..) => constant.push(i),
            (Some(a), None, _) => alone[a].push(i),
            (Some(a), Some(b), None) => pairs.entry((a, b)).or_default().push(i),
            _ => {}
        }
    }
    let pair_conditions = |a: usize, b: usize| {
        let both = pairs.get(&(a, b)).map_or(&[][..], Vec::as_slice);
        union(&union(&alone[a], &alone[b]), &union(both, &constant))
    };
    // Each equality side's one input and distinct values there.
    let side_distinct: Vec<[Option<(usize, f64)>; 2]> = memoized(|| {
        conds
            .iter()
            .map(|c| match (&c.sides, c.operands()) {
                (Some(sides), Some(operands)) => {
                    let one = |set: &InputSet, e: &Expr| {
                        let j = set.single()?;
                        Some((j, expr_distinct(e, &leaves[j])?))
                    };
                    [one(&sides.0, operands.0), one(&sides.1, operands.1)]
                }
                _ => [None, None],
            })
            .collect()
    });
    let mut slots: Vec<Option<LogicalPlan>> = leaves.into_iter().map(Some).collect();

    // The first pair: linked, smallest estimated join (ties: lower positions); without any
    // link, the smallest input.
    let mut best: Option<(f64, usize, usize, Step)> = None;
    for a in 0..n {
        for b in a + 1..n {
            if !links.linked(&single[a], &single[b]) {
                continue;
            }
            let sizes = (rows[a], rows[b]);
            let among = pair_conditions(a, b).into_iter();
            let step = Step::of_rows(sizes, &single[a], &single[b], &conds, among);
            let key_distinct = |i: usize| {
                let [(_, da), (_, db)] = [side_distinct[i][0]?, side_distinct[i][1]?];
                Some(da.max(db))
            };
            let est = step.estimate_of(sizes, key_distinct, &conds);
            if best.as_ref().is_none_or(|(e, ..)| est < *e) {
                best = Some((est, a, b, step));
            }
        }
    }
    let (mut current, mut part) = match best {
        Some((est, a, b, step)) => match (slots[a].take(), slots[b].take()) {
            (Some(pa), Some(pb)) => {
                let mut part = Joined::new(n, a, rows[a]);
                part.add(b, est);
                (step.commit(&mut conds, pa, pb), part)
            }
            _ => return None,
        },
        None => {
            let first = (0..n)
                .min_by(|&a, &b| rows[a].total_cmp(&rows[b]).then(a.cmp(&b)))
                .unwrap_or(0);
            (slots[first].take()?, Joined::new(n, first, rows[first]))
        }
    };
    // Once a join is committed, every condition its inputs cover is placed.
    let mut committed = part.inputs.len() > 1;
    while part.inputs.len() < n {
        let left: Vec<usize> = (0..n).filter(|&i| !part.inputs.contains(i)).collect();
        let linked_left: Vec<usize> = left
            .iter()
            .copied()
            .filter(|&k| links.linked(&single[k], &part.inputs))
            .collect();
        let candidates = if linked_left.is_empty() {
            left
        } else {
            linked_left
        };
        let mut choice: Option<(f64, usize, Step)> = None;
        for k in candidates {
            if slots[k].is_none() {
                continue;
            }
            let sizes = (part.rows, rows[k]);
            let step = match committed {
                true => Step::of_rows(
                    sizes,
                    &part.inputs,
                    &single[k],
                    &conds,
                    reading[k].iter().copied(),
                ),
                false => Step::of_rows(sizes, &part.inputs, &single[k], &conds, 0..conds.len()),
            };
            let key_distinct = |i: usize| {
                let [a, b] = [side_distinct[i][0]?, side_distinct[i][1]?];
                Some(part.distinct(a).max(part.distinct(b)))
            };
            let est = step.estimate_of(sizes, key_distinct, &conds);
            let better = match &choice {
                None => true,
                Some((e, j, _)) => est < *e || (est == *e && rows[k] < rows[*j]),
            };
            if better {
                choice = Some((est, k, step));
            }
        }
        let Some((est, k, step)) = choice else { break };
        let Some(next) = slots[k].take() else { break };
        current = step.commit(&mut conds, current, next);
        part.add(k, est);
        committed = true;
    }
    Some((current, conds))
}

/// What the left-deep search keeps of the part joined so far, to estimate candidates as the
/// part's plan would: its rows, and for each input the smallest of the rows of the joins
/// from the one it came in at up to the top. (A join's distinct count of a column is its
/// input's, at most the join's rows and at least one; clamping to `[1, r]` one join after
/// another is clamping once to `[1, min r]`.)
struct Joined {
    inputs: InputSet,
    rows: f64,
    /// Per input: the position in `caps` of the join it came in at (`caps.len()` while it
    /// is the part's only input).
    joined_at: Vec<usize>,
    /// Per join so far: the fewest rows of it and the joins after it.
    caps: Vec<f64>,
}

impl Joined {
    fn new(n: usize, first: usize, rows: f64) -> Self {
        Joined {
            inputs: InputSet::of(n, [first]),
            rows,
            joined_at: vec![0; n],
            caps: Vec::new(),
        }
    }

    /// Input `k` joined, the join estimated at `rows`.
    fn add(&mut self, k: usize, rows: f64) {
        self.caps.iter_mut().for_each(|c| *c = c.min(rows));
        self.caps.push(rows);
        self.joined_at[k] = self.caps.len() - 1;
        self.inputs.insert(k);
        self.rows = rows;
    }

    /// The distinct count in the part of a column of input `j` with `distinct` values in
    /// that input; an input not joined yet keeps its own count.
    fn distinct(&self, (j, distinct): (usize, f64)) -> f64 {
        match self
            .inputs
            .contains(j)
            .then(|| self.caps.get(self.joined_at[j]))
            .flatten()
        {
            Some(&cap) => distinct.min(cap).max(1.0),
            None => distinct,
        }
    }
}

/// The positions in `a` or `b` (each ascending), ascending.
fn union(a: &[usize], b: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let next = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) => x.min(y),
            (Some(&x), None) => x,
            (None, Some(&y)) => y,
            (None, None) => break,
        };
        i += usize::from(a.get(i) == Some(&next));
        j += usize::from(b.get(j) == Some(&next));
        out.push(next);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::left_deep;
    use crate::expr::{col, lit, BinaryOp, Expr};
    use crate::optimizer::cardinality::{estimate_rows, memoized};
    use crate::optimizer::rules::reorder_joins::condition::{Condition, InputNames, Links};
    use crate::optimizer::rules::reorder_joins::inputs::InputSet;
    use crate::optimizer::rules::reorder_joins::step::Step;
    use crate::optimizer::rules::test_data_table;
    use crate::plan::LogicalPlan;
    use crate::schema::PlanSchema;

    /// A memory table of `rows` rows whose `a{i}` and `b{i}` columns have `da` and `db`
    /// distinct values.
    fn table(i: usize, rows: i64, da: i64, db: i64) -> LogicalPlan {
        test_data_table(
            &format!("t{i}"),
            &[
                (&format!("a{i}"), (0..rows).map(|k| k % da).collect()),
                (&format!("b{i}"), (0..rows).map(|k| (k * 7) % db).collect()),
            ],
        )
        .build()
    }

    /// The left-deep search as it would run estimating every candidate from plans: the
    /// reference the search's kept estimates (`Joined`) must agree with.
    fn plain_left_deep(leaves: Vec<LogicalPlan>, mut conds: Vec<Condition>) -> LogicalPlan {
        let n = leaves.len();
        let rows: Vec<f64> = leaves.iter().map(estimate_rows).collect();
        let links = Links::new(n, &conds);
        let single: Vec<InputSet> = (0..n).map(|i| InputSet::of(n, [i])).collect();
        let mut slots: Vec<Option<LogicalPlan>> = leaves.into_iter().map(Some).collect();
        let all = 0..conds.len();
        let mut best: Option<(f64, usize, usize)> = None;
        for a in 0..n {
            for b in a + 1..n {
                if links.linked(&single[a], &single[b]) {
                    let (pa, pb) = (slots[a].as_ref().unwrap(), slots[b].as_ref().unwrap());
                    let step =
                        memoized(|| Step::new(pa, &single[a], pb, &single[b], &conds, all.clone()));
                    let est = memoized(|| step.estimate(pa, pb, &conds));
                    if best.is_none_or(|(e, ..)| est < e) {
                        best = Some((est, a, b));
                    }
                }
            }
        }
        let (mut current, mut joined) = match best {
            Some((_, a, b)) => {
                let (pa, pb) = (slots[a].take().unwrap(), slots[b].take().unwrap());
                let step =
                    memoized(|| Step::new(&pa, &single[a], &pb, &single[b], &conds, all.clone()));
                (step.commit(&mut conds, pa, pb), InputSet::of(n, [a, b]))
            }
            None => {
                let first = (0..n)
                    .min_by(|&a, &b| rows[a].total_cmp(&rows[b]).then(a.cmp(&b)))
                    .unwrap();
                (slots[first].take().unwrap(), InputSet::of(n, [first]))
            }
        };
        while joined.len() < n {
            let left: Vec<usize> = (0..n).filter(|&i| !joined.contains(i)).collect();
            let linked: Vec<usize> = left
                .iter()
                .copied()
                .filter(|&k| links.linked(&single[k], &joined))
                .collect();
            let candidates = if linked.is_empty() { left } else { linked };
            let mut choice: Option<(f64, usize)> = None;
            for k in candidates {
                let pk = slots[k].as_ref().unwrap();
                let est = memoized(|| {
                    let step = Step::new(&current, &joined, pk, &single[k], &conds, all.clone());
                    step.estimate(&current, pk, &conds)
                });
                if choice.is_none_or(|(e, j)| est < e || (est == e && rows[k] < rows[j])) {
                    choice = Some((est, k));
                }
            }
            let (_, k) = choice.unwrap();
            let next = slots[k].take().unwrap();
            let step =
                memoized(|| Step::new(&current, &joined, &next, &single[k], &conds, all.clone()));
            current = step.commit(&mut conds, current, next);
            joined.insert(k);
        }
        current
    }

    /// The left-deep search keeps the joined part's rows and distinct counts itself rather
    /// than estimating its plan at every step: over random regions (chains, cliques, sparse
    /// graphs, keys that are not columns, filters across and within inputs, constants, inputs
    /// linked to nothing) it builds the order the plans' own estimates would choose.
    #[test]
    fn left_deep_orders_as_the_plans_estimates_would() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        for _ in 0..200 {
            let n = 2 + next(9) as usize;
            let leaves: Vec<LogicalPlan> = (0..n)
                .map(|i| {
                    let rows = 1 + next(300) as i64;
                    table(i, rows, 1 + next(60) as i64, 1 + next(400) as i64)
                })
                .collect();
            let mut exprs = Vec::new();
            for i in 0..n {
                for j in i + 1..n {
                    let (x, y) = (
                        format!("{}{i}", ["a", "b"][next(2) as usize]),
                        format!("a{j}"),
                    );
                    match next(10) {
                        0..=3 => exprs.push(col(&x).eq(col(&y))),
                        4 => exprs.push(col(&x).eq(Expr::Binary {
                            left: Box::new(col(&y)),
                            op: BinaryOp::Plus,
                            right: Box::new(lit(1i64)),
                        })),
                        5 => exprs.push(col(&x).lt(col(&y))),
                        _ => {}
                    }
                }
                if next(6) == 0 {
                    exprs.push(col(&format!("b{i}")).lt(lit(next(100) as i64)));
                }
            }
            if next(4) == 0 {
                exprs.push(lit(1i64).eq(lit(1i64)));
            }
            let schemas: Vec<&PlanSchema> = leaves.iter().map(LogicalPlan::schema).collect();
            let names = InputNames::new(&schemas);
            let conds: Vec<Condition> = exprs
                .into_iter()
                .map(|e| Condition::new(e, &names).expect("resolves"))
                .collect();
            let (fast, _) = left_deep(leaves.clone(), conds.clone()).expect("order");
            let plain = plain_left_deep(leaves.clone(), conds);
            assert_eq!(fast, plain, "{fast}\n{plain}");
        }
    }
}
