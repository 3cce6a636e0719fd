//! The `morsel` binary: formats, statements from a file or stdin, several statements,
//! errors (one line, non-zero exit, after the results of the statements before), the same
//! output at MORSEL_THREADS=1 and 4, and the statement timer.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn morsel(args: &[&str], env_threads: Option<&str>, stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_morsel"));
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(t) = env_threads {
        cmd.env("MORSEL_THREADS", t);
    }
    let mut child = cmd.spawn().expect("morsel starts");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write stdin");
    }
    drop(child.stdin.take());
    child.wait_with_output().expect("morsel finishes")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 output")
}

const QUERY: &str =
    "SELECT region, count(*) AS orders, sum(quantity * unit_price * (1 - discount)) AS revenue \
                     FROM 'examples/sales.csv' GROUP BY region ORDER BY revenue DESC";

#[test]
fn table_output_is_aligned() {
    let o = morsel(&[QUERY], None, None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    assert!(
        text.contains("│ region  │ orders │ revenue           │"),
        "{text}"
    );
    assert!(
        text.contains("│ West    │     53 │          9211.111 │"),
        "{text}"
    );
    assert!(text.ends_with("4 rows\n"), "{text}");
}

#[test]
fn csv_and_json_print_floats_in_shortest_round_trip_form() {
    let o = morsel(&["--format", "csv", QUERY], None, None);
    assert_eq!(
        stdout(&o),
        "region,orders,revenue\nWest,53,9211.111\nNorth,53,7643.102000000001\nSouth,44,5181.32\nEast,50,4476.338500000001\n"
    );
    let o = morsel(
        &[
            "--format",
            "json",
            "SELECT 1 AS a, 0.1 AS b, 'x\"y' AS c, NULL AS d",
        ],
        None,
        None,
    );
    assert_eq!(
        stdout(&o),
        "[\n  {\"a\": 1, \"b\": 0.1, \"c\": \"x\\\"y\", \"d\": null}\n]\n"
    );
}

#[test]
fn thread_count_does_not_change_the_output() {
    let q = "SELECT product, sum(quantity * unit_price), avg(discount), min(order_date) FROM 'examples/sales.csv' GROUP BY product ORDER BY 1";
    let one = morsel(&["--format", "csv", q], Some("1"), None);
    let four = morsel(&["--format", "csv", q], Some("4"), None);
    assert!(one.status.success());
    assert_eq!(stdout(&one), stdout(&four));
}

#[test]
fn reads_stdin_and_files_and_runs_statements_in_order() {
    let o = morsel(
        &["--format", "csv"],
        None,
        Some("SELECT 1 AS x; SELECT 2 AS y;"),
    );
    // Every statement's result, in order; statements without output print nothing.
    assert_eq!(stdout(&o), "x\n1\ny\n2\n");
    let o = morsel(
        &["--format", "csv"],
        None,
        Some("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (7); SELECT a FROM t;"),
    );
    assert_eq!(stdout(&o), "Count\n1\na\n7\n");
    let dir = std::env::temp_dir().join(format!("morsel-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("q.sql");
    std::fs::write(&file, "SELECT count(*) AS n FROM 'examples/sales.csv';\n")
        .expect("write query");
    let o = morsel(
        &["--format", "csv", "-f", file.to_str().expect("utf-8")],
        None,
        None,
    );
    assert_eq!(stdout(&o), "n\n200\n");
}

#[test]
fn errors_are_one_line_with_a_non_zero_exit() {
    let o = morsel(&["SELECT nope FROM 'examples/sales.csv'"], None, None);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: column nope not found"), "{err}");
    let o = morsel(&["--format", "xml", "SELECT 1"], None, None);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown format \"xml\""));
}

#[test]
fn skipped_rows_are_reported_on_stderr() {
    let o = morsel(
        &[
            "--format",
            "csv",
            "SELECT id FROM read_csv('tests/data/bad_value.csv', ignore_errors = true) ORDER BY id",
        ],
        None,
        None,
    );
    assert!(o.status.success());
    assert_eq!(stdout(&o), "id\n1\n2\n");
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(err.contains("skipped 1 malformed CSV record(s)"), "{err}");
    assert!(
        err.contains("tests/data/bad_value.csv:4: expected 2 fields but found 3"),
        "{err}"
    );
}

/// `--timer` prints one run time per statement on standard error, in order, and leaves the
/// result on standard output as it is without it.
#[test]
fn the_timer_prints_each_statements_run_time_on_stderr() {
    let script = format!("CREATE VIEW s AS SELECT * FROM 'examples/sales.csv'; {QUERY}");
    let plain = morsel(&["--format", "csv", &script], None, None);
    let timed = morsel(&["--timer", "--format", "csv", &script], None, None);
    assert!(timed.status.success());
    assert_eq!(stdout(&timed), stdout(&plain));
    let err = String::from_utf8_lossy(&timed.stderr).to_string();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    for (i, line) in lines.iter().enumerate() {
        let prefix = format!("Run Time: statement {} of 2: ", i + 1);
        let ms = line
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(" ms"))
            .and_then(|v| v.parse::<f64>().ok());
        assert!(ms.is_some_and(|ms| ms >= 0.0), "{line}");
    }
    assert!(plain.stderr.is_empty());
}

/// A failing statement leaves the results (and, with `--timer`, the times) of the ones
/// before it printed, then the error, with a non-zero exit; nothing after it runs.
#[test]
fn a_failing_statement_leaves_the_earlier_results_printed() {
    let script = "SELECT 1 AS a; SELECT nope FROM 'examples/sales.csv'; SELECT 3 AS c";
    let o = morsel(&["--timer", "--format", "csv", script], None, None);
    assert!(!o.status.success());
    assert_eq!(stdout(&o), "a\n1\n");
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with("Run Time: statement 1 of 3: "),
        "{err}"
    );
    assert!(
        lines[1].starts_with("error: column nope not found"),
        "{err}"
    );
}
