//! Oracle tests over the random predicates of tests/slt/random/predicates.slt, which need no
//! expected answers:
//!
//! - TLP (ternary logic partitioning): the rows where a predicate is TRUE, FALSE and NULL
//!   partition the table, so `count(*) WHERE p` + `WHERE NOT p` + `WHERE (p) IS NULL` is
//!   `count(*)`;
//! - NoREC (non-optimizing reference engine condition): the optimized filter keeps as many
//!   rows as the predicate, computed per row in the select list and summed, says are TRUE;
//!   and as many as the filter with the optimizer's rules and expression fusion switched off.
//!
//! And a differential test of the count joins that answer counts over inequality joins
//! against the plain join and aggregate (`range_counts_equal_the_counts_of_the_pairs`).
//!
//! A predicate one of whose forms fails (a cast out of range at a row that form reaches, as
//! the per-row CASE reaches every row) is skipped; an internal error is a failure. Each runs
//! at 1 and 8 threads.

use morsel::{ScalarValue, Session};

const PREDICATES: &str = "tests/slt/random/predicates.slt";

/// Every rule the optimizer has, and expression fusion: the plain path.
const PLAIN: &str = "SET disabled_optimizers = 'simplify_expressions,push_down_filter,\
push_down_projection,push_down_limit,push_down_semi_joins,reorder_joins,common_subexpressions,\
count_matches_before_join,distinct_aggregates_to_group_by,filter_aggregates_by_join_keys,\
fuse_expressions'";

/// The setup statement and the WHERE predicates of the `SELECT count(*) FROM r WHERE p`
/// records.
fn predicates() -> (String, Vec<String>) {
    let text = std::fs::read_to_string(PREDICATES).expect("the random predicates file");
    let setup = text
        .lines()
        .find(|l| l.starts_with("CREATE VIEW r"))
        .expect("the setup statement")
        .to_string();
    let preds = text
        .lines()
        .filter_map(|l| l.strip_prefix("SELECT count(*) FROM r WHERE "))
        .map(str::to_string)
        .collect();
    (setup, preds)
}

fn count(s: &Session, sql: &str) -> Result<i64, String> {
    let r = s.execute(sql).map_err(|e| e.to_string())?;
    match r.rows().first().and_then(|row| row.first()) {
        Some(ScalarValue::Int64(n)) => Ok(*n),
        Some(ScalarValue::Null) => Ok(0),
        other => Err(format!("not a count: {other:?}")),
    }
}

fn session(threads: usize, setup: &str, plain: bool) -> Session {
    let s = Session::with_threads(threads);
    s.execute(setup).expect("setup");
    if plain {
        s.execute(PLAIN).expect("disabling the optimizer");
    }
    s
}

#[test]
fn predicates_partition_the_table_and_count_alike_on_every_path() {
    let (setup, preds) = predicates();
    assert!(preds.len() > 100, "too few predicates in {PREDICATES}");
    let mut failures = Vec::new();
    let mut checked = 0;
    for threads in [1, 8] {
        let (opt, plain) = (
            session(threads, &setup, false),
            session(threads, &setup, true),
        );
        let total = count(&opt, "SELECT count(*) FROM r").expect("count(*)");
        for p in &preds {
            let forms = [
                (&opt, format!("SELECT count(*) FROM r WHERE {p}")),
                (&opt, format!("SELECT count(*) FROM r WHERE NOT ({p})")),
                (&opt, format!("SELECT count(*) FROM r WHERE ({p}) IS NULL")),
                (
                    &opt,
                    format!("SELECT sum(CASE WHEN {p} THEN 1 ELSE 0 END) FROM r"),
                ),
                (&plain, format!("SELECT count(*) FROM r WHERE {p}")),
            ];
            let got: Vec<Result<i64, String>> = forms.iter().map(|(s, q)| count(s, q)).collect();
            if let Some(Err(e)) = got
                .iter()
                .find(|r| matches!(r, Err(e) if e.contains("internal")))
            {
                failures.push(format!("{threads} threads: {p}\n  {e}"));
                continue;
            }
            let Ok(ok) = got.into_iter().collect::<Result<Vec<i64>, _>>() else {
                continue;
            };
            checked += 1;
            if ok[0] + ok[1] + ok[2] != total {
                failures.push(format!(
                    "{threads} threads, TLP: {p}\n  {} + {} + {} != {total}",
                    ok[0], ok[1], ok[2]
                ));
            }
            if ok[0] != ok[3] || ok[0] != ok[4] {
                failures.push(format!(
                    "{threads} threads, NoREC: {p}\n  filter {}, summed {}, plain {}",
                    ok[0], ok[3], ok[4]
                ));
            }
        }
    }
    assert!(checked > 100, "only {checked} predicates could be checked");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Two random tables for [`range_counts_equal_the_counts_of_the_pairs`]: integer keys with
/// NULLs and duplicates, doubles with NaN, ±0 and ±infinity, strings (the empty one too).
fn range_tables(seed: u64) -> String {
    let mut rng = morsel_storage::test_rng::Rng(seed);
    let mut table = |name: &str, rows: usize| {
        let values: Vec<String> = (0..rows)
            .map(|_| {
                let k = match rng.below(6) {
                    0 => "NULL".to_string(),
                    _ => (rng.below(12) as i64 - 4).to_string(),
                };
                let d = match rng.below(10) {
                    0 => "NULL",
                    1 => "'NaN'::DOUBLE",
                    2 => "-0.0::DOUBLE",
                    3 => "'Infinity'::DOUBLE",
                    4 => "'-Infinity'::DOUBLE",
                    5 => "0.0::DOUBLE",
                    6 => "1.5::DOUBLE",
                    _ => "-2.25::DOUBLE",
                };
                let s = ["NULL", "''", "'a'", "'ab'", "'b'", "'B'"][rng.below(6) as usize];
                let x = match rng.below(4) {
                    0 => "NULL".to_string(),
                    _ => rng.below(5).to_string(),
                };
                format!("({k}, {d}, {s}, {x})")
            })
            .collect();
        format!(
            "CREATE TABLE {name} AS SELECT * FROM (VALUES {}) v(k, d, s, x);",
            values.join(", ")
        )
    };
    format!("{} {}", table("r1", 40), table("r2", 50))
}

/// The rows of `sql`'s answer as sorted text (the queries have no ORDER BY).
fn sorted_rows(s: &Session, sql: &str) -> Result<Vec<String>, String> {
    let r = s.execute(sql).map_err(|e| e.to_string())?;
    let mut rows: Vec<String> = r.rows().iter().map(|row| format!("{row:?}")).collect();
    rows.sort();
    Ok(rows)
}

/// A grouped or global count over a join whose condition is only inequalities is answered
/// by count joins over a sorted side (`count_matches_before_join`), never forming the
/// pairs: the answers equal those of the plain join and aggregate, at 1, 2 and 8 threads,
/// for every key type, bound and band, inner and left joins, `count(*)` and `count(x)`.
#[test]
fn range_counts_equal_the_counts_of_the_pairs() {
    let queries = [
        "SELECT k, (SELECT count(*) FROM r2 WHERE r2.k < r1.k) FROM r1",
        "SELECT k, (SELECT count(x) FROM r2 WHERE r2.k >= r1.k AND r2.k < r1.k + 3) FROM r1",
        "SELECT d, (SELECT count(*) FROM r2 WHERE r2.d > r1.d) FROM r1",
        "SELECT s, (SELECT count(*) FROM r2 WHERE r2.s <= r1.s) FROM r1",
        "SELECT r1.k, count(*), count(r2.x) FROM r1 JOIN r2 ON r2.k < r1.k GROUP BY r1.k",
        "SELECT r1.k, count(*), count(r2.x) FROM r1 LEFT JOIN r2 ON r2.d <= r1.d GROUP BY r1.k",
        "SELECT r1.s, count(r2.k) FROM r1 LEFT JOIN r2 ON r2.s > r1.s GROUP BY r1.s",
        "SELECT count(*), count(r2.x) FROM r1, r2 WHERE r2.d <= r1.d",
        "SELECT count(*) FROM r1 LEFT JOIN r2 ON r2.k > r1.k",
        "SELECT r2.x, count(*) FROM r1 JOIN r2 ON r2.k < r1.k GROUP BY r2.x",
        "SELECT r1.x, count(*) FROM r1 JOIN r2 ON r2.k < r1.k AND r2.d >= r1.d GROUP BY r1.x",
        "SELECT k FROM r1 WHERE (SELECT count(*) FROM r2 WHERE r2.k <= r1.k) > 20",
    ];
    let mut failures = Vec::new();
    for seed in [3, 17, 99] {
        let setup = range_tables(seed);
        for threads in [1, 2, 8] {
            let fast = session(threads, &setup, false);
            let plain = session(threads, &setup, false);
            plain
                .execute("SET disabled_optimizers = 'count_matches_before_join'")
                .expect("disabling the rule");
            for q in queries {
                let (got, want) = (sorted_rows(&fast, q), sorted_rows(&plain, q));
                if got != want {
                    failures.push(format!(
                        "seed {seed}, {threads} threads: {q}\n  counted: {got:?}\n  paired:  {want:?}"
                    ));
                }
            }
            let explained =
                sorted_rows(&fast, &format!("EXPLAIN {}", queries[0])).expect("explain");
            assert!(
                explained.iter().any(|l| l.contains("Count")),
                "no count join in {explained:?}"
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
