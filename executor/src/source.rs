//! Pipeline sources: in-memory batches cut into fixed-size row morsels, and CSV files cut
//! into record-aligned blocks that workers decode in parallel.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use morsel_planner::CsvFiles;
use morsel_storage::csv::{BlockDecoder, BlockSplitter};
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
            MorselData::Csv { .. } => unreachable!("a memory source hands out row morsels only"),
        }
    }
}

/// Reads CSV files (one, or a glob's matches in path order): the splitter (sequential I/O
/// under a lock) hands out blocks, file after file, and workers decode them in parallel,
/// parsing only the projected columns. Morsels are numbered across files in that order.
pub struct CsvSource {
    name: String,
    files: Arc<CsvFiles>,
    cursor: Mutex<CsvCursor>,
    decoders: Vec<BlockDecoder>,
}

struct CsvCursor {
    /// The current file's splitter (the next file's is opened when this one ends).
    splitter: Option<BlockSplitter>,
    file: usize,
    seq: u64,
}

impl CsvSource {
    pub fn new(files: &Arc<CsvFiles>, projection: Option<&[usize]>) -> ExecResult<Self> {
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
                file: 0,
                seq: 0,
            }),
            decoders: readers.iter().map(|r| r.decoder(projection)).collect(),
        })
    }
}

impl Source for CsvSource {
    fn name(&self) -> String {
        format!("csv {}", self.name)
    }

    fn morsel_bytes(&self, morsel: &Morsel) -> u64 {
        match &morsel.data {
            MorselData::Csv { block, .. } => block.data.len() as u64,
            MorselData::Rows { .. } => 0,
        }
    }

    fn next_morsel(&self) -> ExecResult<Option<Morsel>> {
        let mut c = self.cursor.lock().expect("splitter");
        loop {
            let Some(splitter) = c.splitter.as_mut() else {
                return Ok(None);
            };
            match splitter.next_block()? {
                Some(block) => {
                    let (file, seq) = (c.file, c.seq);
                    c.seq += 1;
                    return Ok(Some(Morsel {
                        seq,
                        data: MorselData::Csv { file, block },
                    }));
                }
                None => {
                    c.file += 1;
                    c.splitter = match self.files.readers().get(c.file) {
                        Some(r) => Some(r.splitter()?),
                        None => None,
                    };
                }
            }
        }
    }

    fn read(&self, morsel: Morsel, ctx: &ExecContext) -> ExecResult<Vec<Batch>> {
        match morsel.data {
            MorselData::Csv { file, block } => {
                let decoded = self.decoders[file].decode(&block)?;
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
