//! Pipeline sources: in-memory batches cut into fixed-size row morsels, and CSV files cut
//! into record-aligned blocks that workers decode in parallel.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use morsel_planner::CsvFiles;
use morsel_storage::csv::{
    BlockDecoder, DataSplitter, DecodeFilter, DecodedBlock, FilteredDecodeError,
};
use morsel_storage::{Batch, Bitmap};

use crate::context::{ExecContext, ScanMetrics};
use crate::error::{ExecError, ExecResult};
use crate::expr::PhysExpr;
use crate::kernels::boolean;
use crate::scheduler::{Morsel, MorselData, Source};

/// Rows per in-memory morsel. A constant, so morsel boundaries never depend on thread count.
pub const MORSEL_ROWS: usize = 16 * 1024;

pub struct MemorySource {
    name: String,
    batches: Arc<Vec<Batch>>,
    /// (batch, offset, len) of every morsel, in order.
    morsels: Vec<(usize, usize, usize)>,
    cursor: AtomicUsize,
}

impl MemorySource {
    pub fn new(name: impl Into<String>, batches: Arc<Vec<Batch>>) -> Self {
        let mut morsels = Vec::new();
        for (b, batch) in batches.iter().enumerate() {
            let rows = batch.num_rows();
            let mut off = 0;
            while off < rows {
                let len = MORSEL_ROWS.min(rows - off);
                morsels.push((b, off, len));
                off += len;
            }
        }
        Self {
            name: name.into(),
            batches,
            morsels,
            cursor: AtomicUsize::new(0),
        }
    }

    /// A morsel per non-empty batch, whatever its rows: for batches that each hold whole
    /// groups of the aggregate reading them (an aggregate's partitions).
    pub fn batch_per_morsel(name: impl Into<String>, batches: Arc<Vec<Batch>>) -> Self {
        let morsels = (batches.iter().enumerate())
            .filter(|(_, batch)| batch.num_rows() > 0)
            .map(|(b, batch)| (b, 0, batch.num_rows()))
            .collect();
        Self {
            name: name.into(),
            batches,
            morsels,
            cursor: AtomicUsize::new(0),
        }
    }
}

impl Source for MemorySource {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn morsel_count(&self) -> Option<usize> {
        Some(self.morsels.len())
    }

    fn next_morsel(&self) -> ExecResult<Option<Morsel>> {
        let i = self.cursor.fetch_add(1, Ordering::SeqCst);
        Ok(self.morsels.get(i).map(|&(batch, offset, len)| Morsel {
            seq: i as u64,
            data: MorselData::Rows { batch, offset, len },
        }))
    }

    fn handed_out(&self) -> u64 {
        self.cursor.load(Ordering::SeqCst).min(self.morsels.len()) as u64
    }

    fn read(&self, morsel: Morsel, _ctx: &ExecContext) -> ExecResult<Vec<Batch>> {
        match morsel.data {
            MorselData::Rows { batch, offset, len } => {
                Ok(vec![self.batches[batch].slice(offset, len)])
            }
            _ => unreachable!("a memory source hands out row morsels only"),
        }
    }
}

/// A pushed-down predicate a CSV scan evaluates while decoding: it reads the projected
/// columns at `slots` (compiled against just those columns).
pub struct ScanFilter {
    pub slots: Vec<usize>,
    pub predicate: PhysExpr,
    filter_ns: AtomicU64,
}

impl ScanFilter {
    pub fn new(slots: Vec<usize>, predicate: PhysExpr) -> Self {
        Self {
            slots,
            predicate,
            filter_ns: AtomicU64::new(0),
        }
    }
}

impl DecodeFilter for ScanFilter {
    type Error = ExecError;

    fn slots(&self) -> &[usize] {
        &self.slots
    }

    fn keep(&self, batch: &Batch) -> ExecResult<Bitmap> {
        let started = Instant::now();
        let mask = boolean::as_boolean(&self.predicate.evaluate_predicate(batch)?)?.true_mask();
        let ns = started.elapsed().as_nanos() as u64;
        self.filter_ns.fetch_add(ns, Ordering::Relaxed);
        Ok(mask)
    }
}

/// Reads CSV files (one, or a glob's matches in path order), file after file: workers take
/// the next stretch of the file under a lock and read and decode its block in parallel
/// (where records are counted in order, the splitter reads each block under the lock),
/// parsing only the projected columns and, with a pushed-down filter, building the columns
/// the filter does not read only for the rows it keeps. Morsels are numbered across files
/// in that order.
pub struct CsvSource {
    name: String,
    files: Arc<CsvFiles>,
    cursor: Mutex<CsvCursor>,
    decoders: Vec<BlockDecoder>,
    filter: Option<ScanFilter>,
    rows_read: AtomicU64,
    io_ns: AtomicU64,
    split_ns: AtomicU64,
    tokenize_ns: AtomicU64,
    decode_ns: AtomicU64,
    record_by_record_blocks: AtomicU64,
}

struct CsvCursor {
    /// The current file's splitter (the next file's is opened when this one ends).
    splitter: Option<DataSplitter>,
    /// The current file's next stretch, where its splitter reads in parallel.
    stretch: u64,
    file: usize,
    seq: u64,
}

impl CsvSource {
    pub fn new(
        files: &Arc<CsvFiles>,
        projection: Option<&[usize]>,
        filter: Option<ScanFilter>,
    ) -> ExecResult<Self> {
        let readers = files.readers();
        let name = match readers {
            [one] => one.input().name(),
            many => format!(
                "{} and {} more files",
                many[0].input().name(),
                many.len() - 1
            ),
        };
        Ok(Self {
            name,
            files: files.clone(),
            cursor: Mutex::new(CsvCursor {
                splitter: Some(readers[0].splitter()?),
                stretch: 0,
                file: 0,
                seq: 0,
            }),
            decoders: readers.iter().map(|r| r.decoder(projection)).collect(),
            filter,
            rows_read: AtomicU64::new(0),
            io_ns: AtomicU64::new(0),
            split_ns: AtomicU64::new(0),
            tokenize_ns: AtomicU64::new(0),
            record_by_record_blocks: AtomicU64::new(0),
            decode_ns: AtomicU64::new(0),
        })
    }

    fn decode(&self, file: usize, block: &morsel_storage::csv::Block) -> ExecResult<DecodedBlock> {
        let decoder = &self.decoders[file];
        let decoded = match &self.filter {
            None => decoder.decode(block)?,
            Some(f) => decoder.decode_filtered(block, f).map_err(|e| match e {
                FilteredDecodeError::Csv(e) => ExecError::from(e),
                FilteredDecodeError::Filter(e) => e,
            })?,
        };
        self.rows_read
            .fetch_add(decoded.rows_read as u64, Ordering::Relaxed);
        self.tokenize_ns
            .fetch_add(decoded.tokenize_ns, Ordering::Relaxed);
        self.decode_ns
            .fetch_add(decoded.decode_ns, Ordering::Relaxed);
        self.record_by_record_blocks
            .fetch_add(u64::from(decoded.record_by_record), Ordering::Relaxed);
        Ok(decoded)
    }

    /// The next block of the current file, opening the next file when one ends, and the
    /// nanoseconds spent reading input for it. A block of a file read in parallel is read
    /// after the lock is let go.
    fn next_block(&self, mut c: MutexGuard<'_, CsvCursor>) -> (ExecResult<Option<Morsel>>, u64) {
        loop {
            let (file, seq, stretch) = (c.file, c.seq, c.stretch);
            let found = match c.splitter.as_mut() {
                None => return (Ok(None), 0),
                Some(DataSplitter::InOrder(splitter)) => {
                    let before = splitter.io_ns();
                    let block = splitter.next_block();
                    let io = splitter.io_ns() - before;
                    match block {
                        Err(e) => return (Err(e.into()), io),
                        Ok(found) => found.map(|block| (block, io)),
                    }
                }
                Some(DataSplitter::Parallel(splitter)) if stretch < splitter.stretches() => {
                    let splitter = Arc::clone(splitter);
                    c.stretch += 1;
                    c.seq += 1;
                    drop(c);
                    return match splitter.block(stretch) {
                        Err(e) => (Err(e.into()), 0),
                        // An earlier stretch failed: its worker reports why.
                        Ok(None) => (Ok(None), 0),
                        Ok(Some((block, io))) => {
                            let data = MorselData::Csv { file, block };
                            (Ok(Some(Morsel { seq, data })), io)
                        }
                    };
                }
                Some(DataSplitter::Parallel(_)) => None,
            };
            if let Some((block, io)) = found {
                c.seq += 1;
                let data = MorselData::Csv { file, block };
                return (Ok(Some(Morsel { seq, data })), io);
            }
            // This file is done: on to the next.
            c.file += 1;
            c.stretch = 0;
            c.splitter = match self.files.readers().get(c.file).map(|r| r.splitter()) {
                Some(Ok(s)) => Some(s),
                Some(Err(e)) => return (Err(e.into()), 0),
                None => None,
            };
        }
    }
}

impl Source for CsvSource {
    fn name(&self) -> String {
        format!("csv {}", self.name)
    }

    fn morsel_bytes(&self, morsel: &Morsel) -> u64 {
        match &morsel.data {
            MorselData::Csv { block, .. } => block.data.len() as u64,
            _ => 0,
        }
    }

    fn scan_metrics(&self) -> Option<ScanMetrics> {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Some(ScanMetrics {
            read_in_parallel: self.files.readers()[0].reads_in_parallel(),
            rows_read: load(&self.rows_read),
            io_ns: load(&self.io_ns),
            split_ns: load(&self.split_ns),
            tokenize_ns: load(&self.tokenize_ns),
            decode_ns: load(&self.decode_ns),
            record_by_record_blocks: load(&self.record_by_record_blocks),
            filter_ns: self.filter.as_ref().map(|f| load(&f.filter_ns)),
        })
    }

    fn handed_out(&self) -> u64 {
        self.cursor.lock().expect("splitter").seq
    }

    fn next_morsel(&self) -> ExecResult<Option<Morsel>> {
        let c = self.cursor.lock().expect("splitter");
        let started = Instant::now();
        let (morsel, io) = self.next_block(c);
        let ns = started.elapsed().as_nanos() as u64;
        self.io_ns.fetch_add(io, Ordering::Relaxed);
        self.split_ns
            .fetch_add(ns.saturating_sub(io), Ordering::Relaxed);
        morsel
    }

    fn read(&self, morsel: Morsel, ctx: &ExecContext) -> ExecResult<Vec<Batch>> {
        match morsel.data {
            MorselData::Csv { file, block } => {
                let decoded = self.decode(file, &block)?;
                if !decoded.skipped.is_empty() {
                    ctx.metrics
                        .skipped_rows
                        .lock()
                        .expect("metrics")
                        .extend(decoded.skipped);
                }
                Ok(vec![decoded.batch])
            }
            _ => unreachable!("a CSV source hands out blocks only"),
        }
    }
}
