//! Orders multi-way inner joins by estimated size, avoiding cross products.
//!
//! A region of adjacent inner joins is flattened into its inputs and its conditions, and two
//! orders are built greedily from estimates (distinct-value counts where known, see
//! `cardinality`, so a join on a low-cardinality column is seen to multiply rows):
//!
//! - left-deep: first the pair of inputs linked by an equality whose join is estimated
//!   smallest, then, step by step, the linked input giving the smallest estimated join onto
//!   all joined so far;
//! - bushy: again and again the two parts (inputs, or inputs joined already) linked by an
//!   equality whose join is estimated smallest, so inputs that filter one another meet
//!   before either meets a larger one (TPC-H Q7: customers of two nations meet their
//!   orders on their own, instead of lineitem's matches being carried through both joins).
//!
//! For a region of at most 12 inputs, all linked, the exact order is found too (`exact`:
//! every bushy tree without cross products, the one whose joins produce the fewest rows by
//! estimates of each set of inputs). The exact and the bushy order are taken only where their
//! joins produce fewer rows in all than the left-deep one's (a plain star gives them all the
//! same shape). Either way an input is joined without a condition only when
//! nothing linked is left; at each join the smaller side becomes the hash join's build
//! (right) side, and every condition is placed at the first join where all its columns are
//! available: equalities across the two sides as hash keys, the rest as the join's residual
//! filter. A projection above restores the region's original column order.
//!
//! The joins along a left spine all stream the spine's bottom input (the probe side)
//! through their builds, in spine order. Where every one of them is on that input's columns
//! and its own build's alone, they are put in order of their estimated output over the probe
//! input, smallest first, so the most selective probe runs on the most rows and the others on
//! what it keeps (TPC-H Q9: lineitem meets the filtered parts before suppliers and orders);
//! so are the spines of build sides that are joins themselves. Estimates depend only on the
//! data (see `cardinality`), so the plan is the same for any thread count; a region already
//! in the chosen shape is left as it is, so the rule reaches a fixed point.

mod bushy;
mod condition;
mod exact;
mod inputs;
mod left_deep;
mod step;

use super::push_down_filter::conjuncts;
use crate::error::PlanResult;
use crate::expr::Expr;
use crate::optimizer::cardinality::{estimate_rows, join_rows, memoized};
use crate::optimizer::OptimizerRule;
use crate::plan::{JoinKind, LogicalPlan};
use crate::schema::PlanSchema;
use bushy::pairwise;
use condition::{Condition, InputNames};
use left_deep::left_deep;

pub struct ReorderJoins;

impl OptimizerRule for ReorderJoins {
    fn name(&self) -> &'static str {
        "reorder_joins"
    }

    fn rewrite(&self, plan: LogicalPlan) -> PlanResult<LogicalPlan> {
        rewrite(plan)
    }
}

fn rewrite(plan: LogicalPlan) -> PlanResult<LogicalPlan> {
    let is_region = |p: &LogicalPlan| {
        matches!(
            p,
            LogicalPlan::Join {
                kind: JoinKind::Inner,
                ..
            }
        )
    };
    // A region of inner joins, with the filter right above it if any: its conjuncts are the
    // region's conditions too (so comma joins become hash joins even with filter pushdown
    // switched off).
    let region = match &plan {
        LogicalPlan::Filter { input, predicate } if is_region(input) => {
            Some((input.as_ref(), Some(predicate)))
        }
        p if is_region(p) => Some((p, None)),
        _ => None,
    };
    if let Some((join, predicate)) = region {
        // The region's inputs are rewritten inside; its inner joins are its own, not regions
        // to order again (which made planning time grow with the fourth power of the
        // number of joined tables).
        if let Some(better) = reorder_region(join, predicate)? {
            return Ok(better);
        }
    }
    plan.map_children(rewrite)
}

/// The greedy order of the region rooted at `join` (with `predicate`'s conjuncts added).
fn reorder_region(join: &LogicalPlan, predicate: Option<&Expr>) -> PlanResult<Option<LogicalPlan>> {
    let mut leaves = Vec::new();
    let mut conditions = Vec::new();
    flatten(join.clone(), &mut leaves, &mut conditions);
    // Conjuncts, with terms common to every OR branch factored out (as filter pushdown does),
    // so such terms can become keys here too.
    conditions.extend(predicate.cloned().map(conjuncts).unwrap_or_default());
    let leaves = leaves
        .into_iter()
        .map(rewrite)
        .collect::<PlanResult<Vec<_>>>()?;
    reorder(leaves, conditions, join.schema())
}

/// Collects the inputs and conditions of the inner-join region rooted at `plan`.
fn flatten(plan: LogicalPlan, leaves: &mut Vec<LogicalPlan>, conditions: &mut Vec<Expr>) {
    match plan {
        LogicalPlan::Join {
            left,
            right,
            kind: JoinKind::Inner,
            on,
            filter,
            ..
        } => {
            flatten(*left, leaves, conditions);
            flatten(*right, leaves, conditions);
            conditions.extend(on.into_iter().map(|(l, r)| l.eq(r)));
            conditions.extend(filter.map(conjuncts).unwrap_or_default());
        }
        other => leaves.push(other),
    }
}

/// The join order of `leaves` (see the module doc); `None` when the region cannot be
/// reordered safely.
fn reorder(
    leaves: Vec<LogicalPlan>,
    conditions: Vec<Expr>,
    schema: &PlanSchema,
) -> PlanResult<Option<LogicalPlan>> {
    if leaves.len() < 2 {
        return Ok(None);
    }
    let schemas: Vec<&PlanSchema> = leaves.iter().map(LogicalPlan::schema).collect();
    // Every output column must name exactly one input (else the order cannot be restored).
    for f in schema.fields() {
        if schemas.iter().filter(|s| s.has(&f.column_ref())).count() != 1 {
            return Ok(None);
        }
    }
    let names = InputNames::new(&schemas);
    let Some(conds) = conditions
        .into_iter()
        .map(|expr| Condition::new(expr, &names))
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(None);
    };
    let Some((deep, deep_conds)) = left_deep(leaves.clone(), conds.clone()) else {
        return Ok(None);
    };
    let deep = order_tree(deep);
    // The exact and the bushy order only where they join fewer rows in all (ties keep the
    // left-deep one, whose every join but the first streams the same input), and only for
    // regions small enough that they stay cheap.
    let mut chosen = (joined_rows(&deep), deep, deep_conds);
    let exact = exact::exact(&leaves, &conds);
    if leaves.len() <= BUSHY_MAX_INPUTS {
        let (bushy, bushy_conds) = pairwise(leaves, conds);
        let bushy = order_tree(bushy);
        let rows = joined_rows(&bushy);
        if rows < chosen.0 {
            chosen = (rows, bushy, bushy_conds);
        }
    }
    if let Some((exact, exact_conds)) = exact {
        let exact = order_tree(exact);
        let rows = joined_rows(&exact);
        // Fewer beyond rounding: the same joins summed in another order tie, and a tie
        // keeps the greedy order.
        if rows < chosen.0 * (1.0 - TIE) {
            chosen = (rows, exact, exact_conds);
        }
    }
    let (_, mut plan, conds) = chosen;
    let rest: Vec<Expr> = conds
        .into_iter()
        .filter(|c| !c.placed)
        .map(|c| c.expr)
        .collect();
    if let Some(predicate) = Expr::conjunction(rest) {
        plan = LogicalPlan::Filter {
            input: Box::new(plan),
            predicate,
        };
    }
    // Restore the region's column order.
    if plan.schema().fields() != schema.fields() {
        let exprs = schema
            .fields()
            .iter()
            .map(|f| Expr::Column(f.column_ref()))
            .collect();
        plan = LogicalPlan::Projection {
            input: Box::new(plan),
            exprs,
            schema: schema.clone(),
        };
    }
    Ok(Some(plan))
}

/// The share by which the exact order must join fewer rows than the greedy ones to be
/// taken: sums of the same joins' estimates in another order differ by rounding only.
const TIE: f64 = 1e-9;

/// The most inputs a region is also ordered bushily for. The pairwise search tries every two
/// parts at every step (cubic in the inputs, times the conditions): 16 covers TPC-H's regions
/// (at most 8) and keeps a 64-table clique's planning short.
const BUSHY_MAX_INPUTS: usize = 16;

/// The estimated rows every join of `plan`'s region produces, summed: what an order costs.
fn joined_rows(plan: &LogicalPlan) -> f64 {
    fn sum(plan: &LogicalPlan) -> f64 {
        match plan {
            LogicalPlan::Join {
                left,
                right,
                kind: JoinKind::Inner,
                ..
            } => estimate_rows(plan) + sum(left) + sum(right),
            _ => 0.0,
        }
    }
    memoized(|| sum(plan))
}

/// [`order_probes`] on `plan`'s left spine and on every build input's.
fn order_tree(plan: LogicalPlan) -> LogicalPlan {
    order_builds(order_probes(plan))
}

/// [`order_tree`] on the build input of every join on `plan`'s left spine.
fn order_builds(plan: LogicalPlan) -> LogicalPlan {
    match plan {
        LogicalPlan::Join {
            left,
            right,
            kind: JoinKind::Inner,
            on,
            filter,
            ..
        } => {
            let (left, right) = (order_builds(*left), order_tree(*right));
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
        other => other,
    }
}

/// A join on the left spine: its build (right) input, keys and residual filter.
struct Probe {
    build: LogicalPlan,
    on: Vec<(Expr, Expr)>,
    filter: Option<Expr>,
}

/// Reorders the inner joins on `plan`'s left spine by their estimated output over the
/// spine's bottom input, smallest first (stable), where each reads only that input and its
/// own build; otherwise `plan` comes back as it is.
fn order_probes(plan: LogicalPlan) -> LogicalPlan {
    let mut probes = Vec::new();
    let mut node = plan;
    let base = loop {
        match node {
            LogicalPlan::Join {
                left,
                right,
                kind: JoinKind::Inner,
                on,
                filter,
                ..
            } => {
                probes.push(Probe {
                    build: *right,
                    on,
                    filter,
                });
                node = *left;
            }
            other => break other,
        }
    };
    probes.reverse();
    let reads_base_and_build = |p: &Probe| {
        let (bs, rs) = (base.schema(), p.build.schema());
        let left_ok =
            p.on.iter()
                .all(|(l, _)| l.columns().iter().all(|c| bs.has(c)));
        let filter_ok = p
            .filter
            .as_ref()
            .is_none_or(|f| f.columns().iter().all(|c| bs.has(c) || rs.has(c)));
        left_ok && filter_ok
    };
    if probes.len() > 1 && probes.iter().all(reads_base_and_build) {
        let alone: Vec<f64> = memoized(|| {
            probes
                .iter()
                .map(|p| join_rows(&base, &p.build, &JoinKind::Inner, &p.on, p.filter.as_ref()))
                .collect()
        });
        let mut order: Vec<usize> = (0..probes.len()).collect();
        order.sort_by(|&a, &b| alone[a].total_cmp(&alone[b]));
        let mut slots: Vec<Option<Probe>> = probes.into_iter().map(Some).collect();
        probes = order.into_iter().filter_map(|i| slots[i].take()).collect();
    }
    probes.iter().fold(base, join)
}

/// `left` joined (inner) with the probe's build.
fn join(left: LogicalPlan, p: &Probe) -> LogicalPlan {
    let schema = JoinKind::Inner.output_schema(left.schema(), p.build.schema(), None);
    LogicalPlan::Join {
        left: Box::new(left),
        right: Box::new(p.build.clone()),
        kind: JoinKind::Inner,
        on: p.on.clone(),
        filter: p.filter.clone(),
        schema,
    }
}

#[cfg(test)]
mod tests {
    use super::{order_probes, ReorderJoins};
    use crate::expr::col;
    use crate::optimizer::rules::test_data_table;
    use crate::optimizer::OptimizerRule;
    use crate::plan::{JoinKind, LogicalPlan, PlanBuilder};

    /// A memory table of `rows` rows whose integer columns all hold the row number.
    fn table(name: &str, cols: &[&str], rows: i64) -> PlanBuilder {
        let cols: Vec<(&str, Vec<i64>)> = cols.iter().map(|&c| (c, (0..rows).collect())).collect();
        test_data_table(name, &cols)
    }

    /// The build inputs' tables along the left spine, bottom first.
    fn spine(plan: &LogicalPlan) -> Vec<String> {
        match plan {
            LogicalPlan::Join { left, right, .. } => {
                let mut s = spine(left);
                s.push(match right.as_ref() {
                    LogicalPlan::Scan(scan) => scan.table.clone(),
                    other => format!("{other}"),
                });
                s
            }
            _ => Vec::new(),
        }
    }

    /// The tables of the scans under `plan`, sorted.
    fn tables(plan: &LogicalPlan) -> Vec<String> {
        let mut out = match plan {
            LogicalPlan::Scan(scan) => vec![scan.table.clone()],
            other => other.children().into_iter().flat_map(tables).collect(),
        };
        out.sort();
        out
    }

    /// The tables under each side of every join in `plan`.
    fn join_sides(plan: &LogicalPlan, out: &mut Vec<(Vec<String>, Vec<String>)>) {
        if let LogicalPlan::Join { left, right, .. } = plan {
            out.push((tables(left), tables(right)));
        }
        plan.children().into_iter().for_each(|c| join_sides(c, out));
    }

    /// A table of the given columns, each value `f(row)`.
    fn data(name: &str, rows: i64, cols: &[(&str, &dyn Fn(i64) -> i64)]) -> PlanBuilder {
        let cols: Vec<(&str, Vec<i64>)> = cols
            .iter()
            .map(|(c, f)| (*c, (0..rows).map(f).collect()))
            .collect();
        test_data_table(name, &cols)
    }

    /// TPC-H Q7's shape: a large input meets two chains of smaller ones, each ending in a
    /// selective one. Joining each chain on its own first joins fewer rows than carrying the
    /// large input's matches through every join, so the chains become build sides; a plain
    /// star (every input meets only the large one) stays left-deep.
    #[test]
    fn chains_off_a_large_input_are_joined_on_their_own_first() {
        let l = data(
            "l",
            100_000,
            &[("l_s", &|i| i % 1000), ("l_o", &|i| i % 10_000)],
        );
        let s = data("s", 1000, &[("s_k", &|i| i), ("s_n", &|i| i % 100)]);
        let n1 = data("n1", 4, &[("n1_k", &|i| i)]);
        let o = data("o", 10_000, &[("o_k", &|i| i), ("o_c", &|i| i % 1000)]);
        let c = data("c", 1000, &[("c_k", &|i| i), ("c_n", &|i| i % 100)]);
        let n2 = data("n2", 4, &[("n2_k", &|i| i)]);
        let plan = inner(inner(l, s, "l_s", "s_k"), n1, "s_n", "n1_k");
        let plan = inner(
            inner(inner(plan, o, "l_o", "o_k"), c, "o_c", "c_k"),
            n2,
            "c_n",
            "n2_k",
        );
        let reordered = ReorderJoins.rewrite(plan.build()).expect("reorder");
        let mut sides = Vec::new();
        join_sides(&reordered, &mut sides);
        let covered: Vec<Vec<String>> = sides
            .iter()
            .map(|(a, b)| {
                let mut all = [a.clone(), b.clone()].concat();
                all.sort();
                all
            })
            .collect();
        assert!(
            covered.contains(&vec!["c".into(), "n2".into()]),
            "{reordered}"
        );
        assert!(
            covered.contains(&vec!["c".into(), "n2".into(), "o".into()]),
            "{reordered}"
        );
        assert!(
            covered.contains(&vec!["n1".into(), "s".into()]),
            "{reordered}"
        );
        // The same rule on its own output changes nothing.
        let again = ReorderJoins.rewrite(reordered.clone()).expect("reorder");
        assert_eq!(again, reordered);

        let l = data(
            "l",
            100_000,
            &[("l_s", &|i| i % 1000), ("l_o", &|i| i % 10_000)],
        );
        let s = data("s", 1000, &[("s_k", &|i| i)]);
        let o = data("o", 10_000, &[("o_k", &|i| i)]);
        let star = inner(inner(l, s, "l_s", "s_k"), o, "l_o", "o_k").build();
        let reordered = ReorderJoins.rewrite(star).expect("reorder");
        let mut sides = Vec::new();
        join_sides(&reordered, &mut sides);
        assert!(sides.iter().all(|(_, b)| b.len() == 1), "{reordered}");
    }

    fn inner(left: PlanBuilder, right: PlanBuilder, l: &str, r: &str) -> PlanBuilder {
        left.join(right, JoinKind::Inner, vec![(col(l), col(r))], None)
            .expect("join")
    }

    /// Joins that each read only the probe input and their own build run most selective
    /// first, with the same columns (order aside); a join on an earlier build's column keeps
    /// its place.
    #[test]
    fn probes_of_one_input_run_most_selective_first() {
        let x = || table("x", &["x_a", "x_b"], 1000);
        let wide = || table("wide", &["w_k"], 1000);
        let narrow = || table("narrow", &["n_k"], 10);
        let plan = inner(inner(x(), wide(), "x_a", "w_k"), narrow(), "x_b", "n_k").build();
        let ordered = order_probes(plan.clone());
        assert_eq!(spine(&ordered), ["narrow", "wide"]);
        let mut names: Vec<String> = ordered
            .schema()
            .fields()
            .iter()
            .map(|f| f.name.clone())
            .collect();
        names.sort();
        assert_eq!(names, ["n_k", "w_k", "x_a", "x_b"]);
        // Already in order: unchanged.
        assert_eq!(
            order_probes(ordered.clone()).to_string(),
            ordered.to_string()
        );
        // The narrow join reads the wide build's column: it must stay after it.
        let dependent = inner(inner(x(), wide(), "x_a", "w_k"), narrow(), "w_k", "n_k").build();
        assert_eq!(spine(&order_probes(dependent)), ["wide", "narrow"]);
    }
}
