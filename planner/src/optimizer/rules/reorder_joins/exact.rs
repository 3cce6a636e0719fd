//! The exact join order of a small region: every bushy tree without cross products is
//! considered (dynamic programming over the connected subsets of inputs, each split into
//! two connected, linked halves: the csg-cmp pairs of Moerkotte and Neumann's DPccp, here
//! found by enumerating the subsets of each set, which for at most [`EXACT_MAX_INPUTS`]
//! inputs is a few hundred thousand steps at worst, a clique's), and the one whose joins
//! produce the fewest rows in all is kept.
//!
//! The rows a set of inputs joins to do not depend on the order it is joined in: the
//! product of the inputs' rows and of the selectivity of every condition among them (an
//! equality's is one over the larger distinct count of its two sides, as `cardinality`
//! estimates joins; any other condition's its filter selectivity). So each set is estimated
//! once, from the inputs' own statistics. The greedy orders of `mod.rs` stay the choice for
//! larger regions and where a region is not connected; the tree found here is built with
//! the same steps (smaller side builds, conditions placed where their inputs meet) and
//! competes with the greedy ones on the same measure.

use super::condition::{Condition, Links};
use super::inputs::InputSet;
use super::step::Step;
use crate::optimizer::cardinality::{estimate_rows, key_distinct, memoized, selectivity};
use crate::plan::LogicalPlan;

/// The most inputs a region is ordered exactly for: the subsets of every set are visited
/// (3^n steps for a clique; 3^12 is about 530,000, a few milliseconds).
pub(super) const EXACT_MAX_INPUTS: usize = 12;

/// The exact order of `leaves` (at most [`EXACT_MAX_INPUTS`]), joined with `conds`;
/// `None` where the inputs are not all linked by equalities (a cross product would be
/// needed) or there are too many.
pub(super) fn exact(
    leaves: &[LogicalPlan],
    conds: &[Condition],
) -> Option<(LogicalPlan, Vec<Condition>)> {
    let n = leaves.len();
    if !(2..=EXACT_MAX_INPUTS).contains(&n) {
        return None;
    }
    let links = Links::new(n, conds);
    let full = (1usize << n) - 1;
    let rows = set_rows(leaves, conds);
    // Each set's neighbours: the inputs an equality links to one of its own.
    let mut neighbours = vec![0usize; full + 1];
    for set in 1..=full {
        let low = set.trailing_zeros() as usize;
        neighbours[set] = neighbours[set & (set - 1)] | links.adjacent_mask(low);
    }
    // best[set]: (rows its joins produce, the first half of its best split; 0 for an input).
    let mut best: Vec<Option<(f64, usize)>> = vec![None; full + 1];
    for i in 0..n {
        best[1 << i] = Some((0.0, 0));
    }
    for set in 1..=full {
        if set.count_ones() < 2 {
            continue;
        }
        let low = set & set.wrapping_neg();
        // Only a connected set has a split into linked halves (a chain's sets are mostly
        // not connected: their subsets are not visited).
        let mut reach = low;
        loop {
            let wider = (reach | neighbours[reach]) & set;
            if wider == reach {
                break;
            }
            reach = wider;
        }
        if reach != set {
            continue;
        }
        let mut choice: Option<(f64, usize)> = None;
        // Every proper subset holding the lowest input, as one half (so each split once).
        let rest = set & !low;
        let mut sub = rest;
        loop {
            let half = sub | low;
            let other = set & !half;
            if other != 0 {
                if let (Some((a, _)), Some((b, _))) = (best[half], best[other]) {
                    if neighbours[half] & other != 0 {
                        let cost = a + b + rows[set];
                        if choice.is_none_or(|(c, _)| cost < c) {
                            choice = Some((cost, half));
                        }
                    }
                }
            }
            if sub == 0 {
                break;
            }
            sub = (sub - 1) & rest;
        }
        best[set] = choice;
    }
    best[full]?;
    let mut conds = conds.to_vec();
    let mut slots: Vec<Option<LogicalPlan>> = leaves.iter().cloned().map(Some).collect();
    let plan = build(full, &best, &mut slots, &mut conds)?;
    Some((plan, conds))
}

/// The estimated rows of every set of inputs (indexed by its bit set).
fn set_rows(leaves: &[LogicalPlan], conds: &[Condition]) -> Vec<f64> {
    let n = leaves.len();
    memoized(|| {
        let input_rows: Vec<f64> = leaves.iter().map(estimate_rows).collect();
        let selectivities: Vec<(usize, f64)> = conds
            .iter()
            .map(|c| {
                let mask = c.inputs.low_word() as usize;
                (mask, condition_selectivity(c, leaves, &input_rows))
            })
            .collect();
        let mut rows = vec![1.0; 1 << n];
        for set in 1usize..(1 << n) {
            let low = set.trailing_zeros() as usize;
            let mut r = rows[set & (set - 1)] * input_rows[low];
            for &(mask, s) in &selectivities {
                if mask & (1 << low) != 0 && mask & !set == 0 {
                    r *= s;
                }
            }
            rows[set] = r;
        }
        rows
    })
}

/// The share of its inputs' combinations condition `c` keeps: for an equality between two
/// inputs, one over the larger distinct count of its sides (or, without statistics, as if
/// each row of the larger input found one match in the smaller); otherwise its filter
/// selectivity.
fn condition_selectivity(c: &Condition, leaves: &[LogicalPlan], rows: &[f64]) -> f64 {
    if let (Some((p, q)), Some((a, b))) = (c.link(), c.operands()) {
        let pair = [(a.clone(), b.clone())];
        return match key_distinct(&pair, &leaves[p], &leaves[q]) {
            Some(d) if d >= 1.0 => 1.0 / d,
            _ => 1.0 / rows[p].min(rows[q]).max(1.0),
        };
    }
    selectivity(&c.expr)
}

/// The plan of `set` by its best splits, each join built as the greedy orders build theirs.
fn build(
    set: usize,
    best: &[Option<(f64, usize)>],
    slots: &mut [Option<LogicalPlan>],
    conds: &mut [Condition],
) -> Option<LogicalPlan> {
    if set.count_ones() == 1 {
        return slots[set.trailing_zeros() as usize].take();
    }
    let (_, half) = best[set]?;
    let other = set & !half;
    let (a, b) = (
        build(half, best, slots, conds)?,
        build(other, best, slots, conds)?,
    );
    let n = slots.len();
    let members = |s: usize| InputSet::of(n, (0..n).filter(|&i| s & (1 << i) != 0));
    let (ha, hb) = (members(half), members(other));
    let step = memoized(|| Step::new(&a, &ha, &b, &hb, conds, 0..conds.len()));
    Some(step.commit(conds, a, b))
}

#[cfg(test)]
mod tests {
    use super::super::{
        flatten, joined_rows, left_deep, order_tree, pairwise, Condition, InputNames, ReorderJoins,
    };
    use super::exact;
    use crate::expr::col;
    use crate::optimizer::rules::test_data_table;
    use crate::optimizer::OptimizerRule;
    use crate::plan::{JoinKind, LogicalPlan, PlanBuilder};

    /// The rows joined by the left-deep, bushy and exact orders of `plan`'s region.
    fn orders(plan: LogicalPlan) -> (f64, f64, f64) {
        let (mut leaves, mut exprs) = (Vec::new(), Vec::new());
        flatten(plan, &mut leaves, &mut exprs);
        let schemas: Vec<_> = leaves.iter().map(LogicalPlan::schema).collect();
        let conds: Vec<Condition> = exprs
            .into_iter()
            .map(|expr| Condition::new(expr, &InputNames::new(&schemas)).expect("resolves"))
            .collect();
        let (deep, _) = left_deep(leaves.clone(), conds.clone()).expect("deep");
        let (bushy, _) = pairwise(leaves.clone(), conds.clone());
        let (best, _) = exact(&leaves, &conds).expect("exact");
        (
            joined_rows(&order_tree(deep)),
            joined_rows(&order_tree(bushy)),
            joined_rows(&order_tree(best)),
        )
    }

    /// A chain of tables `t{i}` of (rows, distinct values of `a{i}`, of `b{i}`), each
    /// joined on `b{i-1} = a{i}`.
    fn chain(specs: &[(i64, i64, i64)]) -> LogicalPlan {
        let mut b: Option<PlanBuilder> = None;
        for (i, &(rows, da, db)) in specs.iter().enumerate() {
            let t = test_data_table(
                &format!("t{i}"),
                &[
                    (&format!("a{i}"), (0..rows).map(|k| k % da).collect()),
                    (&format!("b{i}"), (0..rows).map(|k| (k * 7) % db).collect()),
                ],
            );
            b = Some(match b {
                None => t,
                Some(prev) => {
                    let on = vec![(col(&format!("b{}", i - 1)), col(&format!("a{i}")))];
                    prev.join(t, JoinKind::Inner, on, None).expect("join")
                }
            });
        }
        b.expect("tables").build()
    }

    /// The topmost join of `plan` (under the projection restoring the column order).
    fn region(plan: &LogicalPlan) -> &LogicalPlan {
        match plan {
            LogicalPlan::Join { .. } => plan,
            other => region(other.children()[0]),
        }
    }

    /// Where the greedy orders miss the cheapest tree (here: both start from the smallest
    /// join, of the two small tables, and then carry its rows into the large one's), the
    /// exact order is found and taken.
    #[test]
    fn the_exact_order_is_taken_where_the_greedy_ones_join_more_rows() {
        let plan = chain(&[
            (100, 10, 10),
            (10, 10, 10),
            (5000, 100, 100),
            (100, 1000, 10),
        ]);
        let (deep, bushy, best) = orders(plan.clone());
        assert!(
            best < deep.min(bushy),
            "exact {best}, left-deep {deep}, bushy {bushy}"
        );
        let chosen = ReorderJoins.rewrite(plan).expect("reorder");
        assert_eq!(joined_rows(region(&chosen)), best, "{chosen}");
        // The rule's own output is left as it is.
        let again = ReorderJoins.rewrite(chosen.clone()).expect("reorder");
        assert_eq!(again, chosen);
    }
}
