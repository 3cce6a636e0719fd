//! The EXPLAIN family: estimates in EXPLAIN, rule diffs in EXPLAIN VERBOSE, and EXPLAIN
//! ANALYZE's numbers checked against what the query really did (as text, JSON, and the typed
//! profile).

use morsel::{col, lit, CsvOptions, Session};

fn lines(s: &Session, sql: &str) -> Vec<String> {
    s.execute(sql)
        .expect("explain runs")
        .rows()
        .iter()
        .map(|r| r[0].to_string())
        .collect()
}

#[test]
fn explain_shows_estimates_and_verbose_shows_rule_diffs() {
    let s = Session::with_threads(2);
    let plain = lines(
        &s,
        "EXPLAIN SELECT city, count(*) FROM 'tests/data/people.csv' WHERE age > 30 GROUP BY city",
    );
    assert!(plain.iter().all(|l| l.contains("rows)")), "{plain:#?}");
    assert!(plain
        .iter()
        .any(|l| l.contains("Scan: tests/data/people.csv")));
    let verbose = lines(
        &s,
        "EXPLAIN VERBOSE SELECT city, count(*) FROM 'tests/data/people.csv' WHERE age > 30 GROUP BY city",
    )
    .join("\n");
    assert!(verbose.contains("Initial plan:"), "{verbose}");
    assert!(verbose.contains("push_down_filter (pass 1"), "{verbose}");
    // A diff, not the whole plan again: the filter line leaves, the scan gains it.
    assert!(verbose.contains("- "), "{verbose}");
    assert!(verbose.contains("+ "), "{verbose}");
    assert!(
        verbose.contains("Rules that changed nothing: simplify_expressions, reorder_joins"),
        "{verbose}"
    );
    assert!(verbose.contains("Optimized plan:"), "{verbose}");
}

#[test]
fn explain_analyze_reports_what_ran() {
    let s = Session::with_threads(2);
    let text = lines(
        &s,
        "EXPLAIN ANALYZE SELECT p.name, count(*) FROM 'tests/data/people.csv' p JOIN 'tests/data/orders.csv' o ON p.id = o.person_id WHERE o.amount > 5 GROUP BY p.name",
    )
    .join("\n");
    assert!(text.contains("EXPLAIN ANALYZE: 4 rows"), "{text}");
    assert!(text.contains("Pipeline 1 of"), "{text}");
    assert!(text.contains("HashJoin Inner probe"), "{text}");
    assert!(text.contains("Semantics:"), "{text}");
    // Every text line fits in 100 columns.
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
}

#[test]
fn explain_analyze_json_and_the_typed_profile_agree_with_the_data() {
    let s = Session::with_threads(2);
    let json = lines(
        &s,
        "EXPLAIN (ANALYZE, FORMAT JSON) SELECT count(*) FROM 'tests/data/orders.csv' WHERE amount > 10",
    )
    .join("\n");
    for key in [
        "\"threads\": 2",
        "\"pipelines\"",
        "\"stages\"",
        "\"estimated_rows\"",
        "\"morsels_per_worker\"",
        "\"hints\"",
    ] {
        assert!(json.contains(key), "{key} missing from {json}");
    }
    // orders.csv has 9 rows; 5 have amount > 10.
    assert!(json.contains("\"rows\": 9,"), "{json}");
    assert!(json.contains("\"rows\": 5,"), "{json}");

    let profile = s
        .read_csv("tests/data/orders.csv", CsvOptions::default())
        .expect("open")
        .filter(col("amount").gt(lit(10)))
        .explain_analyze()
        .expect("profile");
    assert_eq!(profile.result_rows, 5);
    let scan = &profile.pipelines[0].stages[0];
    assert_eq!(scan.rows, 9);
    assert!(scan.bytes > 0);
    assert_eq!(profile.pipelines[0].stages[1].rows, 5);
    assert!(profile.cpu_time() <= profile.wall_time * 2 + std::time::Duration::from_millis(50));
}

#[test]
fn explain_graphviz_is_a_digraph() {
    let s = Session::with_threads(1);
    let dot = lines(
        &s,
        "EXPLAIN FORMAT GRAPHVIZ SELECT name FROM 'tests/data/people.csv' WHERE age > 30",
    )
    .join("\n");
    assert!(dot.starts_with("digraph plan {"), "{dot}");
    assert!(dot.contains("->"), "{dot}");
}

#[test]
fn filters_reach_every_union_input() {
    let s = Session::with_threads(1);
    let plan = lines(
        &s,
        "EXPLAIN SELECT * FROM (SELECT id FROM 'tests/data/people.csv' UNION ALL SELECT order_id FROM 'tests/data/orders.csv') u WHERE id > 5",
    )
    .join("\n");
    assert!(plan.contains("filters=[id > 5]"), "{plan}");
    assert!(plan.contains("filters=[order_id > 5]"), "{plan}");
    assert!(!plan.contains("Filter:"), "{plan}");
}
