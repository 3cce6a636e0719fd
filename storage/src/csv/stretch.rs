//! Cuts the data part of a CSV input into blocks that workers read at the same time.
//!
//! The data is divided into stretches of `block_size` bytes at fixed offsets. The block of
//! stretch `k` holds the records that begin in it: from its first record boundary to the
//! first boundary at or past its end (read on past the stretch as far as its last record
//! goes). As in [`super::split`], a boundary follows a line feed with an even number of quote
//! bytes before it in the data. So the one step taken in order is handing each stretch's
//! quote parity to the next; every worker reads its own stretch with a positional read while
//! the others read theirs, where the in-order splitter read the whole file one worker at a
//! time (at two threads, most of a light query's wall time).
//!
//! A record longer than a stretch leaves the stretches it covers with empty blocks. Blocks
//! depend only on the bytes and `block_size`, never on which worker reads which stretch.
//! Used only where quote parity alone finds boundaries and no record is counted: no comment
//! prefix, no `ignore_errors`, no `n_rows` ([`super::split::BlockSplitter`] reads those).

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use memchr::memchr;

use super::error::{CsvError, CsvErrorKind};
use super::input::{CsvInput, PositionalInput};
use super::separators::odd_count;
use super::split::{Block, BlockBytes, BufferPool, LineOrigin};

/// Bytes read past a stretch's end at first, to finish its last record; doubled while the
/// record goes on.
const OVERRUN: u64 = 16 << 10;

pub struct StretchSplitter {
    input: PositionalInput,
    name: CsvInput,
    quote: Option<u8>,
    /// The data's first byte and its end (the input's length when opened).
    start: u64,
    end: u64,
    stretch: u64,
    origin: LineOrigin,
    parity: Mutex<Parity>,
    handed_on: Condvar,
    pool: Arc<BufferPool>,
}

/// The quote parity handed from stretch to stretch.
#[derive(Debug)]
struct Parity {
    /// The stretch whose incoming parity is known.
    next: u64,
    /// Whether an odd number of quote bytes precede stretch `next`.
    odd: bool,
    /// A stretch failed before handing its parity on: no later block is read.
    broken: bool,
}

/// Where the first record boundary at or after a position is, if the bytes scanned hold it.
enum Boundary {
    At(usize),
    /// None up to the end of the bytes; `odd`: the quote parity at their end.
    Beyond {
        odd: bool,
    },
}

impl StretchSplitter {
    pub(crate) fn new(
        input: &CsvInput,
        start: u64,
        first_line: u64,
        quote: Option<u8>,
        block_size: usize,
    ) -> Result<Self, CsvError> {
        Ok(Self {
            input: input.positional()?,
            name: input.clone(),
            quote,
            start,
            end: input.len()?.max(start),
            stretch: block_size.max(1) as u64,
            origin: LineOrigin::new(input, start, first_line),
            parity: Mutex::new(Parity {
                next: 0,
                odd: false,
                broken: false,
            }),
            handed_on: Condvar::new(),
            pool: Arc::default(),
        })
    }

    /// How many stretches, and so blocks, the data has.
    pub fn stretches(&self) -> u64 {
        (self.end - self.start).div_ceil(self.stretch)
    }

    /// The block of stretch `k` (below [`Self::stretches`]) and the nanoseconds spent reading
    /// input for it; `None` when an earlier stretch failed (its reader reports why).
    ///
    /// Every stretch must be read, once, either in order or by workers that took their
    /// numbers in order: a stretch waits for the one before it to hand on its quote parity.
    pub fn block(&self, k: u64) -> Result<Option<(Block, u64)>, CsvError> {
        debug_assert!(k < self.stretches(), "stretch {k} of {}", self.stretches());
        let mut turn = Turn {
            splitter: self,
            taken: false,
        };
        let stretch_start = self.start + k * self.stretch;
        let stretch_end = stretch_start.saturating_add(self.stretch).min(self.end);
        // The byte before the stretch too: a line feed there makes the stretch start a record.
        let from = stretch_start - u64::from(k > 0);
        let lead = (stretch_start - from) as usize;
        let inside = (stretch_end - from) as usize;
        let mut io_ns = 0;
        let mut buf = self
            .pool
            .take_len(inside + OVERRUN.min(self.stretch) as usize);
        let mut len = self.read(from, &mut buf, 0, &mut io_ns)?;
        if len < inside {
            let kind = CsvErrorKind::Io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the file got shorter while it was read",
            ));
            return Err(CsvError::new(self.name.name(), kind));
        }
        let odd_inside = self.quote.is_some_and(|q| odd_count(&buf[lead..inside], q));
        let Some(odd_before) = turn.take(k, odd_inside) else {
            return Ok(None);
        };
        let first = match k {
            0 => 0,
            _ => match self.next_boundary(&buf[..inside], lead, odd_before) {
                Boundary::At(b) => b,
                // No record begins in the stretch: a longer one covers it.
                Boundary::Beyond { .. } => inside,
            },
        };
        let last = if first == inside || stretch_end == self.end {
            // An empty block, or the data's last one.
            len.min(inside)
        } else {
            let (mut at, mut odd) = (inside, odd_before ^ odd_inside);
            loop {
                match self.next_boundary(&buf[..len], at, odd) {
                    Boundary::At(b) => break b,
                    Boundary::Beyond { .. } if from + len as u64 >= self.end => break len,
                    Boundary::Beyond { odd: o } => {
                        // The last record goes on past what was read: read as much again.
                        (at, odd) = (len, o);
                        buf.resize(len + len.max(OVERRUN as usize), 0);
                        match self.read(from + len as u64, &mut buf, len, &mut io_ns)? {
                            0 => break len,
                            got => len += got,
                        }
                    }
                }
            }
        };
        // Field positions inside a block are u32: a single record over 4 GiB is refused.
        if last - first > u32::MAX as usize {
            let kind = CsvErrorKind::Io(std::io::Error::other(
                "a record longer than 4 GiB cannot be read",
            ));
            let line = self.origin.line_at(from + first as u64)?;
            return Err(CsvError::new(self.name.name(), kind).at_line(line));
        }
        let block = Block {
            seq: k,
            data: Arc::new(BlockBytes::new(buf, first..last, &self.pool)),
            offset: from + first as u64,
            first_line: None,
        };
        Ok(Some((block, io_ns)))
    }

    /// Reads from `offset` into `buf[at..]`; returns the bytes read.
    fn read(
        &self,
        offset: u64,
        buf: &mut [u8],
        at: usize,
        io_ns: &mut u64,
    ) -> Result<usize, CsvError> {
        let started = Instant::now();
        let want = buf.len() - at;
        let want = want.min(usize::try_from(self.end - offset).unwrap_or(usize::MAX));
        let got = self
            .input
            .read_at(offset, &mut buf[at..at + want])
            .map_err(|e| self.name.io_error(e));
        *io_ns += started.elapsed().as_nanos() as u64;
        got
    }

    /// The first record boundary at `at` or later in `buf`: the byte after the first line
    /// feed at `at - 1` or later with an even number of quote bytes before it, given that
    /// `odd` says whether an odd number precede `at`.
    fn next_boundary(&self, buf: &[u8], at: usize, mut odd: bool) -> Boundary {
        let mut counted = at;
        let mut search = at.saturating_sub(1);
        while let Some(i) = memchr(b'\n', &buf[search..]) {
            let nl = search + i;
            if let (Some(q), true) = (self.quote, nl > counted) {
                odd ^= odd_count(&buf[counted..nl], q);
                counted = nl;
            }
            if !odd {
                return Boundary::At(nl + 1);
            }
            search = nl + 1;
        }
        if let Some(q) = self.quote {
            odd ^= odd_count(&buf[counted..], q);
        }
        Boundary::Beyond { odd }
    }

    fn lock(&self) -> MutexGuard<'_, Parity> {
        self.parity.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A stretch's place in the parity chain: breaks the chain if dropped before its parity was
/// handed on (an error or a panic), so later stretches stop waiting.
struct Turn<'a> {
    splitter: &'a StretchSplitter,
    taken: bool,
}

impl Turn<'_> {
    /// Waits for stretch `k`'s turn, hands on the parity after it and returns the parity
    /// before it; `None` when an earlier stretch failed.
    fn take(&mut self, k: u64, odd_inside: bool) -> Option<bool> {
        let s = self.splitter;
        let mut p = s.lock();
        while p.next != k && !p.broken {
            p = s.handed_on.wait(p).unwrap_or_else(PoisonError::into_inner);
        }
        self.taken = true;
        if p.broken {
            return None;
        }
        let before = p.odd;
        p.odd ^= odd_inside;
        p.next = k + 1;
        s.handed_on.notify_all();
        Some(before)
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if !self.taken {
            self.splitter.lock().broken = true;
            self.splitter.handed_on.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use memchr::memchr_iter;

    use super::*;
    use crate::test_rng::Rng;

    /// Records with quoted line feeds, doubled quotes, CRLF, empty fields and one quoted
    /// field far longer than the small stretches the tests use.
    fn text(rng: &mut Rng) -> Vec<u8> {
        let mut out = Vec::new();
        for r in 0..200 {
            let field = match rng.below(6) {
                0 => String::new(),
                1 => "\"a\nb\"".to_string(),
                2 => "\"say \"\"hi\"\"\r\n\"".to_string(),
                3 if r == 100 => format!("\"{}\"", "long\n".repeat(200)),
                _ => rng.below(100_000).to_string(),
            };
            let end = if rng.below(3) == 0 { "\r\n" } else { "\n" };
            out.extend_from_slice(format!("{r},{field}{end}").as_bytes());
        }
        out
    }

    /// Every block of `splitter`, each stretch read by whichever of `threads` workers took
    /// its number next.
    fn blocks(splitter: &StretchSplitter, threads: usize) -> Vec<Option<(u64, Vec<u8>)>> {
        let next = AtomicU64::new(0);
        let taken = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    let k = next.fetch_add(1, Ordering::SeqCst);
                    if k >= splitter.stretches() {
                        return;
                    }
                    let block = splitter.block(k).ok().flatten();
                    let got = block.map(|(b, _)| (b.offset, b.data.to_vec()));
                    taken.lock().unwrap().push((k, got));
                });
            }
        });
        let mut taken = taken.into_inner().unwrap();
        taken.sort_by_key(|(k, _)| *k);
        taken.into_iter().map(|(_, b)| b).collect()
    }

    /// Blocks are whole records in file order, each from its own stretch, whatever the
    /// stretch size and however many workers read them.
    #[test]
    fn blocks_are_whole_records_at_any_stretch_size_and_worker_count() {
        let mut rng = Rng(0x5EED);
        for case in 0..20 {
            let data = text(&mut rng);
            let head = b"id,v\n".len();
            let input = CsvInput::bytes("t.csv", [b"id,v\n".as_slice(), &data].concat());
            for size in [1, 5, 64, 300, 4096, 1 << 20] {
                let split = || StretchSplitter::new(&input, head as u64, 2, Some(b'"'), size);
                let alone = blocks(&split().unwrap(), 1);
                assert_eq!(
                    blocks(&split().unwrap(), 4),
                    alone,
                    "case {case}, size {size}"
                );
                let mut joined = Vec::new();
                for (k, block) in alone.into_iter().enumerate() {
                    let (offset, bytes) = block.expect("read");
                    if bytes.is_empty() {
                        continue;
                    }
                    assert_eq!(offset as usize, head + joined.len());
                    // A block begins in its own stretch and ends at a record's end.
                    let at = offset as usize - head;
                    assert!(at == 0 || at / size == k && data[at - 1] == b'\n');
                    joined.extend_from_slice(&bytes);
                    let quotes = memchr_iter(b'"', &joined).count();
                    assert!(
                        quotes.is_multiple_of(2) && joined.ends_with(b"\n"),
                        "case {case}"
                    );
                }
                assert_eq!(joined, data, "case {case}, size {size}");
            }
        }
    }

    /// A stretch that fails before handing on its quote parity (here the file shrank under
    /// the scan) lets the workers waiting for it go: nothing hangs, and an error is reported.
    #[test]
    fn a_failed_stretch_lets_the_later_ones_go() {
        let dir = std::env::temp_dir().join(format!("morsel-stretch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("shrinks.csv");
        let data: String = (0..2000).map(|i| format!("{i},x\n")).collect();
        std::fs::write(&path, &data).unwrap();
        let input = CsvInput::file(&path);
        let splitter = StretchSplitter::new(&input, 0, 1, Some(b'"'), 512).unwrap();
        std::fs::write(&path, &data[..data.len() / 2]).unwrap();
        let next = AtomicU64::new(0);
        let (failed, read) = (AtomicU64::new(0), AtomicU64::new(0));
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| loop {
                    let k = next.fetch_add(1, Ordering::SeqCst);
                    if k >= splitter.stretches() {
                        return;
                    }
                    match splitter.block(k) {
                        Err(_) => failed.fetch_add(1, Ordering::SeqCst),
                        Ok(Some(_)) => read.fetch_add(1, Ordering::SeqCst),
                        Ok(None) => 0,
                    };
                });
            }
        });
        assert!(failed.load(Ordering::SeqCst) >= 1);
        assert!(read.load(Ordering::SeqCst) < splitter.stretches());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
