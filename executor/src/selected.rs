//! What one streaming operator hands the next: a batch and which of its rows are live.
//!
//! Rows are gathered as late as possible. A filter hands on its survivors as a list or a
//! mask; an operator that reads selections (a join probe, a projection that only picks
//! columns) reads them as they are. A chain of join probes hands on its matches as row
//! numbers into the probe batch and into each build side ([`Joined`]): the next probe
//! gathers only its key columns, and every other column is gathered once, at the rows that
//! survive the whole chain, instead of after every join.

use morsel_storage::{Batch, Bitmap, Column, SchemaRef};

use crate::error::ExecResult;
use crate::kernels::select;

/// A batch and which of its rows are live.
pub struct Selected {
    pub batch: Batch,
    pub live: Live,
}

/// Which rows of a batch are live.
pub enum Live {
    All,
    /// These positions, increasing.
    Rows(Vec<u32>),
    /// The rows whose bit is set (many of them: a filter lists its survivors once few are
    /// left, and an operator that reads positions lists a mask's).
    Mask(Bitmap),
    /// Join matches not gathered yet; the batch is the probe side's.
    Joined(Box<Joined>),
}

impl Selected {
    pub fn all(batch: Batch) -> Self {
        Selected {
            batch,
            live: Live::All,
        }
    }

    /// How many rows are live.
    pub fn num_rows(&self) -> usize {
        match &self.live {
            Live::All => self.batch.num_rows(),
            Live::Rows(rows) => rows.len(),
            Live::Mask(mask) => mask.count_ones(),
            Live::Joined(j) => j.num_rows(),
        }
    }

    /// The live rows as a batch of their own.
    pub fn gather(self) -> ExecResult<Batch> {
        match self.live {
            Live::All => Ok(self.batch),
            Live::Rows(rows) => select::take_batch(&self.batch, &rows),
            Live::Mask(mask) => select::filter_batch(&self.batch, &mask),
            Live::Joined(j) => j.gather(&self.batch),
        }
    }
}

/// The output of one or more inner (or semi) join probes, not gathered: live row `i` is
/// the probe batch's row `probe[i]` beside, for each build side `s` the chain joined,
/// that side's row `builds[s].rows[i]`. `columns` says where each output column is read.
pub struct Joined {
    /// The schema of the output as a whole.
    pub schema: SchemaRef,
    /// Where each output column is read.
    pub columns: Vec<ColumnAt>,
    /// The probe batch's row of each live row (increasing; repeated when a row matched
    /// more than once).
    pub probe: Vec<u32>,
    pub builds: Vec<BuildRows>,
}

/// Where an output column of [`Joined`] rows is read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ColumnAt {
    /// This column of the probe batch.
    Probe(usize),
    /// Column `column` of build side `side`.
    Build { side: usize, column: usize },
}

/// A join's build side and its row of each live row.
pub struct BuildRows {
    pub batch: Batch,
    pub rows: Vec<u32>,
}

impl Joined {
    /// The matches of a probe of `batch` (whose columns come first, as they are) against
    /// `build` (its columns after them): pairs of probe row `probe[i]` and build row
    /// `rows[i]`.
    pub fn new(schema: SchemaRef, batch: &Batch, probe: Vec<u32>, build: BuildRows) -> Self {
        let columns = (0..batch.num_columns()).map(ColumnAt::Probe).collect();
        Joined {
            schema,
            columns,
            probe,
            builds: Vec::new(),
        }
        .with_build(build)
    }

    pub fn num_rows(&self) -> usize {
        self.probe.len()
    }

    /// Output column `c` at the live rows.
    pub fn column(&self, batch: &Batch, c: usize) -> Column {
        self.column_at(batch, c, self.every_probe_row_once(batch))
    }

    /// Whether the live rows are the probe batch's rows, each once, in order (an inner join
    /// on a key every row finds): its columns are then read as they are.
    fn every_probe_row_once(&self, batch: &Batch) -> bool {
        self.probe.len() == batch.num_rows()
            && self.probe.iter().enumerate().all(|(i, &r)| r == i as u32)
    }

    fn column_at(&self, batch: &Batch, c: usize, whole_probe: bool) -> Column {
        match self.columns[c] {
            ColumnAt::Probe(k) if whole_probe => batch.column(k).clone(),
            ColumnAt::Probe(k) => batch.column(k).take(&self.probe),
            ColumnAt::Build { side, column } => {
                let b = &self.builds[side];
                b.batch.column(column).take(&b.rows)
            }
        }
    }

    /// Output column `c` at the live rows at positions `at`.
    pub fn column_at_positions(&self, batch: &Batch, c: usize, at: &[u32]) -> Column {
        let pick = |rows: &[u32]| -> Vec<u32> { at.iter().map(|&i| rows[i as usize]).collect() };
        match self.columns[c] {
            ColumnAt::Probe(k) => batch.column(k).take(&pick(&self.probe)),
            ColumnAt::Build { side, column } => {
                let b = &self.builds[side];
                b.batch.column(column).take(&pick(&b.rows))
            }
        }
    }

    /// The live rows as a batch of their own (`batch`: the probe batch).
    pub fn gather(&self, batch: &Batch) -> ExecResult<Batch> {
        let whole_probe = self.every_probe_row_once(batch);
        let columns = (0..self.columns.len())
            .map(|c| self.column_at(batch, c, whole_probe))
            .collect();
        Ok(Batch::try_new(
            self.schema.clone(),
            columns,
            self.num_rows(),
        )?)
    }

    /// Keeps the live rows at positions `keep` (a row may be kept more than once).
    pub fn keep(&mut self, keep: &[u32]) {
        let identity =
            keep.len() == self.num_rows() && keep.iter().enumerate().all(|(i, &k)| k == i as u32);
        if identity {
            return;
        }
        let pick = |rows: &[u32]| keep.iter().map(|&k| rows[k as usize]).collect();
        self.probe = pick(&self.probe);
        for b in &mut self.builds {
            b.rows = pick(&b.rows);
        }
    }

    /// Joins another build side, one row per live row, its columns after the others.
    pub fn with_build(mut self, build: BuildRows) -> Self {
        let side = self.builds.len();
        let added = (0..build.batch.num_columns()).map(|column| ColumnAt::Build { side, column });
        self.columns.extend(added);
        self.builds.push(build);
        self
    }

    /// Only the output columns `picked`, in that order, under `schema`; build sides no
    /// column reads any more are dropped.
    pub fn pick(mut self, picked: &[usize], schema: SchemaRef) -> Self {
        let mut columns: Vec<ColumnAt> = picked.iter().map(|&c| self.columns[c]).collect();
        let mut renumber = vec![None; self.builds.len()];
        let mut kept = Vec::new();
        for (side, b) in std::mem::take(&mut self.builds).into_iter().enumerate() {
            let read = columns
                .iter()
                .any(|c| matches!(c, ColumnAt::Build { side: s, .. } if *s == side));
            if read {
                renumber[side] = Some(kept.len());
                kept.push(b);
            }
        }
        for c in &mut columns {
            if let ColumnAt::Build { side, .. } = c {
                // Every side a picked column reads was kept.
                *side = renumber[*side].unwrap_or(*side);
            }
        }
        Joined {
            schema,
            columns,
            probe: self.probe,
            builds: kept,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use morsel_storage::{Batch, Column, DataType, Field, PrimitiveColumn, ScalarValue, Schema};

    use super::{BuildRows, Joined};

    fn field(name: &str) -> Field {
        Field::new(name, DataType::Int64, true)
    }

    fn ints(name: &str, values: Vec<i64>) -> Batch {
        let n = values.len();
        let column = Column::Int64(PrimitiveColumn::from_vec(values));
        Batch::try_new(Arc::new(Schema::new(vec![field(name)])), vec![column], n).unwrap()
    }

    fn rows(b: &Batch) -> Vec<Vec<ScalarValue>> {
        (0..b.num_rows())
            .map(|r| {
                (0..b.num_columns())
                    .map(|c| b.column(c).scalar_at(r))
                    .collect()
            })
            .collect()
    }

    /// Matches gather to the pairs they name, whether every probe row matched once (its
    /// columns read as they are) or not; kept rows and picked columns follow.
    #[test]
    fn joined_rows_gather_to_their_pairs() {
        let probe = ints("p", vec![10, 11, 12, 13]);
        let build = ints("b", vec![100, 101, 102]);
        let schema = Arc::new(Schema::new(vec![field("p"), field("b")]));
        let pair = |p: u32, b: u32| {
            vec![
                ScalarValue::Int64(10 + i64::from(p)),
                ScalarValue::Int64(100 + i64::from(b)),
            ]
        };
        for (p, b) in [([0, 1, 2, 3], [2, 0, 1, 0]), ([0, 0, 2, 3], [1, 2, 0, 0])] {
            let build = BuildRows {
                batch: build.clone(),
                rows: b.to_vec(),
            };
            let mut joined = Joined::new(schema.clone(), &probe, p.to_vec(), build);
            let want: Vec<_> = p.iter().zip(&b).map(|(&p, &b)| pair(p, b)).collect();
            assert_eq!(rows(&joined.gather(&probe).unwrap()), want);
            joined.keep(&[3, 1]);
            let picked = joined.pick(&[1], Arc::new(Schema::new(vec![field("b")])));
            let want = vec![
                vec![pair(0, b[3])[1].clone()],
                vec![pair(0, b[1])[1].clone()],
            ];
            assert_eq!(rows(&picked.gather(&probe).unwrap()), want);
        }
    }
}
