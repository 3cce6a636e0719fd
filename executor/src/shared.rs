//! Identical subplans computed once per query. A common table expression used twice is bound
//! as two copies of one plan whose scans share their sources, and a catalog table named twice
//! is two scans of one source; where two copies are still identical after optimization (same
//! text, same sources), the aggregate at their top, or the CSV scan, runs once and each
//! reader gets its batches. A result is kept only while a reader is still to come, so a
//! subplan used once costs nothing extra. Below a LIMIT nothing is shared: a limit stops its
//! scan early, which a shared, fully decoded scan would not.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use morsel_planner::{ColumnRef, Expr, LogicalPlan, Scan, TableSource};
use morsel_storage::Batch;

use crate::error::ExecResult;

/// Aggregates and CSV scans that occur more than once in a plan, and their results once
/// computed.
#[derive(Debug, Default)]
pub struct SharedResults {
    entries: Mutex<HashMap<String, Entry>>,
}

#[derive(Debug)]
struct Entry {
    /// Readers still to come.
    uses_left: usize,
    batches: Option<Arc<Vec<Batch>>>,
}

impl SharedResults {
    /// Finds the aggregates and CSV scans `plan` holds more than once.
    pub fn for_plan(plan: &LogicalPlan) -> Self {
        let mut counts: HashMap<String, usize> = HashMap::new();
        count(plan, &mut counts, false);
        let entries = counts
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(key, n)| {
                (
                    key,
                    Entry {
                        uses_left: n,
                        batches: None,
                    },
                )
            })
            .collect();
        Self {
            entries: Mutex::new(entries),
        }
    }

    /// The subplan's identity: its text, and the addresses of the sources it reads (two
    /// scans of one file opened twice are different sources).
    fn key(plan: &LogicalPlan) -> String {
        let mut key = match plan {
            // A scan's rows do not depend on its alias (`lineitem l1` and `lineitem l3` read
            // the same rows), so the alias is left out of its key.
            LogicalPlan::Scan(s) => LogicalPlan::Scan(Scan {
                alias: s.table.clone(),
                filters: s
                    .filters
                    .iter()
                    .map(|f| {
                        f.clone().transform_up(&mut |e| match e {
                            Expr::Column(c) => Expr::Column(ColumnRef::new(c.name)),
                            other => other,
                        })
                    })
                    .collect(),
                ..s.clone()
            })
            .to_string(),
            other => other.to_string(),
        };
        let mut stack = vec![plan];
        while let Some(p) = stack.pop() {
            if let LogicalPlan::Scan(s) = p {
                let addr = match &s.source {
                    TableSource::Csv(f) => Arc::as_ptr(f) as *const () as usize,
                    TableSource::Memory(m) => Arc::as_ptr(m) as *const () as usize,
                };
                key.push_str(&format!("@{addr:x}"));
            }
            stack.extend(p.children());
        }
        key
    }

    /// The result of `plan` where the query reads it more than once, `None` elsewhere (the
    /// caller builds it as usual): `compute` runs for the first reader and its batches are
    /// kept for the others, then forgotten after the last.
    pub fn read(
        &self,
        plan: &LogicalPlan,
        compute: impl FnOnce() -> ExecResult<Vec<Batch>>,
    ) -> Option<ExecResult<Arc<Vec<Batch>>>> {
        if self.entries.lock().expect("shared results").is_empty() {
            return None;
        }
        let key = Self::key(plan);
        let kept = {
            let mut entries = self.entries.lock().expect("shared results");
            let entry = entries.get_mut(&key)?;
            entry.uses_left = entry.uses_left.saturating_sub(1);
            let kept = entry.batches.clone();
            if entry.uses_left == 0 {
                entries.remove(&key);
            }
            kept
        };
        if let Some(batches) = kept {
            return Some(Ok(batches));
        }
        // The first reader computes, outside the lock: the subplan may read shared results.
        let batches = match compute() {
            Ok(b) => Arc::new(b),
            Err(e) => return Some(Err(e)),
        };
        if let Some(entry) = self.entries.lock().expect("shared results").get_mut(&key) {
            entry.batches = Some(batches.clone());
        }
        Some(Ok(batches))
    }
}

/// Counts aggregate and CSV scan subplans; below a repeat nothing is counted, since a repeat
/// is read from the first copy's result and its inputs never run. `streams_to_limit`: the
/// rows flow to a LIMIT without a pipeline breaker between, so a scan here may stop early
/// and is not shared.
fn count(plan: &LogicalPlan, counts: &mut HashMap<String, usize>, streams_to_limit: bool) {
    let shareable = match plan {
        LogicalPlan::Aggregate { .. } => true,
        LogicalPlan::Scan(s) => matches!(s.source, TableSource::Csv(_)) && !streams_to_limit,
        _ => false,
    };
    if shareable {
        let seen = counts.entry(SharedResults::key(plan)).or_default();
        *seen += 1;
        if *seen > 1 {
            return;
        }
    }
    match plan {
        LogicalPlan::Limit { input, .. } => count(input, counts, true),
        // Breakers: their inputs run to the end whatever is above.
        LogicalPlan::Aggregate { input, .. }
        | LogicalPlan::Sort { input, .. }
        | LogicalPlan::Distinct { input }
        | LogicalPlan::Window { input, .. } => count(input, counts, false),
        // A join's build side (the right input) is read whole before the probe starts.
        LogicalPlan::Join { left, right, .. } => {
            count(left, counts, streams_to_limit);
            count(right, counts, false);
        }
        other => {
            for child in other.children() {
                count(child, counts, streams_to_limit);
            }
        }
    }
}
