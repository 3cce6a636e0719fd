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
