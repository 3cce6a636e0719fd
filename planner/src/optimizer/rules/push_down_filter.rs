//! Moves filter conjuncts as close to the data as they can go: through projections (when they
//! read only passed-through columns), sorts, aliases, DISTINCT, into every input of a UNION,
//! and joins (to the side that owns their columns, respecting outer-join semantics), onto an
//! aggregate's input (when they read only group columns), and into the scan itself. An
//! equality between the two sides of an inner join becomes a join key, so `FROM a, b WHERE
//! a.x = b.y` runs as a hash join; an OR over both sides also filters each side by what it
//! implies there.

use crate::error::PlanResult;
use crate::expr::{BinaryOp, ColumnRef, Expr};
use crate::optimizer::OptimizerRule;
use crate::plan::{JoinKind, LogicalPlan};
use crate::schema::PlanSchema;

pub struct PushDownFilter;

impl OptimizerRule for PushDownFilter {
    fn name(&self) -> &'static str {
        "push_down_filter"
    }

    fn rewrite(&self, plan: LogicalPlan) -> PlanResult<LogicalPlan> {
        rewrite(plan)
    }
}

fn rewrite(plan: LogicalPlan) -> PlanResult<LogicalPlan> {
    match plan {
        LogicalPlan::Filter { input, predicate } => push(*input, conjuncts(predicate)),
        // A join's own ON conjuncts may move into its inputs even with no filter above.
        join @ LogicalPlan::Join { .. } => push(join, Vec::new()),
        other => other.map_children(rewrite),
    }
}

/// The conjuncts of `e`, with terms common to every branch of an OR factored out:
/// `(a AND b) OR (a AND c)` gives `a` and `b OR c`, so a join condition repeated in each
/// branch (TPC-H Q19) becomes a join key instead of a filter over a cross product.
pub(crate) fn conjuncts(e: Expr) -> Vec<Expr> {
    let mut out = Vec::new();
    for c in e.split_conjunction() {
        out.extend(factor_or(c));
    }
    out
}

fn split_disjunction(e: Expr) -> Vec<Expr> {
    match e {
        Expr::Binary {
            left,
            op: BinaryOp::Or,
            right,
        } => {
            let mut v = split_disjunction(*left);
            v.extend(split_disjunction(*right));
            v
        }
        e => vec![e],
    }
}

fn factor_or(e: Expr) -> Vec<Expr> {
    if !matches!(
        e,
        Expr::Binary {
            op: BinaryOp::Or,
            ..
        }
    ) {
        return vec![e];
    }
    let branches: Vec<Vec<Expr>> = split_disjunction(e.clone())
        .into_iter()
        .map(Expr::split_conjunction)
        .collect();
    let common: Vec<Expr> = branches[0]
        .iter()
        .filter(|t| branches[1..].iter().all(|b| b.contains(t)))
        .cloned()
        .collect();
    if common.is_empty() {
        return vec![e];
    }
    let rest: Vec<Option<Expr>> = branches
        .into_iter()
        .map(|b| Expr::conjunction(b.into_iter().filter(|t| !common.contains(t)).collect()))
        .collect();
    let mut out = common;
    // A branch left with nothing is always true, and so is the whole OR.
    if rest.iter().all(Option::is_some) {
        out.extend(rest.into_iter().flatten().reduce(|a, b| a.or(b)));
    }
    out
}

/// Whether every column of `e` resolves in `schema`.
fn resolves(e: &Expr, schema: &PlanSchema) -> bool {
    e.all_columns(|c| schema.has(c))
}

/// What the OR `p` implies about the rows of one side of a join: in each branch, the
/// conjuncts over that side's columns alone, ANDed; the branches ORed. `None` when `p` is not
/// an OR or some branch says nothing about the side (the implication is then TRUE). Filtering
/// the side by it before the join keeps every row that could satisfy `p` (Q7's nations, Q19's
/// parts), and `p` itself stays on the join.
fn implied_on(p: &Expr, side: &PlanSchema) -> Option<Expr> {
    let branches = split_disjunction(p.clone());
    if branches.len() < 2 {
        return None;
    }
    let own = branches
        .into_iter()
        .map(|b| {
            let own = b
                .split_conjunction()
                .into_iter()
                .filter(|c| c.reads_columns() && resolves(c, side))
                .collect();
            Expr::conjunction(own)
        })
        .collect::<Option<Vec<_>>>()?;
    dedup(own).into_iter().reduce(|a, b| a.or(b))
}

/// `preds` without repeats (the first of each stays): a predicate implied at a join is
/// derived again on every pass, and must land only once.
fn dedup(preds: Vec<Expr>) -> Vec<Expr> {
    let mut seen = Seen::default();
    preds.into_iter().filter(|p| seen.insert(p)).collect()
}

/// Predicates met so far, found by their text and then compared whole, so that dropping
/// repeats from thousands of conjuncts takes linear time (two predicates with one text are
/// rare; equal ones always share it).
#[derive(Default)]
struct Seen(std::collections::HashMap<String, Vec<Expr>>);

impl Seen {
    /// Whether `e` is new (and now seen).
    fn insert(&mut self, e: &Expr) -> bool {
        let same_text = self.0.entry(e.to_string()).or_default();
        if same_text.contains(e) {
            return false;
        }
        same_text.push(e.clone());
        true
    }
}

/// Wraps `plan` in a filter of the `kept` conjuncts (if any).
fn keep_above(plan: LogicalPlan, kept: Vec<Expr>) -> LogicalPlan {
    match Expr::conjunction(dedup(kept)) {
        Some(predicate) => LogicalPlan::Filter {
            input: Box::new(plan),
            predicate,
        },
        None => plan,
    }
}

/// Rewrites column references of `e` through `map` (returns None if one cannot be mapped).
fn remap(e: &Expr, map: &dyn Fn(&ColumnRef) -> Option<Expr>) -> Option<Expr> {
    let mut ok = true;
    let out = e.clone().replace(&mut |x: &Expr| match x {
        Expr::Column(c) => Some(map(c).unwrap_or_else(|| {
            ok = false;
            x.clone()
        })),
        _ => None,
    });
    ok.then_some(out)
}

/// Splits `preds` into those whose columns all map through `map` (rewritten, to go below)
/// and the rest (unchanged, to stay above).
fn partition_remap(
    preds: Vec<Expr>,
    map: &dyn Fn(&ColumnRef) -> Option<Expr>,
) -> (Vec<Expr>, Vec<Expr>) {
    let (mut down, mut kept) = (Vec::new(), Vec::new());
    for p in preds {
        match remap(&p, map) {
            Some(q) => down.push(q),
            None => kept.push(p),
        }
    }
    (down, kept)
}

/// Pushes `preds` (conjuncts) into `plan` as far as they go.
fn push(plan: LogicalPlan, preds: Vec<Expr>) -> PlanResult<LogicalPlan> {
    match plan {
        LogicalPlan::Filter { input, predicate } => {
            let mut all = preds;
            all.extend(conjuncts(predicate));
            push(*input, dedup(all))
        }
        LogicalPlan::Scan(mut scan) => {
            // Compared with columns named as the scan names them, so one predicate reached
            // by two paths (qualified and not) is recognised as one.
            let fields = scan.schema.clone();
            let canonical = |e: &Expr| {
                remap(e, &|c: &ColumnRef| {
                    let i = fields.position(c)?;
                    Some(Expr::Column(fields.field(i).column_ref()))
                })
            };
            // (A predicate over a column the scan cannot name has no canonical form; such
            // predicates count as one, as before.)
            let mut seen = Seen::default();
            let mut uncanonical = false;
            let mut new = |key: Option<Expr>| match key {
                Some(k) => seen.insert(&k),
                None => !std::mem::replace(&mut uncanonical, true),
            };
            for f in &scan.filters {
                new(canonical(f));
            }
            for p in preds {
                if new(canonical(&p)) {
                    scan.filters.push(p);
                }
            }
            Ok(LogicalPlan::Scan(scan))
        }
        LogicalPlan::Sort { input, keys } => Ok(LogicalPlan::Sort {
            input: Box::new(push(*input, preds)?),
            keys,
        }),
        LogicalPlan::Projection {
            input,
            exprs,
            schema,
        } => {
            // A column of the projection that is a plain input column (maybe renamed).
            let passthrough = |c: &ColumnRef| -> Option<Expr> {
                let i = schema.position(c)?;
                match exprs[i].clone().unalias() {
                    e @ Expr::Column(_) => Some(e),
                    _ => None,
                }
            };
            let (down, kept) = partition_remap(preds, &passthrough);
            let input = push(*input, down)?;
            Ok(keep_above(
                LogicalPlan::Projection {
                    input: Box::new(input),
                    exprs,
                    schema,
                },
                kept,
            ))
        }
        LogicalPlan::SubqueryAlias {
            input,
            alias,
            schema,
        } => {
            let inner = input.schema().clone();
            let map = |c: &ColumnRef| {
                schema
                    .position(c)
                    .map(|i| Expr::Column(inner.field(i).column_ref()))
            };
            let (down, kept) = partition_remap(preds, &map);
            let input = push(*input, down)?;
            Ok(keep_above(
                LogicalPlan::SubqueryAlias {
                    input: Box::new(input),
                    alias,
                    schema,
                },
                kept,
            ))
        }
        LogicalPlan::Aggregate {
            input,
            group,
            aggs,
            schema,
        } => {
            // Conjuncts over group columns that are plain input columns filter the input.
            let map = |c: &ColumnRef| {
                let i = schema.position(c)?;
                match group.get(i)? {
                    e @ Expr::Column(_) => Some(e.clone()),
                    _ => None,
                }
            };
            let (down, kept) = partition_remap(preds, &map);
            let input = push(*input, down)?;
            Ok(keep_above(
                LogicalPlan::Aggregate {
                    input: Box::new(input),
                    group,
                    aggs,
                    schema,
                },
                kept,
            ))
        }
        LogicalPlan::Join {
            left,
            right,
            kind,
            mut on,
            filter,
            schema,
        } => {
            let (ls, rs) = (left.schema().clone(), right.schema().clone());
            let mut all = preds;
            // An inner join's residual filter is just another conjunct over both sides.
            let mut filter = filter;
            if kind == JoinKind::Inner {
                all.extend(filter.take().map(conjuncts).unwrap_or_default());
            }
            let (mut to_left, mut to_right, mut residual, mut kept) =
                (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            // An ON conjunct over only the side whose rows are matched, never preserved (the
            // right of a left, semi, anti or mark join; the left of a right join), filters
            // that side before the join: a row failing it could never match anyway.
            if !matches!(kind, JoinKind::Inner | JoinKind::Full) {
                if let Some(f) = filter.take() {
                    let mut stay = Vec::new();
                    for c in conjuncts(f) {
                        let has_cols = c.reads_columns();
                        if has_cols && kind == JoinKind::Right && resolves(&c, &ls) {
                            to_left.push(c);
                        } else if has_cols && kind != JoinKind::Right && resolves(&c, &rs) {
                            to_right.push(c);
                        } else {
                            stay.push(c);
                        }
                    }
                    filter = Expr::conjunction(stay);
                }
            }
            // Which sides a predicate above the join may move to: a side whose rows all
            // reach the output unchanged (not NULL-extended by the other side).
            let (left_ok, right_ok) = match kind {
                JoinKind::Inner => (true, true),
                JoinKind::Left
                | JoinKind::Semi
                | JoinKind::Anti { .. }
                | JoinKind::Mark { .. }
                | JoinKind::Count => (true, false),
                JoinKind::Right => (false, true),
                JoinKind::Full => (false, false),
            };
            for p in all {
                let (in_l, in_r) = (resolves(&p, &ls), resolves(&p, &rs));
                let has_cols = p.reads_columns();
                if has_cols && in_l && left_ok {
                    to_left.push(p);
                } else if has_cols && in_r && right_ok {
                    to_right.push(p);
                } else if kind == JoinKind::Inner && has_cols {
                    match equi_key(&p, &ls, &rs) {
                        Some(pair) => on.push(pair),
                        None => residual.push(p),
                    }
                } else {
                    kept.push(p);
                }
            }
            // An OR over both sides of an inner join also filters each side by what it
            // implies there.
            for p in &residual {
                to_left.extend(implied_on(p, &ls));
                to_right.extend(implied_on(p, &rs));
            }
            let filter = match kind {
                JoinKind::Inner => Expr::conjunction(residual),
                _ => filter,
            };
            let left = push(*left, to_left)?;
            let right = push(*right, to_right)?;
            let join = LogicalPlan::Join {
                left: Box::new(left),
                right: Box::new(right),
                kind,
                on,
                filter,
                schema,
            };
            Ok(keep_above(join, kept))
        }
        LogicalPlan::Union { inputs, schema } => {
            // Output column i is column i of every input: each input gets the conjuncts
            // rewritten onto its own columns; a conjunct some input cannot take stays above.
            let mut pushed: Vec<Vec<Expr>> = vec![Vec::new(); inputs.len()];
            let mut kept = Vec::new();
            for p in preds {
                let per_input: Option<Vec<Expr>> = inputs
                    .iter()
                    .map(|input| {
                        let ins = input.schema();
                        remap(&p, &|c: &ColumnRef| {
                            schema
                                .position(c)
                                .map(|i| Expr::Column(ins.field(i).column_ref()))
                                .filter(|e| resolves(e, ins))
                        })
                    })
                    .collect();
                match per_input {
                    Some(ps) => pushed.iter_mut().zip(ps).for_each(|(v, p)| v.push(p)),
                    None => kept.push(p),
                }
            }
            let inputs = inputs
                .into_iter()
                .zip(pushed)
                .map(|(input, ps)| push(input, ps))
                .collect::<PlanResult<Vec<_>>>()?;
            Ok(keep_above(LogicalPlan::Union { inputs, schema }, kept))
        }
        // Filtering commutes with removing duplicates.
        LogicalPlan::Distinct { input } => Ok(LogicalPlan::Distinct {
            input: Box::new(push(*input, preds)?),
        }),
        other => {
            let other = other.map_children(rewrite)?;
            Ok(keep_above(other, preds))
        }
    }
}

/// `l = r` with one side over the left input and the other over the right: a join key.
fn equi_key(p: &Expr, ls: &PlanSchema, rs: &PlanSchema) -> Option<(Expr, Expr)> {
    let Expr::Binary {
        left,
        op: BinaryOp::Eq,
        right,
    } = p
    else {
        return None;
    };
    let (a, b) = (left.as_ref(), right.as_ref());
    let only = |e: &Expr, s: &PlanSchema| e.reads_columns() && resolves(e, s);
    if only(a, ls) && only(b, rs) {
        Some((a.clone(), b.clone()))
    } else if only(a, rs) && only(b, ls) {
        Some((b.clone(), a.clone()))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::{conjuncts, rewrite};
    use crate::expr::{col, lit};
    use crate::optimizer::rules::test_table as table;
    use crate::plan::JoinKind;

    /// An OR over both sides of a join filters each side by its own part of every branch
    /// (TPC-H Q7, Q19), keeps the OR on the join, and lands once however often it runs; a
    /// branch silent about a side gives that side nothing; a repeated branch counts once.
    #[test]
    fn an_or_over_both_sides_filters_each_side_by_what_it_implies() {
        let (a1, b2) = (col("a").eq(lit(1i64)), col("b").eq(lit(2i64)));
        let (a3, b4) = (col("a").eq(lit(3i64)), col("b").eq(lit(4i64)));
        let plan = table("l", &["k", "a"])
            .join(
                table("r", &["j", "b"]),
                JoinKind::Inner,
                vec![(col("k"), col("j"))],
                None,
            )
            .unwrap()
            .filter(
                a1.and(b2)
                    .or(a3.clone().and(b4))
                    .or(a3.and(col("j").gt(col("k")))),
            )
            .unwrap()
            .build();
        let once = rewrite(plan).unwrap();
        assert_eq!(
            once.to_string(),
            "Join: Inner on=[k = j] filter=(((a = 1) AND (b = 2)) OR ((a = 3) AND (b = 4))) OR \
             ((a = 3) AND (j > k))\n  Scan: l (memory) filters=[(a = 1) OR (a = 3)]\n  \
             Scan: r (memory)\n"
        );
        let twice = rewrite(once.clone()).unwrap();
        assert_eq!(twice.to_string(), once.to_string());
    }

    #[test]
    fn factors_terms_common_to_every_or_branch() {
        let (a, b, c) = (
            col("a").eq(col("x")),
            col("b").gt(col("y")),
            col("c").lt(col("z")),
        );
        let e = a.clone().and(b.clone()).or(c.clone().and(a.clone()));
        let got: Vec<String> = conjuncts(e).iter().map(ToString::to_string).collect();
        assert_eq!(got, vec!["a = x", "(b > y) OR (c < z)"]);
        // A branch that is only the common term makes the OR always true.
        let e = a.clone().or(a.clone().and(b.clone()));
        let got: Vec<String> = conjuncts(e).iter().map(ToString::to_string).collect();
        assert_eq!(got, vec!["a = x"]);
        // Nothing in common: unchanged.
        let e = b.clone().or(c.clone());
        assert_eq!(conjuncts(e.clone()), vec![e]);
    }
}
