//! Identical subplans computed once per query. A common table expression used twice is bound
//! as two copies of one plan whose scans share their sources; where both copies are still
//! identical after optimization (same text, same sources), the aggregate at their top runs
//! once and each reader gets its batches. A result is kept only while a reader is still to
//! come, so a subplan used once costs nothing extra.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use morsel_planner::{LogicalPlan, TableSource};
use morsel_storage::Batch;

/// Aggregates that occur more than once in a plan, and their results once computed.
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
    /// Finds the aggregates `plan` holds more than once.
    pub fn for_plan(plan: &LogicalPlan) -> Self {
        let mut counts: HashMap<String, usize> = HashMap::new();
        count(plan, &mut counts);
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
    pub fn key(plan: &LogicalPlan) -> String {
        let mut key = plan.to_string();
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

    /// Whether the subplan with `key` is read more than once.
    pub fn is_shared(&self, key: &str) -> bool {
        self.entries
            .lock()
            .expect("shared results")
            .contains_key(key)
    }

    /// The result computed earlier for `key`, for one more reader (forgotten after the last).
    pub fn take(&self, key: &str) -> Option<Arc<Vec<Batch>>> {
        let mut entries = self.entries.lock().expect("shared results");
        let entry = entries.get_mut(key)?;
        let batches = entry.batches.clone()?;
        entry.uses_left = entry.uses_left.saturating_sub(1);
        if entry.uses_left == 0 {
            entries.remove(key);
        }
        Some(batches)
    }

    /// Keeps the result of `key` for the readers to come (the one computing it counts as
    /// the first).
    pub fn store(&self, key: &str, batches: Arc<Vec<Batch>>) {
        let mut entries = self.entries.lock().expect("shared results");
        if let Some(entry) = entries.get_mut(key) {
            entry.uses_left = entry.uses_left.saturating_sub(1);
            if entry.uses_left == 0 {
                entries.remove(key);
            } else {
                entry.batches = Some(batches);
            }
        }
    }
}

/// Counts aggregate subplans; below a repeat nothing is counted, since a repeat is read
/// from the first copy's result and its inputs never run.
fn count(plan: &LogicalPlan, counts: &mut HashMap<String, usize>) {
    if matches!(plan, LogicalPlan::Aggregate { .. }) {
        let seen = counts.entry(SharedResults::key(plan)).or_default();
        *seen += 1;
        if *seen > 1 {
            return;
        }
    }
    for child in plan.children() {
        count(child, counts);
    }
}
