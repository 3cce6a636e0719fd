//! The EXPLAIN family: estimates in EXPLAIN, rule diffs in EXPLAIN VERBOSE, and EXPLAIN
//! ANALYZE's numbers checked against what the query really did (as text, JSON, and the typed
//! profile).

use morsel::{col, lit, CsvOptions, Session};

/// A fresh folder for a test's files, named for the test and this process.
fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("morsel-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

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
    // The logical plan, every node with its estimate, then the pipelines.
    let logical: Vec<&String> = plain.iter().take_while(|l| !l.is_empty()).collect();
    assert!(logical.iter().all(|l| l.contains("rows)")), "{plain:#?}");
    assert!(plain
        .iter()
        .any(|l| l.starts_with("Physical plan: 2 pipelines")));
    assert!(plain
        .iter()
        .any(|l| l.contains("Scan csv tests/data/people.csv (filtering while decoding)")));
    assert!(plain
        .iter()
        .any(|l| l.contains("hash aggregate on 1 key(s)")));
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
        verbose.contains(
            "Rules that changed nothing: simplify_expressions, distinct_aggregates_to_group_by, \
             reorder_joins"
        ),
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
    // orders.csv has 9 rows; 5 have amount > 10, and the scan drops the others while
    // decoding: it reads 9 records and yields 5 rows.
    assert!(json.contains("\"rows_read\": 9,"), "{json}");
    assert!(json.contains("\"rows\": 5,"), "{json}");

    let profile = s
        .read_csv("tests/data/orders.csv", CsvOptions::default())
        .expect("open")
        .filter(col("amount").gt(lit(10)))
        .explain_analyze()
        .expect("profile");
    assert_eq!(profile.result_rows, 5);
    let scan = &profile.pipelines[0].stages[0];
    assert_eq!(
        profile.pipelines[0].scan.as_ref().map(|m| m.rows_read),
        Some(9)
    );
    assert_eq!(scan.rows, 5);
    assert!(scan.bytes > 0);
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

/// A limit stops its pipeline once the morsels read so far hold enough rows: the scan reads
/// a few blocks, not the file, and a malformed record far past the limit is never an error
/// (at any thread count, so the answer does not depend on which blocks a worker started).
#[test]
fn a_limit_stops_the_scan() {
    let dir = scratch_dir("limit");
    let path = dir.join("long.csv");
    let mut text = String::from("id,v\n");
    for i in 0..200_000 {
        text.push_str(&format!("{i},{}\n", i % 7));
    }
    text.push_str("200000,not a number\n");
    std::fs::write(&path, &text).expect("write csv");
    let path = path.to_string_lossy().into_owned();
    let schema = morsel::Schema::new(vec![
        morsel::Field::new("id", morsel::DataType::Int64, true),
        morsel::Field::new("v", morsel::DataType::Int64, true),
    ]);
    let options = || {
        CsvOptions::default()
            .with_block_size(64 * 1024)
            .with_schema(std::sync::Arc::new(schema.clone()))
    };

    let mut answers = Vec::new();
    for threads in [1, 2, 8] {
        let s = Session::with_threads(threads);
        let frame = s.read_csv(&path, options()).expect("open").limit(5);
        answers.push(frame.clone().collect().expect("runs").rows());
        let profile = frame.explain_analyze().expect("profile");
        let read = profile.pipelines[0]
            .scan
            .as_ref()
            .expect("a CSV scan")
            .rows_read;
        assert!(
            read < 200_000 / 4,
            "read {read} records at {threads} threads"
        );
    }
    assert_eq!(answers[0].len(), 5);
    assert!(answers.iter().all(|a| *a == answers[0]));
    // Without a limit the bad record is reached and reported.
    let err = match Session::with_threads(2)
        .read_csv(&path, options())
        .expect("open")
        .collect()
    {
        Ok(r) => panic!("read {} rows past a malformed record", r.num_rows()),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("long.csv:200002:"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A scan's workers read the stretches of a file at the same time (the profile says so),
/// and get the rows that one worker reading block after block gets (`n_rows`: records
/// counted in order), with float sums the same to the bit at any thread count; a field
/// longer than several stretches leaves them empty blocks.
#[test]
fn workers_read_a_files_stretches_at_once() {
    let dir = scratch_dir("stretches");
    let path = dir.join("quoted.csv");
    let mut text = String::from("id,note,x\n");
    for i in 0..30_000 {
        let note = match i % 5 {
            // A field longer than three stretches: they hold no record of their own.
            _ if i == 1000 => format!("\"{}\"", "long\n".repeat(10_000)),
            0 => format!("\"line\nbreak {i}\""),
            1 => format!("\"say \"\"{i}\"\"\""),
            _ => format!("n{i}"),
        };
        text.push_str(&format!("{i},{note},{}\r\n", f64::from(i) / 7.0));
    }
    std::fs::write(&path, &text).expect("write csv");
    let path = path.to_string_lossy().into_owned();
    let options = CsvOptions::default().with_block_size(16 * 1024);
    let mut answers = Vec::new();
    for (threads, options, in_parallel) in [
        (1, options.clone().with_n_rows(usize::MAX), false),
        (1, options.clone(), true),
        (2, options.clone(), true),
        (8, options.clone(), true),
    ] {
        let s = Session::with_threads(threads);
        let frame = s.read_csv(&path, options).expect("open");
        let summed = frame
            .clone()
            .group_by([])
            .agg([col("x").sum(), col("note").count()]);
        let profile = summed.explain_analyze().expect("profile");
        let scan = profile.pipelines[0].scan.clone().expect("a CSV scan");
        assert_eq!(scan.read_in_parallel, in_parallel, "{threads} threads");
        assert_eq!(scan.rows_read, 30_000);
        assert!(profile.pipelines[0].morsels > 20, "{threads} threads");
        let rows = frame.clone().collect().expect("runs").rows();
        // A filter while decoding, over the empty blocks too.
        let kept = frame
            .filter(col("id").gt_eq(lit(999)).and(col("id").lt_eq(lit(1001))))
            .collect()
            .expect("runs")
            .rows();
        assert_eq!(kept.len(), 3);
        answers.push((rows, summed.collect().expect("runs").rows()));
    }
    assert_eq!(answers[0].0.len(), 30_000);
    assert!(answers.iter().all(|a| a.0 == answers[0].0));
    // Sums add in block order, and the two splitters cut different blocks.
    assert!(answers[2..].iter().all(|a| a.1 == answers[1].1));
    std::fs::remove_dir_all(&dir).ok();
}

/// UNION ALL streams its inputs through one pipeline (no input is collected first): its
/// rows come in input order, and its float sums are the same to the bit at any thread count.
#[test]
fn a_union_streams_its_inputs() {
    let dir = scratch_dir("union");
    let mut paths = Vec::new();
    for (name, from) in [("a.csv", 0), ("b.csv", 50_000)] {
        let mut text = String::from("id,x\n");
        for i in from..from + 50_000 {
            text.push_str(&format!("{i},{}\n", f64::from(i) / 3.0));
        }
        let path = dir.join(name);
        std::fs::write(&path, &text).expect("write csv");
        paths.push(path.to_string_lossy().into_owned());
    }
    let union = format!(
        "(SELECT id, x FROM '{}' UNION ALL SELECT id, x FROM '{}')",
        paths[0], paths[1]
    );
    let mut sums = Vec::new();
    for threads in [1, 2, 8] {
        let s = Session::with_threads(threads);
        let ids = s
            .execute(&format!("SELECT id FROM {union} u"))
            .expect("runs")
            .rows();
        let want: Vec<_> = (0..100_000i64)
            .map(|i| vec![morsel::ScalarValue::Int64(i)])
            .collect();
        assert_eq!(ids, want, "{threads} threads");
        let sum = format!("SELECT sum(x), count(*) FROM {union} u");
        sums.push(s.execute(&sum).expect("runs").rows());
        // One pipeline reads both files into the aggregate; the other reads its result.
        let profile = lines(&s, &format!("EXPLAIN ANALYZE {sum}")).join("\n");
        assert!(profile.contains("Pipeline 1 of 2:"), "{profile}");
        let first = profile.split("Pipeline 2 of 2").next().unwrap_or_default();
        assert!(first.contains("Union of 2 inputs"), "{profile}");
        assert!(first.contains("100.0K records read"), "{profile}");
    }
    assert!(sums.iter().all(|s| *s == sums[0]));
    std::fs::remove_dir_all(&dir).ok();
}

/// EXPLAIN FORMAT JSON, and EXPLAIN ANALYZE's JSON with its timings and timing-derived hints
/// redacted, as snapshots: any change to the plan, the pipelines, fused programs or the
/// profile's row counts shows in review.
#[test]
fn json_snapshots() {
    let s = Session::with_threads(1);
    let sql = "SELECT city, sum(age * 2 + 1), sum((age * 2 + 1) * 3) FROM 'tests/data/people.csv' WHERE age > 30 AND city <> 'x' GROUP BY city ORDER BY city LIMIT 2";
    insta::assert_snapshot!(
        "explain_json",
        lines(&s, &format!("EXPLAIN FORMAT JSON {sql}")).join("\n")
    );
    let analyzed = lines(&s, &format!("EXPLAIN ANALYZE FORMAT JSON {sql}")).join("\n");
    insta::assert_snapshot!("explain_analyze_json", redact_timings(&analyzed));
}

/// Replaces every `"..._ms": number` and `"cpu_ms_per_worker": [numbers]` value, and the
/// hints, by `"_"`.
fn redact_timings(json: &str) -> String {
    let mut out = String::new();
    let mut rest = json;
    let next = |s: &str| {
        [("_ms\": ", 6), ("_ms_per_worker\": ", 17)]
            .iter()
            .filter_map(|(key, len)| s.find(key).map(|at| (at, at + len)))
            .min()
    };
    while let Some((_, value)) = next(rest) {
        let (head, tail) = rest.split_at(value);
        out.push_str(head);
        let end = if tail.starts_with('[') {
            tail.find(']').map_or(tail.len(), |e| e + 1)
        } else {
            tail.find([',', '}']).unwrap_or(tail.len())
        };
        out.push_str("\"_\"");
        rest = &tail[end..];
    }
    out.push_str(rest);
    match out.find("\"hints\": ") {
        Some(h) => format!("{}\"hints\": \"_\"}}", &out[..h]),
        None => out,
    }
}

/// The profile as a table: SQL over `explain_analyze('...')`, one row per stage.
#[test]
fn the_profile_is_a_table() {
    let s = Session::with_threads(2);
    let r = s
        .execute(
            "SELECT pipeline, stage, role, rows, rows_read, cpu_ms >= 0 AS timed \
             FROM explain_analyze('SELECT count(*) FROM ''tests/data/orders.csv'' WHERE amount > 10') \
             WHERE pipeline = 1 ORDER BY stage",
        )
        .expect("profile query runs");
    let rows: Vec<String> = r
        .rows()
        .iter()
        .map(|r| {
            r.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    // The scan reads 9 records and keeps 5; the aggregate consumes those 5.
    assert_eq!(rows, ["1 1 source 5 9 true", "1 2 sink 5 NULL true"]);
    let err = s
        .execute("SELECT * FROM explain_analyze('SELECT nope FROM ''tests/data/orders.csv''')")
        .expect_err("bad inner query");
    assert!(
        err.to_string()
            .contains("in the query passed to explain_analyze(): column nope not found"),
        "{err}"
    );
}

/// An outer join's ON conjunct over only its matched (not preserved) side filters that side
/// before the join; one over the preserved side stays in the join.
#[test]
fn on_conditions_over_the_matched_side_reach_its_scan() {
    let s = Session::with_threads(1);
    let plan = lines(
        &s,
        "EXPLAIN SELECT p.name, o.amount FROM 'tests/data/people.csv' p LEFT JOIN 'tests/data/orders.csv' o ON p.id = o.person_id AND o.amount > 10 AND p.age > 30",
    )
    .join("\n");
    assert!(plan.contains("filters=[o.amount > 10.0]"), "{plan}");
    assert!(plan.contains("filter=p.age > 30"), "{plan}");
    assert!(
        !plan.contains("AS p projection=[id, name, age] filters"),
        "{plan}"
    );
}

/// LazyFrame::explain prints what SQL's EXPLAIN prints.
#[test]
fn lazy_frames_explain_like_sql() {
    let s = Session::with_threads(1);
    let text = s
        .read_csv("tests/data/orders.csv", CsvOptions::default())
        .expect("open")
        .filter(col("amount").gt(lit(10)))
        .select([(col("amount") * lit(2.0) + lit(1.0)).alias("x")])
        .explain()
        .expect("explain");
    assert!(text.contains("filters=[amount > 10"), "{text}");
    assert!(text.contains("(~"), "{text}");
    assert!(text.contains("Physical plan: 1 pipeline"), "{text}");
    assert!(
        text.contains("fused[$2 = amount * 2.0; $4 = $2 + 1.0]"),
        "{text}"
    );
}

/// Scan stages in an EXPLAIN ANALYZE text (hint lines may name a scan too).
/// The first two columns of each row of `sql`'s answer, as "a b".
fn two_columns(s: &Session, sql: &str) -> Vec<String> {
    let answer = s.execute(sql).expect("runs");
    answer
        .rows()
        .iter()
        .map(|r| format!("{} {}", r[0], r[1]))
        .collect()
}

fn scans(text: &str) -> usize {
    text.lines()
        .filter(|l| l.trim_start().starts_with("Scan csv"))
        .count()
}

/// A common table expression used twice runs its aggregate once, and both uses read that
/// result; so does the same aggregate of the same file written out twice (the file is
/// opened once per statement). Two spellings of a path are two files: nothing is shared.
#[test]
fn a_cte_used_twice_is_aggregated_once() {
    let s = Session::with_threads(2);
    let cte = "WITH t AS (SELECT city, count(*) AS n FROM 'tests/data/people.csv' GROUP BY city) \
               SELECT city FROM t WHERE n = (SELECT max(n) FROM t) ORDER BY city";
    let text = lines(&s, &format!("EXPLAIN ANALYZE {cte}")).join("\n");
    assert_eq!(scans(&text), 1, "{text}");
    assert!(text.contains("Read shared aggregate result"), "{text}");
    let rows: Vec<String> = s
        .execute(cte)
        .expect("runs")
        .rows()
        .iter()
        .map(|r| r[0].to_string())
        .collect();
    assert_eq!(rows, ["London", "Paris", "Tokyo"]);
    let twice = "SELECT a.city FROM (SELECT city, count(*) AS n FROM 'tests/data/people.csv' GROUP BY city) a \
                 WHERE a.n = (SELECT max(n) FROM (SELECT city, count(*) AS n FROM 'tests/data/people.csv' GROUP BY city) b) \
                 ORDER BY a.city";
    let text = lines(&s, &format!("EXPLAIN ANALYZE {twice}")).join("\n");
    assert_eq!(scans(&text), 1, "{text}");
    assert!(text.contains("Read shared aggregate result"), "{text}");
    let apart = twice.replacen("'tests/data/people.csv'", "'./tests/data/people.csv'", 1);
    let text = lines(&s, &format!("EXPLAIN ANALYZE {apart}")).join("\n");
    assert_eq!(scans(&text), 2, "{text}");
    assert!(!text.contains("shared"), "{text}");
}

/// A registered table read twice with the same columns and filters is decoded once; where
/// the rows stream into a LIMIT (which may stop the scan early), each read scans.
#[test]
fn a_table_read_twice_is_decoded_once() {
    let s = Session::with_threads(2);
    s.register_csv("people", "tests/data/people.csv", CsvOptions::default())
        .expect("registers");
    let twice =
        "SELECT a.name, b.name FROM people a JOIN people b ON a.age = b.age AND a.id < b.id \
                 ORDER BY a.name";
    let text = lines(&s, &format!("EXPLAIN ANALYZE {twice}")).join("\n");
    assert_eq!(scans(&text), 1, "{text}");
    assert_eq!(text.matches("Read shared scan result").count(), 2, "{text}");
    let rows = two_columns(&s, twice);
    assert_eq!(rows, ["Ada Grace", "Chloé Eve"]);
    let limited = "(SELECT name FROM people LIMIT 2) UNION ALL (SELECT name FROM people LIMIT 2)";
    let text = lines(&s, &format!("EXPLAIN ANALYZE {limited}")).join("\n");
    assert_eq!(scans(&text), 2, "{text}");
    assert!(!text.contains("shared"), "{text}");
}

/// Two reads of one table with different columns (a subquery over some columns, the outer
/// query over others) decode the table once, with the columns of both, and each read keeps
/// its own; the answer is the one without sharing.
#[test]
fn reads_of_different_columns_share_one_wider_scan() {
    let s = Session::with_threads(2);
    s.register_csv("people", "tests/data/people.csv", CsvOptions::default())
        .expect("registers");
    let query = "SELECT name, age FROM people WHERE age > (SELECT avg(age) FROM people) \
                 ORDER BY name";
    let text = lines(&s, &format!("EXPLAIN ANALYZE {query}")).join("\n");
    assert_eq!(scans(&text), 1, "{text}");
    assert_eq!(text.matches("Read shared scan result").count(), 2, "{text}");
    let shared = two_columns(&s, query);
    // The same query over two separately opened sources (two spellings of the path:
    // nothing to share).
    let t = Session::with_threads(2);
    let apart = query
        .replacen("FROM people", "FROM 'tests/data/people.csv'", 1)
        .replacen("FROM people", "FROM './tests/data/people.csv'", 1);
    let alone = two_columns(&t, &apart);
    assert!(!shared.is_empty());
    assert_eq!(shared, alone);
}

/// A file named twice in one statement is opened once, so its two reads share one scan.
#[test]
fn a_file_named_twice_is_scanned_once() {
    let s = Session::with_threads(2);
    let query = "SELECT name FROM 'tests/data/people.csv' WHERE age > \
                 (SELECT avg(age) FROM 'tests/data/people.csv') ORDER BY name";
    let text = lines(&s, &format!("EXPLAIN ANALYZE {query}")).join("\n");
    assert_eq!(scans(&text), 1, "{text}");
    assert_eq!(text.matches("Read shared scan result").count(), 2, "{text}");
}

/// Blocks of the usual shape are tokenized at once; a block with a line feed inside quotes
/// goes record by record, and only that block. The answers are the same either way.
#[test]
fn clean_blocks_are_tokenized_at_once() {
    let dir = scratch_dir("at-once");
    let mut clean = String::from("id,name,v\n");
    for i in 0..20_000 {
        clean.push_str(&format!("{i},\"n,{i}\",{}\r\n", i % 7));
    }
    // The same rows, one of them with a quoted line feed near the start of the file.
    let odd = clean.replacen("\"n,3\"", "\"n,\n3\"", 1);
    let mut answers = Vec::new();
    for (name, text, by_record) in [("clean.csv", &clean, 0), ("odd.csv", &odd, 1)] {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write csv");
        let path = path.to_string_lossy().into_owned();
        let options = || CsvOptions::default().with_block_size(16 * 1024);
        let s = Session::with_threads(2);
        let frame = s.read_csv(&path, options()).expect("open");
        let profile = frame.clone().explain_analyze().expect("profile");
        let scan = profile.pipelines[0].scan.clone().expect("a CSV scan");
        assert_eq!(scan.rows_read, 20_000);
        assert_eq!(scan.record_by_record_blocks, by_record, "{name}");
        let rows = frame
            .select(vec![col("id"), col("v")])
            .collect()
            .expect("runs")
            .rows();
        answers.push(rows);
    }
    assert_eq!(answers[0], answers[1]);
    std::fs::remove_dir_all(&dir).ok();
}

/// A memory table's filter says in which order it tests its conjuncts, with each column's
/// selectivity on the table's sample rows.
#[test]
fn a_memory_scan_filter_shows_its_order() {
    let s = Session::with_threads(2);
    s.execute("CREATE TABLE o AS SELECT * FROM 'tests/data/orders.csv'")
        .expect("table");
    let text = lines(
        &s,
        "EXPLAIN ANALYZE SELECT count(*) FROM o WHERE amount > 5 AND person_id < 3 AND amount < 1000",
    )
    .join("\n");
    assert!(
        text.contains("tested in order of rows ruled out per cost"),
        "{text}"
    );
    assert!(
        text.contains("person_id") && text.contains("amount "),
        "{text}"
    );
}

/// How many groupings of `sql`'s plan may leave their groups in partition order.
fn unordered_groupings(s: &Session, sql: &str) -> usize {
    let text = lines(s, &format!("EXPLAIN {sql}")).join(" ");
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    text.matches("(nothing reads their order)").count()
}

/// A grouping whose output order nothing can see (it feeds an order-blind aggregate, or a
/// sort whose keys leave no ties) skips putting first-seen order back; one whose order
/// reaches the result, a limit, or a float sum keeps it.
#[test]
fn groupings_whose_order_nothing_reads_skip_first_seen_order() {
    let s = Session::with_threads(2);
    let people = "'tests/data/people.csv'";
    let cases = [
        // Q16's shape: a DISTINCT count (a grouping under a grouping) under a sort by
        // every group key.
        (format!("SELECT city, count(DISTINCT age) AS n FROM {people} GROUP BY city ORDER BY n DESC, city"), 2),
        (format!("SELECT n, count(*) FROM (SELECT city, count(*) AS n FROM {people} GROUP BY city) t GROUP BY n ORDER BY n"), 2),
        // The result sees the order.
        (format!("SELECT city, count(*) FROM {people} GROUP BY city"), 0),
        // Ties on n leave the inner order to the sort's stable order.
        (format!("SELECT city, n FROM (SELECT city, count(*) AS n FROM {people} GROUP BY city) t ORDER BY n"), 0),
        // A float sum adds in input order (the inner grouping keeps it; the outer one, sorted
        // by its key, need not); a limit takes the first rows.
        (format!("SELECT n, sum(score) FROM (SELECT city, count(*) AS n, max(score) AS score FROM {people} GROUP BY city) t GROUP BY n ORDER BY n"), 1),
        (format!("SELECT n, count(*) FROM (SELECT city, count(*) AS n FROM {people} GROUP BY city LIMIT 2) t GROUP BY n ORDER BY n"), 1),
    ];
    for (sql, unordered) in &cases {
        assert_eq!(unordered_groupings(&s, sql), *unordered, "{sql}");
        let at = |threads| {
            let s = Session::with_threads(threads);
            s.execute(sql).expect("runs").rows().to_vec()
        };
        assert_eq!(at(1), at(8), "{sql}");
    }
}
