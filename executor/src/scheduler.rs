//! Pipelines and the morsel scheduler.
//!
//! A pipeline is a [`Source`] that hands out morsels, a chain of streaming [`Operator`]s and a
//! [`Sink`]. Workers (tasks on the shared pool) repeatedly take the next morsel, pull its
//! batches through the operators, and turn the morsel's output into one sink partial tagged
//! with the morsel's sequence number. After the source is drained, partials are sorted by
//! sequence number and merged by the sink, so the result does not depend on which worker ran
//! which morsel. On an error, the error of the lowest morsel wins, also for determinism.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use morsel_storage::csv::Block;
use morsel_storage::Batch;

use crate::context::{pool, ExecContext, PipelineStats, StageLabel, StageStats};
use crate::error::{ExecError, ExecResult};
use crate::selected::{Live, Selected};

/// A unit of work: a sequence number (its place in the source's order) and what to read.
#[derive(Debug)]
pub struct Morsel {
    pub seq: u64,
    pub data: MorselData,
}

#[derive(Debug)]
pub enum MorselData {
    /// Rows `offset..offset + len` of the source's batch `batch`.
    Rows {
        batch: usize,
        offset: usize,
        len: usize,
    },
    /// A block of CSV records from file `file` of the source.
    Csv { file: usize, block: Block },
    /// A morsel of input `input` of a UNION ALL.
    Union { input: usize, morsel: Box<Morsel> },
}

pub trait Source: Send + Sync {
    /// Describes the source for metrics and EXPLAIN.
    fn name(&self) -> String;
    /// Bytes a morsel covers in the input (CSV blocks), for throughput metrics.
    fn morsel_bytes(&self, _morsel: &Morsel) -> u64 {
        0
    }
    /// Scan metrics, for sources that decode files.
    fn scan_metrics(&self) -> Option<crate::context::ScanMetrics> {
        None
    }
    /// How many morsels the source hands out, where it knows before the first.
    fn morsel_count(&self) -> Option<usize> {
        None
    }
    /// The next morsel from the shared cursor, in increasing `seq` order (numbered from 0,
    /// none skipped).
    fn next_morsel(&self) -> ExecResult<Option<Morsel>>;
    /// How many morsels the source has numbered so far: once [`Source::next_morsel`] has
    /// returned `None`, how many it has in all (a union numbers the next input's after them).
    fn handed_out(&self) -> u64;
    /// Reads a morsel's batches.
    fn read(&self, morsel: Morsel, ctx: &ExecContext) -> ExecResult<Vec<Batch>>;
}

/// A streaming operator: one batch in, one batch out, no state across batches.
pub trait Operator: Send + Sync {
    fn name(&self) -> &'static str;
    fn execute(&self, batch: Batch) -> ExecResult<Batch>;

    /// Whether [`Operator::execute_selected`] reads a selection without gathering it first.
    fn takes_selection(&self) -> bool {
        false
    }

    /// Runs on the rows `input` selects; may leave its own output selected when
    /// `next_takes_selection` (the next operator reads selections). By default the
    /// selected rows are gathered and [`Operator::execute`] runs on them.
    fn execute_selected(
        &self,
        input: Selected,
        _next_takes_selection: bool,
    ) -> ExecResult<Selected> {
        Ok(Selected::all(self.execute(input.gather()?)?))
    }
}

/// Consumes a pipeline's output: one partial per morsel, merged in morsel order.
pub trait Sink: Sync {
    type Partial: Send;
    type Output;
    fn name(&self) -> &'static str;
    /// How the sink works, for EXPLAIN (one line each).
    fn details(&self) -> Vec<String> {
        Vec::new()
    }
    fn consume(&self, seq: u64, batches: Vec<Batch>) -> ExecResult<Self::Partial>;
    /// Whether [`Sink::consume_selected`] reads selections without gathering them first.
    fn takes_selection(&self) -> bool {
        false
    }
    /// Consumes a morsel's batches as the last operator left them (none empty); by default
    /// their live rows are gathered for [`Sink::consume`].
    fn consume_selected(&self, seq: u64, batches: Vec<Selected>) -> ExecResult<Self::Partial> {
        let batches = batches
            .into_iter()
            .map(Selected::gather)
            .collect::<ExecResult<Vec<Batch>>>()?;
        self.consume(seq, batches)
    }
    /// What the partials show about how the sink ran (for EXPLAIN ANALYZE, one line each).
    fn partial_details(&self, _partials: &[Self::Partial]) -> Vec<String> {
        Vec::new()
    }
    /// Memory a partial holds (for EXPLAIN ANALYZE's state size).
    fn partial_bytes(&self, _partial: &Self::Partial) -> usize {
        0
    }
    /// Memory the merged output holds.
    fn output_bytes(&self, _output: &Self::Output) -> usize {
        0
    }
    /// `Some(P)` once the partials of morsels `0..=P` decide the output: later morsels need
    /// not run, and their errors do not count.
    fn satisfied_through(&self) -> Option<u64> {
        None
    }
    /// `Some(S)` once the morsels `0..=S` are known to decide the output, even with some of
    /// them still running: morsels after `S` need not start.
    fn needless_after(&self) -> Option<u64> {
        None
    }
    /// `partials` arrive sorted by morsel sequence number.
    fn finish(&self, partials: Vec<Self::Partial>) -> ExecResult<Self::Output>;
}

/// Per-stage counters, updated by every worker.
struct StageCounters {
    rows: AtomicU64,
    batches: AtomicU64,
    bytes: AtomicU64,
    busy_ns: Vec<AtomicU64>,
}

impl StageCounters {
    fn new(workers: usize) -> Self {
        Self {
            rows: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            busy_ns: (0..workers).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn add(&self, worker: usize, rows: usize, batches: usize, since: Instant) {
        self.rows.fetch_add(rows as u64, Ordering::Relaxed);
        self.batches.fetch_add(batches as u64, Ordering::Relaxed);
        self.busy_ns[worker].fetch_add(since.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    fn stats(&self, label: &StageLabel) -> StageStats {
        StageStats {
            name: label.name.clone(),
            estimated_rows: label.estimated_rows,
            rows: self.rows.load(Ordering::Relaxed),
            batches: self.batches.load(Ordering::Relaxed),
            busy_ns_per_worker: self
                .busy_ns
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .collect(),
            bytes: self.bytes.load(Ordering::Relaxed),
            details: label.details.clone(),
            memory_bytes: 0,
        }
    }
}

/// Runs `batch` through `operators`, each handing the next a selection where the next reads
/// one (`last_takes`: whether what comes after the chain does); `done(i, started, out)` is
/// told each operator's output.
pub fn run_operators(
    operators: &[Box<dyn Operator>],
    batch: Batch,
    last_takes: bool,
    mut done: impl FnMut(usize, Instant, &Selected),
) -> ExecResult<Selected> {
    let mut batch = Selected::all(batch);
    for (i, op) in operators.iter().enumerate() {
        let t = Instant::now();
        let next_takes = operators
            .get(i + 1)
            .map_or(last_takes, |o| o.takes_selection());
        batch = match batch.live {
            Live::All if !next_takes => Selected::all(op.execute(batch.batch)?),
            _ => op.execute_selected(batch, next_takes)?,
        };
        done(i, t, &batch);
    }
    Ok(batch)
}

/// Runs a pipeline to completion on `ctx.threads` workers. `labels` name the stages (source,
/// each operator, sink) for the metrics; missing ones are named after the stage.
pub fn run_pipeline<S: Sink>(
    ctx: &ExecContext,
    source: &dyn Source,
    operators: &[Box<dyn Operator>],
    sink: &S,
    labels: &[StageLabel],
) -> ExecResult<S::Output> {
    let started = Instant::now();
    let partials: Mutex<Vec<(u64, S::Partial)>> = Mutex::new(Vec::new());
    let first_error: Mutex<Option<(u64, ExecError)>> = Mutex::new(None);
    // Morsels after a failed one need not run: only lower ones can still report an error.
    let stop_after = AtomicU64::new(u64::MAX);
    let per_worker: Vec<AtomicU64> = (0..ctx.threads).map(|_| AtomicU64::new(0)).collect();
    // Source, operators, sink.
    let counters: Vec<StageCounters> = (0..operators.len() + 2)
        .map(|_| StageCounters::new(ctx.threads))
        .collect();

    let record = |seq: u64, e: ExecError| {
        stop_after.fetch_min(seq, Ordering::SeqCst);
        let mut slot = first_error.lock().expect("error slot");
        if slot.as_ref().is_none_or(|(s, _)| seq < *s) {
            *slot = Some((seq, e));
        }
    };

    let work = |worker: usize| loop {
        if ctx.is_cancelled() {
            record(0, ExecError::Cancelled);
            return;
        }
        if sink.satisfied_through().is_some() {
            return;
        }
        let t = Instant::now();
        let morsel = match source.next_morsel() {
            Ok(Some(m)) => m,
            Ok(None) => return,
            // The source fails after handing out every earlier morsel: lowest priority.
            Err(e) => return record(u64::MAX, e),
        };
        let seq = morsel.seq;
        // Morsels come in sequence order: every later one is as needless.
        if seq > stop_after.load(Ordering::SeqCst) || sink.needless_after().is_some_and(|s| seq > s)
        {
            return;
        }
        per_worker[worker].fetch_add(1, Ordering::Relaxed);
        counters[0]
            .bytes
            .fetch_add(source.morsel_bytes(&morsel), Ordering::Relaxed);
        let result = source.read(morsel, ctx).and_then(|batches| {
            counters[0].add(
                worker,
                batches.iter().map(Batch::num_rows).sum(),
                batches.len(),
                t,
            );
            let mut out = Vec::with_capacity(batches.len());
            for batch in batches {
                let batch = run_operators(operators, batch, sink.takes_selection(), |i, t, b| {
                    counters[i + 1].add(worker, b.num_rows(), 1, t)
                })?;
                if batch.num_rows() > 0 {
                    out.push(batch);
                }
            }
            let t = Instant::now();
            let (rows, n) = (out.iter().map(Selected::num_rows).sum(), out.len());
            let partial = sink.consume_selected(seq, out);
            counters[operators.len() + 1].add(worker, rows, n, t);
            partial
        });
        match result {
            Ok(p) => partials.lock().expect("partials").push((seq, p)),
            Err(e) => record(seq, e),
        }
    };

    if ctx.explain_only {
        // Nothing runs: the pipeline is only described.
    } else if ctx.threads == 1 || source.morsel_count().is_some_and(|n| n <= 1) {
        // One morsel or none (an aggregate's few groups, a Top-K's rows) runs on the calling
        // thread: waking the workers would take longer than the work.
        work(0);
    } else {
        // The calling thread is worker 0: it starts on the first morsel at once, and one
        // wake-up fewer stands between the query and its workers (a scope entered from
        // outside the pool hands its body to a pool thread, which then wakes the others).
        pool().in_place_scope(|s| {
            for w in 1..ctx.threads {
                let work = &work;
                s.spawn(move |_| work(w));
            }
            work(0);
        });
    }

    let counts: Vec<u64> = per_worker
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .collect();
    let label = |i: usize, default: String| {
        labels.get(i).cloned().unwrap_or(StageLabel {
            name: default,
            ..StageLabel::default()
        })
    };
    let mut stages = vec![counters[0].stats(&label(0, source.name()))];
    for (i, op) in operators.iter().enumerate() {
        stages.push(counters[i + 1].stats(&label(i + 1, op.name().to_string())));
    }
    let sink_stage = operators.len() + 1;
    stages.push(counters[sink_stage].stats(&label(sink_stage, sink.name().to_string())));
    let finish_start = Instant::now();
    let satisfied = sink.satisfied_through();
    let first_error = first_error
        .into_inner()
        .expect("error slot")
        .filter(|(seq, _)| satisfied.is_none_or(|p| *seq <= p));
    let result = match first_error {
        Some((_, e)) => Err(e),
        None => {
            let mut partials = partials.into_inner().expect("partials");
            partials.sort_by_key(|(seq, _)| *seq);
            let held: usize = partials.iter().map(|(_, p)| sink.partial_bytes(p)).sum();
            let partials: Vec<S::Partial> = partials.into_iter().map(|(_, p)| p).collect();
            if !ctx.explain_only {
                stages[sink_stage]
                    .details
                    .extend(sink.partial_details(&partials));
            }
            let out = sink.finish(partials);
            if let Ok(o) = &out {
                // Partials and the merged output are both alive while merging.
                stages[sink_stage].memory_bytes = (held + sink.output_bytes(o)) as u64;
            }
            out
        }
    };
    let finish_ns = finish_start.elapsed().as_nanos() as u64;
    let finished = started.elapsed();
    ctx.metrics
        .pipelines
        .lock()
        .expect("metrics")
        .push(PipelineStats {
            source: source.name(),
            morsels: counts.iter().sum(),
            morsels_per_worker: counts,
            stages,
            finish_ns,
            wall_ns: finished.as_nanos() as u64,
            scan: source.scan_metrics(),
        });
    result
}

/// Runs `task` on every item on up to `threads` workers of the shared pool, taking items in
/// index order from a shared cursor; the results come back in item order, so what a task
/// computes never depends on which worker ran it.
pub fn parallel_map<I: Send, T: Send>(
    threads: usize,
    items: Vec<I>,
    task: impl Fn(usize, I) -> T + Sync,
) -> Vec<T> {
    let n = items.len();
    if threads <= 1 || n <= 1 {
        return items
            .into_iter()
            .enumerate()
            .map(|(i, x)| task(i, x))
            .collect();
    }
    let slots: Vec<Mutex<Option<I>>> = items.into_iter().map(|x| Mutex::new(Some(x))).collect();
    let results: Vec<Mutex<Option<T>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicU64::new(0);
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed) as usize;
        if i >= n {
            return;
        }
        let item = slots[i].lock().expect("item slot").take();
        if let Some(item) = item {
            *results[i].lock().expect("result slot") = Some(task(i, item));
        }
    };
    // The calling thread takes items too (as in `run_pipeline`).
    pool().in_place_scope(|s| {
        for _ in 1..threads.min(n) {
            s.spawn(|_| work());
        }
        work();
    });
    results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .expect("result slot")
                .expect("every item ran")
        })
        .collect()
}
