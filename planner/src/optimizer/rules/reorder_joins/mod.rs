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

mod exact;

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

/// A condition and the inputs it reads.
#[derive(Clone)]
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

/// Which inputs an equality links to which, as bit sets: asking whether two groups of inputs
/// are linked is then a few word operations per input, not a pass over every condition
/// (planning a 64-table clique asked that millions of times).
struct Links {
    words: usize,
    adjacent: Vec<Vec<u64>>,
}

impl Links {
    fn new(n: usize, conds: &[Condition]) -> Self {
        let words = n.div_ceil(64).max(1);
        let mut adjacent = vec![vec![0u64; words]; n];
        for c in conds.iter().filter(|c| c.is_link()) {
            let (p, q) = (c.leaves[0], c.leaves[1]);
            adjacent[p][q / 64] |= 1 << (q % 64);
            adjacent[q][p / 64] |= 1 << (p % 64);
        }
        Links { words, adjacent }
    }

    /// The inputs an equality links input `i` to, as a bit set of the first 64.
    fn adjacent_mask(&self, i: usize) -> usize {
        self.adjacent[i][0] as usize
    }

    /// Whether an equality links an input of `a` to one of `b`.
    fn linked(&self, a: &[usize], b: &[usize]) -> bool {
        let mut set = vec![0u64; self.words];
        for &j in b {
            set[j / 64] |= 1 << (j % 64);
        }
        a.iter()
            .any(|&i| self.adjacent[i].iter().zip(&set).any(|(x, y)| x & y != 0))
    }
}

/// The left-deep order: the linked pair whose join is estimated smallest first, then, step
/// by step, the linked input giving the smallest estimated join onto what is joined so far
/// (an unlinked one only when nothing linked is left). The conditions come back with those
/// placed marked.
fn left_deep(
    leaves: Vec<LogicalPlan>,
    mut conds: Vec<Condition>,
) -> Option<(LogicalPlan, Vec<Condition>)> {
    let rows: Vec<f64> = leaves.iter().map(estimate_rows).collect();
    let n = leaves.len();
    let links = Links::new(n, &conds);
    let mut slots: Vec<Option<LogicalPlan>> = leaves.into_iter().map(Some).collect();

    // The first pair: linked, smallest estimated join (ties: lower positions); without any
    // link, the smallest input. Candidates are estimated without being built (no plan is
    // built while the estimates are shared).
    let best = memoized(|| {
        let mut best: Option<(f64, usize, usize, Step)> = None;
        for a in 0..n {
            for b in a + 1..n {
                if !links.linked(&[a], &[b]) {
                    continue;
                }
                let (Some(pa), Some(pb)) = (&slots[a], &slots[b]) else {
                    continue;
                };
                let step = join_step(pa, &[a], pb, &[b], &conds);
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
            _ => return None,
        },
        None => {
            let first = (0..n)
                .min_by(|&a, &b| rows[a].total_cmp(&rows[b]).then(a.cmp(&b)))
                .unwrap_or(0);
            (slots[first].take()?, vec![first])
        }
    };
    while joined.len() < n {
        let left: Vec<usize> = (0..n).filter(|i| !joined.contains(i)).collect();
        let linked_left: Vec<usize> = left
            .iter()
            .copied()
            .filter(|&k| links.linked(&joined, &[k]))
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
                let step = join_step(&current, &joined, pk, &[k], &conds);
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
    Some((current, conds))
}

/// Inputs joined so far into one plan, and which.
struct Part {
    plan: LogicalPlan,
    leaves: Vec<usize>,
}

/// The bushy order: again and again, the two parts (inputs, or inputs joined already) linked
/// by a condition whose join is estimated smallest are joined (ties: lower positions), the
/// smaller side building; without any link left, the two smallest parts. So inputs that
/// filter one another meet before either meets a larger one (TPC-H Q7: the customers of two
/// nations meet their orders before lineitem probes both sides).
fn pairwise(leaves: Vec<LogicalPlan>, mut conds: Vec<Condition>) -> (LogicalPlan, Vec<Condition>) {
    let links = Links::new(leaves.len(), &conds);
    let mut parts: Vec<Part> = leaves
        .into_iter()
        .enumerate()
        .map(|(i, plan)| Part {
            plan,
            leaves: vec![i],
        })
        .collect();
    while parts.len() > 1 {
        let best = memoized(|| {
            let mut best: Option<(f64, usize, usize, Step)> = None;
            for a in 0..parts.len() {
                for b in a + 1..parts.len() {
                    let (pa, pb) = (&parts[a], &parts[b]);
                    if !links.linked(&pa.leaves, &pb.leaves) {
                        continue;
                    }
                    let step = join_step(&pa.plan, &pa.leaves, &pb.plan, &pb.leaves, &conds);
                    let est = step.estimate(&pa.plan, &pb.plan);
                    if best.as_ref().is_none_or(|(e, ..)| est < *e) {
                        best = Some((est, a, b, step));
                    }
                }
            }
            best
        });
        let (a, b, step) = match best {
            Some((_, a, b, step)) => (a, b, step),
            None => {
                let rows: Vec<f64> =
                    memoized(|| parts.iter().map(|p| estimate_rows(&p.plan)).collect());
                let mut order: Vec<usize> = (0..parts.len()).collect();
                order.sort_by(|&x, &y| rows[x].total_cmp(&rows[y]).then(x.cmp(&y)));
                let (a, b) = (order[0].min(order[1]), order[0].max(order[1]));
                let (pa, pb) = (&parts[a], &parts[b]);
                let step =
                    memoized(|| join_step(&pa.plan, &pa.leaves, &pb.plan, &pb.leaves, &conds));
                (a, b, step)
            }
        };
        let pb = parts.remove(b);
        let pa = parts.remove(a);
        let mut leaves = pa.leaves;
        leaves.extend(pb.leaves);
        let plan = step.commit(&mut conds, pa.plan, pb.plan);
        parts.insert(a, Part { plan, leaves });
    }
    let plan = parts.pop().map(|p| p.plan).expect("at least two inputs");
    (plan, conds)
}

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

/// Joins `next` (covering inputs `next_leaves`) onto `current` (covering `joined`): the side with
/// fewer estimated rows builds (right), and every condition now covered is placed on this
/// join: equalities across the sides as keys, the rest as the residual filter.
fn join_step(
    current: &LogicalPlan,
    joined: &[usize],
    next: &LogicalPlan,
    next_leaves: &[usize],
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
    // The inputs on either side, as a set (a region has one condition per pair of inputs at
    // most, a clique's many: membership must not scan the lists).
    let width = joined
        .iter()
        .chain(next_leaves)
        .max()
        .map_or(1, |m| m / 64 + 1);
    let mut covered = vec![0u64; width];
    for &l in joined.iter().chain(next_leaves) {
        covered[l / 64] |= 1 << (l % 64);
    }
    let inside = |l: usize| {
        covered
            .get(l / 64)
            .is_some_and(|w| w & (1 << (l % 64)) != 0)
    };
    for (i, c) in conds.iter().enumerate() {
        if c.placed || !c.leaves.iter().all(|&l| inside(l)) {
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
