//! All 22 TPC-H queries at scale factor 0.01 over CSV files generated in-process
//! (tpchgen), checked against answers DuckDB produced from the same files
//! (tests/tools/tpch_answers.py), through SQL and (Q1, Q6) the LazyFrame API, and compared
//! bit for bit between 1, 2, 4, 8 and 16 worker threads.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use morsel::{col, lit, lit_date, CsvOptions, Expr, QueryResult, ScalarValue, Session};

#[path = "../benches/common/tpch_data.rs"]
mod tpch_data;

use tpch_data::TABLES;

const SCALE: f64 = 0.01;

/// The generated data folder (created once per test binary).
fn data_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tpch-sf0.01");
        tpch_data::ensure(&dir, SCALE).expect("generate TPC-H data");
        dir
    })
}

fn session(threads: usize) -> Session {
    let s = Session::with_threads(threads);
    for t in TABLES {
        let path = data_dir().join(format!("{t}.csv"));
        s.register_csv(t, path.to_str().expect("utf-8 path"), CsvOptions::default())
            .expect("register table");
    }
    s
}

fn query_text(q: u32) -> String {
    std::fs::read_to_string(format!("tests/tpch/queries/q{q:02}.sql")).expect("query file")
}

/// Cells as in the answer files: floats in shortest round-trip form, others as in .slt files.
fn cell(v: &ScalarValue) -> String {
    match v {
        ScalarValue::Null => "NULL".into(),
        ScalarValue::Float64(x) => format!("{x:?}"),
        ScalarValue::Utf8(s) if s.is_empty() => "(empty)".into(),
        other => other.to_string(),
    }
}

/// Checks `r` against the answer file: floats within a relative 1e-12 (DuckDB sums doubles
/// in another order, so the last bits may differ), every other cell exactly.
fn assert_answer(r: &QueryResult, q: u32) {
    let text =
        std::fs::read_to_string(format!("tests/tpch/answers/q{q:02}.txt")).expect("answer file");
    let want: Vec<Vec<&str>> = text.lines().map(|l| l.split('|').collect()).collect();
    let got: Vec<Vec<String>> = r
        .rows()
        .iter()
        .map(|row| row.iter().map(cell).collect())
        .collect();
    assert_eq!(got.len(), want.len(), "Q{q}: row count");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g.len(), w.len(), "Q{q} row {i}: column count");
        for (j, (a, b)) in g.iter().zip(w).enumerate() {
            let close = match (a.parse::<f64>(), b.parse::<f64>()) {
                (Ok(x), Ok(y)) if b.contains('.') || b.contains('e') => {
                    (x - y).abs() <= 1e-12 * x.abs().max(y.abs()).max(1.0)
                }
                _ => a == b,
            };
            assert!(
                close,
                "Q{q} row {i} column {j}: got {a}, expected {b}\nrow: {g:?}"
            );
        }
    }
}

/// Every value, floats by their bits: for exact comparison across thread counts.
fn exact(r: &QueryResult) -> Vec<Vec<String>> {
    r.rows()
        .iter()
        .map(|row| {
            row.iter()
                .map(|v| match v {
                    ScalarValue::Float64(x) => format!("f{:016x}", x.to_bits()),
                    other => format!("{other:?}"),
                })
                .collect()
        })
        .collect()
}

fn check_sql(q: u32) {
    let one = session(1)
        .execute(&query_text(q))
        .expect("query runs at 1 thread");
    assert_answer(&one, q);
    for threads in [2, 4, 8, 16] {
        let other = session(threads)
            .execute(&query_text(q))
            .expect("query runs");
        assert_eq!(
            exact(&one),
            exact(&other),
            "TPC-H Q{q}: 1 and {threads} threads differ"
        );
    }
}

#[test]
fn q01_sql() {
    check_sql(1);
}

#[test]
fn q03_sql() {
    check_sql(3);
}

#[test]
fn q05_sql() {
    check_sql(5);
}

#[test]
fn q06_sql() {
    check_sql(6);
}

#[test]
fn q10_sql() {
    check_sql(10);
}

#[test]
fn queries_with_subqueries_sql() {
    for q in [2, 4, 11, 15, 16, 17, 18, 20, 21, 22] {
        check_sql(q);
    }
}

#[test]
fn other_queries_sql() {
    for q in [7, 8, 9, 12, 13, 14, 19] {
        check_sql(q);
    }
}

/// A session whose tables are loaded into memory (`CREATE TABLE ... AS SELECT`), where scans
/// order their filters by the tables' samples and may test a join's keys first.
fn memory_session(threads: usize) -> Session {
    let s = Session::with_threads(threads);
    for t in TABLES {
        let path = data_dir().join(format!("{t}.csv"));
        s.execute(&format!(
            "CREATE TABLE {t} AS SELECT * FROM '{}'",
            path.display()
        ))
        .expect("load table");
    }
    s
}

/// Every query over tables in memory gives the answer, the same at 1, 2, 4, 8 and 16 threads; Q19's
/// lineitem scan tests the part join's keys before its text conjuncts (the path is taken).
#[test]
fn queries_over_tables_in_memory() {
    let one = memory_session(1);
    let others = [2, 4, 8, 16].map(|threads| (threads, memory_session(threads)));
    for q in 1..=22 {
        let a = one.execute(&query_text(q)).expect("query runs at 1 thread");
        assert_answer(&a, q);
        for (threads, other) in &others {
            let b = other.execute(&query_text(q)).expect("query runs");
            assert_eq!(
                exact(&a),
                exact(&b),
                "TPC-H Q{q} in memory: 1 and {threads} threads differ"
            );
        }
    }
    let profile = one
        .execute(&format!("EXPLAIN ANALYZE {}", query_text(19)))
        .expect("EXPLAIN ANALYZE runs");
    let text: String = profile
        .rows()
        .iter()
        .map(|r| format!("{}\n", r[0]))
        .collect();
    let flat = text
        .replace(['│', '\n'], " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        flat.contains("selectivity on the table's sample): l_partkey in the join's keys"),
        "{text}"
    );
}

fn lineitem(s: &Session) -> morsel::LazyFrame {
    s.table("lineitem").expect("lineitem is registered")
}

#[test]
fn q01_lazy() {
    let run = |threads| {
        let s = session(threads);
        let disc_price = col("l_extendedprice") * (lit(1) - col("l_discount"));
        lineitem(&s)
            .filter(col("l_shipdate").lt_eq(lit_date("1998-09-02")))
            .group_by([col("l_returnflag"), col("l_linestatus")])
            .agg([
                col("l_quantity").sum().alias("sum_qty"),
                col("l_extendedprice").sum().alias("sum_base_price"),
                disc_price.clone().sum().alias("sum_disc_price"),
                (disc_price * (lit(1) + col("l_tax")))
                    .sum()
                    .alias("sum_charge"),
                col("l_quantity").avg().alias("avg_qty"),
                col("l_extendedprice").avg().alias("avg_price"),
                col("l_discount").avg().alias("avg_disc"),
                Expr::count_star().alias("count_order"),
            ])
            .sort([col("l_returnflag"), col("l_linestatus")])
            .collect()
            .expect("Q1 runs")
    };
    let one = run(1);
    assert_answer(&one, 1);
    assert_eq!(exact(&one), exact(&run(4)));
}

/// Q6's WHERE clause, built in code.
fn q06_filter() -> Expr {
    col("l_shipdate")
        .gt_eq(lit_date("1994-01-01"))
        .and(col("l_shipdate").lt(lit_date("1995-01-01")))
        .and(col("l_discount").between(lit(0.05), lit(0.07)))
        .and(col("l_quantity").lt(lit(24)))
}

#[test]
fn q06_lazy() {
    let revenue = || {
        (col("l_extendedprice") * col("l_discount"))
            .sum()
            .alias("revenue")
    };
    // An aggregate in select() is an error (aggregates go in group_by(..).agg(..)).
    let s = session(1);
    let err = lineitem(&s)
        .filter(q06_filter())
        .select([revenue()])
        .collect()
        .expect_err("aggregate in select");
    assert!(
        err.to_string().contains("outside of an aggregation"),
        "{err}"
    );
    let run = |threads| {
        let s = session(threads);
        lineitem(&s)
            .filter(q06_filter())
            .group_by([])
            .agg([revenue()])
            .collect()
            .expect("Q6 runs")
    };
    let one = run(1);
    assert_answer(&one, 6);
    assert_eq!(exact(&one), exact(&run(4)));
}

#[test]
fn lazy_errors_name_the_column_and_the_choices() {
    let s = session(1);
    let err = lineitem(&s)
        .filter(col("l_shipdat").lt(lit_date("1998-01-01")))
        .collect()
        .expect_err("unknown column");
    let msg = err.to_string();
    assert!(
        msg.contains("column l_shipdat not found (did you mean lineitem.l_shipdate?)"),
        "{msg}"
    );
    assert!(
        msg.contains("available columns: lineitem.l_orderkey"),
        "{msg}"
    );
    let err = lineitem(&s)
        .select([col("l_shipdate") + col("l_comment")])
        .collect()
        .expect_err("type mismatch");
    assert!(
        err.to_string()
            .contains("cannot apply + to DATE and VARCHAR"),
        "{err}"
    );
}

/// The optimized plan of query `q`, one node per line.
fn explain(q: u32) -> String {
    let plan = session(1)
        .execute(&format!("EXPLAIN {}", query_text(q)))
        .expect("explain runs");
    plan.rows()
        .iter()
        .map(|r| r[0].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Plan snapshots: filters reach the scans, scans read only the columns used, and the
/// comma joins became hash joins on the WHERE equalities (no cross products).
#[test]
fn explain_snapshots() {
    for q in [1, 3, 5, 6, 10] {
        let text = explain(q);
        assert!(
            !text.contains("CrossJoin"),
            "Q{q} kept a cross join:\n{text}"
        );
        insta::assert_snapshot!(format!("explain_q{q:02}"), text);
    }
}

/// No correlated subquery runs once per outer row: each one (Q2, Q4, Q17, Q20, Q21, Q22) is
/// decorrelated into a semi, anti or left join keyed on the correlation columns, and the plan
/// has no cross product left.
#[test]
fn correlated_subqueries_become_keyed_joins() {
    for q in [2, 4, 17, 20, 21, 22] {
        let text = explain(q);
        let sub_joins: Vec<&str> = text
            .lines()
            .filter(|l| {
                l.contains("Join: Semi")
                    || l.contains("Join: Anti")
                    || l.contains("Join: NullAwareAnti")
                    || l.contains("Join: Mark")
                    || (l.contains("Join: Left") && l.contains("__sq"))
            })
            .collect();
        assert!(!sub_joins.is_empty(), "Q{q} has no subquery join:\n{text}");
        for line in &sub_joins {
            let uncorrelated_q22 = q == 22 && line.contains("Join: Left");
            assert!(
                !line.contains("on=[]") || uncorrelated_q22,
                "Q{q}: a subquery join without keys: {line}\n{text}"
            );
        }
        assert!(
            !text.contains("CrossJoin"),
            "Q{q} kept a cross join:\n{text}"
        );
        insta::assert_snapshot!(format!("explain_q{q:02}"), text);
    }
}

/// Every optimizer rule (and the executor's fusion) can be switched off by name, and no rule
/// changes an answer: all 22 queries give DuckDB's answers with each rule disabled in turn.
/// A query whose EXPLAIN (logical and physical plan) is the same without the rule runs the
/// same plan, so only the queries a rule changes are run again.
#[test]
fn answers_do_not_depend_on_optimizer_rules() {
    let rules = morsel::Optimizer::default().rule_names();
    assert_eq!(rules.len(), 10, "{rules:?}");
    let with_all = session(1);
    let plan = |s: &Session, q: u32| {
        s.execute(&format!("EXPLAIN {}", query_text(q)))
            .expect("explain runs")
            .rows()
    };
    let plans: Vec<_> = (1..=22).map(|q| plan(&with_all, q)).collect();
    for rule in rules
        .into_iter()
        .chain(morsel::EXECUTION_RULES.iter().copied())
    {
        let s = session(1);
        s.set_disabled_rules(&[rule]).expect("a known rule");
        for q in 1..=22 {
            if plan(&s, q) == plans[q as usize - 1] {
                continue;
            }
            let r = s
                .execute(&query_text(q))
                .unwrap_or_else(|e| panic!("Q{q} without {rule}: {e}"));
            assert_answer(&r, q);
        }
    }
    let s = session(1);
    let err = s
        .set_disabled_rules(&["no_such_rule"])
        .expect_err("unknown");
    assert!(
        err.to_string().contains("push_down_filter, reorder_joins"),
        "{err}"
    );
}

/// The rules reach a fixed point well before the optimizer's cap of 8 passes: no rule keeps
/// changing the plan of any TPC-H query (a rule pair undoing or stacking each other's work
/// would show here).
#[test]
fn the_optimizer_reaches_a_fixed_point() {
    let s = session(1);
    for q in 1..=22 {
        let verbose = s
            .execute(&format!("EXPLAIN VERBOSE {}", query_text(q)))
            .expect("explain runs")
            .rows()
            .iter()
            .map(|r| r[0].to_string())
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            !verbose.contains("(pass 6,") && !verbose.contains("(pass 7,"),
            "Q{q} still changing after 5 passes:\n{verbose}"
        );
    }
}
