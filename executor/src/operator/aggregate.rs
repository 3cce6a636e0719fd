//! Hash aggregation as a sink. Each morsel builds its own partial group table (keys interned
//! in first-seen order, one accumulator slot per group); `finish` merges the partials in
//! morsel order. Output groups therefore appear in order of first appearance in the input,
//! and float sums add in a data-determined order, whatever the number of workers.
//!
//! When the partials hold many groups, the merge is split by hash: every partial's groups are
//! dealt into [`PARTITIONS`] partitions by a few bits of their key hash, the partitions are
//! merged independently on the workers (each still in morsel order), and the groups are put
//! back in first-seen order. Every group's states combine in the same order as in the serial
//! merge, so the two give the same bits; which one runs depends on the data only.

use foldhash::fast::FixedState;
use hashbrown::HashMap;
use morsel_planner::AggFunc;
use morsel_storage::{Batch, Column, DataType, ScalarValue, SchemaRef};

use super::accumulator::Accumulator;
use super::keys::{
    decode_keys, encode_int, for_each_int, hash_key, is_int_column, KeyInterner, KeyList, RowKeys,
};
use crate::error::{ExecError, ExecResult};
use crate::expr::PhysExpr;
use crate::scheduler::{parallel_map, Sink};

/// One aggregate call: function, compiled argument (none for `count(*)`) and its type.
pub struct AggSpec {
    pub func: AggFunc,
    pub arg: Option<PhysExpr>,
    pub arg_type: DataType,
    pub distinct: bool,
    /// The constant second argument, if the function takes one.
    pub constant: Option<ScalarValue>,
}

pub struct AggregateSink {
    pub group: Vec<PhysExpr>,
    pub key_types: Vec<DataType>,
    pub aggs: Vec<AggSpec>,
    pub schema: SchemaRef,
    /// Workers for the partitioned merge.
    pub threads: usize,
}

/// Hash partitions of the parallel merge (a constant: results never depend on it).
pub const PARTITIONS: usize = 64;

/// The partitioned merge runs when the partials hold at least this many groups in all.
pub const PARTITIONED_MERGE_GROUPS: usize = 1 << 16;

/// The partition of a key hash: bits the group tables' own probing does not lean on.
fn partition(hash: u64) -> usize {
    (hash >> 40) as usize % PARTITIONS
}

/// Groups seen so far: interned keys (their values are decoded from the key bytes when
/// finishing) and one accumulator per aggregate. A morsel's partial is one of these.
pub struct Partial {
    keys: KeyInterner,
    accs: Vec<Accumulator>,
    /// For one integer-like group key: its interned ids by value, so that rows look their
    /// group up without encoding and hashing bytes.
    ints: IntIds,
}

/// Group ids of a single integer-like key by value (NULL has its own), the ids being the
/// partial's interned ids.
#[derive(Default)]
struct IntIds {
    map: HashMap<i64, u32, FixedState>,
    null: Option<u32>,
}

impl IntIds {
    /// Every row's group id, interning each new value's encoded key in `keys`.
    fn ids(&mut self, col: &Column, keys: &mut KeyInterner) -> Vec<u32> {
        let ty = col.data_type();
        let rows = col.len();
        let mut ids = Vec::with_capacity(rows);
        let mut intern = |v: Option<i64>| {
            let mut buf = [0u8; 9];
            let key = encode_int(v, ty, &mut buf);
            keys.intern(key, hash_key(key)).0
        };
        let (map, null) = (&mut self.map, &mut self.null);
        for_each_int(col, |_, v| {
            ids.push(match v {
                Some(x) => *map.entry(x).or_insert_with(|| intern(v)),
                None => *null.get_or_insert_with(|| intern(None)),
            })
        });
        ids
    }
}

/// Partials merged into partitions at a time by one task of the partitioned merge (so that
/// a partition receives one piece per run of partials, not one per partial).
const PARTIALS_PER_PIECE: usize = 16;

/// One partition's share of a run of partials: where each group came from (partial, id),
/// its key, and its states, in morsel order.
struct Piece {
    from: Vec<(u32, u32)>,
    keys: KeyList,
    accs: Vec<Accumulator>,
}

impl AggregateSink {
    fn new_table(&self) -> ExecResult<Partial> {
        Ok(Partial {
            keys: KeyInterner::new(),
            accs: self.new_accs()?,
            ints: IntIds::default(),
        })
    }

    fn new_accs(&self) -> ExecResult<Vec<Accumulator>> {
        self.aggs
            .iter()
            .map(|a| Accumulator::new(a.func, a.arg_type, a.distinct, a.constant.as_ref()))
            .collect()
    }

    /// The output batch of a merged table: decoded keys, then each aggregate's values.
    fn output(&self, keys: &KeyList, accs: Vec<Accumulator>) -> ExecResult<Vec<Column>> {
        let groups = keys.len();
        let mut columns = if self.group.is_empty() {
            Vec::new()
        } else {
            decode_keys(keys, &self.key_types)?
        };
        for mut acc in accs {
            acc.resize(groups);
            columns.push(acc.finish()?);
        }
        if columns.len() != self.schema.len() {
            return Err(ExecError::Internal(
                "aggregate output does not match its schema".into(),
            ));
        }
        Ok(columns)
    }
}

impl Sink for AggregateSink {
    type Partial = Partial;
    type Output = Vec<Batch>;

    fn details(&self) -> Vec<String> {
        let mut d = vec![if self.group.is_empty() {
            "global aggregate: one partial per morsel, merged in morsel order".to_string()
        } else {
            format!(
                "hash aggregate on {} key(s): a group table per morsel, merged in morsel order \
                 (groups in first-seen order), by hash partition in parallel past \
                 {PARTITIONED_MERGE_GROUPS} groups",
                self.group.len()
            )
        }];
        d.extend(crate::physical::fused_details(
            self.group
                .iter()
                .chain(self.aggs.iter().filter_map(|a| a.arg.as_ref())),
        ));
        d
    }

    fn name(&self) -> &'static str {
        "HashAggregate"
    }

    fn partial_bytes(&self, p: &Partial) -> usize {
        p.keys.heap_bytes() + p.accs.iter().map(Accumulator::heap_bytes).sum::<usize>()
    }

    fn output_bytes(&self, output: &Vec<Batch>) -> usize {
        output.iter().map(Batch::window_bytes).sum()
    }

    fn consume(&self, _seq: u64, batches: Vec<Batch>) -> ExecResult<Partial> {
        let mut t = self.new_table()?;
        for batch in &batches {
            let rows = batch.num_rows();
            if self.group.is_empty() {
                // A global aggregate: every row is in the one group, no keys to encode.
                if rows == 0 {
                    continue;
                }
                if t.keys.is_empty() {
                    t.keys.intern(&[], hash_key(&[]));
                }
                for (acc, spec) in t.accs.iter_mut().zip(&self.aggs) {
                    acc.resize(1);
                    let arg = spec.arg.as_ref().map(|a| a.evaluate(batch)).transpose()?;
                    acc.update_global(rows, arg.as_ref())?;
                }
                continue;
            }
            let key_cols = self
                .group
                .iter()
                .map(|e| e.evaluate(batch))
                .collect::<ExecResult<Vec<_>>>()?;
            let ids = match key_cols.as_slice() {
                [one] if is_int_column(one) => t.ints.ids(one, &mut t.keys),
                _ => {
                    let encoded = RowKeys::encode(&key_cols, rows);
                    let mut ids = Vec::with_capacity(rows);
                    for i in 0..rows {
                        let key = encoded.key(i);
                        ids.push(t.keys.intern(key, hash_key(key)).0);
                    }
                    ids
                }
            };
            for (acc, spec) in t.accs.iter_mut().zip(&self.aggs) {
                acc.resize(t.keys.len());
                let arg = spec.arg.as_ref().map(|a| a.evaluate(batch)).transpose()?;
                acc.update(&ids, arg.as_ref())?;
            }
        }
        Ok(t)
    }

    fn finish(&self, partials: Vec<Partial>) -> ExecResult<Vec<Batch>> {
        let groups: usize = partials.iter().map(|p| p.keys.len()).sum();
        if !self.group.is_empty() && groups >= PARTITIONED_MERGE_GROUPS {
            self.merge_partitioned(partials)
        } else {
            self.merge_serial(partials)
        }
    }
}

impl AggregateSink {
    /// Merges the partials one after another into one table.
    fn merge_serial(&self, partials: Vec<Partial>) -> ExecResult<Vec<Batch>> {
        let mut global = self.new_table()?;
        for p in partials {
            let mapping: Vec<u32> = (0..p.keys.len())
                .map(|g| global.keys.intern(p.keys.key(g), p.keys.hash(g)).0)
                .collect();
            for (acc, part) in global.accs.iter_mut().zip(p.accs) {
                acc.resize(global.keys.len());
                acc.merge(part, &mapping)?;
            }
        }
        // A global aggregate (no GROUP BY) has exactly one row, even over no input.
        if self.group.is_empty() && global.keys.is_empty() {
            global.keys.intern(&[], hash_key(&[]));
        }
        let groups = global.keys.len();
        let columns = self.output(global.keys.keys(), global.accs)?;
        Ok(vec![Batch::try_new(self.schema.clone(), columns, groups)?])
    }

    /// Merges by hash partition on the workers, then restores first-seen order.
    fn merge_partitioned(&self, partials: Vec<Partial>) -> ExecResult<Vec<Batch>> {
        let sizes: Vec<usize> = partials.iter().map(|p| p.keys.len()).collect();
        // Deal the groups of each run of partials into partitions, copying their keys and
        // moving their states, so that each partition's merge reads only its own pieces.
        let mut runs: Vec<Vec<Partial>> = Vec::new();
        for (i, p) in partials.into_iter().enumerate() {
            if i % PARTIALS_PER_PIECE == 0 {
                runs.push(Vec::with_capacity(PARTIALS_PER_PIECE));
            }
            runs.last_mut().expect("a run was started").push(p);
        }
        let dealt = parallel_map(self.threads, runs, |r, run| {
            let mut pieces = (0..PARTITIONS)
                .map(|_| {
                    Ok(Piece {
                        from: Vec::new(),
                        keys: KeyList::new(),
                        accs: self.new_accs()?,
                    })
                })
                .collect::<ExecResult<Vec<Piece>>>()?;
            let mut ids: Vec<Vec<u32>> = vec![Vec::new(); PARTITIONS];
            for (k, mut p) in run.into_iter().enumerate() {
                let i = (r * PARTIALS_PER_PIECE + k) as u32;
                ids.iter_mut().for_each(Vec::clear);
                for g in 0..p.keys.len() {
                    ids[partition(p.keys.hash(g))].push(g as u32);
                }
                for (piece, ids) in pieces.iter_mut().zip(&ids) {
                    for &g in ids {
                        piece
                            .keys
                            .push(p.keys.key(g as usize), p.keys.hash(g as usize));
                        piece.from.push((i, g));
                    }
                    for (acc, into) in p.accs.iter_mut().zip(&mut piece.accs) {
                        acc.move_groups(ids, into)?;
                    }
                }
            }
            Ok::<_, ExecError>(pieces)
        });
        let mut by_partition: Vec<Vec<Piece>> = (0..PARTITIONS).map(|_| Vec::new()).collect();
        for pieces in dealt {
            for (part, piece) in by_partition.iter_mut().zip(pieces?) {
                part.push(piece);
            }
        }
        // Merge each partition in morsel order; note where each new group was first seen.
        let merged = parallel_map(self.threads, by_partition, |_, pieces| {
            let mut t = self.new_table()?;
            let mut first_seen: Vec<(u32, u32)> = Vec::new();
            for piece in pieces {
                let mut mapping = Vec::with_capacity(piece.from.len());
                for (k, &from) in piece.from.iter().enumerate() {
                    let (id, new) = t.keys.intern(piece.keys.key(k), piece.keys.hash(k));
                    if new {
                        first_seen.push(from);
                    }
                    mapping.push(id);
                }
                for (acc, part) in t.accs.iter_mut().zip(piece.accs) {
                    acc.resize(t.keys.len());
                    acc.merge(part, &mapping)?;
                }
            }
            let columns = self.output(t.keys.keys(), t.accs)?;
            Ok::<_, ExecError>((first_seen, columns))
        });
        // First-seen order: by partial, then by group id within it. Each partial's groups
        // get the row they land on in the concatenated partitions, then are read in order.
        let mut row_of: Vec<Vec<u32>> = sizes.iter().map(|&n| vec![u32::MAX; n]).collect();
        let mut parts = Vec::with_capacity(merged.len());
        let mut row = 0u32;
        for m in merged {
            let (first_seen, columns) = m?;
            for (i, g) in first_seen {
                row_of[i as usize][g as usize] = row;
                row += 1;
            }
            parts.push(columns);
        }
        let order: Vec<u32> = row_of
            .into_iter()
            .flatten()
            .filter(|&r| r != u32::MAX)
            .collect();
        let columns = (0..self.schema.len())
            .map(|c| {
                let pieces: Vec<Column> = parts.iter().map(|p| p[c].clone()).collect();
                Ok(Column::concat(&pieces)?.take(&order))
            })
            .collect::<ExecResult<Vec<Column>>>()?;
        Ok(vec![Batch::try_new(
            self.schema.clone(),
            columns,
            order.len(),
        )?])
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use morsel_storage::{Field, PrimitiveColumn, Schema, Utf8Column};

    use super::*;
    use morsel_storage::test_rng::Rng;

    /// Output schema: the two keys, then one column per aggregate (types as finished).
    fn sink(threads: usize) -> AggregateSink {
        let agg = |func, arg: Option<usize>, arg_type, distinct, constant| AggSpec {
            func,
            arg: arg.map(PhysExpr::Column),
            arg_type,
            distinct,
            constant,
        };
        let aggs = vec![
            agg(AggFunc::CountStar, None, DataType::Int64, false, None),
            agg(AggFunc::Sum, Some(2), DataType::Float64, false, None),
            agg(AggFunc::Avg, Some(0), DataType::Int64, false, None),
            agg(AggFunc::Min, Some(1), DataType::Utf8, false, None),
            agg(AggFunc::StddevSamp, Some(2), DataType::Float64, false, None),
            agg(
                AggFunc::StringAgg,
                Some(1),
                DataType::Utf8,
                false,
                Some(ScalarValue::Utf8("|".into())),
            ),
            agg(AggFunc::Median, Some(2), DataType::Float64, false, None),
            agg(AggFunc::Count, Some(2), DataType::Float64, true, None),
        ];
        let types = [
            DataType::Int64,
            DataType::Utf8,
            DataType::Int64,
            DataType::Float64,
            DataType::Float64,
            DataType::Utf8,
            DataType::Float64,
            DataType::Utf8,
            DataType::Float64,
            DataType::Int64,
        ];
        let fields = types
            .iter()
            .enumerate()
            .map(|(i, t)| Field::new(format!("c{i}"), *t, true))
            .collect();
        AggregateSink {
            group: vec![PhysExpr::Column(0), PhysExpr::Column(1)],
            key_types: vec![DataType::Int64, DataType::Utf8],
            aggs,
            schema: Arc::new(Schema::new(fields)),
            threads,
        }
    }

    /// Morsels of (k Int64, s Utf8, x Float64) rows, with NULLs and repeated keys.
    fn morsels() -> Vec<Vec<Batch>> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("x", DataType::Float64, true),
        ]));
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut next = move |n: u64| rng.below(n);
        let words = ["a", "bb", "c", "dd", "e"];
        (0..9)
            .map(|_| {
                let rows = next(900) as usize;
                let k: Vec<Option<i64>> = (0..rows)
                    .map(|_| (next(10) > 0).then(|| next(400) as i64))
                    .collect();
                let s: Vec<Option<&str>> = (0..rows)
                    .map(|_| (next(8) > 0).then(|| words[next(5) as usize]))
                    .collect();
                let x: Vec<Option<f64>> = (0..rows)
                    .map(|_| (next(6) > 0).then(|| next(1000) as f64 / 7.0))
                    .collect();
                let columns = vec![
                    Column::Int64(PrimitiveColumn::from_options(k)),
                    Column::Utf8(Utf8Column::from_strs(s)),
                    Column::Float64(PrimitiveColumn::from_options(x)),
                ];
                vec![Batch::try_new(schema.clone(), columns, rows).unwrap()]
            })
            .collect()
    }

    fn rows(batches: &[Batch]) -> Vec<Vec<String>> {
        batches
            .iter()
            .flat_map(|b| {
                (0..b.num_rows()).map(move |r| {
                    b.columns()
                        .iter()
                        .map(|c| match c.scalar_at(r) {
                            // Bits, so that equal means identical.
                            ScalarValue::Float64(f) => format!("{:x}", f.to_bits()),
                            v => format!("{v:?}"),
                        })
                        .collect()
                })
            })
            .collect()
    }

    #[test]
    fn partitioned_merge_equals_serial_merge_bit_for_bit() {
        let input = morsels();
        let partials = |s: &AggregateSink| -> Vec<Partial> {
            input
                .iter()
                .enumerate()
                .map(|(i, m)| s.consume(i as u64, m.clone()).unwrap())
                .collect()
        };
        let serial = sink(1);
        let expect = rows(&serial.merge_serial(partials(&serial)).unwrap());
        assert!(expect.len() > 1000, "{} groups", expect.len());
        for threads in [1, 2, 8] {
            let s = sink(threads);
            let got = rows(&s.merge_partitioned(partials(&s)).unwrap());
            assert_eq!(got, expect, "{threads} threads");
        }
    }

    /// Grouping by one integer-like key by value gives the ids and key bytes that encoding
    /// the rows gives, NULL included, for 4- and 8-byte types.
    #[test]
    fn integer_key_ids_match_encoded_key_ids() {
        let mut r = Rng(5);
        let values: Vec<Option<i64>> = (0..2000)
            .map(|_| (r.below(8) != 0).then(|| r.below(300) as i64 - 150))
            .collect();
        let columns = [
            Column::Int64(PrimitiveColumn::from_options(values.iter().copied())),
            Column::Date32(PrimitiveColumn::from_options(
                values.iter().map(|v| v.map(|x| x as i32)),
            )),
        ];
        for col in columns {
            let (mut by_value, mut encoded) = (KeyInterner::new(), KeyInterner::new());
            let ids = IntIds::default().ids(&col, &mut by_value);
            let keys = RowKeys::encode(std::slice::from_ref(&col), col.len());
            let want: Vec<u32> = (0..col.len())
                .map(|i| encoded.intern(keys.key(i), hash_key(keys.key(i))).0)
                .collect();
            assert_eq!(ids, want, "{}", col.data_type());
            assert_eq!(by_value.len(), encoded.len());
            for g in 0..by_value.len() {
                assert_eq!(by_value.key(g), encoded.key(g));
                assert_eq!(by_value.hash(g), encoded.hash(g));
            }
        }
    }
}
