//! Grouping over many groups, end to end: one integer key over a narrow range (merged by key
//! offset into arrays) and over a wide one (merged by key hash), against a plain oracle,
//! bit for bit the same at 1, 2 and 8 threads, and EXPLAIN ANALYZE naming the merge that ran.

use std::collections::HashMap;
use std::sync::Arc;

use morsel::{Batch, Column, DataType, Field, ScalarValue, Schema, Session};
use morsel_storage::test_rng::Rng;
use morsel_storage::PrimitiveColumn;

/// Rows of (k, x, f): `k` NULL in 1 of 40 rows, else `key(r)` for a random `r` below
/// `span`; `x` a small integer (NULL in 1 of 9); `f` a double.
struct Table {
    k: Vec<Option<i64>>,
    x: Vec<Option<i64>>,
    f: Vec<f64>,
}

impl Table {
    fn generate(rows: usize, span: u64, key: impl Fn(u64) -> i64, seed: u64) -> Table {
        let mut r = Rng(seed);
        let mut t = Table {
            k: Vec::new(),
            x: Vec::new(),
            f: Vec::new(),
        };
        for _ in 0..rows {
            t.k.push((r.below(40) != 0).then(|| key(r.below(span))));
            t.x.push((r.below(9) != 0).then(|| r.below(1000) as i64 - 300));
            t.f.push(r.below(1 << 30) as f64 / 7.0);
        }
        t
    }

    /// Registered as `t`, in batches of 10,000 rows.
    fn register(&self, s: &Session) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("x", DataType::Int64, true),
            Field::new("f", DataType::Float64, false),
        ]));
        let batches = (0..self.k.len())
            .step_by(10_000)
            .map(|at| {
                let end = (at + 10_000).min(self.k.len());
                let columns = vec![
                    Column::Int64(PrimitiveColumn::from_options(self.k[at..end].to_vec())),
                    Column::Int64(PrimitiveColumn::from_options(self.x[at..end].to_vec())),
                    Column::Float64(PrimitiveColumn::from_vec(self.f[at..end].to_vec())),
                ];
                Batch::try_new(schema.clone(), columns, end - at).unwrap()
            })
            .collect();
        s.register_batches("t", schema, batches).unwrap();
    }

    /// Per key in first-seen order: count(*), sum(x), min(x), max(x), count(x), sum(f).
    fn oracle(&self) -> Vec<(Option<i64>, [i64; 5], f64)> {
        let mut at: HashMap<Option<i64>, usize> = HashMap::new();
        let mut groups: Vec<(Option<i64>, [i64; 5], f64)> = Vec::new();
        for i in 0..self.k.len() {
            let g = *at.entry(self.k[i]).or_insert_with(|| {
                groups.push((self.k[i], [0, 0, i64::MAX, i64::MIN, 0], 0.0));
                groups.len() - 1
            });
            let (_, a, f) = &mut groups[g];
            a[0] += 1;
            if let Some(x) = self.x[i] {
                a[1] += x;
                a[2] = a[2].min(x);
                a[3] = a[3].max(x);
                a[4] += 1;
            }
            *f += self.f[i];
        }
        groups
    }
}

const QUERY: &str =
    "SELECT k, count(*), sum(x), min(x), max(x), count(x), sum(f) FROM t GROUP BY k";

fn int(v: &ScalarValue) -> Option<i64> {
    match v {
        ScalarValue::Int64(x) => Some(*x),
        ScalarValue::Null => None,
        other => panic!("not an integer: {other:?}"),
    }
}

/// The query's rows, at `threads` threads, and its EXPLAIN ANALYZE text.
fn run(t: &Table, threads: usize) -> (Vec<Vec<ScalarValue>>, String) {
    let s = Session::with_threads(threads);
    t.register(&s);
    let rows = s.execute(QUERY).unwrap().rows();
    (rows, explain_analyze(&s, QUERY))
}

/// EXPLAIN ANALYZE's text for `query`.
fn explain_analyze(s: &Session, query: &str) -> String {
    s.execute(&format!("EXPLAIN ANALYZE {query}"))
        .unwrap()
        .rows()
        .iter()
        .map(|r| r[0].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks the rows against the oracle: the groups in first-seen order, the integer states
/// exactly, the float sums to rounding (the engine adds them morsel by morsel).
fn check(t: &Table, got: &[Vec<ScalarValue>]) {
    let want = t.oracle();
    assert_eq!(got.len(), want.len());
    for (row, (k, a, f)) in got.iter().zip(&want) {
        assert_eq!(int(&row[0]), *k);
        let (min, max) = match a[4] {
            0 => (None, None),
            _ => (Some(a[2]), Some(a[3])),
        };
        let sum = (a[4] > 0).then_some(a[1]);
        let ints: Vec<Option<i64>> = row[1..6].iter().map(int).collect();
        assert_eq!(ints, [Some(a[0]), sum, min, max, Some(a[4])], "key {k:?}");
        let ScalarValue::Float64(g) = row[6] else {
            panic!("sum(f) is {:?}", row[6]);
        };
        assert!((g - f).abs() <= 1e-12 * f.abs(), "key {k:?}: {g} {f}");
    }
}

#[test]
fn many_integer_keys_over_a_narrow_range_merge_by_key_offset() {
    // 300,000 rows over ~80,000 keys from -500 (mostly distinct in every morsel).
    let t = Table::generate(300_000, 80_000, |r| r as i64 - 500, 7);
    let (at_one, explain) = run(&t, 1);
    check(&t, &at_one);
    assert!(
        explain.contains("merged by key offset: 80000 key values from -500"),
        "{explain}"
    );
    for threads in [2, 8] {
        let (rows, explain) = run(&t, threads);
        assert_eq!(rows, at_one, "{threads} threads");
        assert!(explain.contains("merged by key offset"), "{explain}");
    }
}

/// Keys clustered in runs (a column stored sorted, as TPC-H's order keys): each morsel's
/// table holds its ids in an array of its keys' range, NULLs and keys repeated in later
/// morsels included, or sorted keys (ranges apart); the answer is the oracle's, the same at
/// every thread count.
#[test]
fn clustered_integer_keys_group_through_each_morsels_range() {
    let mut t = Table::generate(300_000, 1, |_| 0, 10);
    let mut r = Rng(12);
    for (i, k) in t.k.iter_mut().enumerate() {
        // Runs of about four rows; now and then a key from further back (often an earlier
        // morsel's).
        *k = k.map(|_| match r.below(50) {
            0 => (i / 4).saturating_sub(r.below(5000) as usize) as i64,
            _ => (i / 4) as i64 + r.below(3) as i64,
        });
    }
    let (at_one, _) = run(&t, 1);
    check(&t, &at_one);
    for threads in [2, 8] {
        assert_eq!(run(&t, threads).0, at_one, "{threads} threads");
    }
    // Sorted, without NULLs: the morsels' key ranges are apart, their groups concatenated.
    for (i, k) in t.k.iter_mut().enumerate() {
        *k = Some((i / 3) as i64);
    }
    let (at_one, _) = run(&t, 1);
    check(&t, &at_one);
    assert_eq!(run(&t, 2).0, at_one, "2 threads");
}

#[test]
fn many_integer_keys_over_a_wide_range_merge_by_key_hash() {
    let t = Table::generate(300_000, 80_000, |r| (r as i64 - 500) * 1_000_003, 8);
    let (at_one, explain) = run(&t, 1);
    check(&t, &at_one);
    assert!(!explain.contains("merged by key offset"), "{explain}");
    for threads in [2, 8] {
        assert_eq!(run(&t, threads).0, at_one, "{threads} threads");
    }
}

/// Where nothing reads the groups' order (an aggregate over the groups), the dense merge
/// hands its partitions on as they are: the answer is still the same at every thread count.
#[test]
fn groups_in_partition_order_give_the_same_answer_at_every_thread_count() {
    let t = Table::generate(200_000, 60_000, |r| r as i64, 9);
    let query = "SELECT count(*), sum(s), min(k), max(k) FROM \
                 (SELECT k, sum(f) AS s FROM t GROUP BY k)";
    let want: f64 = t.oracle().iter().map(|g| g.2).sum();
    let mut first = None;
    for threads in [1, 2, 8] {
        let s = Session::with_threads(threads);
        t.register(&s);
        let rows = s.execute(query).unwrap().rows();
        let ScalarValue::Float64(sum) = rows[0][1] else {
            panic!("{rows:?}");
        };
        assert!((sum - want).abs() <= 1e-9 * want, "{sum} {want}");
        assert_eq!(
            &rows,
            first.get_or_insert(rows.clone()),
            "{threads} threads"
        );
    }
}

/// `count(DISTINCT f)` by one key and by two: the distinct `(keys, f)` rows come out of
/// their aggregate partitioned by the outer keys alone, and the outer aggregate groups each
/// partition on its own (EXPLAIN ANALYZE names the partitions read a morsel each); the counts
/// are the oracle's, the rows the same at every thread count.
#[test]
fn distinct_counts_group_each_partition_of_the_distinct_rows_on_its_own() {
    let mut t = Table::generate(300_000, 20_000, |r| r as i64 * 7, 11);
    let mut r = Rng(13);
    for f in &mut t.f {
        *f = r.below(20) as f64 / 4.0;
    }
    type Key = (Option<i64>, Option<i64>);
    let mut want: [HashMap<Key, std::collections::HashSet<u64>>; 2] = Default::default();
    for i in 0..t.k.len() {
        let bits = t.f[i].to_bits();
        want[0].entry((t.k[i], None)).or_default().insert(bits);
        want[1].entry((t.k[i], t.x[i])).or_default().insert(bits);
    }
    let queries = [
        "SELECT k, count(DISTINCT f) FROM t GROUP BY k ORDER BY k",
        "SELECT k, x, count(DISTINCT f) FROM t GROUP BY k, x ORDER BY k, x",
    ];
    for (query, want) in queries.iter().zip(&want) {
        let mut first = None;
        for threads in [1, 2, 8] {
            let s = Session::with_threads(threads);
            t.register(&s);
            let rows = s.execute(query).unwrap().rows();
            let got: HashMap<Key, i64> = rows
                .iter()
                .map(|row| {
                    let keys = (
                        int(&row[0]),
                        (row.len() == 3).then(|| int(&row[1])).flatten(),
                    );
                    (keys, int(&row[row.len() - 1]).unwrap())
                })
                .collect();
            assert_eq!(got.len(), rows.len(), "{query}: a group twice");
            let want: HashMap<Key, i64> = want.iter().map(|(k, f)| (*k, f.len() as i64)).collect();
            assert!(got == want, "{query}, {threads} threads");
            assert_eq!(&rows, first.get_or_insert(rows.clone()), "{query}");
            let explain = explain_analyze(&s, query);
            assert!(explain.contains("Read aggregate partitions"), "{explain}");
            assert!(explain.contains("each morsel is a partition"), "{explain}");
        }
    }
}
