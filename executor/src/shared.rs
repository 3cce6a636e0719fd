//! Identical subplans computed once per query. A common table expression used twice is bound
//! as two copies of one plan whose scans share their sources, and a catalog table, or a file
//! path, named twice in a statement is two scans of one source; where two copies are still
//! identical after optimization (same text, same sources), the aggregate at their top, or
//! the CSV scan, runs once and each reader gets its batches. A result is kept only while a reader is still to come, so a
//! subplan used once costs nothing extra. Below a LIMIT nothing is shared: a limit stops its
//! scan early, which a shared, fully decoded scan would not.
//!
//! CSV scans that read the same rows but different columns are widened to the union of their
//! columns, decoded once, and each reader keeps its own columns. A scan estimated to hold
//! more than [`SHARED_SCAN_BUDGET`] is never shared: each reader streams it, so memory stays
//! bounded on large files.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use morsel_planner::optimizer::cardinality::estimate_rows;
use morsel_planner::{ColumnRef, Expr, LogicalPlan, Scan, TableSource};
use morsel_storage::{Batch, DataType};

use crate::error::ExecResult;

/// Aggregates and CSV scans that occur more than once in a plan, and their results once
/// computed.
#[derive(Debug, Default)]
pub struct SharedResults {
    entries: Mutex<HashMap<String, Entry>>,
    /// For each set of CSV scans that differ only in their columns (by [`rows_key`]): the
    /// union of their columns, in source order.
    widened: HashMap<String, Vec<usize>>,
}

/// A shared CSV scan keeps its rows until the last reader has them; a scan estimated to
/// hold more than this (with every column its readers need) is read by each reader instead.
const SHARED_SCAN_BUDGET: f64 = (1u64 << 30) as f64;

/// The bytes a scan's decoded rows take, by estimate: 8 per value, 24 per text value.
fn held_bytes(scan: &Scan) -> f64 {
    let schema = scan.source.schema();
    let row: usize = scan
        .columns()
        .iter()
        .map(|&c| match schema.field(c).data_type {
            DataType::Utf8 => 24,
            _ => 8,
        })
        .sum();
    // Unfiltered: the filters change which rows are kept, not how many are decoded first.
    let unfiltered = Scan {
        filters: Vec::new(),
        ..scan.clone()
    };
    estimate_rows(&LogicalPlan::Scan(unfiltered)) * row as f64
}

/// What a scan's rows depend on, whatever columns it keeps: its key with every column.
fn rows_key(scan: &Scan) -> String {
    let all = Scan {
        projection: None,
        schema: Scan::new(&scan.table, &scan.alias, scan.source.clone()).schema,
        ..scan.clone()
    };
    SharedResults::key(&LogicalPlan::Scan(all))
}

/// The column sets of CSV scans that read the same rows with different columns (where the
/// scan of all of them stays within [`SHARED_SCAN_BUDGET`]).
fn widen_scans(plan: &LogicalPlan) -> HashMap<String, Vec<usize>> {
    let mut sets: HashMap<String, (Scan, Vec<Vec<usize>>)> = HashMap::new();
    visit_shareable(plan, false, &mut |p| {
        if let LogicalPlan::Scan(s) = p {
            let entry = sets
                .entry(rows_key(s))
                .or_insert_with(|| (s.clone(), Vec::new()));
            entry.1.push(s.columns());
        }
        true
    });
    sets.into_iter()
        .filter(|(_, (_, columns))| columns.iter().any(|c| *c != columns[0]))
        .filter_map(|(key, (scan, columns))| {
            let mut union: Vec<usize> = columns.into_iter().flatten().collect();
            union.sort_unstable();
            union.dedup();
            let wide = scan.with_projection(union.clone());
            (held_bytes(&wide) <= SHARED_SCAN_BUDGET).then_some((key, union))
        })
        .collect()
}

/// `scan` widened to its set's columns, when it belongs to a set and lacks some of them.
fn widen(widened: &HashMap<String, Vec<usize>>, scan: &Scan) -> Option<Scan> {
    let union = widened.get(&rows_key(scan))?;
    (scan.projection.as_ref() != Some(union)).then(|| scan.clone().with_projection(union.clone()))
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
        let widened = widen_scans(plan);
        let mut counts: HashMap<String, usize> = HashMap::new();
        // Below a repeat nothing is counted: a repeat is read from the first copy's result
        // and its inputs never run.
        visit_shareable(plan, false, &mut |p| {
            let key = match p {
                LogicalPlan::Scan(s) => match widen(&widened, s) {
                    Some(wide) => Self::key(&LogicalPlan::Scan(wide)),
                    None => Self::key(p),
                },
                _ => Self::key(p),
            };
            let seen = counts.entry(key).or_default();
            *seen += 1;
            *seen == 1
        });
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
            widened,
        }
    }

    /// For a CSV scan that reads the same rows as another scan of the query but other
    /// columns: the scan of all the columns either reads, which runs once for both (the
    /// caller then keeps its own columns). `None` for any other scan.
    pub fn widened(&self, scan: &Scan) -> Option<Scan> {
        widen(&self.widened, scan)
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

    /// Whether the query reads `plan`'s result more than once (and no reader has it yet).
    pub fn holds(&self, plan: &LogicalPlan) -> bool {
        let entries = self.entries.lock().expect("shared results");
        !entries.is_empty() && entries.contains_key(&Self::key(plan))
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

/// Visits the aggregate and CSV scan subplans that may be shared, descending below one only
/// when `visit` says so. `streams_to_limit`: the rows flow to a LIMIT without a pipeline
/// breaker between, so a scan here may stop early and is not shared.
fn visit_shareable(
    plan: &LogicalPlan,
    streams_to_limit: bool,
    visit: &mut impl FnMut(&LogicalPlan) -> bool,
) {
    let shareable = match plan {
        LogicalPlan::Aggregate { .. } => true,
        LogicalPlan::Scan(s) => {
            matches!(s.source, TableSource::Csv(_))
                && !streams_to_limit
                && held_bytes(s) <= SHARED_SCAN_BUDGET
        }
        _ => false,
    };
    if shareable && !visit(plan) {
        return;
    }
    match plan {
        LogicalPlan::Limit { input, .. } => visit_shareable(input, true, visit),
        // Breakers: their inputs run to the end whatever is above.
        LogicalPlan::Aggregate { input, .. }
        | LogicalPlan::Sort { input, .. }
        | LogicalPlan::Distinct { input }
        | LogicalPlan::Window { input, .. } => visit_shareable(input, false, visit),
        // A join's build side (the right input) is read whole before the probe starts.
        LogicalPlan::Join { left, right, .. } => {
            visit_shareable(left, streams_to_limit, visit);
            visit_shareable(right, false, visit);
        }
        other => {
            for child in other.children() {
                visit_shareable(child, streams_to_limit, visit);
            }
        }
    }
}
