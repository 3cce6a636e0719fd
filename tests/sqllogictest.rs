//! Runs the sqllogictest files under tests/slt (or the files and folders given after `--`),
//! each at several thread counts (SLT_THREADS, default "1,4"), keeps going after failures,
//! prints every failing record with expected vs actual, and ends with `N passed, M failed`.
//!
//! Cells are formatted by the value's runtime type: NULL; true/false; integers in decimal;
//! floats with two decimals (`-0.00` as `0.00`, and NaN, inf, -inf); `(empty)` for the empty
//! string; dates YYYY-MM-DD; timestamps YYYY-MM-DD HH:MM:SS[.ffffff].

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use morsel::{DataType, ScalarValue, Session};
use sqllogictest::{DBOutput, DefaultColumnType, Record, Runner};

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
        .unwrap_or_else(|_| "1,4".into())
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
        for &n in &threads {
            let mut runner = Runner::new(move || async move {
                Ok::<_, DbError>(MorselDb {
                    session: Session::with_threads(n),
                })
            });
            for record in records.clone() {
                let counted = matches!(record, Record::Statement { .. } | Record::Query { .. });
                match runner.run(record) {
                    Ok(_) if counted => passed += 1,
                    Ok(_) => {}
                    Err(e) => {
                        failed += 1;
                        eprintln!("FAILED ({} threads) {}\n", n, e.display(false));
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
