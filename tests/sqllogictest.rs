//! Runs the sqllogictest files under tests/slt (or the files and folders given after `--`),
//! each at several thread counts (SLT_THREADS, default "1,2,4,8"), keeps going after failures
//! (a panic inside the engine fails its record), prints every failing record with expected vs
//! actual, and ends with `N passed, M failed`. Files under a `random` folder run twice, the
//! second time with expression fusion disabled.
//!
//! Cells are formatted by the value's runtime type: NULL; true/false; integers in decimal;
//! floats with two decimals (`-0.00` as `0.00`, and NaN, inf, -inf); `(empty)` for the empty
//! string; dates YYYY-MM-DD; timestamps YYYY-MM-DD HH:MM:SS[.ffffff].

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;

use morsel::{DataType, ScalarValue, Session};
use sqllogictest::{DBOutput, DefaultColumnType, Record, Runner};

#[path = "../benches/common/tpch_data.rs"]
mod tpch_data;

struct MorselDb {
    session: Session,
}

#[derive(Debug)]
struct DbError(String);

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DbError {}

/// Runs expressions on the plain kernels, without fused programs.
const UNFUSED: &str = "SET disabled_optimizers = 'fuse_expressions'";

/// Placeholder for the TPC-H data folder in tests/slt/tpch.
const TPCH_DIR: &str = "${TPCH_DIR}";

/// The TPC-H SF 0.01 data (generated in-process on first use).
fn tpch_dir() -> Result<String, String> {
    static DIR: OnceLock<Result<String, String>> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tpch-sf0.01");
        tpch_data::ensure(&dir, 0.01).map_err(|e| format!("generating TPC-H data: {e}"))?;
        Ok(dir.to_string_lossy().into_owned())
    })
    .clone()
}

/// TPC-H answers sum money as DOUBLE in both engines, in different orders, so a value whose
/// exact decimal ends in 5 at the third place (319564.275) may print as .27 in one and .28 in
/// the other. Here two-decimal cells may differ by one in the last place; every other cell
/// must match exactly. (tests/tpch.rs checks the same answers to a relative 1e-12.)
fn tpch_validator(
    normalizer: sqllogictest::Normalizer,
    actual: &[Vec<String>],
    expected: &[String],
) -> bool {
    // An exact match, or one with `<slt:ignore>` fragments, as everywhere else.
    if sqllogictest::default_validator(normalizer, actual, expected) {
        return true;
    }
    let actual: Vec<String> = actual.iter().map(|r| normalizer(&r.join(" "))).collect();
    let expected: Vec<String> = expected.iter().map(normalizer).collect();
    actual.len() == expected.len()
        && actual.iter().zip(&expected).all(|(a, e)| {
            let (a, e): (Vec<&str>, Vec<&str>) = (a.split(' ').collect(), e.split(' ').collect());
            a.len() == e.len()
                && a.iter().zip(&e).all(|(x, y)| {
                    x == y
                        || match (x.split_once('.'), y.split_once('.')) {
                            (Some((_, fx)), Some((_, fy))) if fx.len() == 2 && fy.len() == 2 => {
                                match (x.parse::<f64>(), y.parse::<f64>()) {
                                    (Ok(p), Ok(q)) => (p - q).abs() <= 0.0100001,
                                    _ => false,
                                }
                            }
                            _ => false,
                        }
                })
        })
}

fn cell(v: &ScalarValue) -> String {
    match v {
        ScalarValue::Null => "NULL".into(),
        ScalarValue::Float64(x) if x.is_nan() => "NaN".into(),
        ScalarValue::Float64(x) if x.is_infinite() => {
            if *x > 0.0 {
                "inf".into()
            } else {
                "-inf".into()
            }
        }
        ScalarValue::Float64(x) => {
            let s = format!("{x:.2}");
            if s == "-0.00" {
                "0.00".into()
            } else {
                s
            }
        }
        ScalarValue::Utf8(s) if s.is_empty() => "(empty)".into(),
        other => other.to_string(),
    }
}

impl sqllogictest::DB for MorselDb {
    type Error = DbError;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DbError> {
        let sql = if sql.contains(TPCH_DIR) {
            &sql.replace(TPCH_DIR, &tpch_dir().map_err(DbError)?)
        } else {
            sql
        };
        let result = self
            .session
            .execute(sql)
            .map_err(|e| DbError(e.to_string()))?;
        let types = result
            .schema()
            .fields
            .iter()
            .map(|f| match f.data_type {
                DataType::Int32 | DataType::Int64 => DefaultColumnType::Integer,
                DataType::Float64 => DefaultColumnType::FloatingPoint,
                _ => DefaultColumnType::Text,
            })
            .collect();
        let rows = result
            .rows()
            .iter()
            .map(|r| r.iter().map(cell).collect())
            .collect();
        Ok(DBOutput::Rows { types, rows })
    }

    fn engine_name(&self) -> &str {
        "morsel"
    }
}

fn slt_files(root: &Path, out: &mut Vec<PathBuf>) {
    if root.is_file() {
        out.push(root.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        eprintln!("cannot read {}", root.display());
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            slt_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "slt") {
            out.push(p);
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let roots: Vec<PathBuf> = if args.is_empty() {
        vec![PathBuf::from("tests/slt")]
    } else {
        args.iter().map(PathBuf::from).collect()
    };
    let mut files = Vec::new();
    for r in &roots {
        slt_files(r, &mut files);
    }
    let threads: Vec<usize> = std::env::var("SLT_THREADS")
        .unwrap_or_else(|_| "1,2,4,8".into())
        .split(',')
        .filter_map(|t| t.trim().parse().ok())
        .collect();
    let (mut passed, mut failed) = (0usize, 0usize);
    for file in &files {
        let records = match sqllogictest::parse_file::<DefaultColumnType>(file) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{}: cannot parse: {e}", file.display());
                failed += 1;
                continue;
            }
        };
        let in_folder = |name: &str| file.components().any(|c| c.as_os_str() == name);
        // The random-expression files run twice: with fused expression programs and on the
        // plain kernels, against the same answers.
        let passes: &[Option<&str>] = if in_folder("random") {
            &[None, Some(UNFUSED)]
        } else {
            &[None]
        };
        for &n in &threads {
            for &setup in passes {
                let mut runner = Runner::new(move || async move {
                    let session = Session::with_threads(n);
                    if let Some(sql) = setup {
                        session.execute(sql).map_err(|e| DbError(e.to_string()))?;
                    }
                    Ok::<_, DbError>(MorselDb { session })
                });
                if in_folder("tpch") {
                    runner.with_validator(tpch_validator);
                }
                let pass = setup.map_or(String::new(), |s| format!(", after {s}"));
                for record in records.clone() {
                    let counted = matches!(record, Record::Statement { .. } | Record::Query { .. });
                    // A panic inside the engine fails the record; the run goes on.
                    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        runner.run(record)
                    }));
                    match run {
                        Ok(Ok(_)) if counted => passed += 1,
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => {
                            failed += 1;
                            eprintln!("FAILED ({n} threads{pass}) {}\n", e.display(false));
                        }
                        Err(_) => {
                            failed += 1;
                            eprintln!("FAILED ({n} threads{pass}) a panic in {}\n", file.display());
                        }
                    }
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 && passed > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
