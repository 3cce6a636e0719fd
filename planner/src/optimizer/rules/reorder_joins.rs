//! Orders multi-way inner joins by estimated size, avoiding cross products.
//!
//! A region of adjacent inner joins is flattened into its inputs and its conditions. The new
//! order is built greedily: first the pair of inputs linked by an equality whose join is
//! estimated smallest, then, step by step, the linked input giving the smallest estimated
//! join (estimates use distinct-value counts where known, see `cardinality`, so a join on a
//! low-cardinality column is seen to multiply rows). An input is joined without a condition
//! only when nothing linked is left. At each step the
//! smaller side becomes the hash join's build (right) side, and every condition is placed at
//! the first join where all its columns are available: equalities across the two sides as
//! hash keys, the rest as the join's residual filter. A projection above restores the
//! region's original column order.
//!
//! The joins along the left spine all stream the spine's bottom input (the probe side)
//! through their builds, in spine order. Where every one of them is on that input's columns
//! and its own build's alone, they are put in order of their estimated output over the probe
//! input, smallest first, so the most selective probe runs on the most rows and the others on
//! what it keeps (TPC-H Q9: lineitem meets the filtered parts before suppliers and orders).
//! Estimates depend only on the data (see `cardinality`), so
//! the plan is the same for any thread count; a region already in the chosen shape is left
//! as it is, so the rule reaches a fixed point.

use super::push_down_filter::conjuncts;
use crate::error::PlanResult;
use crate::expr::{BinaryOp, Expr};
use crate::optimizer::cardinality::{estimate_rows, join_rows, memoized};
use crate::optimizer::OptimizerRule;
use crate::plan::{JoinKind, LogicalPlan};
use crate::schema::PlanSchema;

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
        if let Some(better) = reorder_region(join, predicate)? {
            if better != plan {
                return Ok(better);
            }
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

/// A condition and the inputs it reads.
struct Condition {
    expr: Expr,
    leaves: Vec<usize>,
    placed: bool,
}

impl Condition {
    /// `a = b` with each side reading one different input.
    fn is_link(&self) -> bool {
        self.leaves.len() == 2
            && matches!(
                self.expr,
                Expr::Binary {
                    op: BinaryOp::Eq,
                    ..
                }
            )
    }
}

/// Which inputs `e` reads; `None` if a column resolves in no input or in several.
fn leaves_of(e: &Expr, schemas: &[&PlanSchema]) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for c in e.columns() {
        let hits: Vec<usize> = (0..schemas.len()).filter(|&i| schemas[i].has(&c)).collect();
        let [i] = hits.as_slice() else {
            return None;
        };
        if !out.contains(i) {
            out.push(*i);
        }
    }
    out.sort_unstable();
    Some(out)
}

/// The greedy join order of `leaves`; `None` when the region cannot be reordered safely.
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
    let mut conds = Vec::with_capacity(conditions.len());
    for expr in conditions {
        let Some(leaves) = leaves_of(&expr, &schemas) else {
            return Ok(None);
        };
        conds.push(Condition {
            expr,
            leaves,
            placed: false,
        });
    }
    let rows: Vec<f64> = leaves.iter().map(estimate_rows).collect();
    let linked = |a: usize, b: usize, conds: &[Condition]| {
        conds
            .iter()
            .any(|c| c.is_link() && c.leaves.contains(&a) && c.leaves.contains(&b))
    };
    let n = leaves.len();
    let mut slots: Vec<Option<LogicalPlan>> = leaves.into_iter().map(Some).collect();

    // The first pair: linked, smallest estimated join (ties: lower positions); without any
    // link, the smallest input. Candidates are estimated without being built (no plan is
    // built while the estimates are shared).
    let best = memoized(|| {
        let mut best: Option<(f64, usize, usize, Step)> = None;
        for a in 0..n {
            for b in a + 1..n {
                if !linked(a, b, &conds) {
                    continue;
                }
                let (Some(pa), Some(pb)) = (&slots[a], &slots[b]) else {
                    continue;
                };
                let step = join_step(pa, &[a], pb, b, &conds);
                let est = step.estimate(pa, pb);
                if best.as_ref().is_none_or(|(e, ..)| est < *e) {
                    best = Some((est, a, b, step));
                }
            }
        }
        best
    });
    let (mut current, mut joined) = match best {
        Some((_, a, b, step)) => match (slots[a].take(), slots[b].take()) {
            (Some(pa), Some(pb)) => (step.commit(&mut conds, pa, pb), vec![a, b]),
            _ => return Ok(None),
        },
        None => {
            let first = (0..n)
                .min_by(|&a, &b| rows[a].total_cmp(&rows[b]).then(a.cmp(&b)))
                .unwrap_or(0);
            match slots[first].take() {
                Some(p) => (p, vec![first]),
                None => return Ok(None),
            }
        }
    };
    // Then, step by step, the linked input giving the smallest estimated join; an unlinked
    // one (a cross product) only when nothing linked is left.
    while joined.len() < n {
        let left: Vec<usize> = (0..n).filter(|i| !joined.contains(i)).collect();
        let linked_left: Vec<usize> = left
            .iter()
            .copied()
            .filter(|&k| joined.iter().any(|&j| linked(j, k, &conds)))
            .collect();
        let candidates = if linked_left.is_empty() {
            left
        } else {
            linked_left
        };
        let choice = memoized(|| {
            let mut choice: Option<(f64, usize, Step)> = None;
            for k in candidates {
                let Some(pk) = &slots[k] else { continue };
                let step = join_step(&current, &joined, pk, k, &conds);
                let est = step.estimate(&current, pk);
                let better = match &choice {
                    None => true,
                    Some((e, j, _)) => est < *e || (est == *e && rows[k] < rows[*j]),
                };
                if better {
                    choice = Some((est, k, step));
                }
            }
            choice
        });
        let Some((_, k, step)) = choice else { break };
        let Some(next) = slots[k].take() else { break };
        current = step.commit(&mut conds, current, next);
        joined.push(k);
    }
    let mut plan = order_probes(current);
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

/// A candidate join of the inputs joined so far with one more: which side builds, the
/// keys and residual filter, and the conditions it places.
struct Step {
    /// The new input builds (is the right side); otherwise the inputs joined so far do.
    next_builds: bool,
    /// (left, right) key pairs.
    on: Vec<(Expr, Expr)>,
    filter: Option<Expr>,
    placed: Vec<usize>,
}

impl Step {
    /// The estimated rows of this join of `current` (the inputs joined so far) and `next`.
    fn estimate(&self, current: &LogicalPlan, next: &LogicalPlan) -> f64 {
        let (left, right) = sides(self.next_builds, current, next);
        join_rows(
            left,
            right,
            &JoinKind::Inner,
            &self.on,
            self.filter.as_ref(),
        )
    }

    /// Builds the join and marks its conditions placed.
    fn commit(
        self,
        conds: &mut [Condition],
        current: LogicalPlan,
        next: LogicalPlan,
    ) -> LogicalPlan {
        for &i in &self.placed {
            conds[i].placed = true;
        }
        let (left, right) = sides(self.next_builds, current, next);
        let schema = JoinKind::Inner.output_schema(left.schema(), right.schema(), None);
        LogicalPlan::Join {
            left: Box::new(left),
            right: Box::new(right),
            kind: JoinKind::Inner,
            on: self.on,
            filter: self.filter,
            schema,
        }
    }
}

/// The (left, right) inputs of a join of the inputs joined so far and the next one: the
/// next one on the right (it builds) when `next_builds`.
fn sides<T>(next_builds: bool, current: T, next: T) -> (T, T) {
    match next_builds {
        true => (current, next),
        false => (next, current),
    }
}

/// Joins input `next` (position `k`) onto `current` (covering inputs `joined`): the side with
/// fewer estimated rows builds (right), and every condition now covered is placed on this
/// join: equalities across the sides as keys, the rest as the residual filter.
fn join_step(
    current: &LogicalPlan,
    joined: &[usize],
    next: &LogicalPlan,
    k: usize,
    conds: &[Condition],
) -> Step {
    let next_builds = estimate_rows(next) <= estimate_rows(current);
    let (left, right) = sides(next_builds, current, next);
    let (ls, rs) = (left.schema(), right.schema());
    let mut on = Vec::new();
    let mut filter = Vec::new();
    let mut placed = Vec::new();
    let over =
        |e: &Expr, s: &PlanSchema| !e.columns().is_empty() && e.columns().iter().all(|x| s.has(x));
    for (i, c) in conds.iter().enumerate() {
        if c.placed || !c.leaves.iter().all(|l| *l == k || joined.contains(l)) {
            continue;
        }
        placed.push(i);
        if let Expr::Binary {
            left: a,
            op: BinaryOp::Eq,
            right: b,
        } = &c.expr
        {
            if over(a, ls) && over(b, rs) {
                on.push((*a.clone(), *b.clone()));
                continue;
            }
            if over(b, ls) && over(a, rs) {
                on.push((*b.clone(), *a.clone()));
                continue;
            }
        }
        filter.push(c.expr.clone());
    }
    Step {
        next_builds,
        on,
        filter: Expr::conjunction(filter),
        placed,
    }
}

#[cfg(test)]
mod tests {
    use super::order_probes;
    use crate::expr::col;
    use crate::optimizer::rules::test_data_table;
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
