//! The micro-benchmark suite: `cargo bench --bench suite`. Prints CSV: a header line with the
//! configuration, then one line per workload with best / median / p90 time and a checksum.
//!
//! Inputs come from a fixed seed and are built before timing. Each workload runs
//! `BENCH_WARMUP` times untimed (default 1; the peers' harness asks for as many as it gives
//! the peers), then `BENCH_REPS` (default 5) timed repetitions. Outside the timed region
//! its result is validated: the checksum at `MORSEL_THREADS` workers must equal the
//! checksum at 1 worker and, where the oracle (benches/common/oracle.rs) covers the
//! workload, the oracle's; the run exits non-zero on any mismatch.
//!
//! `BENCH_SMOKE=1`: 1,000- and 50,000-row inputs, one repetition (CI runs this as a correctness
//! check). `BENCH_LARGE=1`: adds 10,000,000-row inputs. `BENCH_FILTER=text`: only workloads
//! whose name contains `text`. `BENCH_EXPORT=dir`: also writes the generated tables as CSV,
//! for the peer comparison in benches/peers/.

#[path = "common/checksum.rs"]
mod checksum;
#[path = "common/oracle.rs"]
mod oracle;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use morsel::{CsvOptions, QueryResult, ScalarValue, Session};
use morsel_storage::{Batch, Column, DataType, Field, PrimitiveColumn, Schema, Utf8Column};

const SEED: u64 = 0x5EED_2026_1129;
const CSV_BLOCK_BYTES: usize = 1 << 20;

/// xorshift64*: small, fast, and the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The main table `t`: five float columns (a, b, c, e nullable at the given density; d never
/// zero), three integer key columns (16 values, ~100k values, skewed) and a string key.
struct Table {
    a: Vec<Option<f64>>,
    b: Vec<Option<f64>>,
    c: Vec<Option<f64>>,
    d: Vec<Option<f64>>,
    e: Vec<Option<f64>>,
    k16: Vec<i64>,
    k100k: Vec<i64>,
    kskew: Vec<i64>,
    s: Vec<String>,
}

impl Table {
    fn generate(n: usize, nulls: f64, seed: u64) -> Table {
        let mut r = Rng(seed ^ n as u64 ^ nulls.to_bits());
        let col = |r: &mut Rng, lo: f64| -> Vec<Option<f64>> {
            (0..n)
                .map(|_| {
                    if r.unit() < nulls {
                        None
                    } else {
                        Some(lo + r.unit())
                    }
                })
                .collect()
        };
        let a = col(&mut r, 0.0);
        let b = col(&mut r, 0.0);
        let c = col(&mut r, 0.0);
        let d = col(&mut r, 0.0);
        let e = col(&mut r, 1.0);
        let k16 = (0..n).map(|_| r.below(16) as i64).collect();
        let k100k = (0..n).map(|_| r.below(100_000) as i64).collect();
        // Skewed: a few keys take most rows (u^4 piles up near zero).
        let kskew = (0..n)
            .map(|_| (r.unit().powi(4) * 100_000.0) as i64)
            .collect();
        let s = (0..n).map(|_| format!("key{:04}", r.below(1000))).collect();
        Table {
            a,
            b,
            c,
            d,
            e,
            k16,
            k100k,
            kskew,
            s,
        }
    }

    fn batch(&self) -> Batch {
        let f =
            |v: &[Option<f64>]| Column::Float64(PrimitiveColumn::from_options(v.iter().copied()));
        let i = |v: &[i64]| Column::Int64(PrimitiveColumn::from_vec(v.to_vec()));
        let columns = vec![
            f(&self.a),
            f(&self.b),
            f(&self.c),
            f(&self.d),
            f(&self.e),
            i(&self.k16),
            i(&self.k100k),
            i(&self.kskew),
            Column::Utf8(Utf8Column::from_strs(
                self.s.iter().map(|s| Some(s.as_str())),
            )),
        ];
        let names = ["a", "b", "c", "d", "e", "k16", "k100k", "kskew", "s"];
        let types = [
            DataType::Float64,
            DataType::Float64,
            DataType::Float64,
            DataType::Float64,
            DataType::Float64,
            DataType::Int64,
            DataType::Int64,
            DataType::Int64,
            DataType::Utf8,
        ];
        let schema = Arc::new(Schema::new(
            names
                .iter()
                .zip(types)
                .map(|(n, t)| Field::new(*n, t, true))
                .collect(),
        ));
        Batch::try_new(schema, columns, self.a.len()).expect("suite table")
    }
}

fn register(sessions: &[&Session], name: &str, batch: &Batch) {
    for s in sessions {
        s.register_batches(name, batch.schema().clone(), vec![batch.clone()])
            .expect("register");
    }
}

struct Suite {
    threads: usize,
    warmup: usize,
    reps: usize,
    filter: Option<String>,
    main: Session,
    single: Session,
    failures: usize,
}

struct Workload<'a> {
    name: &'a str,
    rows: usize,
    nulls: f64,
    variant: &'a str,
    shape: &'a str,
    sql: String,
    oracle: Option<Box<dyn FnOnce() -> Vec<Vec<ScalarValue>> + 'a>>,
}

impl Suite {
    fn run(&mut self, w: Workload<'_>) {
        if self
            .filter
            .as_ref()
            .is_some_and(|f| !w.name.contains(f.as_str()))
        {
            return;
        }
        let first = match self.main.execute(&w.sql) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("# FAILED {} ({} rows): {e}", w.name, w.rows);
                self.failures += 1;
                return;
            }
        };
        for _ in 1..self.warmup {
            self.main.execute(&w.sql).expect("ran once already");
        }
        let mut times: Vec<u128> = Vec::with_capacity(self.reps);
        let mut last: Option<QueryResult> = None;
        for _ in 0..self.reps {
            let t = Instant::now();
            let r = self.main.execute(&w.sql).expect("ran once already");
            times.push(t.elapsed().as_nanos());
            last = Some(r);
        }
        times.sort_unstable();
        let result = last.unwrap_or(first);
        let sum = checksum::checksum(&result);
        // Validation, outside the timed region.
        let one = checksum::checksum(&self.single.execute(&w.sql).expect("runs at 1 thread"));
        if one != sum {
            eprintln!("# VALIDATION FAILED {} ({} rows, nulls {}): {} threads {sum:016x} vs 1 thread {one:016x}", w.name, w.rows, w.nulls, self.threads);
            self.failures += 1;
        }
        if let Some(oracle) = w.oracle {
            let want = checksum::checksum_rows(oracle());
            if want != sum {
                eprintln!("# VALIDATION FAILED {} ({} rows, nulls {}): engine {sum:016x} vs oracle {want:016x}", w.name, w.rows, w.nulls);
                self.failures += 1;
            }
        }
        let pct = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize];
        let best = times[0].max(1);
        println!(
            "{},{},{},{},{},{},{},{},{},{},{:.0},{sum:016x}",
            w.name,
            w.rows,
            w.nulls,
            w.variant,
            w.shape,
            self.threads,
            self.reps,
            best,
            pct(0.5),
            pct(0.9),
            w.rows as f64 / (best as f64 / 1e9)
        );
    }
}

fn git_commit() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// A CSV file of `n` rows and 8 columns (one a quoted string holding a comma), made once.
fn csv_file(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join(format!("suite_{n}.csv"));
    if path.exists() {
        return path;
    }
    std::fs::create_dir_all(dir).expect("bench data folder");
    let tmp = path.with_extension("tmp");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&tmp).expect("csv file"));
    writeln!(w, "id,k,x,y,name,day,flag,note").expect("write");
    let mut r = Rng(SEED ^ 0xC5C5);
    for i in 0..n {
        let day = 18_000 + r.below(3000) as i32;
        writeln!(
            w,
            "{i},{},{:.6},{:.3},\"name {}, {}\",{},{},note{}",
            r.below(16),
            r.unit(),
            r.unit() * 1000.0,
            r.below(100),
            r.below(1000),
            morsel_storage::temporal::format_date(day),
            r.below(2) == 1,
            r.below(50)
        )
        .expect("write");
    }
    w.flush().expect("flush");
    std::fs::rename(&tmp, &path).expect("rename");
    path
}

fn export(dir: &Path, name: &str, batch: &Batch) {
    std::fs::create_dir_all(dir).expect("export folder");
    let mut f = std::fs::File::create(dir.join(format!("{name}.csv"))).expect("export file");
    morsel_storage::csv::write_csv(
        &mut f,
        batch.schema(),
        std::slice::from_ref(batch),
        &Default::default(),
    )
    .expect("export");
}

fn main() {
    // As the command line runs queries (see morsel::allocator).
    morsel::allocator::retain_freed_memory();
    let flag = |v: &str| std::env::var(v).is_ok_and(|x| !x.is_empty() && x != "0");
    let smoke = flag("BENCH_SMOKE");
    let threads = morsel::ExecContext::default().threads;
    let count = |var: &str, default: usize| {
        std::env::var(var)
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(default)
    };
    let reps = if smoke { 1 } else { count("BENCH_REPS", 5) };
    let warmup = if smoke { 1 } else { count("BENCH_WARMUP", 1) };
    let mut sizes = if smoke {
        // 50,000 rows: three whole morsels and a short last one, so that merges of several
        // partials (a last morsel of mostly distinct keys kept as rows among them) are
        // checked against the oracle too, not only a single morsel's table.
        vec![1_000, 50_000]
    } else {
        vec![1_000, 100_000, 1_000_000]
    };
    if flag("BENCH_LARGE") && !smoke {
        sizes.push(10_000_000);
    }
    let export_dir = std::env::var("BENCH_EXPORT").ok().map(PathBuf::from);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "# morsel {} commit {} seed {SEED:#x} cores {cores} threads {threads} batch_rows {} morsel_rows {} csv_block_bytes {CSV_BLOCK_BYTES}",
        env!("CARGO_PKG_VERSION"),
        git_commit(),
        morsel_executor::MORSEL_ROWS,
        morsel_executor::MORSEL_ROWS,
    );
    println!("workload,rows,null_density,variant,group_shape,threads,reps,best_ns,median_ns,p90_ns,rows_per_s,checksum");
    let mut suite = Suite {
        threads,
        warmup,
        reps,
        filter: std::env::var("BENCH_FILTER").ok(),
        main: Session::with_threads(threads),
        single: Session::with_threads(1),
        failures: 0,
    };

    for &n in &sizes {
        for nulls in [0.0, 0.1] {
            let t = Table::generate(n, nulls, SEED);
            let batch = t.batch();
            register(&[&suite.main, &suite.single], "t", &batch);
            if let Some(dir) = &export_dir {
                export(dir, &format!("t_{n}_{}", (nulls * 100.0) as u32), &batch);
            }
            let w = |name: &'static str, variant: &'static str, shape: &'static str, sql: &str| {
                Workload {
                    name,
                    rows: n,
                    nulls,
                    variant,
                    shape,
                    sql: sql.to_string(),
                    oracle: None,
                }
            };
            suite.run(Workload {
                oracle: Some(Box::new(|| {
                    oracle::arithmetic_chain(&t.a, &t.b, &t.c, &t.d, &t.e)
                })),
                ..w(
                    "arithmetic_chain",
                    "unfused",
                    "",
                    "SELECT ((a + b) * c - d) / e + a FROM t",
                )
            });
            suite.run(Workload {
                oracle: Some(Box::new(|| oracle::compare(&t.a, &t.b))),
                ..w("nullable_compare", "", "", "SELECT a < b FROM t")
            });
            suite.run(Workload {
                oracle: Some(Box::new(|| oracle::filter(&t.a, &t.k16))),
                ..w("filter", "", "", "SELECT a, k16 FROM t WHERE a < 0.5")
            });
            suite.run(Workload {
                oracle: Some(Box::new(|| oracle::sum(&t.a))),
                ..w("global_sum", "", "", "SELECT sum(a) FROM t")
            });
            suite.run(Workload {
                oracle: Some(Box::new(|| oracle::count(&t.a))),
                ..w("global_count", "", "", "SELECT count(a) FROM t")
            });
            let int_keys = |k: &[i64]| k.iter().map(|&x| ScalarValue::Int64(x)).collect::<Vec<_>>();
            let a = &t.a;
            for (shape, col, keys) in [
                ("low16", "k16", &t.k16),
                ("high100k", "k100k", &t.k100k),
                ("skewed", "kskew", &t.kskew),
            ] {
                suite.run(Workload {
                    oracle: Some(Box::new(move || {
                        oracle::group_sum(&int_keys(keys), a, true)
                    })),
                    ..w(
                        "grouped_sum_count",
                        "",
                        shape,
                        &format!("SELECT {col}, sum(a), count(*) FROM t GROUP BY {col}"),
                    )
                });
            }
            suite.run(Workload {
                oracle: Some(Box::new(|| {
                    let keys: Vec<ScalarValue> =
                        t.s.iter().map(|s| ScalarValue::Utf8(s.clone())).collect();
                    oracle::group_sum(&keys, &t.a, false)
                })),
                ..w(
                    "group_by_string",
                    "",
                    "1000 strings",
                    "SELECT s, sum(a) FROM t GROUP BY s",
                )
            });
            suite.run(Workload {
                oracle: Some(Box::new(|| oracle::sort_two_keys(&t.k16, &t.a))),
                ..w(
                    "sort_two_keys",
                    "",
                    "",
                    "SELECT k16, a FROM t ORDER BY k16, a",
                )
            });
            suite.run(Workload {
                oracle: Some(Box::new(|| oracle::top_k(&t.a, 10))),
                ..w(
                    "top_k",
                    "k=10",
                    "",
                    "SELECT a FROM t ORDER BY a DESC LIMIT 10",
                )
            });
            suite.run(Workload {
                oracle: Some(Box::new(|| oracle::concat(&t.a, &t.b))),
                ..w(
                    "concat",
                    "union all",
                    "",
                    "SELECT a FROM t UNION ALL SELECT b FROM t",
                )
            });
        }

        // Inner join: n probe rows against n/2 distinct build keys; every probe row matches.
        let m = (n / 2).max(1);
        let mut r = Rng(SEED ^ 0x1010 ^ n as u64);
        let lk: Vec<i64> = (0..n).map(|_| r.below(m as u64) as i64).collect();
        let lv: Vec<f64> = (0..n).map(|_| r.unit()).collect();
        let rw: Vec<f64> = (0..m).map(|_| r.unit()).collect();
        let f64s = |v: &[f64]| Column::Float64(PrimitiveColumn::from_vec(v.to_vec()));
        let i64s = |v: Vec<i64>| Column::Int64(PrimitiveColumn::from_vec(v));
        let ls = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("v", DataType::Float64, false),
        ]));
        let rs = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("w", DataType::Float64, false),
        ]));
        let l = Batch::try_new(ls, vec![i64s(lk.clone()), f64s(&lv)], n).expect("l");
        let rb = Batch::try_new(rs, vec![i64s((0..m as i64).collect()), f64s(&rw)], m).expect("r");
        register(&[&suite.main, &suite.single], "l", &l);
        register(&[&suite.main, &suite.single], "r", &rb);
        if let Some(dir) = &export_dir {
            export(dir, &format!("l_{n}"), &l);
            export(dir, &format!("r_{n}"), &rb);
        }
        suite.run(Workload {
            name: "inner_join",
            rows: n,
            nulls: 0.0,
            variant: "hash",
            shape: "n x n/2 distinct keys",
            sql: "SELECT count(*), sum(l.v + r.w) FROM l JOIN r ON l.k = r.k".into(),
            oracle: Some(Box::new(|| oracle::join_sum(&lk, &lv, &rw))),
        });
    }

    // CSV: 1M rows x 8 columns (smoke: 1,000), read whole, and read + filter + aggregate.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    let mut csv_sizes = if smoke { vec![1_000] } else { vec![1_000_000] };
    if flag("BENCH_LARGE") && !smoke {
        csv_sizes.push(10_000_000);
    }
    for n in csv_sizes {
        let path = csv_file(&dir, n);
        let p = path.to_str().expect("utf-8 path");
        for s in [&suite.main, &suite.single] {
            s.register_csv("f", p, CsvOptions::default())
                .expect("register csv");
        }
        let w = |name: &'static str, sql: &str| Workload {
            name,
            rows: n,
            nulls: 0.0,
            variant: "",
            shape: "",
            sql: sql.into(),
            oracle: None,
        };
        suite.run(w("csv_read", "SELECT * FROM f"));
        suite.run(Workload {
            shape: "16 groups",
            ..w(
                "csv_filter_aggregate",
                "SELECT k, sum(y), count(*) FROM f WHERE x > 0.5 GROUP BY k",
            )
        });
    }

    if suite.failures > 0 {
        eprintln!("# {} validation failure(s)", suite.failures);
        std::process::exit(1);
    }
}
