//! The oracle: a row-at-a-time reference evaluator for the suite's expressions and
//! aggregates. Obviously correct and slow. It adds floats in the engine's documented,
//! data-determined order: within each morsel (`MORSEL_ROWS` consecutive rows of an in-memory
//! table) sequentially per group, or, when the morsel's rows fall into few groups (at most
//! 1,024, and 16 rows per group or more), into four lanes per group by row position that are
//! then added pairwise, or for a global sum into eight lanes by row position that are then
//! added pairwise; then the per-morsel partial results in morsel order. Every engine variant
//! (vectorized, parallel at any thread count) must match it bit for bit.

use morsel::ScalarValue;
use morsel_executor::MORSEL_ROWS;

type Row = Vec<ScalarValue>;

fn f(v: Option<f64>) -> ScalarValue {
    v.map_or(ScalarValue::Null, ScalarValue::Float64)
}

/// `((a + b) * c - d) / e + a` per row; NULL if any input is.
pub fn arithmetic_chain(
    a: &[Option<f64>],
    b: &[Option<f64>],
    c: &[Option<f64>],
    d: &[Option<f64>],
    e: &[Option<f64>],
) -> Vec<Row> {
    (0..a.len())
        .map(|i| {
            let v = match (a[i], b[i], c[i], d[i], e[i]) {
                (Some(a), Some(b), Some(c), Some(d), Some(e)) => Some(((a + b) * c - d) / e + a),
                _ => None,
            };
            vec![f(v)]
        })
        .collect()
}

/// `a < b` per row.
pub fn compare(a: &[Option<f64>], b: &[Option<f64>]) -> Vec<Row> {
    (0..a.len())
        .map(|i| {
            vec![match (a[i], b[i]) {
                (Some(x), Some(y)) => ScalarValue::Boolean(x < y),
                _ => ScalarValue::Null,
            }]
        })
        .collect()
}

/// Rows `(a, k)` where `a < 0.5`, in input order.
pub fn filter(a: &[Option<f64>], k: &[i64]) -> Vec<Row> {
    (0..a.len())
        .filter(|&i| a[i].is_some_and(|x| x < 0.5))
        .map(|i| vec![f(a[i]), ScalarValue::Int64(k[i])])
        .collect()
}

/// One morsel's global float sum: row `i` goes to lane `i % 8`, the lanes add pairwise;
/// `None` if every row is NULL.
fn morsel_sum(rows: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let mut l = [-0.0f64; 8];
    let mut any = false;
    for (i, v) in rows.enumerate() {
        if let Some(v) = v {
            l[i % 8] += v;
            any = true;
        }
    }
    any.then(|| 0.0 + (((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))))
}

/// `sum(a)` in morsel order.
pub fn sum(a: &[Option<f64>]) -> Vec<Row> {
    let mut total = 0.0;
    let mut seen = false;
    for chunk in a.chunks(MORSEL_ROWS) {
        if let Some(partial) = morsel_sum(chunk.iter().copied()) {
            total += partial;
            seen = true;
        }
    }
    vec![vec![if seen {
        ScalarValue::Float64(total)
    } else {
        ScalarValue::Null
    }]]
}

/// `count(a)`.
pub fn count(a: &[Option<f64>]) -> Vec<Row> {
    vec![vec![ScalarValue::Int64(a.iter().flatten().count() as i64)]]
}

/// One group's running state: sum, whether any value was summed, and the row count.
#[derive(Clone, Copy, Default)]
struct Group {
    sum: f64,
    seen: bool,
    count: i64,
}

/// `SELECT k, sum(a), count(*) GROUP BY k`: groups in order of first appearance, sums per
/// morsel then merged in morsel order. `with_count` adds the count column.
pub fn group_sum(keys: &[ScalarValue], a: &[Option<f64>], with_count: bool) -> Vec<Row> {
    let mut order: Vec<ScalarValue> = Vec::new();
    let mut global: Vec<Group> = Vec::new();
    let position = |order: &[ScalarValue], k: &ScalarValue| order.iter().position(|x| x == k);
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (chunk_keys, chunk_a) in keys.chunks(MORSEL_ROWS).zip(a.chunks(MORSEL_ROWS)) {
        let mut local_order: Vec<ScalarValue> = Vec::new();
        let mut local: Vec<Group> = Vec::new();
        let mut local_index: std::collections::HashMap<String, usize> =
            std::collections::HashMap::new();
        let slots: Vec<usize> = chunk_keys
            .iter()
            .map(|k| {
                *local_index.entry(format!("{k:?}")).or_insert_with(|| {
                    local_order.push(k.clone());
                    local.push(Group::default());
                    local.len() - 1
                })
            })
            .collect();
        // Few groups: four lanes per group (starting at -0.0, which adds nothing), row j
        // of the morsel into lane j % 4, the lanes added pairwise into the group's sum.
        let few = local.len() <= 1024 && local.len() * 16 <= chunk_keys.len();
        let mut lanes = vec![[-0.0f64; 4]; local.len()];
        for (j, (&slot, v)) in slots.iter().zip(chunk_a).enumerate() {
            local[slot].count += 1;
            if let Some(x) = v {
                match few {
                    true => lanes[slot][j % 4] += x,
                    false => local[slot].sum += x,
                }
                local[slot].seen = true;
            }
        }
        if few {
            for (g, l) in local.iter_mut().zip(&lanes) {
                g.sum += (l[0] + l[1]) + (l[2] + l[3]);
            }
        }
        for (k, g) in local_order.iter().zip(local) {
            let slot = *index.entry(format!("{k:?}")).or_insert_with(|| {
                order.push(k.clone());
                global.push(Group::default());
                global.len() - 1
            });
            debug_assert_eq!(position(&order, k), Some(slot));
            global[slot].count += g.count;
            if g.seen {
                global[slot].sum += g.sum;
                global[slot].seen = true;
            }
        }
    }
    order
        .into_iter()
        .zip(global)
        .map(|(k, g)| {
            let mut row = vec![
                k,
                if g.seen {
                    ScalarValue::Float64(g.sum)
                } else {
                    ScalarValue::Null
                },
            ];
            if with_count {
                row.push(ScalarValue::Int64(g.count));
            }
            row
        })
        .collect()
}

/// `ORDER BY k, a` (both ascending, NULLs last), stable.
pub fn sort_two_keys(k: &[i64], a: &[Option<f64>]) -> Vec<Row> {
    let mut idx: Vec<usize> = (0..k.len()).collect();
    idx.sort_by(|&x, &y| {
        k[x].cmp(&k[y]).then_with(|| match (a[x], a[y]) {
            (Some(p), Some(q)) => p.partial_cmp(&q).unwrap_or(std::cmp::Ordering::Equal),
            (None, None) => std::cmp::Ordering::Equal,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some(_), None) => std::cmp::Ordering::Less,
        })
    });
    idx.into_iter()
        .map(|i| vec![ScalarValue::Int64(k[i]), f(a[i])])
        .collect()
}

/// `ORDER BY a DESC LIMIT n` (NULLs last).
pub fn top_k(a: &[Option<f64>], n: usize) -> Vec<Row> {
    let mut v: Vec<f64> = a.iter().flatten().copied().collect();
    v.sort_by(|x, y| y.partial_cmp(x).unwrap_or(std::cmp::Ordering::Equal));
    let mut rows: Vec<Row> = v
        .into_iter()
        .take(n)
        .map(|x| vec![ScalarValue::Float64(x)])
        .collect();
    let nulls = a.iter().filter(|x| x.is_none()).count();
    rows.extend(
        std::iter::repeat_with(|| vec![ScalarValue::Null])
            .take(n.saturating_sub(rows.len()).min(nulls)),
    );
    rows
}

/// `SELECT count(*), sum(v + w) FROM l JOIN r ON l.k = r.k` where every left key has exactly
/// one match: sums follow the probe side's morsels.
pub fn join_sum(lk: &[i64], lv: &[f64], rw: &[f64]) -> Vec<Row> {
    let mut total = 0.0;
    for (ks, vs) in lk.chunks(MORSEL_ROWS).zip(lv.chunks(MORSEL_ROWS)) {
        let rows = ks.iter().zip(vs).map(|(k, v)| Some(v + rw[*k as usize]));
        total += morsel_sum(rows).unwrap_or(0.0);
    }
    vec![vec![
        ScalarValue::Int64(lk.len() as i64),
        ScalarValue::Float64(total),
    ]]
}

/// `SELECT a FROM t UNION ALL SELECT b FROM t`.
pub fn concat(a: &[Option<f64>], b: &[Option<f64>]) -> Vec<Row> {
    a.iter().chain(b).map(|v| vec![f(*v)]).collect()
}
