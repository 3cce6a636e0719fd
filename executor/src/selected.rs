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
        match self.columns[c] {
            ColumnAt::Probe(k) => batch.column(k).take(&self.probe),
            ColumnAt::Build { side, column } => {
                let b = &self.builds[side];
                b.batch.column(column).take(&b.rows)
            }
        }
    }

    /// The live rows as a batch of their own (`batch`: the probe batch).
    pub fn gather(&self, batch: &Batch) -> ExecResult<Batch> {
        let columns = (0..self.columns.len())
            .map(|c| self.column(batch, c))
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
