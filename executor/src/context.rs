//! Per-query execution context: worker count, cancellation, metrics, and the process-wide pool.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use morsel_storage::csv::SkippedRow;

use crate::shared::SharedResults;

/// The one worker pool of the process. Its size comes from `MORSEL_THREADS`, else the number
/// of cores; a query runs at most `ExecContext::threads` workers on it at a time.
pub fn pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        let n = default_threads();
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(|i| format!("morsel-worker-{i}"))
            .build()
            .expect("the worker pool starts")
    })
}

/// `MORSEL_THREADS` if set to a positive number, else the machine's available parallelism.
pub fn default_threads() -> usize {
    std::env::var("MORSEL_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// What one stage of a pipeline (its source, an operator, or its sink) did.
#[derive(Clone, Debug, PartialEq)]
pub struct StageStats {
    pub name: String,
    /// The planner's row estimate for this stage's output, if it has one.
    pub estimated_rows: Option<f64>,
    /// Rows and batches the stage produced (for a sink: consumed).
    pub rows: u64,
    pub batches: u64,
    /// Time spent in the stage by each worker (nanoseconds of wall time on that worker,
    /// which is CPU time for these compute-bound stages).
    pub busy_ns_per_worker: Vec<u64>,
    /// Bytes read (sources only).
    pub bytes: u64,
    /// How the stage works, one line each (fused programs, aggregation strategy).
    pub details: Vec<String>,
    /// Memory of the state the stage holds at its peak (sinks: partials plus merged output;
    /// a hash join build: its table), 0 for streaming stages.
    pub memory_bytes: u64,
}

/// What one pipeline did: its stages, its morsels and how many each worker took, and how
/// long it ran.
#[derive(Clone, Debug, PartialEq)]
pub struct PipelineStats {
    pub source: String,
    pub morsels: u64,
    pub morsels_per_worker: Vec<u64>,
    /// Source, operators, then the sink's per-morsel consumption.
    pub stages: Vec<StageStats>,
    /// Time to merge the sink's partials after the workers finished (on the calling thread,
    /// except a large hash aggregate's partitioned merge, which runs on the workers).
    pub finish_ns: u64,
    pub wall_ns: u64,
    /// The source's scan metrics, for CSV scans.
    pub scan: Option<ScanMetrics>,
}

/// Where a CSV scan's time went and how many records it read (before its pushed filter).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScanMetrics {
    pub rows_read: u64,
    /// Whether workers read the input at the same time (each its own stretch), or one at a
    /// time under the scan's lock (where records are counted in order).
    pub read_in_parallel: bool,
    /// Reading the input, summed over workers.
    pub io_ns: u64,
    /// Finding record boundaries in what was read, summed over workers.
    pub split_ns: u64,
    /// Finding field boundaries, summed over workers.
    pub tokenize_ns: u64,
    /// Parsing fields into columns (including the pushed filter), summed over workers.
    pub decode_ns: u64,
    /// Blocks the record-by-record tokenizer read (quotes around line feeds, ragged
    /// records, comment lines, errors); the others were tokenized at once.
    pub record_by_record_blocks: u64,
    /// Evaluating the pushed filter while decoding, when there is one.
    pub filter_ns: Option<u64>,
}

/// A stage's name and row estimate, given when the pipeline is built.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StageLabel {
    pub name: String,
    pub estimated_rows: Option<f64>,
    pub details: Vec<String>,
}

/// Counters filled while a query runs (the base of EXPLAIN ANALYZE).
#[derive(Debug, Default)]
pub struct ExecMetrics {
    pub pipelines: Mutex<Vec<PipelineStats>>,
    /// Records skipped by scans reading with `ignore_errors`.
    pub skipped_rows: Mutex<Vec<SkippedRow>>,
}

#[derive(Clone, Debug)]
pub struct ExecContext {
    pub threads: usize,
    pub cancel: Arc<AtomicBool>,
    pub metrics: Arc<ExecMetrics>,
    /// Compile elementwise subtrees into fused programs (on unless a session turns the
    /// `fuse_expressions` rule off).
    pub fusion: bool,
    /// Build the pipelines without running them (for EXPLAIN's physical plan): every
    /// pipeline reads no morsels, so breakers see empty inputs.
    pub explain_only: bool,
    /// Results of subplans the query holds more than once (set by `execute`).
    pub shared: Arc<SharedResults>,
    /// The aggregates whose output order nothing observes, by node address (set by
    /// `execute`; see `physical::order`): they may leave their groups in partition order.
    pub unordered: Arc<HashSet<usize>>,
}

impl Default for ExecContext {
    fn default() -> Self {
        Self::new(default_threads())
    }
}

impl ExecContext {
    pub fn new(threads: usize) -> Self {
        Self {
            threads: threads.max(1),
            cancel: Arc::new(AtomicBool::new(false)),
            metrics: Arc::default(),
            fusion: true,
            explain_only: false,
            shared: Arc::default(),
            unordered: Arc::default(),
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }
}
