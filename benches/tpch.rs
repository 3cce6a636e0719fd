//! TPC-H runner: generates the data once (tpchgen, CSV with header) into a cache folder, then
//! times the 22 queries and prints one CSV line per query.
//!
//! cargo bench --bench tpch -- [--sf 1] [--mode csv|memory] [--threads N] [--runs K]
//!                             [--query Q]... [--data DIR] [--out DIR]
//!
//! `--mode csv` queries the CSV files directly (parsing included); `--mode memory` loads the
//! tables first (the load is timed and reported on its own line) and times execution only.
//! A query the engine cannot run yet is reported as `unsupported` with the reason, never
//! skipped silently. `--out DIR` writes each result as CSV (for the peer comparison).

#[path = "common/checksum.rs"]
mod checksum;
#[path = "common/tpch_data.rs"]
mod tpch_data;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use morsel::{CsvOptions, Session};
use morsel_storage::csv::{write_csv, CsvInput, CsvReader, CsvWriteOptions};

struct Args {
    sf: f64,
    memory: bool,
    threads: usize,
    runs: usize,
    queries: Vec<u32>,
    data: Option<PathBuf>,
    out: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        sf: 1.0,
        memory: false,
        threads: morsel::ExecContext::default().threads,
        runs: 3,
        queries: Vec::new(),
        data: None,
        out: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut val = |n: &str| it.next().ok_or_else(|| format!("{n} needs a value"));
        match arg.as_str() {
            "--bench" => {}
            "--sf" => a.sf = val("--sf")?.parse().map_err(|e| format!("--sf: {e}"))?,
            "--mode" => {
                a.memory = match val("--mode")?.as_str() {
                    "csv" => false,
                    "memory" => true,
                    m => return Err(format!("--mode is csv or memory, not {m}")),
                }
            }
            "--threads" => {
                a.threads = val("--threads")?
                    .parse()
                    .map_err(|e| format!("--threads: {e}"))?
            }
            "--runs" => a.runs = val("--runs")?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--query" => a.queries.push(
                val("--query")?
                    .parse()
                    .map_err(|e| format!("--query: {e}"))?,
            ),
            "--data" => a.data = Some(PathBuf::from(val("--data")?)),
            "--out" => a.out = Some(PathBuf::from(val("--out")?)),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.queries.is_empty() {
        a.queries = (1..=22).collect();
    }
    a.runs = a.runs.max(1);
    Ok(a)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn main() {
    // As the command line runs queries (see morsel::allocator).
    morsel::allocator::retain_freed_memory();
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = args
        .data
        .clone()
        .unwrap_or_else(|| root.join(format!("target/tpch-data/sf{}", args.sf)));
    let t = Instant::now();
    tpch_data::ensure(&dir, args.sf).expect("generate TPC-H data");
    eprintln!(
        "data: {} (ready in {:.1} s)",
        dir.display(),
        t.elapsed().as_secs_f64()
    );
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out).expect("create the output folder");
    }

    let session = Session::with_threads(args.threads);
    let mode = if args.memory { "memory" } else { "csv" };
    println!(
        "# morsel {} tpch sf={} mode={mode} threads={} runs={}",
        env!("CARGO_PKG_VERSION"),
        args.sf,
        args.threads,
        args.runs
    );
    println!("query,status,rows,median_ms,p90_ms,best_ms,checksum,detail");
    let t = Instant::now();
    for table in tpch_data::TABLES {
        let path = dir.join(format!("{table}.csv"));
        let path = path.to_str().expect("utf-8 path");
        if args.memory {
            let reader =
                CsvReader::open(CsvInput::file(path), CsvOptions::default()).expect("open table");
            let data = reader.read_all(None).expect("load table");
            session
                .register_batches(table, Arc::clone(&data.schema), data.batches)
                .expect("register table");
        } else {
            session
                .register_csv(table, path, CsvOptions::default())
                .expect("register table");
        }
    }
    if args.memory {
        println!(
            "load,ok,,{:.1},,,,all tables read into memory",
            t.elapsed().as_secs_f64() * 1e3
        );
    }
    for q in &args.queries {
        let sql = std::fs::read_to_string(root.join(format!("tests/tpch/queries/q{q:02}.sql")))
            .expect("query file");
        let mut times = Vec::with_capacity(args.runs);
        let mut last = None;
        let mut failure = None;
        for _ in 0..args.runs {
            let start = Instant::now();
            match session.execute(&sql) {
                Ok(r) => {
                    times.push(start.elapsed().as_secs_f64() * 1e3);
                    last = Some(r);
                }
                Err(e) => {
                    failure = Some(e.to_string());
                    break;
                }
            }
        }
        match (failure, last) {
            (Some(e), _) => println!("q{q:02},unsupported,,,,,,\"{}\"", e.replace('"', "'")),
            (None, Some(r)) => {
                times.sort_by(f64::total_cmp);
                println!(
                    "q{q:02},ok,{},{:.1},{:.1},{:.1},{:016x},",
                    r.num_rows(),
                    percentile(&times, 0.5),
                    percentile(&times, 0.9),
                    times[0],
                    checksum::checksum(&r)
                );
                if let Some(out) = &args.out {
                    let mut f = std::fs::File::create(out.join(format!("q{q:02}.csv")))
                        .expect("result file");
                    write_csv(&mut f, r.schema(), r.batches(), &CsvWriteOptions::default())
                        .expect("write result");
                }
            }
            (None, None) => unreachable!("at least one run"),
        }
    }
}
