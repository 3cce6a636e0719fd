//! The bushy order of a region: again and again the two parts (inputs, or inputs joined
//! already) whose join is estimated smallest are joined, so inputs that filter one another
//! meet before either meets a larger one.

use super::condition::{Condition, Links};
use super::inputs::InputSet;
use super::step::Step;
use crate::optimizer::cardinality::{estimate_rows, memoized};
use crate::plan::LogicalPlan;

/// Inputs joined so far into one plan, and which.
struct Part {
    plan: LogicalPlan,
    inputs: InputSet,
}

/// The bushy order: again and again, the two parts (inputs, or inputs joined already) linked
/// by a condition whose join is estimated smallest are joined (ties: lower positions), the
/// smaller side building; without any link left, the two smallest parts. So inputs that
/// filter one another meet before either meets a larger one (TPC-H Q7: the customers of two
/// nations meet their orders before lineitem probes both sides).
pub(super) fn pairwise(
    leaves: Vec<LogicalPlan>,
    mut conds: Vec<Condition>,
) -> (LogicalPlan, Vec<Condition>) {
    let n = leaves.len();
    let links = Links::new(n, &conds);
    let mut parts: Vec<Part> = leaves
        .into_iter()
        .enumerate()
        .map(|(i, plan)| Part {
            plan,
            inputs: InputSet::of(n, [i]),
        })
        .collect();
    let all = 0..conds.len();
    while parts.len() > 1 {
        let best = memoized(|| {
            let mut best: Option<(f64, usize, usize, Step)> = None;
            for a in 0..parts.len() {
                for b in a + 1..parts.len() {
                    let (pa, pb) = (&parts[a], &parts[b]);
                    if !links.linked(&pa.inputs, &pb.inputs) {
                        continue;
                    }
                    let step = Step::new(
                        &pa.plan,
                        &pa.inputs,
                        &pb.plan,
                        &pb.inputs,
                        &conds,
                        all.clone(),
                    );
                    let est = step.estimate(&pa.plan, &pb.plan, &conds);
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
                let step = memoized(|| {
                    Step::new(
                        &pa.plan,
                        &pa.inputs,
                        &pb.plan,
                        &pb.inputs,
                        &conds,
                        all.clone(),
                    )
                });
                (a, b, step)
            }
        };
        let pb = parts.remove(b);
        let pa = parts.remove(a);
        let mut inputs = pa.inputs;
        inputs.extend(&pb.inputs);
        let plan = step.commit(&mut conds, pa.plan, pb.plan);
        parts.insert(a, Part { plan, inputs });
    }
    let plan = parts.pop().map(|p| p.plan).expect("at least two inputs");
    (plan, conds)
}
