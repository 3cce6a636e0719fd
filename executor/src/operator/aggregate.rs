//! Hash aggregation as a sink. Each morsel builds its own partial group table (keys interned
//! in first-seen order, one accumulator slot per group); `finish` merges the partials in
//! morsel order. Output groups therefore appear in order of first appearance in the input,
//! and float sums add in a data-determined order, whatever the number of workers.

use morsel_planner::AggFunc;
use morsel_storage::{Batch, Column, ColumnBuilder, DataType, ScalarValue, SchemaRef};

use super::accumulator::Accumulator;
use super::keys::{hash_key, KeyInterner, RowKeys};
use crate::error::{ExecError, ExecResult};
use crate::expr::PhysExpr;
use crate::scheduler::Sink;

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
}

/// Groups seen so far: interned keys, their values, and one accumulator per aggregate.
pub struct GroupTable {
    keys: KeyInterner,
    key_values: Vec<ColumnBuilder>,
    accs: Vec<Accumulator>,
}

/// A morsel's partial: its table with the key values sealed into columns.
pub struct Partial {
    keys: KeyInterner,
    key_columns: Vec<Column>,
    accs: Vec<Accumulator>,
}

impl AggregateSink {
    fn new_table(&self) -> ExecResult<GroupTable> {
        Ok(GroupTable {
            keys: KeyInterner::new(),
            key_values: self
                .key_types
                .iter()
                .map(|t| ColumnBuilder::with_capacity(*t, 0))
                .collect(),
            accs: self
                .aggs
                .iter()
                .map(|a| Accumulator::new(a.func, a.arg_type, a.distinct, a.constant.as_ref()))
                .collect::<ExecResult<_>>()?,
        })
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
                 (groups in first-seen order)",
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
        p.keys.heap_bytes()
            + p.key_columns
                .iter()
                .map(Column::window_bytes)
                .sum::<usize>()
            + p.accs.iter().map(Accumulator::heap_bytes).sum::<usize>()
    }

    fn output_bytes(&self, output: &Vec<Batch>) -> usize {
        output.iter().map(Batch::window_bytes).sum()
    }

    fn consume(&self, _seq: u64, batches: Vec<Batch>) -> ExecResult<Partial> {
        let mut t = self.new_table()?;
        for batch in &batches {
            let rows = batch.num_rows();
            let key_cols = self
                .group
                .iter()
                .map(|e| e.evaluate(batch))
                .collect::<ExecResult<Vec<_>>>()?;
            let ids = if self.group.is_empty() {
                // A global aggregate: every row is in the one group, no keys to encode.
                if rows > 0 && t.keys.is_empty() {
                    t.keys.intern(&[], hash_key(&[]));
                }
                vec![0u32; rows]
            } else {
                let encoded = RowKeys::encode(&key_cols, rows);
                let mut ids = Vec::with_capacity(rows);
                for i in 0..rows {
                    let key = encoded.key(i);
                    let (id, new) = t.keys.intern(key, hash_key(key));
                    if new {
                        for (b, c) in t.key_values.iter_mut().zip(&key_cols) {
                            b.push_scalar(&c.scalar_at(i))?;
                        }
                    }
                    ids.push(id);
                }
                ids
            };
            for (acc, spec) in t.accs.iter_mut().zip(&self.aggs) {
                acc.resize(t.keys.len());
                let arg = spec.arg.as_ref().map(|a| a.evaluate(batch)).transpose()?;
                acc.update(&ids, arg.as_ref())?;
            }
        }
        Ok(Partial {
            keys: t.keys,
            key_columns: t
                .key_values
                .into_iter()
                .map(ColumnBuilder::finish)
                .collect(),
            accs: t.accs,
        })
    }

    fn finish(&self, partials: Vec<Partial>) -> ExecResult<Vec<Batch>> {
        let mut global = self.new_table()?;
        for p in partials {
            let mut mapping = Vec::with_capacity(p.keys.len());
            for g in 0..p.keys.len() {
                let (id, new) = global.keys.intern(p.keys.key(g), p.keys.hash(g));
                if new {
                    for (b, c) in global.key_values.iter_mut().zip(&p.key_columns) {
                        b.push_scalar(&c.scalar_at(g))?;
                    }
                }
                mapping.push(id);
            }
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
        let mut columns: Vec<Column> = global
            .key_values
            .into_iter()
            .map(ColumnBuilder::finish)
            .collect();
        for mut acc in global.accs {
            acc.resize(groups);
            columns.push(acc.finish()?);
        }
        if columns.len() != self.schema.len() {
            return Err(ExecError::Internal(
                "aggregate output does not match its schema".into(),
            ));
        }
        Ok(vec![Batch::try_new(self.schema.clone(), columns, groups)?])
    }
}
