//! The optimizer: named rules, each an idempotent whole-plan rewrite, run in a fixed order
//! until none changes the plan (or an iteration cap is hit). Every change can be recorded
//! with the plan it produced, which EXPLAIN VERBOSE will show.

pub mod cardinality;
mod rules;
mod sample_filter;

use std::time::{Duration, Instant};

pub use sample_filter::memory_scan_filter_order;

pub use rules::{
    CommonSubexpressions, CountMatchesBeforeJoin, DistinctAggregatesToGroupBy,
    FilterAggregatesByJoinKeys, PushDownFilter, PushDownLimit, PushDownProjection,
    PushDownSemiJoins, ReorderJoins, SimplifyExpressions,
};

use crate::error::PlanResult;
use crate::plan::LogicalPlan;

/// A value plus whether a rewrite changed it.
pub trait OptimizerRule: Send + Sync {
    fn name(&self) -> &'static str;
    /// The plan rewritten (the same plan where the rule does not apply).
    fn rewrite(&self, plan: LogicalPlan) -> PlanResult<LogicalPlan>;
}

/// One rule application that changed the plan.
#[derive(Debug, Clone)]
pub struct RuleTrace {
    pub rule: &'static str,
    pub pass: usize,
    pub elapsed: Duration,
    pub plan: String,
}

/// Rules the executor applies while compiling a plan (not plan rewrites), switchable off by
/// name like the optimizer's: `fuse_expressions` compiles elementwise subtrees into fused
/// programs.
pub const EXECUTION_RULES: &[&str] = &["fuse_expressions"];

pub struct Optimizer {
    rules: Vec<Box<dyn OptimizerRule>>,
    max_passes: usize,
}

impl Default for Optimizer {
    fn default() -> Self {
        Self {
            rules: vec![
                Box::new(SimplifyExpressions),
                Box::new(DistinctAggregatesToGroupBy),
                Box::new(PushDownFilter),
                Box::new(ReorderJoins),
                Box::new(FilterAggregatesByJoinKeys),
                Box::new(CountMatchesBeforeJoin),
                Box::new(PushDownSemiJoins),
                Box::new(PushDownLimit),
                Box::new(PushDownProjection),
                Box::new(CommonSubexpressions),
            ],
            max_passes: 8,
        }
    }
}

impl Optimizer {
    pub fn with_rules(rules: Vec<Box<dyn OptimizerRule>>) -> Self {
        Self {
            rules,
            max_passes: 8,
        }
    }

    /// The default rules except those named in `disabled`; an unknown name is an error that
    /// lists the known ones.
    pub fn without(disabled: &[String]) -> PlanResult<Self> {
        let mut o = Self::default();
        for name in disabled {
            let known = o.rules.iter().any(|r| r.name().eq_ignore_ascii_case(name))
                || EXECUTION_RULES.iter().any(|r| r.eq_ignore_ascii_case(name));
            if !known {
                return Err(crate::PlanError::Invalid(format!(
                    "no optimizer rule named {name}; the rules are {}, {}",
                    o.rule_names().join(", "),
                    EXECUTION_RULES.join(", ")
                )));
            }
        }
        o.rules
            .retain(|r| !disabled.iter().any(|d| d.eq_ignore_ascii_case(r.name())));
        Ok(o)
    }

    /// The plan rewrites, in order (the execution rules are listed in [`EXECUTION_RULES`]).
    pub fn rule_names(&self) -> Vec<&'static str> {
        self.rules.iter().map(|r| r.name()).collect()
    }

    /// Runs the rules to a fixed point; `trace` collects every change.
    pub fn optimize(
        &self,
        mut plan: LogicalPlan,
        mut trace: Option<&mut Vec<RuleTrace>>,
    ) -> PlanResult<LogicalPlan> {
        // A rule changed the plan when the plan it returns differs structurally from the
        // one it was given. Each change starts a new version of the plan; a rule is not run
        // again on the version it last returned (nothing changed it since): rules are
        // idempotent, so it would return it unchanged (join reordering, the costliest, runs
        // once per pass otherwise: 1 ms a pass for TPC-H Q5). The plan is rendered as text
        // only for the trace.
        let mut version = 0usize;
        let mut last_output: Vec<Option<usize>> = vec![None; self.rules.len()];
        for pass in 0..self.max_passes {
            let mut changed_any = false;
            for (rule, last) in self.rules.iter().zip(&mut last_output) {
                if *last == Some(version) {
                    continue;
                }
                let start = Instant::now();
                let before = plan.clone();
                plan = rule.rewrite(plan)?;
                if plan != before {
                    changed_any = true;
                    version += 1;
                    if let Some(trace) = trace.as_deref_mut() {
                        trace.push(RuleTrace {
                            rule: rule.name(),
                            pass,
                            elapsed: start.elapsed(),
                            plan: plan.to_string(),
                        });
                    }
                }
                *last = Some(version);
            }
            if !changed_any {
                break;
            }
        }
        Ok(plan)
    }
}
