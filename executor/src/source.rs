//! Pipeline sources: in-memory batches cut into fixed-size row morsels, and CSV files cut
//! into record-aligned blocks that workers decode in parallel.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use morsel_storage::csv::{BlockDecoder, BlockSplitter, CsvReader};
use morsel_storage::Batch;

use crate::context::ExecContext;
use crate::error::ExecResult;
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
}

impl Source for MemorySource {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn next_morsel(&self) -> ExecResult<Option<Morsel>> {
        let i = self.cursor.fetch_add(1, Ordering::SeqCst);
        Ok(self.morsels.get(i).map(|&(batch, offset, len)| Morsel {
            seq: i as u64,
            data: MorselData::Rows { batch, offset, len },
        }))
    }

    fn read(&self, morsel: Morsel, _ctx: &ExecContext) -> ExecResult<Vec<Batch>> {
        match morsel.data {
            MorselData::Rows { batch, offset, len } => {
                Ok(vec![self.batches[batch].slice(offset, len)])
            }
            MorselData::Csv(_) => unreachable!("a memory source hands out row morsels only"),
        }
    }
}

/// Reads a CSV file: the splitter (sequential I/O under a lock) hands out blocks, and workers
/// decode them in parallel, parsing only the projected columns.
pub struct CsvSource {
    name: String,
    splitter: Mutex<BlockSplitter>,
    decoder: BlockDecoder,
}

impl CsvSource {
    pub fn new(reader: &CsvReader, projection: Option<&[usize]>) -> ExecResult<Self> {
        Ok(Self {
            name: reader.input().name(),
            splitter: Mutex::new(reader.splitter()?),
            decoder: reader.decoder(projection),
        })
    }
}

impl Source for CsvSource {
    fn name(&self) -> String {
        format!("csv {}", self.name)
    }

    fn next_morsel(&self) -> ExecResult<Option<Morsel>> {
        let mut splitter = self.splitter.lock().expect("splitter");
        Ok(splitter.next_block()?.map(|b| Morsel {
            seq: b.seq,
            data: MorselData::Csv(b),
        }))
    }

    fn read(&self, morsel: Morsel, ctx: &ExecContext) -> ExecResult<Vec<Batch>> {
        match morsel.data {
            MorselData::Csv(block) => {
                let decoded = self.decoder.decode(&block)?;
                if !decoded.skipped.is_empty() {
                    ctx.metrics
                        .skipped_rows
                        .lock()
                        .expect("metrics")
                        .extend(decoded.skipped);
                }
                Ok(vec![decoded.batch])
            }
            MorselData::Rows { .. } => unreachable!("a CSV source hands out blocks only"),
        }
    }
}
