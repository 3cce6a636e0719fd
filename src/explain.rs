//! The EXPLAIN family: the optimized plan with row estimates (EXPLAIN), the plan after each
//! optimizer rule (VERBOSE), and a run of the query with what every pipeline stage did
//! (ANALYZE): estimated vs actual rows, CPU time per worker (min / median / max), morsels per
//! worker, scan throughput, and tuning hints derived from those numbers. As text (at most
//! 100 columns) or JSON (for tools).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use morsel_executor::{PipelineStats, ScanMetrics, StageStats};
use morsel_planner::optimizer::cardinality::estimate_rows;
use morsel_planner::{LogicalPlan, MemTable, Optimizer};
use morsel_sql::ExplainFormat;
use morsel_storage::{Batch, Column, DataType, Field, PrimitiveColumn, Schema, Utf8Builder};

use crate::error::Result;
use crate::format::json_string;
use crate::lazy::QueryResult;
use crate::session::Session;

/// What one run of a query did, stage by stage (the data behind EXPLAIN ANALYZE).
#[derive(Clone, Debug)]
pub struct QueryProfile {
    pub threads: usize,
    pub optimize_time: Duration,
    pub wall_time: Duration,
    pub result_rows: usize,
    /// In the order they ran (inputs before the pipelines that read them).
    pub pipelines: Vec<PipelineStats>,
}

impl QueryProfile {
    /// CPU time of every stage on every worker.
    pub fn cpu_time(&self) -> Duration {
        Duration::from_nanos(
            self.pipelines
                .iter()
                .flat_map(|p| &p.stages)
                .flat_map(|s| &s.busy_ns_per_worker)
                .sum::<u64>()
                + self.pipelines.iter().map(|p| p.finish_ns).sum::<u64>(),
        )
    }

    /// Tuning hints, each derived from measured numbers.
    pub fn hints(&self) -> Vec<String> {
        let mut hints = Vec::new();
        let total = self.cpu_time().as_nanos().max(1) as f64;
        for (n, p) in self.pipelines.iter().enumerate() {
            // One hint per pipeline: the first misestimated stage (the ones after it inherit
            // its error), and never a stage that only reads an earlier pipeline's result.
            for s in p.stages.iter().filter(|s| !s.name.starts_with("Read ")) {
                if let Some(est) = s.estimated_rows {
                    let actual = s.rows as f64;
                    let ratio =
                        (actual.max(1.0) / est.max(1.0)).max(est.max(1.0) / actual.max(1.0));
                    if ratio >= 10.0 && actual.max(est) >= 1000.0 {
                        let why = if s.name.starts_with("HashJoin") {
                            "; the join order and build side were chosen on estimates like this"
                        } else if s.name.starts_with("Filter") || s.name.starts_with("Scan") {
                            "; predicate selectivities are fixed guesses (no histograms yet)"
                        } else {
                            ""
                        };
                        hints.push(format!(
                            "estimate off by {ratio:.0}x at {} (pipeline {}): {} estimated, {} \
                             actual{why}",
                            short(&s.name, 48),
                            n + 1,
                            count(est),
                            count(actual)
                        ));
                        break;
                    }
                }
            }
            let morsels: u64 = p.morsels_per_worker.iter().sum();
            let most = p.morsels_per_worker.iter().copied().max().unwrap_or(0);
            if p.morsels_per_worker.len() > 1 && morsels >= 8 && most as f64 >= 0.9 * morsels as f64
            {
                hints.push(format!(
                    "one worker took {:.0}% of the morsels in pipeline {} ({}): its input has \
                     too few morsels to spread, or the other workers were busy elsewhere",
                    100.0 * most as f64 / morsels as f64,
                    n + 1,
                    short(&p.source, 40)
                ));
            }
            if let Some(scan) = p.stages.first().filter(|s| s.bytes > 0) {
                let share = stage_cpu(scan) as f64 / total;
                if share >= 0.5 {
                    hints.push(format!(
                        "{:.0}% of CPU time is decoding CSV ({}): the scan is the floor for this \
                         query; fewer columns or a more selective pushed filter cut it, \
                         loading the table into memory once (CREATE TABLE ... AS) removes it",
                        100.0 * share,
                        short(&scan.name, 40)
                    ));
                }
            }
        }
        hints
    }
}

fn stage_cpu(s: &StageStats) -> u64 {
    s.busy_ns_per_worker.iter().sum()
}

/// Runs `plan` (as bound) and returns its result and profile.
pub(crate) fn run_profiled(
    session: &Session,
    plan: &LogicalPlan,
) -> Result<(QueryResult, QueryProfile)> {
    let threads = session.threads();
    let start = Instant::now();
    let optimized = session.optimizer()?.optimize(plan.clone(), None)?;
    let optimize_time = start.elapsed();
    let ctx = session.exec_context();
    let run = Instant::now();
    let batches = morsel_executor::execute(&optimized, &ctx)?;
    let wall_time = run.elapsed();
    let schema = Arc::new(optimized.schema().to_schema());
    let pipelines = ctx
        .metrics
        .pipelines
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let result = QueryResult::new(schema, batches);
    let profile = QueryProfile {
        threads,
        optimize_time,
        wall_time,
        result_rows: result.num_rows(),
        pipelines,
    };
    Ok((result, profile))
}

/// `EXPLAIN [ANALYZE] [VERBOSE] [FORMAT ...]` as a one-column result (`plan`), one row per line.
pub(crate) fn explain(
    session: &Session,
    plan: &LogicalPlan,
    verbose: bool,
    analyze: bool,
    format: ExplainFormat,
) -> Result<QueryResult> {
    let optimizer = session.optimizer()?;
    let text = match (analyze, format) {
        (true, ExplainFormat::Json) => profile_json(&run_profiled(session, plan)?.1),
        (true, _) => {
            let (_, profile) = run_profiled(session, plan)?;
            let mut t = String::new();
            if verbose {
                t.push_str(&plan_text(&optimizer, plan, true)?.0);
                t.push('\n');
            }
            t.push_str(&profile_text(&profile));
            t
        }
        (false, ExplainFormat::Json) => {
            let optimized = optimizer.optimize(plan.clone(), None)?;
            plan_json(&optimized, &pipelines(session, &optimized)?)
        }
        (false, ExplainFormat::Graphviz) => plan_dot(&optimizer.optimize(plan.clone(), None)?),
        (false, ExplainFormat::Text) => explain_text(session, plan, verbose)?,
    };
    let mut b = Utf8Builder::default();
    for line in text.lines() {
        b.push(line);
    }
    let schema = Arc::new(Schema::new(vec![Field::new("plan", DataType::Utf8, false)]));
    let col = Column::Utf8(b.finish());
    let rows = col.len();
    Ok(QueryResult::new(
        schema.clone(),
        vec![Batch::try_new(schema, vec![col], rows)?],
    ))
}

/// The optimized plan with each node's estimated rows; with `verbose`, first the plan as
/// bound and then, for each rule application that changed it, the lines that changed.
/// The plan is optimized once, and comes back too; the rule trace (each changed plan as
/// text) is kept only with `verbose`.
fn plan_text(
    optimizer: &Optimizer,
    plan: &LogicalPlan,
    verbose: bool,
) -> Result<(String, LogicalPlan)> {
    let mut trace = Vec::new();
    let optimized = optimizer.optimize(plan.clone(), verbose.then_some(&mut trace))?;
    let mut text = String::new();
    if verbose {
        text.push_str("Initial plan:\n");
        text.push_str(&plan.to_string());
        let mut before = plan.to_string();
        let names = optimizer.rule_names();
        for t in &trace {
            let _ = writeln!(
                text,
                "\n{} (pass {}, {:.1} us) changed:",
                t.rule,
                t.pass + 1,
                t.elapsed.as_secs_f64() * 1e6
            );
            text.push_str(&line_diff(&before, &t.plan));
            before = t.plan.clone();
        }
        let unchanged: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !trace.iter().any(|t| t.rule == *n))
            .collect();
        if !unchanged.is_empty() {
            let _ = writeln!(
                text,
                "\nRules that changed nothing: {}",
                unchanged.join(", ")
            );
        }
        text.push_str("\nOptimized plan:\n");
    }
    annotate(&optimized, 0, &mut text);
    Ok((text, optimized))
}

/// EXPLAIN [VERBOSE] as text: the optimized plan with estimates (after the rule diffs with
/// `verbose`), then the physical plan.
pub(crate) fn explain_text(session: &Session, plan: &LogicalPlan, verbose: bool) -> Result<String> {
    let optimizer = session.optimizer()?;
    let (mut text, optimized) = plan_text(&optimizer, plan, verbose)?;
    text.push_str(&pipelines_text(&pipelines(session, &optimized)?));
    Ok(text)
}

/// The pipelines `plan` would run, in order, described without running them.
fn pipelines(session: &Session, plan: &LogicalPlan) -> Result<Vec<PipelineStats>> {
    let mut ctx = session.exec_context();
    ctx.explain_only = true;
    morsel_executor::execute(plan, &ctx)?;
    let pipelines = ctx
        .metrics
        .pipelines
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    Ok(pipelines)
}

/// The physical plan: each pipeline's stages with estimates and how each works.
fn pipelines_text(pipelines: &[PipelineStats]) -> String {
    let mut t = format!(
        "\nPhysical plan: {} pipeline{}, run in this order (a sink ends each; the next reads \
         its result)\n",
        pipelines.len(),
        if pipelines.len() == 1 { "" } else { "s" }
    );
    for (n, pl) in pipelines.iter().enumerate() {
        // A file by its name (the scan line names the table).
        let source = match pl.source.strip_prefix("csv ") {
            Some(path) => format!("csv {}", path.rsplit('/').next().unwrap_or(path)),
            None => pl.source.clone(),
        };
        let _ = writeln!(t, "Pipeline {}: {source}", n + 1);
        let last = pl.stages.len().saturating_sub(1);
        for (i, s) in pl.stages.iter().enumerate() {
            let arrow = if i == last && pl.stages.len() > 1 {
                "-> "
            } else {
                ""
            };
            let est = s
                .estimated_rows
                .map_or(String::new(), |e| format!("  (~{} rows)", count(e)));
            wrap(&mut t, &format!("  {arrow}{}{est}", s.name), 4);
            for d in &s.details {
                wrap(&mut t, &format!("      {d}"), 8);
            }
        }
    }
    t
}

/// Writes `line` wrapped before column 100, continuation lines indented by `indent`.
fn wrap(out: &mut String, line: &str, indent: usize) {
    let text = line.trim_start();
    let mut current = " ".repeat(line.len() - text.len());
    let mut fresh = true;
    for word in text.split(' ') {
        if !fresh && current.chars().count() + word.chars().count() + 1 > 99 {
            let _ = writeln!(out, "{current}");
            current = " ".repeat(indent);
            fresh = true;
        }
        if !fresh {
            current.push(' ');
        }
        current.push_str(word);
        fresh = false;
    }
    let _ = writeln!(out, "{current}");
}

/// The lines of `after` not in `before` (+) and of `before` not in `after` (-), in order.
fn line_diff(before: &str, after: &str) -> String {
    let (b, a): (Vec<&str>, Vec<&str>) = (before.lines().collect(), after.lines().collect());
    let mut out = String::new();
    for l in &b {
        if !a.contains(l) {
            let _ = writeln!(out, "- {l}");
        }
    }
    for l in &a {
        if !b.contains(l) {
            let _ = writeln!(out, "+ {l}");
        }
    }
    out
}

/// The plan tree with `(~N rows)` after each node.
fn annotate(plan: &LogicalPlan, depth: usize, out: &mut String) {
    let _ = writeln!(
        out,
        "{}{}  (~{} rows)",
        "  ".repeat(depth),
        plan.node_line(),
        count(estimate_rows(plan))
    );
    for c in plan.children() {
        annotate(c, depth + 1, out);
    }
}

/// `1234567` as `1.2M`, small counts exactly.
fn count(n: f64) -> String {
    let n = n.max(0.0);
    if n < 10_000.0 {
        format!("{}", n.round() as u64)
    } else if n < 10_000_000.0 {
        format!("{:.1}K", n / 1e3)
    } else if n < 10_000_000_000.0 {
        format!("{:.1}M", n / 1e6)
    } else {
        format!("{:.1}G", n / 1e9)
    }
}

fn time(ns: u64) -> String {
    let s = ns as f64 / 1e9;
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.0} us", s * 1e6)
    }
}

fn bytes(n: u64) -> String {
    let n = n as f64;
    if n >= 1e9 {
        format!("{:.1} GB", n / 1e9)
    } else if n >= 1e6 {
        format!("{:.1} MB", n / 1e6)
    } else {
        format!("{:.1} KB", n / 1e3)
    }
}

fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 3).collect();
        t.push_str("...");
        t
    }
}

/// min / median / max of the per-worker busy times.
fn spread(ns: &[u64]) -> String {
    let mut v = ns.to_vec();
    v.sort_unstable();
    match v.as_slice() {
        [] => String::new(),
        [one] => time(*one),
        _ => format!(
            "{} / {} / {}",
            time(v[0]),
            time(v[v.len() / 2]),
            time(v[v.len() - 1])
        ),
    }
}

fn profile_text(p: &QueryProfile) -> String {
    let mut t = String::new();
    let cpu = p.cpu_time();
    let _ = writeln!(
        t,
        "EXPLAIN ANALYZE: {} rows in {} wall, {} CPU on {} thread{}; optimizing {}",
        p.result_rows,
        time(p.wall_time.as_nanos() as u64),
        time(cpu.as_nanos() as u64),
        p.threads,
        if p.threads == 1 { "" } else { "s" },
        time(p.optimize_time.as_nanos() as u64),
    );
    let scan_ns: u64 = p
        .pipelines
        .iter()
        .filter_map(|pl| pl.stages.first())
        .filter(|s| s.bytes > 0)
        .map(stage_cpu)
        .sum();
    if scan_ns > 0 {
        let _ = writeln!(
            t,
            "CSV decoding: {} CPU ({:.0}% of all CPU time): the floor for any query over these files",
            time(scan_ns),
            100.0 * scan_ns as f64 / cpu.as_nanos().max(1) as f64
        );
    }
    for (n, pl) in p.pipelines.iter().enumerate() {
        let per_worker: Vec<String> = pl.morsels_per_worker.iter().map(u64::to_string).collect();
        if per_worker.is_empty() {
            let _ = writeln!(
                t,
                "\nPipeline {} of {}: {} between pipelines, {} wall",
                n + 1,
                p.pipelines.len(),
                pl.source,
                time(pl.wall_ns)
            );
        } else {
            let _ = writeln!(
                t,
                "\nPipeline {} of {}: {} wall, {} morsels (per worker: {}), merge {}",
                n + 1,
                p.pipelines.len(),
                time(pl.wall_ns),
                pl.morsels,
                per_worker.join(" / "),
                time(pl.finish_ns)
            );
        }
        let _ = writeln!(
            t,
            "  {:<34} {:>7} {:>7} {:>5} {:>9}  per worker min / med / max",
            "stage", "est", "rows", "off", "CPU"
        );
        let last = pl.stages.len().saturating_sub(1);
        for (i, s) in pl.stages.iter().enumerate() {
            let name = if i == last {
                format!("-> {} (sink)", s.name)
            } else {
                s.name.clone()
            };
            let est = s.estimated_rows.map_or("-".to_string(), count);
            let flag = match s.estimated_rows {
                Some(e) => {
                    let a = s.rows as f64;
                    let r = (a.max(1.0) / e.max(1.0)).max(e.max(1.0) / a.max(1.0));
                    if r >= 10.0 {
                        format!("{r:.0}x!")
                    } else {
                        String::new()
                    }
                }
                None => String::new(),
            };
            let _ = writeln!(
                t,
                "  {:<34} {:>7} {:>7} {:>5} {:>9}  {}",
                short(&name, 34),
                est,
                count(s.rows as f64),
                flag,
                time(stage_cpu(s)),
                spread(&s.busy_ns_per_worker)
            );
            for d in &s.details {
                wrap(&mut t, &format!("    {d}"), 6);
            }
            if s.memory_bytes > 0 {
                let _ = writeln!(t, "    state held at peak: {}", bytes(s.memory_bytes));
            }
            if s.bytes > 0 {
                let secs = stage_cpu(s) as f64 / 1e9;
                let _ = writeln!(
                    t,
                    "    read {} ({:.0} MB/s of decode per busy worker-second), {} batches",
                    bytes(s.bytes),
                    if secs > 0.0 {
                        s.bytes as f64 / 1e6 / secs
                    } else {
                        0.0
                    },
                    s.batches
                );
            }
            if let (0, Some(m)) = (i, &pl.scan) {
                scan_lines(&mut t, m, s.rows);
            }
        }
    }
    let _ = writeln!(
        t,
        "\nSemantics: float sums add in morsel order (identical at any thread count);\n  \
         `/` on integers gives DOUBLE, `//` divides integers; integer overflow is an error."
    );
    let hints = p.hints();
    if !hints.is_empty() {
        let _ = writeln!(t, "Hints:");
        for h in hints {
            wrap(&mut t, &format!("  - {h}"), 4);
        }
    }
    t
}

/// The profile as a table, one row per pipeline stage (the rows of
/// `SELECT * FROM explain_analyze('...')`). Columns (stable): pipeline, stage (both from 1),
/// role ('source' | 'operator' | 'sink'), name, estimated_rows, rows, batches, bytes, cpu_ms,
/// cpu_ms_min, cpu_ms_max (per worker), rows_read (CSV scans: records before the pushed
/// filter), memory_bytes (state held at peak), pipeline_wall_ms, morsels, details
/// ('; '-separated).
pub(crate) fn profile_table(p: &QueryProfile) -> Result<MemTable> {
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut ints: [Vec<Option<i64>>; 8] = Default::default();
    let mut floats: [Vec<Option<f64>>; 5] = Default::default();
    let mut texts: [Vec<String>; 3] = Default::default();
    for (n, pl) in p.pipelines.iter().enumerate() {
        let last = pl.stages.len().saturating_sub(1);
        for (i, s) in pl.stages.iter().enumerate() {
            let role = match i {
                0 => "source",
                i if i == last => "sink",
                _ => "operator",
            };
            let rows_read = (i == 0).then(|| pl.scan.as_ref().map(|m| m.rows_read as i64));
            let row_ints = [
                Some(n as i64 + 1),
                Some(i as i64 + 1),
                Some(s.rows as i64),
                Some(s.batches as i64),
                Some(s.bytes as i64),
                rows_read.flatten(),
                Some(s.memory_bytes as i64),
                Some(pl.morsels as i64),
            ];
            for (col, v) in ints.iter_mut().zip(row_ints) {
                col.push(v);
            }
            let min = s.busy_ns_per_worker.iter().min().copied().unwrap_or(0);
            let max = s.busy_ns_per_worker.iter().max().copied().unwrap_or(0);
            let row_floats = [
                s.estimated_rows,
                Some(ms(stage_cpu(s))),
                Some(ms(min)),
                Some(ms(max)),
                Some(ms(pl.wall_ns)),
            ];
            for (col, v) in floats.iter_mut().zip(row_floats) {
                col.push(v);
            }
            for (col, v) in
                texts
                    .iter_mut()
                    .zip([role.to_string(), s.name.clone(), s.details.join("; ")])
            {
                col.push(v);
            }
        }
    }
    let int = |v: &[Option<i64>]| Column::Int64(PrimitiveColumn::from_options(v.iter().copied()));
    let float =
        |v: &[Option<f64>]| Column::Float64(PrimitiveColumn::from_options(v.iter().copied()));
    let text = |v: &[String]| {
        let mut b = Utf8Builder::default();
        for s in v {
            b.push(s);
        }
        Column::Utf8(b.finish())
    };
    let rows = texts[0].len();
    let [pipeline, stage, out_rows, batches, bytes_read, rows_read, memory, morsels] = &ints;
    let [estimated, cpu, cpu_min, cpu_max, wall] = &floats;
    let [role, name, details] = &texts;
    let columns = vec![
        ("pipeline", int(pipeline)),
        ("stage", int(stage)),
        ("role", text(role)),
        ("name", text(name)),
        ("estimated_rows", float(estimated)),
        ("rows", int(out_rows)),
        ("batches", int(batches)),
        ("bytes", int(bytes_read)),
        ("cpu_ms", float(cpu)),
        ("cpu_ms_min", float(cpu_min)),
        ("cpu_ms_max", float(cpu_max)),
        ("rows_read", int(rows_read)),
        ("memory_bytes", int(memory)),
        ("pipeline_wall_ms", float(wall)),
        ("morsels", int(morsels)),
        ("details", text(details)),
    ];
    let schema = Arc::new(Schema::new(
        columns
            .iter()
            .map(|(n, c)| Field::new(*n, c.data_type(), true))
            .collect(),
    ));
    let batch = Batch::try_new(
        schema.clone(),
        columns.into_iter().map(|(_, c)| c).collect(),
        rows,
    )?;
    Ok(MemTable::new(schema, vec![batch]))
}

/// A CSV scan's records read vs kept and its time split (read, tokenize, decode, filter).
fn scan_lines(t: &mut String, m: &ScanMetrics, kept: u64) {
    let filter = match m.filter_ns {
        Some(ns) => format!(
            "; kept {} by the filter while decoding ({:.1}%, filter {})",
            count(kept as f64),
            100.0 * kept as f64 / m.rows_read.max(1) as f64,
            time(ns)
        ),
        None => String::new(),
    };
    wrap(
        t,
        &format!(
            "    {} records read{filter}; I/O {} and record boundaries {} ({}), tokenize {}{}, \
             parse {}",
            count(m.rows_read as f64),
            time(m.io_ns),
            time(m.split_ns),
            if m.read_in_parallel {
                "summed over workers"
            } else {
                "one worker at a time"
            },
            time(m.tokenize_ns),
            match m.record_by_record_blocks {
                0 => String::new(),
                n => format!(" ({n} blocks record by record)"),
            },
            time(m.decode_ns.saturating_sub(m.filter_ns.unwrap_or(0)))
        ),
        6,
    );
}

/// The profile as JSON. Schema (stable): `{threads, wall_ms, cpu_ms, optimize_ms,
/// result_rows, pipelines: [{source, wall_ms, merge_ms, morsels, morsels_per_worker: [..],
/// scan: null | {rows_read, read_in_parallel, io_ms, split_ms, tokenize_ms, parse_ms, filter_ms|null,
/// record_by_record_blocks},
/// stages: [{name, estimated_rows|null, rows, batches, bytes, cpu_ms, cpu_ms_per_worker:
/// [..], memory_bytes, details: [..]}]}], hints: [..]}`.
fn profile_json(p: &QueryProfile) -> String {
    let ms = |ns: u64| format!("{:.3}", ns as f64 / 1e6);
    let mut t = String::new();
    let _ = write!(
        t,
        "{{\"threads\": {}, \"wall_ms\": {}, \"cpu_ms\": {}, \"optimize_ms\": {}, \"result_rows\": {}, \"pipelines\": [",
        p.threads,
        ms(p.wall_time.as_nanos() as u64),
        ms(p.cpu_time().as_nanos() as u64),
        ms(p.optimize_time.as_nanos() as u64),
        p.result_rows
    );
    for (i, pl) in p.pipelines.iter().enumerate() {
        if i > 0 {
            t.push_str(", ");
        }
        let per: Vec<String> = pl.morsels_per_worker.iter().map(u64::to_string).collect();
        let _ = write!(
            t,
            "\n  {{\"source\": {}, \"wall_ms\": {}, \"merge_ms\": {}, \"morsels\": {}, \"morsels_per_worker\": [{}], \"scan\": {}, \"stages\": [",
            json_string(&pl.source),
            ms(pl.wall_ns),
            ms(pl.finish_ns),
            pl.morsels,
            per.join(", "),
            pl.scan.as_ref().map_or("null".to_string(), |m| format!(
                "{{\"rows_read\": {}, \"read_in_parallel\": {}, \"io_ms\": {}, \"split_ms\": {}, \"tokenize_ms\": {}, \"parse_ms\": {}, \"filter_ms\": {}, \"record_by_record_blocks\": {}}}",
                m.rows_read,
                m.read_in_parallel,
                ms(m.io_ns),
                ms(m.split_ns),
                ms(m.tokenize_ns),
                ms(m.decode_ns.saturating_sub(m.filter_ns.unwrap_or(0))),
                m.filter_ns.map_or("null".to_string(), ms),
                m.record_by_record_blocks
            ))
        );
        for (j, s) in pl.stages.iter().enumerate() {
            if j > 0 {
                t.push_str(", ");
            }
            let workers: Vec<String> = s.busy_ns_per_worker.iter().map(|n| ms(*n)).collect();
            let _ = write!(
                t,
                "\n    {{\"name\": {}, \"estimated_rows\": {}, \"rows\": {}, \"batches\": {}, \"bytes\": {}, \"cpu_ms\": {}, \"cpu_ms_per_worker\": [{}], \"memory_bytes\": {}, \"details\": {}}}",
                json_string(&s.name),
                s.estimated_rows.map_or("null".to_string(), |e| format!("{e:.0}")),
                s.rows,
                s.batches,
                s.bytes,
                ms(stage_cpu(s)),
                workers.join(", "),
                s.memory_bytes,
                json_strings(&s.details)
            );
        }
        t.push_str("]}");
    }
    let _ = writeln!(t, "],\n \"hints\": {}}}", json_strings(&p.hints()));
    t
}

/// `["a", "b"]`.
fn json_strings(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| json_string(s)).collect();
    format!("[{}]", quoted.join(", "))
}

/// The optimized plan and its pipelines as JSON: `{"plan": NODE, "pipelines": [{"source",
/// "stages": [{"name", "estimated_rows", "details": [..]}]}]}`, where NODE is `{"node": line,
/// "estimated_rows": n, "children": [NODE..]}`.
fn plan_json(plan: &LogicalPlan, pipelines: &[PipelineStats]) -> String {
    fn node(p: &LogicalPlan, out: &mut String) {
        let _ = write!(
            out,
            "{{\"node\": {}, \"estimated_rows\": {:.0}, \"children\": [",
            json_string(&p.node_line()),
            estimate_rows(p)
        );
        for (i, c) in p.children().iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            node(c, out);
        }
        out.push_str("]}");
    }
    let mut out = String::from("{\"plan\": ");
    node(plan, &mut out);
    out.push_str(",\n \"pipelines\": [");
    for (i, pl) in pipelines.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "\n  {{\"source\": {}, \"stages\": [",
            json_string(&pl.source)
        );
        for (j, s) in pl.stages.iter().enumerate() {
            if j > 0 {
                out.push_str(", ");
            }
            let _ = write!(
                out,
                "\n    {{\"name\": {}, \"estimated_rows\": {}, \"details\": {}}}",
                json_string(&s.name),
                s.estimated_rows
                    .map_or("null".to_string(), |e| format!("{e:.0}")),
                json_strings(&s.details)
            );
        }
        out.push_str("]}");
    }
    out.push_str("]}\n");
    out
}

/// The optimized plan as a Graphviz DOT digraph (edges from input to consumer).
fn plan_dot(plan: &LogicalPlan) -> String {
    fn node(p: &LogicalPlan, next: &mut usize, out: &mut String) -> usize {
        let id = *next;
        *next += 1;
        let label = format!(
            "{}\\n~{} rows",
            short(&p.node_line(), 60),
            count(estimate_rows(p))
        );
        let _ = writeln!(
            out,
            "  n{id} [shape=box, label={}];",
            json_string(&label).replace("\\\\n", "\\n")
        );
        for c in p.children() {
            let child = node(c, next, out);
            let _ = writeln!(out, "  n{child} -> n{id};");
        }
        id
    }
    let mut out = String::from("digraph plan {\n  rankdir=BT;\n");
    node(plan, &mut 0, &mut out);
    out.push_str("}\n");
    out
}
