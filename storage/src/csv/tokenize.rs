//! The record tokenizer: finds field boundaries in a block, nothing more.
//!
//! Grammar (RFC 4180 plus common extensions): fields are separated by the delimiter and records
//! by `\n` or `\r\n`; a field that starts with the quote character runs to the matching closing
//! quote, may contain delimiters and newlines, and writes a literal quote as two quotes. A quote
//! anywhere else is an error, and so is anything but a delimiter or line end after a closing
//! quote: a mis-quoted file is reported, never silently reshaped. Blank lines and lines that
//! start with the comment prefix are skipped.

use memchr::memchr;

/// Bytes `start..end` of the block (quotes excluded for quoted fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldSpan {
    pub start: u32,
    pub end: u32,
    pub quoted: bool,
    /// Holds doubled quotes that decode to one quote each.
    pub escaped: bool,
}

/// The syntax bits of the options, borrowed by the tokenizer.
#[derive(Clone, Debug)]
pub struct Dialect {
    pub delimiter: u8,
    pub quote: Option<u8>,
    pub comment: Option<Vec<u8>>,
}

#[cfg(test)]
impl Dialect {
    /// Comma-separated, double-quoted, with the given comment prefix (the tests' dialect).
    pub(crate) fn csv(comment: Option<&[u8]>) -> Self {
        Dialect {
            delimiter: b',',
            quote: Some(b'"'),
            comment: comment.map(<[u8]>::to_vec),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)] // all three are quoting errors; the names say which
pub enum TokenErrorKind {
    UnterminatedQuote,
    CharAfterQuote(u8),
    StrayQuote,
}

/// A syntax error: the record's first line, the 0-based field, and the byte where it stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenError {
    pub line: u64,
    pub field: usize,
    pub record_start: usize,
    pub at: usize,
    pub kind: TokenErrorKind,
}

/// One record: where it starts (byte and line), whether a line end terminated it, and how
/// many fields it has (spans are kept only for the first few, see
/// [`Tokenizer::next_record_keeping`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordInfo {
    pub start: usize,
    pub line: u64,
    pub terminated: bool,
    pub fields: usize,
}

pub struct Tokenizer<'a> {
    buf: &'a [u8],
    pos: usize,
    line: u64,
    dialect: &'a Dialect,
    /// The masks of the 64-byte chunk of `buf` starting at `mask_base` (`usize::MAX`: none
    /// computed yet), kept because the next field usually lies in the same chunk.
    mask_base: usize,
    masks: ChunkMasks,
    /// Where the fast path stands (see [`Tokenizer::fast_record`]).
    fast: FastState,
    /// Try the fast path first (tests turn it off to check that both paths agree).
    try_fast: bool,
}

/// Where a 64-byte chunk holds the delimiter, line feeds and the quote, and bytes past
/// ASCII: bit `j` for byte `j`.
#[derive(Clone, Copy, Default)]
pub(super) struct ChunkMasks {
    pub(super) delimiter: u64,
    pub(super) newline: u64,
    pub(super) quote: u64,
    pub(super) non_ascii: u64,
}

impl ChunkMasks {
    fn special(&self) -> u64 {
        self.delimiter | self.newline | self.quote
    }
}

/// The fast path's view of one chunk: which bytes are inside quotes (from the running quote
/// parity), and the bytes still to visit: delimiters outside quotes, all line feeds, and all
/// quotes.
#[derive(Clone, Copy)]
struct FastState {
    /// The record start this state is valid for (`usize::MAX`: recompute from `pos`).
    resume: usize,
    base: usize,
    masks: ChunkMasks,
    in_quotes: u64,
    pending: u64,
}

impl FastState {
    const INVALID: FastState = FastState {
        resume: usize::MAX,
        base: 0,
        masks: ChunkMasks {
            delimiter: 0,
            newline: 0,
            quote: 0,
            non_ascii: 0,
        },
        in_quotes: 0,
        pending: 0,
    };
}

/// Bit `j` set where an odd number of bits `0..=j` of `x` are set.
#[inline]
pub(super) fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

impl<'a> Tokenizer<'a> {
    /// Starts at the beginning of `buf`, whose first byte lies on physical line `first_line`.
    pub fn new(buf: &'a [u8], first_line: u64, dialect: &'a Dialect) -> Self {
        Self {
            buf,
            pos: 0,
            line: first_line,
            dialect,
            mask_base: usize::MAX,
            masks: ChunkMasks::default(),
            fast: FastState::INVALID,
            try_fast: true,
        }
    }

    /// The masks of the chunk starting at `base` (a multiple of 64 inside the buffer).
    #[inline(always)]
    fn masks_at(&mut self, base: usize) -> ChunkMasks {
        if base != self.mask_base {
            let d = self.dialect.delimiter;
            let q = self.dialect.quote;
            let mut m =
                match self.buf.get(base..base + 64) {
                    Some(chunk) => chunk_masks(chunk.try_into().expect("64 bytes"), d, q),
                    None => self.buf[base..].iter().enumerate().fold(
                        ChunkMasks::default(),
                        |m, (j, &b)| ChunkMasks {
                            delimiter: m.delimiter | (u64::from(b == d) << j),
                            newline: m.newline | (u64::from(b == b'\n') << j),
                            quote: m.quote | (u64::from(Some(b) == q) << j),
                            non_ascii: m.non_ascii | (u64::from(!b.is_ascii()) << j),
                        },
                    ),
                };
            if q.is_none() {
                m.quote = 0;
            }
            self.mask_base = base;
            self.masks = m;
        }
        self.masks
    }

    /// The first delimiter, line feed or quote at or after `from`, found 64 bytes at a time.
    fn next_special(&mut self, from: usize) -> Option<usize> {
        let mut base = from & !63;
        let mut m = self.masks_at(base).special() & (u64::MAX << (from - base));
        loop {
            if m != 0 {
                return Some(base + m.trailing_zeros() as usize);
            }
            base += 64;
            if base >= self.buf.len() {
                return None;
            }
            m = self.masks_at(base).special();
        }
    }

    /// Loads the chunk at `base` into the fast state, its bits below `live` ignored and
    /// `inside` saying whether the byte before them lies inside quotes.
    #[inline(always)]
    fn fast_load(&mut self, base: usize, live: u64, inside: bool) {
        let m = self.masks_at(base);
        let quotes = m.quote & live;
        let in_quotes = prefix_xor(quotes) ^ if inside { u64::MAX } else { 0 };
        self.fast.base = base;
        self.fast.masks = m;
        self.fast.in_quotes = in_quotes;
        self.fast.pending = ((m.delimiter & !in_quotes) | m.newline | quotes) & live;
    }

    /// The record at `self.pos`, found by visiting only the chunk masks' bits: delimiters
    /// outside quotes end fields, and the quote parity says which bytes lie inside quotes.
    /// Spans are kept for the first `keep` fields; past them, runs without quotes are counted
    /// 64 bytes at a time. `None` (nothing consumed) for a record this path leaves to
    /// [`Tokenizer::next_record_keeping`]'s field-by-field loop: one with a syntax error, a
    /// doubled quote that does not pair up, a line feed inside quotes, or no line end before
    /// the end of the buffer.
    #[inline]
    fn fast_record(&mut self, fields: &mut Vec<FieldSpan>, keep: usize) -> Option<RecordInfo> {
        let buf = self.buf;
        let len = buf.len();
        let start = self.pos;
        if self.fast.resume != start {
            let base = start & !63;
            self.fast_load(base, u64::MAX << (start - base), false);
            self.fast.resume = start;
        }
        let q = self.dialect.quote.unwrap_or(0);
        let mut field = start;
        let mut quotes = 0u32;
        let mut count = 0usize;
        loop {
            let FastState {
                base,
                masks,
                in_quotes,
                mut pending,
                ..
            } = self.fast;
            if count >= keep && quotes == 0 {
                // Past the kept fields: count delimiters up to the line end unless a quote
                // comes first.
                let stop = pending & (masks.newline | masks.quote);
                let before = if stop == 0 {
                    pending
                } else {
                    pending & ((1u64 << stop.trailing_zeros()) - 1)
                };
                count += before.count_ones() as usize;
                if before != 0 {
                    field = base + 63 - before.leading_zeros() as usize + 1;
                }
                pending &= !before;
            }
            while pending != 0 {
                let j = pending.trailing_zeros();
                pending &= pending - 1;
                let at = base + j as usize;
                let bit = 1u64 << j;
                if masks.quote & bit != 0 {
                    quotes += 1;
                    if quotes == 1 && at != field {
                        return self.fast_bail(fields);
                    }
                    continue;
                }
                let newline = masks.newline & bit != 0;
                if newline && in_quotes & bit != 0 {
                    return self.fast_bail(fields);
                }
                let end = if newline && at > field && buf[at - 1] == b'\r' {
                    at - 1
                } else {
                    at
                };
                let span = if quotes == 0 {
                    FieldSpan {
                        start: field as u32,
                        end: end as u32,
                        quoted: false,
                        escaped: false,
                    }
                } else {
                    // Opened at `field`: it must close right before `end`, with any quotes
                    // between doubled.
                    if end < field + 2 || buf[end - 1] != q {
                        return self.fast_bail(fields);
                    }
                    let escaped = quotes > 2;
                    if escaped && !doubled_quotes_pair(&buf[field + 1..end - 1], q) {
                        return self.fast_bail(fields);
                    }
                    FieldSpan {
                        start: field as u32 + 1,
                        end: end as u32 - 1,
                        quoted: true,
                        escaped,
                    }
                };
                if count < keep {
                    fields.push(span);
                }
                count += 1;
                quotes = 0;
                field = at + 1;
                if newline {
                    self.fast.pending = pending;
                    self.fast.resume = at + 1;
                    self.pos = at + 1;
                    let record = RecordInfo {
                        start,
                        line: self.line,
                        terminated: true,
                        fields: count,
                    };
                    self.line += 1;
                    return Some(record);
                }
                if count >= keep {
                    break;
                }
            }
            if pending != 0 {
                // Stopped at the kept fields with bits left in this chunk.
                self.fast.pending = pending;
                continue;
            }
            let next = base + 64;
            if next >= len {
                return self.fast_bail(fields);
            }
            self.fast_load(next, u64::MAX, in_quotes >> 63 != 0);
        }
    }

    /// Gives a record back to the field-by-field loop; the fast path restarts after it.
    #[cold]
    fn fast_bail(&mut self, fields: &mut Vec<FieldSpan>) -> Option<RecordInfo> {
        fields.clear();
        self.fast.resume = usize::MAX;
        None
    }

    /// Resumes after a syntax error at the line break following byte `at`.
    pub fn resync_after(&mut self, e: &TokenError) {
        let resume = memchr(b'\n', &self.buf[e.at.min(self.buf.len())..])
            .map_or(self.buf.len(), |k| e.at + k + 1);
        let skipped = &self.buf[e.record_start..resume];
        self.line = e.line + memchr::memchr_iter(b'\n', skipped).count() as u64;
        self.pos = resume;
    }

    /// Byte position after the last record read.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Skips blank and comment lines; false at the end of the buffer.
    fn skip_ignorable(&mut self) -> bool {
        let buf = self.buf;
        loop {
            if self.pos >= buf.len() {
                return false;
            }
            let rest = &buf[self.pos..];
            if rest[0] == b'\n' {
                self.pos += 1;
                self.line += 1;
            } else if rest.starts_with(b"\r\n") {
                self.pos += 2;
                self.line += 1;
            } else if self
                .dialect
                .comment
                .as_deref()
                .is_some_and(|c| rest.starts_with(c))
            {
                match memchr(b'\n', rest) {
                    Some(k) => {
                        self.pos += k + 1;
                        self.line += 1;
                    }
                    None => self.pos = buf.len(),
                }
            } else {
                return true;
            }
        }
    }

    /// Reads the next record's field spans into `fields`.
    pub fn next_record(
        &mut self,
        fields: &mut Vec<FieldSpan>,
    ) -> Result<Option<RecordInfo>, TokenError> {
        self.next_record_keeping(fields, usize::MAX)
    }

    /// Reads the next record, with spans for at least its first `keep` fields (the others
    /// may be only counted: [`RecordInfo::fields`] is the record's field count).
    pub fn next_record_keeping(
        &mut self,
        fields: &mut Vec<FieldSpan>,
        keep: usize,
    ) -> Result<Option<RecordInfo>, TokenError> {
        fields.clear();
        if !self.skip_ignorable() {
            return Ok(None);
        }
        if self.try_fast {
            if let Some(record) = self.fast_record(fields, keep) {
                return Ok(Some(record));
            }
        }
        let buf = self.buf;
        let len = buf.len();
        let d = self.dialect.delimiter;
        let mut record = RecordInfo {
            start: self.pos,
            line: self.line,
            terminated: true,
            fields: 0,
        };
        let err = |field: usize, at: usize, kind| TokenError {
            line: record.line,
            field,
            record_start: record.start,
            at,
            kind,
        };
        loop {
            let pos = self.pos;
            if pos >= len {
                fields.push(FieldSpan {
                    start: len as u32,
                    end: len as u32,
                    quoted: false,
                    escaped: false,
                });
                return Ok(Some(RecordInfo {
                    terminated: false,
                    fields: fields.len(),
                    ..record
                }));
            }
            if let Some(q) = self.dialect.quote.filter(|&q| buf[pos] == q) {
                // The closing quote (a doubled quote is a literal one): quotes, line feeds
                // and delimiters come from the chunk masks; line feeds inside count lines.
                let mut i = pos + 1;
                let mut escaped = false;
                loop {
                    let Some(k) = self.next_special(i) else {
                        return Err(err(fields.len(), len, TokenErrorKind::UnterminatedQuote));
                    };
                    if buf[k] == q {
                        if k + 1 < len && buf[k + 1] == q {
                            escaped = true;
                            i = k + 2;
                            continue;
                        }
                        i = k + 1;
                        break;
                    }
                    if buf[k] == b'\n' {
                        self.line += 1;
                    }
                    i = k + 1;
                }
                fields.push(FieldSpan {
                    start: (pos + 1) as u32,
                    end: (i - 1) as u32,
                    quoted: true,
                    escaped,
                });
                self.pos = i;
                if i >= len {
                    return Ok(Some(RecordInfo {
                        terminated: false,
                        fields: fields.len(),
                        ..record
                    }));
                }
                match buf[i] {
                    b if b == d => self.pos = i + 1,
                    b'\n' => {
                        self.pos = i + 1;
                        self.line += 1;
                        record.fields = fields.len();
                        return Ok(Some(record));
                    }
                    // A lone `\r` can only end the input: blocks are cut after `\n`.
                    b'\r' if i + 1 == len => {
                        self.pos = len;
                        return Ok(Some(RecordInfo {
                            terminated: false,
                            fields: fields.len(),
                            ..record
                        }));
                    }
                    b'\r' if buf.get(i + 1) == Some(&b'\n') => {
                        self.pos = i + 2;
                        self.line += 1;
                        record.fields = fields.len();
                        return Ok(Some(record));
                    }
                    b => {
                        return Err(err(fields.len() - 1, i, TokenErrorKind::CharAfterQuote(b)));
                    }
                }
            } else {
                let end = self.next_special(pos).unwrap_or(len);
                if end < len && Some(buf[end]) == self.dialect.quote {
                    return Err(err(fields.len(), end, TokenErrorKind::StrayQuote));
                }
                if end >= len {
                    let fend = if len > pos && buf[len - 1] == b'\r' {
                        len - 1
                    } else {
                        len
                    };
                    fields.push(FieldSpan {
                        start: pos as u32,
                        end: fend as u32,
                        quoted: false,
                        escaped: false,
                    });
                    self.pos = len;
                    return Ok(Some(RecordInfo {
                        terminated: false,
                        fields: fields.len(),
                        ..record
                    }));
                }
                if buf[end] == d {
                    fields.push(FieldSpan {
                        start: pos as u32,
                        end: end as u32,
                        quoted: false,
                        escaped: false,
                    });
                    self.pos = end + 1;
                } else {
                    let fend = if end > pos && buf[end - 1] == b'\r' {
                        end - 1
                    } else {
                        end
                    };
                    fields.push(FieldSpan {
                        start: pos as u32,
                        end: fend as u32,
                        quoted: false,
                        escaped: false,
                    });
                    self.pos = end + 1;
                    self.line += 1;
                    record.fields = fields.len();
                    return Ok(Some(record));
                }
            }
        }
    }
}

/// Whether every quote in `inner` (a quoted field without its outer quotes) is one of a
/// doubled pair.
fn doubled_quotes_pair(inner: &[u8], q: u8) -> bool {
    let mut i = 0;
    while i < inner.len() {
        if inner[i] == q {
            if inner.get(i + 1) != Some(&q) {
                return false;
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    true
}

/// The delimiter, line-feed and quote masks of a chunk, sixteen bytes per compare.
#[cfg(target_arch = "x86_64")]
pub(super) fn chunk_masks(chunk: &[u8; 64], d: u8, q: Option<u8>) -> ChunkMasks {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    // Without a quote character, compare against the line feed (the caller zeroes the mask).
    let q = q.unwrap_or(b'\n');
    // SAFETY: SSE2 is part of the x86_64 baseline, so every machine this compiles for has
    // these instructions; each load reads bytes `16k..16k + 16` of the 64-byte array, and
    // `_mm_loadu_si128` accepts unaligned addresses.
    unsafe {
        let (dv, nv, qv) = (
            _mm_set1_epi8(d as i8),
            _mm_set1_epi8(b'\n' as i8),
            _mm_set1_epi8(q as i8),
        );
        let mut m = ChunkMasks::default();
        for k in 0..4 {
            let v = _mm_loadu_si128(chunk.as_ptr().add(16 * k).cast::<__m128i>());
            let bits = |x: __m128i| u64::from(_mm_movemask_epi8(x) as u16) << (16 * k);
            m.delimiter |= bits(_mm_cmpeq_epi8(v, dv));
            m.newline |= bits(_mm_cmpeq_epi8(v, nv));
            m.quote |= bits(_mm_cmpeq_epi8(v, qv));
            // A byte's top bit, set past ASCII.
            m.non_ascii |= bits(v);
        }
        m
    }
}

/// The delimiter, line-feed and quote masks of a chunk.
#[cfg(not(target_arch = "x86_64"))]
pub(super) fn chunk_masks(chunk: &[u8; 64], d: u8, q: Option<u8>) -> ChunkMasks {
    chunk
        .iter()
        .enumerate()
        .fold(ChunkMasks::default(), |m, (j, &b)| ChunkMasks {
            delimiter: m.delimiter | (u64::from(b == d) << j),
            newline: m.newline | (u64::from(b == b'\n') << j),
            quote: m.quote | (u64::from(Some(b) == q) << j),
            non_ascii: m.non_ascii | (u64::from(!b.is_ascii()) << j),
        })
}

/// Decodes a field's bytes, undoing doubled quotes when needed (into `scratch`).
#[inline]
pub fn field_bytes<'b>(
    buf: &'b [u8],
    span: FieldSpan,
    quote: u8,
    scratch: &'b mut Vec<u8>,
) -> &'b [u8] {
    let raw = &buf[span.start as usize..span.end as usize];
    if !span.escaped {
        return raw;
    }
    scratch.clear();
    let mut i = 0;
    while i < raw.len() {
        scratch.push(raw[i]);
        i += if raw[i] == quote { 2 } else { 1 };
    }
    scratch
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dialect() -> Dialect {
        Dialect::csv(Some(b"#"))
    }

    fn records(input: &str) -> Result<Vec<Vec<String>>, TokenError> {
        let d = dialect();
        let mut t = Tokenizer::new(input.as_bytes(), 1, &d);
        let mut fields = Vec::new();
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        while t.next_record(&mut fields)?.is_some() {
            out.push(
                fields
                    .iter()
                    .map(|f| {
                        String::from_utf8(
                            field_bytes(input.as_bytes(), *f, b'"', &mut scratch).to_vec(),
                        )
                        .unwrap()
                    })
                    .collect(),
            );
        }
        Ok(out)
    }

    #[test]
    fn quotes_newlines_crlf_comments() {
        let r = records("a,b\r\n\"x,\"\"y\"\"\nz\",2\n# note \"odd\n\n3,\n").unwrap();
        assert_eq!(
            r,
            vec![vec!["a", "b"], vec!["x,\"y\"\nz", "2"], vec!["3", ""]]
        );
        let r = records("1,2").unwrap();
        assert_eq!(r, vec![vec!["1", "2"]]);
        let r = records("1,").unwrap();
        assert_eq!(r, vec![vec!["1", ""]]);
    }

    /// A record read: its info, its kept spans, and the position after it.
    type Read = (RecordInfo, Vec<FieldSpan>, usize);

    /// Every record of `input` with spans kept for the first `keep` fields, and the errors
    /// met (each resynced after).
    fn keeping(
        input: &[u8],
        d: &Dialect,
        keep: usize,
        try_fast: bool,
    ) -> Vec<Result<Read, TokenError>> {
        let mut t = Tokenizer::new(input, 1, d);
        t.try_fast = try_fast;
        let mut fields = Vec::new();
        let mut out = Vec::new();
        loop {
            match t.next_record_keeping(&mut fields, keep) {
                Ok(Some(r)) => {
                    fields.truncate(keep);
                    out.push(Ok((r, fields.clone(), t.position())));
                }
                Ok(None) => return out,
                Err(e) => {
                    out.push(Err(e));
                    t.resync_after(&e);
                }
            }
        }
    }

    #[test]
    fn stepping_over_fields_counts_and_checks_them_like_tokenizing() {
        let alphabet = b"ab1,,,,\"\n\r#";
        let mut rng = crate::test_rng::Rng(0x2545_F491_4F6C_DD1D);
        let mut next = move |n: usize| rng.below(n as u64) as usize;
        for _ in 0..4000 {
            let len = next(300);
            let input: Vec<u8> = (0..len).map(|_| alphabet[next(alphabet.len())]).collect();
            // Also without quoting and comments: quotes are then plain bytes.
            let bare = Dialect {
                delimiter: b',',
                quote: None,
                comment: None,
            };
            for d in [dialect(), bare] {
                // Field by field, every span kept: the reference.
                let all = keeping(&input, &d, usize::MAX, false);
                for r in all.iter().flatten() {
                    assert_eq!(
                        r.0.fields,
                        r.1.len(),
                        "{:?}",
                        String::from_utf8_lossy(&input)
                    );
                }
                for (keep, try_fast) in (0..4)
                    .chain([usize::MAX])
                    .flat_map(|k| [(k, false), (k, true)])
                {
                    let expect: Vec<_> = all
                        .iter()
                        .map(|r| {
                            r.clone().map(|(info, mut spans, pos)| {
                                spans.truncate(keep);
                                (info, spans, pos)
                            })
                        })
                        .collect();
                    assert_eq!(
                        keeping(&input, &d, keep, try_fast),
                        expect,
                        "keep {keep} (fast path first: {try_fast}) of {:?}",
                        String::from_utf8_lossy(&input)
                    );
                }
            }
        }
    }

    #[test]
    fn errors_carry_lines() {
        let e = records("a\n\"b\nc").unwrap_err();
        assert_eq!((e.line, e.kind), (2, TokenErrorKind::UnterminatedQuote));
        let e = records("a\nb\n\"x\"y,1\n").unwrap_err();
        assert_eq!(
            (e.line, e.field, e.kind),
            (3, 0, TokenErrorKind::CharAfterQuote(b'y'))
        );
        let e = records("a,b\"c\n").unwrap_err();
        assert_eq!(
            (e.line, e.field, e.kind),
            (1, 1, TokenErrorKind::StrayQuote)
        );
    }
}
