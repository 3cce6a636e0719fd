//! Deep and wide SQL: long expression chains, deep nesting of parentheses, derived tables,
//! CTEs and views, and very wide rows are answered (or, past the documented nesting limit,
//! refused with a clear error), never a stack overflow.

use morsel::{ScalarValue, Session};

fn one(s: &Session, sql: &str) -> ScalarValue {
    let r = s.execute(sql).unwrap_or_else(|e| panic!("{e}"));
    r.rows()[0][0].clone()
}

const TWO_ROWS: &str = "(VALUES (1), (2)) v(x)";

#[test]
fn ten_thousand_term_chains() {
    let s = Session::with_threads(2);
    let or = (0..10_000)
        .map(|i| format!("x = {i}"))
        .collect::<Vec<_>>()
        .join(" OR ");
    assert_eq!(
        one(&s, &format!("SELECT count(*) FROM {TWO_ROWS} WHERE {or}")),
        ScalarValue::Int64(2)
    );
    let and = (0..10_000)
        .map(|i| format!("x <> {}", i + 3))
        .collect::<Vec<_>>()
        .join(" AND ");
    assert_eq!(
        one(&s, &format!("SELECT count(*) FROM {TWO_ROWS} WHERE {and}")),
        ScalarValue::Int64(2)
    );
    let plus = vec!["x"; 10_000].join(" + ");
    assert_eq!(
        one(&s, &format!("SELECT max({plus}) FROM {TWO_ROWS}")),
        ScalarValue::Int32(20_000)
    );
    let case = format!(
        "SELECT {}x{} FROM {TWO_ROWS} WHERE x = 2",
        "CASE WHEN x > 0 THEN ".repeat(2_000),
        " END".repeat(2_000)
    );
    assert_eq!(one(&s, &case), ScalarValue::Int32(2));
}

#[test]
fn deep_nesting_up_to_the_limit_and_a_clear_error_past_it() {
    let s = Session::with_threads(2);
    let mut q = "SELECT 1 AS x".to_string();
    for i in 0..1_000 {
        q = format!("SELECT x + 1 AS x FROM ({q}) AS d{i}");
    }
    assert_eq!(one(&s, &q), ScalarValue::Int32(1_001));
    let parens = format!("SELECT {}1{}", "(".repeat(5_000), ")".repeat(5_000));
    assert_eq!(one(&s, &parens), ScalarValue::Int32(1));
    // An operation over deep parentheses (where a run-time error would be reported).
    let cast = format!(
        "SELECT CAST({}'7'{} AS INTEGER) + 1",
        "(".repeat(5_000),
        ")".repeat(5_000)
    );
    assert_eq!(one(&s, &cast), ScalarValue::Int32(8));
    let depth = morsel_sql::MAX_NESTING + 1;
    let too_deep = format!("SELECT {}1{}", "(".repeat(depth), ")".repeat(depth));
    let Err(err) = s.execute(&too_deep) else {
        panic!("a nesting past the limit was answered");
    };
    let err = err.to_string();
    assert!(err.contains("nests too deeply"), "{err}");
    // The session is still usable.
    assert_eq!(one(&s, "SELECT 41 + 1"), ScalarValue::Int32(42));
}

#[test]
fn cte_and_view_chains() {
    let s = Session::with_threads(2);
    let ctes = (1..2_000)
        .map(|i| format!("c{i} AS (SELECT x + 1 AS x FROM c{})", i - 1))
        .collect::<Vec<_>>()
        .join(", ");
    let q = format!("WITH c0 AS (SELECT 1 AS x), {ctes} SELECT x FROM c1999");
    assert_eq!(one(&s, &q), ScalarValue::Int32(2_000));
    s.execute("CREATE VIEW v0 AS SELECT 1 AS x").unwrap();
    for i in 1..2_000 {
        s.execute(&format!(
            "CREATE VIEW v{i} AS SELECT x + 1 AS x FROM v{}",
            i - 1
        ))
        .unwrap();
    }
    assert_eq!(one(&s, "SELECT x FROM v1999"), ScalarValue::Int32(2_000));
}

#[test]
fn ten_thousand_columns() {
    let dir = std::env::temp_dir().join(format!("morsel-wide-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("wide.csv");
    let header: Vec<String> = (0..10_000).map(|i| format!("c{i}")).collect();
    let row: Vec<String> = (0..10_000).map(|i| i.to_string()).collect();
    std::fs::write(&path, format!("{}\n{}\n", header.join(","), row.join(","))).unwrap();
    let s = Session::with_threads(2);
    let r = s
        .execute(&format!("SELECT * FROM '{}'", path.display()))
        .unwrap();
    assert_eq!(r.schema().fields.len(), 10_000);
    assert_eq!(r.rows()[0][9_999], ScalarValue::Int64(9_999));
    std::fs::remove_dir_all(&dir).ok();
}
