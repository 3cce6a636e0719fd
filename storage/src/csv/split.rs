//! Cuts the data part of a CSV input into blocks that begin at record boundaries.
//!
//! A block boundary is the end of the last complete record (one ended by a line break) within
//! the first `block_size` bytes of what remains; a newline inside a quoted field is never a
//! boundary. Blocks without any quote byte cut at their last newline. Otherwise a newline is a
//! boundary when an even number of quote bytes precede it in the block (a doubled quote counts
//! twice, so it never flips the parity); this scan runs at memchr speed. Where quote parity can
//! mislead, the block is walked with the tokenizer instead: when a comment prefix is set (a
//! comment may hold a lone quote) and under `ignore_errors` (a malformed record must be cut
//! where the decoder resumes after it). Boundaries depend only on the bytes and `block_size`,
//! so the same input always yields the same blocks.

use std::io::Read;
use std::ops::{Deref, Range};
use std::sync::{Arc, Mutex, Weak};

use memchr::{memchr, memrchr};

use super::error::{CsvError, CsvErrorKind};
use super::input::CsvInput;
use super::tokenize::{Dialect, Tokenizer};

/// A morsel of CSV input: whole records, with the position of its first byte.
#[derive(Clone, Debug)]
pub struct Block {
    /// 0-based sequence number; restores file order after parallel decoding.
    pub seq: u64,
    /// The block's bytes (the buffer read into becomes the block without a copy).
    pub data: Arc<BlockBytes>,
    /// Byte offset of `data[0]` in the input.
    pub offset: u64,
    /// 1-based physical line of `data[0]`, where the splitter counts lines: only where a
    /// decoder may need many of them (skipping malformed records, or comments). Elsewhere
    /// an error finds its line through [`LineOrigin`]: counting every block's line feeds
    /// took 4-5% of a one-thread scan of lineitem, in the splitter's serial part.
    pub first_line: Option<u64>,
}

/// Where the data's lines are numbered from: finds the line of any byte offset by counting
/// the line feeds before it (for the rare error in a block whose lines were not counted).
#[derive(Clone, Debug)]
pub struct LineOrigin {
    input: CsvInput,
    /// Byte offset of the data's first line.
    start: u64,
    /// Its 1-based physical line.
    first_line: u64,
}

impl LineOrigin {
    pub(crate) fn new(input: &CsvInput, start: u64, first_line: u64) -> Self {
        Self {
            input: input.clone(),
            start,
            first_line,
        }
    }

    /// The 1-based physical line that begins at byte `offset` (a line's start at or after
    /// the data's), read from the input again.
    pub fn line_at(&self, offset: u64) -> Result<u64, CsvError> {
        let mut reader = self
            .input
            .open_at(self.start)?
            .take(offset.saturating_sub(self.start));
        let mut buf = vec![0u8; 1 << 20];
        let mut line = self.first_line;
        loop {
            let n = reader.read(&mut buf).map_err(|e| self.input.io_error(e))?;
            if n == 0 {
                return Ok(line);
            }
            line += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        }
    }
}

/// A block's bytes: a window onto the buffer they were read into. When the block is done
/// with, the buffer goes back to its splitter's pool for a later block to be read into.
#[derive(Debug)]
pub struct BlockBytes {
    bytes: Vec<u8>,
    window: Range<usize>,
    pool: Weak<BufferPool>,
}

impl BlockBytes {
    /// `bytes[window]` as a block, its buffer returning to `pool` when dropped.
    pub(crate) fn new(bytes: Vec<u8>, window: Range<usize>, pool: &Arc<BufferPool>) -> Self {
        Self {
            bytes,
            window,
            pool: Arc::downgrade(pool),
        }
    }
}

impl Deref for BlockBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes[self.window.clone()]
    }
}

impl Drop for BlockBytes {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.upgrade() {
            pool.put(std::mem::take(&mut self.bytes));
        }
    }
}

/// Buffers of finished blocks. Reading each block into a fresh buffer faulted in a fresh
/// megabyte of pages per block (lineitem full decode: half the page-fault time was the
/// reads' buffers); a reused buffer's pages are already there.
#[derive(Debug, Default)]
pub(crate) struct BufferPool(Mutex<Vec<Vec<u8>>>);

impl BufferPool {
    /// Buffers kept at most: more than the blocks a worker pool holds in flight.
    const KEEP: usize = 32;

    /// A pooled buffer (or a new one) with whatever it held.
    fn pop(&self) -> Vec<u8> {
        self.0
            .lock()
            .ok()
            .and_then(|mut pool| pool.pop())
            .unwrap_or_default()
    }

    /// An empty buffer with room for `len` bytes.
    fn take(&self, len: usize) -> Vec<u8> {
        let mut buf = self.pop();
        buf.clear();
        buf.reserve(len);
        buf
    }

    /// A buffer of `len` bytes to read into: only bytes past what a reused buffer held are
    /// zeroed first (zeroing a whole megabyte per block cost a fifth of its read).
    pub(crate) fn take_len(&self, len: usize) -> Vec<u8> {
        let mut buf = self.pop();
        buf.resize(len, 0);
        buf
    }

    fn put(&self, buf: Vec<u8>) {
        if let Ok(mut pool) = self.0.lock() {
            if pool.len() < Self::KEEP {
                pool.push(buf);
            }
        }
    }
}

pub struct BlockSplitter {
    input: Box<dyn Read + Send>,
    name: CsvInput,
    dialect: Dialect,
    block_size: usize,
    pending: Vec<u8>,
    eof: bool,
    done: bool,
    next_seq: u64,
    offset: u64,
    /// The line of the next block's first byte, where lines are counted.
    line: Option<u64>,
    origin: LineOrigin,
    rows_left: Option<usize>,
    /// Find boundaries by quote parity (see the module doc) rather than by tokenizing.
    by_parity: bool,
    /// Time spent reading input so far (nanoseconds), apart from finding boundaries.
    io_ns: u64,
    pool: Arc<BufferPool>,
}

impl BlockSplitter {
    pub(crate) fn new(
        input: &CsvInput,
        start: u64,
        first_line: u64,
        dialect: Dialect,
        block_size: usize,
        n_rows: Option<usize>,
        tolerant: bool,
    ) -> Result<Self, CsvError> {
        let by_parity = dialect.comment.is_none() && !tolerant;
        Ok(Self {
            input: input.open_at(start)?,
            name: input.clone(),
            dialect,
            block_size: block_size.max(1),
            pending: Vec::new(),
            eof: false,
            done: n_rows == Some(0),
            next_seq: 0,
            offset: start,
            line: (!by_parity).then_some(first_line),
            origin: LineOrigin::new(input, start, first_line),
            rows_left: n_rows,
            by_parity,
            io_ns: 0,
            pool: Arc::default(),
        })
    }

    /// Reads until `pending` holds at least `want` bytes or the input ends.
    fn fill(&mut self, want: usize) -> Result<(), CsvError> {
        let started = std::time::Instant::now();
        let filled = self.fill_untimed(want);
        self.io_ns += started.elapsed().as_nanos() as u64;
        filled
    }

    /// Time spent reading input so far (nanoseconds), apart from finding record boundaries.
    pub fn io_ns(&self) -> u64 {
        self.io_ns
    }

    fn fill_untimed(&mut self, want: usize) -> Result<(), CsvError> {
        // Read into capacity reserved up front, not a vector grown (and copied) by doubling.
        self.pending
            .reserve(want.saturating_sub(self.pending.len()));
        while !self.eof && self.pending.len() < want {
            let need = want - self.pending.len();
            let got = (&mut self.input)
                .take(need as u64)
                .read_to_end(&mut self.pending)
                .map_err(|e| self.name.io_error(e))?;
            if got == 0 {
                self.eof = true;
            }
        }
        Ok(())
    }

    /// The next block, or `None` when the input (or `n_rows`) is exhausted.
    pub fn next_block(&mut self) -> Result<Option<Block>, CsvError> {
        if self.done {
            return Ok(None);
        }
        let mut want = self.block_size;
        let cut = loop {
            self.fill(want)?;
            if self.pending.is_empty() {
                self.done = true;
                return Ok(None);
            }
            if self.eof && self.pending.len() <= want {
                break self.pending.len();
            }
            let window = &self.pending[..want.min(self.pending.len())];
            let cut = match (self.by_parity, self.dialect.quote) {
                (true, Some(q)) => last_boundary_by_parity(window, q),
                _ => last_boundary(window, &self.dialect),
            };
            match cut {
                Some(b) => break b,
                // One record is longer than the block: read further until it ends.
                None => want = want.saturating_mul(2),
            }
        };
        // Field positions inside a block are u32: a single record over 4 GiB is refused.
        if cut > u32::MAX as usize {
            let kind = CsvErrorKind::Io(std::io::Error::other(
                "a record longer than 4 GiB cannot be read",
            ));
            let line = match self.line {
                Some(line) => line,
                None => self.origin.line_at(self.offset)?,
            };
            return Err(CsvError::new(self.name.name(), kind).at_line(line));
        }
        let mut cut = cut;
        if let Some(left) = self.rows_left {
            let (count, end) = count_records(&self.pending[..cut], left, &self.dialect);
            if count >= left {
                cut = end;
                self.done = true;
            }
            self.rows_left = Some(left - count.min(left));
        }
        // The buffer becomes the block; the partial record after the cut starts the next one.
        let mut next = self.pool.take(self.block_size);
        next.extend_from_slice(&self.pending[cut..]);
        let data = std::mem::replace(&mut self.pending, next);
        let data = Arc::new(BlockBytes::new(data, 0..cut, &self.pool));
        let block = Block {
            seq: self.next_seq,
            data,
            offset: self.offset,
            first_line: self.line,
        };
        self.next_seq += 1;
        self.offset += cut as u64;
        if let Some(line) = &mut self.line {
            *line += memchr::memchr_iter(b'\n', &block.data[..]).count() as u64;
        }
        if self.eof && self.pending.is_empty() {
            self.done = true;
        }
        Ok(Some(block))
    }
}

/// End of the last line break in `buf` with an even number of quote bytes before it. Walks
/// back from the last line break: usually the first one tried is a boundary, so the cost is
/// one vectorized count of the quotes before it.
fn last_boundary_by_parity(buf: &[u8], quote: u8) -> Option<usize> {
    let mut nl = memrchr(b'\n', buf)?;
    let mut quotes_before = memchr::memchr_iter(quote, &buf[..nl]).count();
    loop {
        if quotes_before.is_multiple_of(2) {
            return Some(nl + 1);
        }
        // Inside a quoted field: try the line break before, removing the quotes between.
        let prev = memrchr(b'\n', &buf[..nl])?;
        quotes_before -= memchr::memchr_iter(quote, &buf[prev..nl]).count();
        nl = prev;
    }
}

/// End of the last complete, line-terminated record in `buf` (which starts at a boundary).
fn last_boundary(buf: &[u8], dialect: &Dialect) -> Option<usize> {
    let quote_free = dialect.quote.is_none_or(|q| memchr(q, buf).is_none());
    if quote_free {
        return memrchr(b'\n', buf).map(|i| i + 1);
    }
    let mut t = Tokenizer::new(buf, 1, dialect);
    let mut fields = Vec::new();
    let mut last = None;
    loop {
        match t.next_record_keeping(&mut fields, 0) {
            Ok(Some(r)) if r.terminated => last = Some(t.position()),
            Ok(_) => return last,
            // A syntax error: end the block right before the bad record, so that the next
            // block's decoder reports it with its true line. A bad first record ends where
            // the decoder resumes after it under ignore_errors: the next line break.
            Err(e) if e.record_start > 0 => return Some(e.record_start),
            Err(e) => return memchr(b'\n', &buf[e.at..]).map(|k| e.at + k + 1),
        }
    }
}

/// Counts up to `limit` records in `buf`; returns the count and the byte after the last one.
fn count_records(buf: &[u8], limit: usize, dialect: &Dialect) -> (usize, usize) {
    let mut t = Tokenizer::new(buf, 1, dialect);
    let mut fields = Vec::new();
    let mut count = 0;
    while count < limit {
        match t.next_record_keeping(&mut fields, 0) {
            Ok(Some(_)) => count += 1,
            Ok(None) => break,
            // Malformed records count as records; the decoder reports or skips them.
            Err(_) => return (count, buf.len()),
        }
    }
    (count, t.position())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn splitter(text: &str, block_size: usize) -> BlockSplitter {
        let input = CsvInput::bytes("t.csv", text.as_bytes().to_vec());
        BlockSplitter::new(&input, 0, 1, Dialect::csv(None), block_size, None, false)
            .expect("in memory")
    }

    #[test]
    fn a_finished_blocks_buffer_is_read_into_again() {
        let text: String = (0..40).map(|i| format!("{i},row {i}\n")).collect();
        let mut s = splitter(&text, 24);
        let first = s.next_block().unwrap().expect("a block");
        let (at, first_len) = (first.data.as_ptr(), first.data.len());
        let pooled = |s: &BlockSplitter| s.pool.0.lock().unwrap().len();
        assert_eq!(pooled(&s), 0);
        drop(first);
        assert_eq!(pooled(&s), 1, "the first block's buffer is back");
        // The second block was read before the first was done with; the third goes into
        // the first's buffer.
        let second = s.next_block().unwrap().expect("a block");
        assert_eq!(pooled(&s), 0, "taken for the third block");
        let third = s.next_block().unwrap().expect("a block");
        assert_eq!(third.data.as_ptr(), at);
        let mut seen = text[..first_len].to_string();
        let mut held = vec![second, third];
        while let Some(b) = s.next_block().unwrap() {
            held.push(b);
        }
        for b in &held {
            seen.push_str(std::str::from_utf8(&b.data).unwrap());
        }
        assert_eq!(seen, text, "blocks held or reused keep their bytes");
    }
}
