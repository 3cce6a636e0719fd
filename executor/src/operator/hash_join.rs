//! Hash join. The build side is collected and indexed once: distinct keys are interned and the
//! rows of each key laid out contiguously (CSR: `starts[key]..starts[key + 1]` into `rows`), in
//! build-row order, with no allocation per key. The probe is a streaming operator: each probe
//! batch is matched independently, so output follows probe order and, per probe row, matches
//! follow build-row order. NULL keys never match. With no keys the join is a cross product.

use std::sync::Arc;

use morsel_planner::JoinKind;
use morsel_storage::{Batch, Column, SchemaRef};

use super::keys::{hash_key, KeyInterner, RowKeys};
use crate::error::ExecResult;
use crate::expr::PhysExpr;
use crate::kernels::boolean;
use crate::scheduler::Operator;

/// The indexed build side.
pub struct JoinTable {
    build: Batch,
    keys: KeyInterner,
    starts: Vec<u32>,
    rows: Vec<u32>,
}

impl JoinTable {
    pub fn new(build: Batch, key_exprs: &[PhysExpr]) -> ExecResult<Self> {
        let n = build.num_rows();
        let cols = key_exprs
            .iter()
            .map(|e| e.evaluate(&build))
            .collect::<ExecResult<Vec<_>>>()?;
        let encoded = RowKeys::encode(&cols, n);
        let mut keys = KeyInterner::new();
        let mut key_of_row = vec![u32::MAX; n];
        for (r, slot) in key_of_row.iter_mut().enumerate() {
            if !encoded.has_null[r] {
                let k = encoded.key(r);
                *slot = keys.intern(k, hash_key(k)).0;
            }
        }
        let mut starts = vec![0u32; keys.len() + 1];
        for &k in &key_of_row {
            if k != u32::MAX {
                starts[k as usize + 1] += 1;
            }
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut fill = starts.clone();
        let mut rows = vec![0u32; starts[keys.len()] as usize];
        for (r, &k) in key_of_row.iter().enumerate() {
            if k != u32::MAX {
                rows[fill[k as usize] as usize] = r as u32;
                fill[k as usize] += 1;
            }
        }
        Ok(Self {
            build,
            keys,
            starts,
            rows,
        })
    }

    pub fn num_rows(&self) -> usize {
        self.build.num_rows()
    }
}

pub struct HashProbeOp {
    pub table: Arc<JoinTable>,
    pub probe_keys: Vec<PhysExpr>,
    pub kind: JoinKind,
    /// Residual condition over the joined row (evaluated on candidate pairs).
    pub filter: Option<PhysExpr>,
    pub schema: SchemaRef,
}

impl HashProbeOp {
    /// Candidate (probe row, build row) pairs, in probe order then build order.
    fn candidates(&self, batch: &Batch) -> ExecResult<(Vec<u32>, Vec<u32>)> {
        let n = batch.num_rows();
        let (mut p, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let build_rows = self.table.num_rows() as u32;
        if self.probe_keys.is_empty() {
            for i in 0..n as u32 {
                for r in 0..build_rows {
                    p.push(i);
                    b.push(r);
                }
            }
            return Ok((p, b));
        }
        let cols = self
            .probe_keys
            .iter()
            .map(|e| e.evaluate(batch))
            .collect::<ExecResult<Vec<_>>>()?;
        let encoded = RowKeys::encode(&cols, n);
        let t = &self.table;
        for i in 0..n {
            if encoded.has_null[i] {
                continue;
            }
            let k = encoded.key(i);
            if let Some(id) = t.keys.find(k, hash_key(k)) {
                let (s, e) = (
                    t.starts[id as usize] as usize,
                    t.starts[id as usize + 1] as usize,
                );
                for &r in &t.rows[s..e] {
                    p.push(i as u32);
                    b.push(r);
                }
            }
        }
        Ok((p, b))
    }

    fn assemble(&self, batch: &Batch, p: &[u32], b: &[u32]) -> ExecResult<Batch> {
        let mut columns: Vec<Column> = batch.columns().iter().map(|c| c.take(p)).collect();
        columns.extend(self.table.build.columns().iter().map(|c| c.take(b)));
        Ok(Batch::try_new(self.schema.clone(), columns, p.len())?)
    }
}

impl Operator for HashProbeOp {
    fn name(&self) -> &'static str {
        "HashProbe"
    }

    fn execute(&self, batch: Batch) -> ExecResult<Batch> {
        let (mut p, mut b) = self.candidates(&batch)?;
        if let Some(f) = &self.filter {
            let joined = self.assemble(&batch, &p, &b)?;
            let cond = f.evaluate(&joined)?;
            let keep = boolean::as_boolean(&cond)?.true_mask();
            let (mut p2, mut b2) = (Vec::with_capacity(p.len()), Vec::with_capacity(b.len()));
            for i in keep.set_indices() {
                p2.push(p[i]);
                b2.push(b[i]);
            }
            (p, b) = (p2, b2);
        }
        if self.kind == JoinKind::Left {
            // Probe rows without a surviving match appear once, with NULLs for the build side.
            let (mut p2, mut b2) = (Vec::with_capacity(p.len()), Vec::with_capacity(b.len()));
            let mut j = 0;
            for i in 0..batch.num_rows() as u32 {
                if j < p.len() && p[j] == i {
                    while j < p.len() && p[j] == i {
                        p2.push(i);
                        b2.push(b[j]);
                        j += 1;
                    }
                } else {
                    p2.push(i);
                    b2.push(u32::MAX);
                }
            }
            (p, b) = (p2, b2);
        }
        self.assemble(&batch, &p, &b)
    }
}
