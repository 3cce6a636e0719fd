//! The block-at-once tokenizer: finds every field separator of a block in one pass over
//! 64-byte mask words, then finds only the projected fields of each record by index, never
//! stepping through the fields in between: in place from the separators when every record
//! has the expected width ([`UniformFields`]), else as spans listed per column (a block
//! with blank lines).
//!
//! It handles the common shape of a file: records of the expected width, quoted fields
//! well-formed (opened right after a separator, closed right before one, inner quotes
//! doubled), no line feed inside quotes and no comment prefix. On anything else it declines
//! having produced nothing, and the caller tokenizes the block record by record with
//! [`super::tokenize::Tokenizer`], which accepts embedded line feeds and reports errors
//! exactly. The two agree on every block this one accepts (a randomized test checks it).

use std::cell::RefCell;

use memchr::memchr;

use super::tokenize::{chunk_masks, prefix_xor, ChunkMasks, Dialect, FieldSpan};

/// Every separator of a block: byte positions of the delimiters outside quotes and of the
/// line feeds (plus the block's end when its last record has no line feed), and for each
/// record the index in `ends` of the separator that ends it.
#[derive(Default)]
struct Separators {
    /// The first `count` entries hold the separators; the rest is room to write into.
    ends: Vec<u32>,
    count: usize,
    records: Vec<u32>,
    /// Some quoted field holds a doubled quote.
    doubled: bool,
    /// The block holds a quote byte.
    quoted: bool,
    /// Every byte of the block is ASCII (so it is valid UTF-8 without a check of its own).
    ascii: bool,
    /// Only count the separators, writing no positions: no field is read, only the records'
    /// widths are checked (`count(*)`: writing sixteen positions per lineitem record was
    /// most of its tokenizing).
    count_only: bool,
}

thread_local! {
    /// Reused across blocks, so that a worker does not fault in fresh pages per block.
    static SCRATCH: RefCell<Separators> = RefCell::default();
}

/// What [`tokenize_block`] made of a block.
pub enum BlockTokens {
    /// Every record has the expected width (so no line is blank): the fields are read from
    /// the separators in place, no span is listed.
    Uniform(UniformFields),
    /// The projected spans and the lines were appended; `ascii`: every byte of the block
    /// is ASCII.
    Spans { ascii: bool },
    /// The block needs the record-by-record tokenizer; nothing was appended.
    Declined,
}

/// The separators of a block whose records all have `width` fields, one line each: field
/// `c` of record `r` ends at separator `r * width + c` and starts after the one before.
/// Listing no spans saves a write per projected field (lineitem: 15% of a full decode's
/// time went to the spans).
///
/// The scan that found the separators also checked the quoting: a quote opens a field
/// only right after a separator and closes one only right before a separator (or a CR
/// that ends the line), and no other byte holds a quote. So a field whose first byte is
/// the quote is a quoted field that ends with the quote.
pub struct UniformFields {
    s: Separators,
    width: usize,
    first_line: u64,
    /// The quote byte, when the block holds one.
    quote: Option<u8>,
}

impl UniformFields {
    pub fn rows(&self) -> usize {
        self.s.records.len()
    }

    /// Whether every byte of the block is ASCII.
    pub fn ascii(&self) -> bool {
        self.s.ascii
    }

    /// The 1-based line of record `row`.
    pub fn line(&self, row: usize) -> u64 {
        self.first_line + row as u64
    }

    /// Where field `column` of record `row` starts.
    #[inline(always)]
    pub fn start(&self, row: usize, column: usize) -> usize {
        match (row * self.width + column).checked_sub(1) {
            Some(before) => self.s.ends[before] as usize + 1,
            None => 0,
        }
    }

    /// The span of field `column` of record `row`, without the CR before a line's line
    /// feed (`buf` is the block).
    #[inline(always)]
    pub fn span(&self, buf: &[u8], row: usize, column: usize) -> FieldSpan {
        let start = self.start(row, column);
        let mut end = self.s.ends[row * self.width + column] as usize;
        if column + 1 == self.width && end > start && buf[end - 1] == b'\r' {
            end -= 1;
        }
        match self.quote {
            Some(q) if end > start && buf[start] == q => FieldSpan {
                start: start as u32 + 1,
                end: end as u32 - 1,
                quoted: true,
                escaped: self.s.doubled && memchr(q, &buf[start + 1..end - 1]).is_some(),
            },
            _ => FieldSpan {
                start: start as u32,
                end: end as u32,
                quoted: false,
                escaped: false,
            },
        }
    }
}

impl Drop for UniformFields {
    /// Hands the separators' room back to the worker's scratch for its next block.
    fn drop(&mut self) {
        let s = std::mem::take(&mut self.s);
        SCRATCH.with(|scratch| *scratch.borrow_mut() = s);
    }
}

/// Tokenizes a block whose records are one line each (see the module doc): either finds
/// them [`BlockTokens::Uniform`], or appends the span of projected field `projection[k]` of
/// every record of `buf` to `columns[k]` and each record's line to `lines`, skipping blank
/// lines, or declines with nothing appended.
pub fn tokenize_block(
    buf: &[u8],
    first_line: u64,
    dialect: &Dialect,
    projection: &[usize],
    width: usize,
    columns: &mut [Vec<FieldSpan>],
    lines: &mut Vec<u64>,
) -> BlockTokens {
    if dialect.comment.is_some()
        || buf.len() >= u32::MAX as usize
        || dialect.delimiter == 0
        || dialect.quote == Some(0)
        || projection.iter().any(|&c| c >= width)
        || columns.len() != projection.len()
    {
        return BlockTokens::Declined;
    }
    let mut s = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
    // Records of one field are never uniform: their spans need the positions.
    s.count_only = projection.is_empty() && width >= 2;
    if s.count_only && (!find_separators(buf, dialect, &mut s) || !is_uniform(&s, width)) {
        // A block of another shape lists its records from the positions.
        s.count_only = false;
    }
    if !s.count_only && !find_separators(buf, dialect, &mut s) {
        SCRATCH.with(|scratch| *scratch.borrow_mut() = s);
        return BlockTokens::Declined;
    }
    if is_uniform(&s, width) {
        let quote = dialect.quote.filter(|_| s.quoted);
        return BlockTokens::Uniform(UniformFields {
            s,
            width,
            first_line,
            quote,
        });
    }
    let lens: Vec<usize> = columns.iter().map(Vec::len).collect();
    let lines_len = lines.len();
    let ok = read_records(
        buf, first_line, dialect, projection, width, &s, columns, lines,
    );
    let ascii = s.ascii;
    SCRATCH.with(|scratch| *scratch.borrow_mut() = s);
    if ok {
        return BlockTokens::Spans { ascii };
    }
    columns
        .iter_mut()
        .zip(lens)
        .for_each(|(c, n)| c.truncate(n));
    lines.truncate(lines_len);
    BlockTokens::Declined
}

/// Whether every record has `width` fields (so no line is blank, for a width of two or
/// more).
fn is_uniform(s: &Separators, width: usize) -> bool {
    width >= 2
        && s.records
            .iter()
            .enumerate()
            .all(|(r, &last)| last as usize + 1 == (r + 1) * width)
}

/// Fills `s` from the masks of each 64-byte chunk, checking the quoting as it goes; with
/// AVX-512 or AVX2 and the bit-manipulation instructions where the CPU has them.
fn find_separators(buf: &[u8], dialect: &Dialect, s: &mut Separators) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the features `find_separators_avx512` is compiled for were detected on
            // this CPU just above.
            return unsafe { find_separators_avx512(buf, dialect, s) };
        }
        if has_avx2() {
            // SAFETY: the features `find_separators_avx2` is compiled for were detected on
            // this CPU just above.
            return unsafe { find_separators_avx2(buf, dialect, s) };
        }
    }
    scan(buf, dialect, s, chunk_masks, write_positions)
}

/// Whether `buf` holds an odd number of `byte`s (a stretch's quote parity). With AVX-512,
/// the XOR of each 64-byte chunk's compare mask, counted once at the end: a fourth of the
/// time of counting the matches with `memchr` (the splitter's part of a lineitem scan).
pub(crate) fn odd_count(buf: &[u8], byte: u8) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the features `odd_count_avx512` is compiled for were detected on this
            // CPU just above.
            return unsafe { odd_count_avx512(buf, byte) };
        }
    }
    memchr::memchr_iter(byte, buf).count() % 2 == 1
}

/// [`odd_count`] by 64-byte compares.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
fn odd_count_avx512(buf: &[u8], byte: u8) -> bool {
    use std::arch::x86_64::{_mm512_cmpeq_epi8_mask, _mm512_loadu_si512, _mm512_set1_epi8};
    let needle = _mm512_set1_epi8(byte as i8);
    let chunks = buf.chunks_exact(64);
    let tail = chunks.remainder().iter().filter(|&&b| b == byte).count();
    let mut matches = 0u64;
    for chunk in chunks {
        // SAFETY: the load reads the 64 bytes of `chunk` (`_mm512_loadu_si512` accepts
        // unaligned addresses); this function is compiled for the features it uses.
        matches ^=
            unsafe { _mm512_cmpeq_epi8_mask(_mm512_loadu_si512(chunk.as_ptr().cast()), needle) };
    }
    (matches.count_ones() as usize + tail) % 2 == 1
}

/// Whether the CPU has what [`find_separators_avx512`] is compiled for.
#[cfg(target_arch = "x86_64")]
fn has_avx512() -> bool {
    use std::arch::is_x86_feature_detected as has;
    has!("avx512f") && has!("avx512bw") && has_avx2()
}

/// Whether the CPU has what [`find_separators_avx2`] is compiled for.
#[cfg(target_arch = "x86_64")]
fn has_avx2() -> bool {
    use std::arch::is_x86_feature_detected as has;
    has!("avx2") && has!("bmi1") && has!("popcnt")
}

/// [`scan`] compiled for AVX2, BMI1 and POPCNT (the bit loops' count and trailing-zero
/// operations become single instructions).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,popcnt")]
fn find_separators_avx2(buf: &[u8], dialect: &Dialect, s: &mut Separators) -> bool {
    scan(buf, dialect, s, chunk_masks, write_positions)
}

/// [`scan`] with a chunk's masks from three 64-byte compares and its separators' positions
/// written sixteen at a time by compress (one-thread TPC-H Q6 over CSV: 40% fewer of the
/// scan's samples than with AVX2).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx2,bmi1,popcnt")]
fn find_separators_avx512(buf: &[u8], dialect: &Dialect, s: &mut Separators) -> bool {
    scan(
        buf,
        dialect,
        s,
        // SAFETY (both): this function is compiled for AVX-512F and BW, which its caller
        // detected.
        |chunk, d, q| unsafe { chunk_masks_avx512(chunk, d, q) },
        |ends, n, base, bits| unsafe { write_positions_avx512(ends, n, base, bits) },
    )
}

/// The delimiter, line-feed and quote masks of a chunk, one 64-byte compare each.
///
/// # Safety
/// The CPU must have AVX-512F and AVX-512BW.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn chunk_masks_avx512(chunk: &[u8; 64], d: u8, q: Option<u8>) -> ChunkMasks {
    use std::arch::x86_64::{
        _mm512_cmpeq_epi8_mask, _mm512_loadu_si512, _mm512_movepi8_mask, _mm512_set1_epi8,
    };
    // Without a quote character, compare against the line feed (the caller zeroes the mask).
    let q = q.unwrap_or(b'\n');
    // SAFETY: the caller guarantees the features; the load reads the 64 bytes of `chunk`,
    // and `_mm512_loadu_si512` accepts unaligned addresses.
    unsafe {
        let v = _mm512_loadu_si512(chunk.as_ptr().cast());
        ChunkMasks {
            delimiter: _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(d as i8)),
            newline: _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'\n' as i8)),
            quote: _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(q as i8)),
            non_ascii: _mm512_movepi8_mask(v),
        }
    }
}

/// [`write_positions`] sixteen bits at a time, by compress ([`crate::compress::word_positions`]).
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn write_positions_avx512(ends: &mut Vec<u32>, n: &mut usize, base: u32, bits: u64) {
    if ends.len() < *n + 64 {
        ends.resize((*n + 64) * 2, 0);
    }
    // SAFETY: the caller guarantees AVX-512F; `ends` holds 64 slots from `*n` (just above),
    // room for a word's positions and sixteen more.
    *n += unsafe { crate::compress::word_positions(ends.as_mut_ptr().add(*n), base, bits) };
}

/// The scan itself, over chunk masks computed by `masks`, positions written by `write`.
#[inline(always)]
fn scan(
    buf: &[u8],
    dialect: &Dialect,
    s: &mut Separators,
    masks: impl Fn(&[u8; 64], u8, Option<u8>) -> ChunkMasks,
    write: impl Fn(&mut Vec<u32>, &mut usize, u32, u64),
) -> bool {
    s.records.clear();
    s.count = 0;
    s.doubled = false;
    s.quoted = false;
    s.ascii = true;
    s.records.reserve(buf.len() / 64 + 16);
    // Separators found so far (`s.ends` past them is spare room).
    let mut n = 0;
    let (d, q) = (dialect.delimiter, dialect.quote);
    // Whether the byte before the chunk lies inside quotes; whether it may precede an
    // opening quote (a separator, a closing quote, or the block's start); whether it is a
    // closing quote.
    let mut inside = false;
    let mut before_open = true;
    let mut after_close = false;
    let mut base = 0;
    while base < buf.len() {
        let live = buf.len() - base;
        let mut m = match buf.get(base..base + 64) {
            Some(chunk) => masks(chunk.try_into().expect("64 bytes"), d, q),
            None => {
                let mut padded = [0u8; 64];
                padded[..live].copy_from_slice(&buf[base..]);
                masks(&padded, d, q)
            }
        };
        if q.is_none() {
            m.quote = 0;
        }
        let ChunkMasks {
            delimiter,
            newline,
            quote,
            non_ascii,
        } = m;
        s.quoted |= quote != 0;
        s.ascii &= non_ascii == 0;
        let in_quotes = prefix_xor(quote) ^ if inside { u64::MAX } else { 0 };
        let open = quote & in_quotes;
        let close = quote & !in_quotes;
        if newline & in_quotes != 0 {
            return false;
        }
        let may_open = ((delimiter | newline | close) << 1) | u64::from(before_open);
        if open & !may_open != 0 {
            return false;
        }
        let after = (close << 1) | u64::from(after_close);
        s.doubled |= after & open != 0;
        let live_bits = if live >= 64 {
            u64::MAX
        } else {
            (1 << live) - 1
        };
        let mut odd = after & !(delimiter | newline | open) & live_bits;
        while odd != 0 {
            // Only a CR that ends the line (or the file) may follow a closing quote.
            let at = base + odd.trailing_zeros() as usize;
            if buf[at] != b'\r' || buf.get(at + 1).is_some_and(|&b| b != b'\n') {
                return false;
            }
            odd &= odd - 1;
        }
        let seps = (delimiter & !in_quotes) | newline;
        let first = n as u32;
        let mut lf = newline;
        while lf != 0 {
            let below = (1u64 << lf.trailing_zeros()) - 1;
            s.records.push(first + (seps & below).count_ones());
            lf &= lf - 1;
        }
        if s.count_only {
            n += seps.count_ones() as usize;
        } else {
            write(&mut s.ends, &mut n, base as u32, seps);
        }
        inside = in_quotes >> 63 != 0;
        before_open = (delimiter | newline | close) >> 63 != 0;
        after_close = close >> 63 != 0;
        base += 64;
    }
    if inside {
        return false;
    }
    if buf.last().is_some_and(|&b| b != b'\n') {
        // The last record runs to the end of the block (the end of the file).
        if !s.count_only {
            if s.ends.len() <= n {
                s.ends.resize(n + 1, 0);
            }
            s.ends[n] = buf.len() as u32;
        }
        s.records.push(n as u32);
        n += 1;
    }
    s.count = n;
    true
}

/// Writes `base + j` for each set bit `j` of `bits` at `ends[*n..]` and advances `*n`, four
/// at a time: the writes past the last bit land in spare room (`ends` is kept at least 64
/// longer than what it holds), so the loop has no per-bit branch on the count.
#[inline(always)]
fn write_positions(ends: &mut Vec<u32>, n: &mut usize, base: u32, mut bits: u64) {
    if ends.len() < *n + 64 {
        ends.resize((*n + 64) * 2, 0);
    }
    let count = bits.count_ones() as usize;
    let out: &mut [u32; 64] = (&mut ends[*n..*n + 64]).try_into().expect("64 slots");
    let mut k = 0;
    while bits != 0 && k < 64 {
        for slot in &mut out[k..k + 4] {
            *slot = base + bits.trailing_zeros();
            bits &= bits.wrapping_sub(1);
        }
        k += 4;
    }
    *n += count;
}

/// Reads the projected spans of each record from the separators; `false` on a record whose
/// width differs from `width` (short and long records are the record-by-record path's).
#[allow(clippy::too_many_arguments)]
fn read_records(
    buf: &[u8],
    first_line: u64,
    dialect: &Dialect,
    projection: &[usize],
    width: usize,
    s: &Separators,
    columns: &mut [Vec<FieldSpan>],
    lines: &mut Vec<u64>,
) -> bool {
    let q = dialect.quote;
    let ends = &s.ends[..s.count];
    lines.reserve(s.records.len());
    columns.iter_mut().for_each(|c| c.reserve(s.records.len()));
    let mut start = 0usize;
    let mut first = 0usize;
    for (r, &last) in s.records.iter().enumerate() {
        let last = last as usize;
        let record_end = ends[last] as usize;
        let fields = last + 1 - first;
        // A blank line: nothing, or a CR, before a line feed (a lone CR at the end of the
        // file is a record with one empty field, as the record-by-record path reads it).
        let line_feed = record_end < buf.len();
        let blank = fields == 1
            && line_feed
            && (record_end == start || (record_end == start + 1 && buf[start] == b'\r'));
        if !blank {
            if fields != width {
                return false;
            }
            for (&c, column) in projection.iter().zip(columns.iter_mut()) {
                let from = if c == 0 {
                    start
                } else {
                    ends[first + c - 1] as usize + 1
                };
                let mut to = ends[first + c] as usize;
                // A CR before the line feed (or the end of the file) ends the line too.
                if c + 1 == width && to > from && buf[to - 1] == b'\r' {
                    to -= 1;
                }
                let span = match q {
                    Some(q) if to > from && buf[from] == q => {
                        if to < from + 2 || buf[to - 1] != q {
                            return false;
                        }
                        let inner = &buf[from + 1..to - 1];
                        FieldSpan {
                            start: from as u32 + 1,
                            end: to as u32 - 1,
                            quoted: true,
                            escaped: s.doubled && memchr(q, inner).is_some(),
                        }
                    }
                    _ => FieldSpan {
                        start: from as u32,
                        end: to as u32,
                        quoted: false,
                        escaped: false,
                    },
                };
                column.push(span);
            }
            lines.push(first_line + r as u64);
        }
        start = record_end + 1;
        first = last + 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::super::tokenize::Tokenizer;
    use super::*;
    use crate::test_rng::Rng;

    fn dialect() -> Dialect {
        Dialect::csv(None)
    }

    /// The record-by-record tokenizer's spans and lines for the same projection, or `None`
    /// when it meets an error or a record of another width.
    fn reference(
        buf: &[u8],
        projection: &[usize],
        width: usize,
    ) -> Option<(Vec<Vec<FieldSpan>>, Vec<u64>)> {
        let d = dialect();
        let mut t = Tokenizer::new(buf, 7, &d);
        let (mut fields, mut lines) = (Vec::new(), Vec::new());
        let mut columns = vec![Vec::new(); projection.len()];
        while let Some(r) = t.next_record(&mut fields).ok()? {
            if r.fields != width {
                return None;
            }
            for (column, &c) in columns.iter_mut().zip(projection) {
                column.push(fields[c]);
            }
            lines.push(r.line);
        }
        Some((columns, lines))
    }

    /// A random field; `plain` ones hold no quote.
    fn random_field(r: &mut Rng, plain: bool) -> String {
        match r.below(12) {
            0 => String::new(),
            _ if plain => (0..r.below(12))
                .map(|_| (b'a' + r.below(26) as u8) as char)
                .collect(),
            1 => "\"\"".into(),
            2 => "\"a,b\"".into(),
            3 => "\"say \"\"hi\"\"\"".into(),
            4 => "\"\"\"\"".into(),
            // Rarely malformed: a stray quote, text after a closing quote, a line feed
            // inside quotes.
            5 if r.below(200) == 0 => "ab\"c".into(),
            6 if r.below(200) == 0 => "\"ab\"c".into(),
            7 if r.below(200) == 0 => "\"a\nb\"".into(),
            _ => (0..r.below(40))
                .map(|_| (b'a' + r.below(26) as u8) as char)
                .collect(),
        }
    }

    /// A random block, a blank line one line in `blank_odds`; `plain` ones hold no quote.
    fn random_block(r: &mut Rng, width: usize, plain: bool, blank_odds: u64) -> String {
        let mut out = String::new();
        for _ in 0..r.below(60) {
            match r.below(blank_odds) {
                0 => out.push('\n'),
                1 => out.push_str("\r\n"),
                _ => {
                    // Rarely a record of another width.
                    let w = if r.below(400) == 0 { width + 1 } else { width };
                    let fields: Vec<String> = (0..w).map(|_| random_field(r, plain)).collect();
                    out.push_str(&fields.join(","));
                    out.push_str(if r.below(4) == 0 { "\r\n" } else { "\n" });
                }
            }
        }
        match r.below(4) {
            0 => {
                out.pop();
            }
            1 => out.push('\r'),
            _ => {}
        }
        out
    }

    /// The spans of the projected fields and the lines that uniform fields stand for.
    fn listed(
        u: &UniformFields,
        buf: &[u8],
        projection: &[usize],
    ) -> (Vec<Vec<FieldSpan>>, Vec<u64>) {
        let spans = projection
            .iter()
            .map(|&c| (0..u.rows()).map(|row| u.span(buf, row, c)).collect())
            .collect();
        (spans, (0..u.rows()).map(|row| u.line(row)).collect())
    }

    #[test]
    fn agrees_with_the_record_by_record_tokenizer_or_declines() {
        let mut r = Rng(0x5EED);
        let (mut listed_spans, mut uniform, mut declined) = (0, 0, 0);
        for _ in 0..4000 {
            let width = 1 + r.below(5) as usize;
            let (plain, blank_odds) = match r.below(3) {
                0 => (true, 1500),
                1 => (false, 1500),
                _ => (false, 30),
            };
            let buf = random_block(&mut r, width, plain, blank_odds);
            let projection: Vec<usize> = (0..width).filter(|_| r.below(2) == 0).collect();
            let (mut spans, mut lines) = (vec![vec![]; projection.len()], vec![]);
            let tokens = tokenize_block(
                buf.as_bytes(),
                7,
                &dialect(),
                &projection,
                width,
                &mut spans,
                &mut lines,
            );
            let want = reference(buf.as_bytes(), &projection, width);
            match tokens {
                BlockTokens::Spans { .. } => {
                    listed_spans += 1;
                    assert_eq!(Some((spans, lines)), want, "{buf:?} {projection:?}");
                }
                BlockTokens::Uniform(u) => {
                    uniform += 1;
                    assert!(spans.iter().all(Vec::is_empty) && lines.is_empty());
                    let got = listed(&u, buf.as_bytes(), &projection);
                    assert_eq!(Some(got), want, "{buf:?} {projection:?}");
                }
                BlockTokens::Declined => {
                    declined += 1;
                    assert!(spans.iter().all(Vec::is_empty) && lines.is_empty());
                    // Declining is for blocks the record-by-record path must read; a clean
                    // block (no line feed in quotes) of the expected width is never
                    // declined.
                    if !buf.contains("\"a\nb\"") {
                        assert!(want.is_none(), "declined a clean block: {buf:?}");
                    }
                }
            }
        }
        assert!(
            listed_spans > 1000 && uniform > 500 && declined > 100,
            "spans {listed_spans}, uniform {uniform}, declined {declined}"
        );
    }

    /// A way of finding a block's separators.
    type Find = Box<dyn Fn(&[u8], &Dialect, &mut Separators) -> bool>;

    /// What a separator scan found in a block it accepted.
    #[derive(Debug, PartialEq)]
    struct Scanned {
        ends: Vec<u32>,
        records: Vec<u32>,
        doubled: bool,
        quoted: bool,
        ascii: bool,
    }

    /// What a separator scan made of a block (`None`: declined).
    fn scanned(
        buf: &[u8],
        find: impl Fn(&[u8], &Dialect, &mut Separators) -> bool,
    ) -> Option<Scanned> {
        let mut s = Separators::default();
        find(buf, &dialect(), &mut s).then(|| {
            // Counting only leaves `ends` as it was: a count of separators it stands for.
            s.ends.resize(s.count, 0);
            Scanned {
                ends: s.ends,
                records: s.records,
                doubled: s.doubled,
                quoted: s.quoted,
                ascii: s.ascii,
            }
        })
    }

    #[test]
    fn every_instruction_set_finds_the_same_separators() {
        let portable =
            |b: &[u8], d: &Dialect, s: &mut Separators| scan(b, d, s, chunk_masks, write_positions);
        let mut paths: Vec<(&str, Find)> = vec![("dispatched", Box::new(find_separators))];
        #[cfg(target_arch = "x86_64")]
        {
            if has_avx2() {
                // SAFETY: the CPU has the features (checked just above).
                paths.push((
                    "avx2",
                    Box::new(|b, d, s| unsafe { find_separators_avx2(b, d, s) }),
                ));
            }
            if has_avx512() {
                // SAFETY: the CPU has the features (checked just above).
                paths.push((
                    "avx512",
                    Box::new(|b, d, s| unsafe { find_separators_avx512(b, d, s) }),
                ));
            }
        }
        let mut r = Rng(0x5CA7);
        let mut accepted = 0;
        for _ in 0..3000 {
            let width = 1 + r.below(6) as usize;
            let plain = r.below(2) == 0;
            // Dense separators (short fields) put more than sixteen in a chunk's quarter; a
            // byte past ASCII now and then.
            let buf = if r.below(4) == 0 {
                (0..r.below(300))
                    .map(|_| [",", ",", ",", "\n", "a", "\r\n", "é"][r.below(7) as usize])
                    .collect::<String>()
            } else {
                random_block(&mut r, width, plain, 30)
            };
            let want = scanned(buf.as_bytes(), portable);
            accepted += usize::from(want.is_some());
            if let Some(w) = &want {
                assert_eq!(w.ascii, buf.is_ascii(), "{buf:?}");
            }
            for (name, path) in &paths {
                assert_eq!(scanned(buf.as_bytes(), path), want, "{name}: {buf:?}");
                // Counting only finds the same records, writing no position.
                let count_only = |b: &[u8], d: &Dialect, s: &mut Separators| {
                    s.count_only = true;
                    path(b, d, s)
                };
                let counted = scanned(buf.as_bytes(), count_only);
                assert_eq!(
                    counted.map(|c| (c.records, c.doubled, c.quoted, c.ascii, c.ends.len())),
                    want.as_ref().map(|w| (
                        w.records.clone(),
                        w.doubled,
                        w.quoted,
                        w.ascii,
                        w.ends.len()
                    )),
                    "{name}, counting only: {buf:?}"
                );
            }
        }
        assert!(accepted > 1000, "only {accepted} blocks accepted");
    }

    #[test]
    fn odd_count_is_the_parity_of_the_count() {
        let mut r = Rng(0x0DD);
        let bytes: Vec<u8> = (0..1000)
            .map(|_| [b'"', b'a', b'\n', 0xFF][r.below(4) as usize])
            .collect();
        for start in 0..70 {
            for len in (0..bytes.len() - start).step_by(7) {
                let buf = &bytes[start..start + len];
                for byte in [b'"', 0xFF, b'z'] {
                    let want = buf.iter().filter(|&&b| b == byte).count() % 2 == 1;
                    assert_eq!(odd_count(buf, byte), want, "{start}+{len}, {byte}");
                }
            }
        }
    }

    #[test]
    fn a_blank_line_or_one_column_lists_the_spans() {
        let d = dialect();
        for (buf, uniform) in [
            (&b"a,b\r\nc,d"[..], true),
            (b"a,b\n\nc,d\n", false),
            (b"a\nb\n", false),
        ] {
            let width = if buf.starts_with(b"a,") { 2 } else { 1 };
            let (mut spans, mut lines) = (vec![vec![]; 1], vec![]);
            let tokens = tokenize_block(buf, 1, &d, &[0], width, &mut spans, &mut lines);
            let kind = match tokens {
                BlockTokens::Uniform(_) => "uniform",
                BlockTokens::Spans { .. } => "spans",
                BlockTokens::Declined => "declined",
            };
            assert_eq!(kind, if uniform { "uniform" } else { "spans" }, "{buf:?}");
            if let BlockTokens::Uniform(u) = tokens {
                let (spans, lines) = listed(&u, buf, &[0, 1]);
                assert_eq!(lines, vec![1, 2]);
                let ends: Vec<_> = spans[1].iter().map(|s| (s.start, s.end)).collect();
                assert_eq!(ends, vec![(2, 3), (7, 8)], "the CR is no part of the field");
            }
        }
    }

    #[test]
    fn a_comment_prefix_or_ragged_records_leave_the_block_to_the_tokenizer() {
        let (mut spans, mut lines) = (vec![vec![]; 1], vec![]);
        let mut d = dialect();
        assert!(matches!(
            tokenize_block(b"a,b\n\n", 1, &d, &[1], 2, &mut spans, &mut lines),
            BlockTokens::Spans { .. }
        ));
        assert_eq!(lines, vec![1]);
        assert_eq!((spans[0][0].start, spans[0][0].end), (2, 3));
        assert!(matches!(
            tokenize_block(b"a,b\nc\n", 1, &d, &[1], 2, &mut spans, &mut lines),
            BlockTokens::Declined
        ));
        assert_eq!(lines, vec![1], "nothing appended when declining");
        // Quotes that pair up but are misplaced: the delimiter between them must not be
        // taken for part of a field.
        for bad in [
            &b"ab\"c,x\",y\n"[..],
            b"\"ab\"c,d\n",
            b"a,\"b\n",
            b"\"a\"\rb,c\n",
        ] {
            let mut two = vec![vec![]; 2];
            assert!(matches!(
                tokenize_block(bad, 1, &d, &[0, 1], 2, &mut two, &mut lines),
                BlockTokens::Declined
            ));
        }
        d.comment = Some(b"#".to_vec());
        assert!(matches!(
            tokenize_block(b"a,b\n", 1, &d, &[1], 2, &mut spans, &mut lines),
            BlockTokens::Declined
        ));
    }
}
