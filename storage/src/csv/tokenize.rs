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

/// One record: where it starts (byte and line) and whether a line end terminated it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordInfo {
    pub start: usize,
    pub line: u64,
    pub terminated: bool,
}

pub struct Tokenizer<'a> {
    buf: &'a [u8],
    pos: usize,
    line: u64,
    dialect: &'a Dialect,
    /// The 64-byte chunk of `buf` starting at `mask_base` as a bit mask of its delimiter,
    /// line-feed and quote bytes (`usize::MAX`: none computed yet).
    mask_base: usize,
    mask: u64,
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
            mask: 0,
        }
    }

    /// Bit `j` set where `buf[base + j]` is the delimiter, a line feed or the quote.
    fn chunk_mask(&self, base: usize) -> u64 {
        let d = self.dialect.delimiter;
        // Without a quote character, compare against the line feed twice.
        let q = self.dialect.quote.unwrap_or(b'\n');
        match self.buf.get(base..base + 64) {
            Some(chunk) => special_mask(chunk.try_into().expect("64 bytes"), d, q),
            None => self.buf[base..].iter().enumerate().fold(0, |m, (j, &b)| {
                m | (u64::from(b == d || b == b'\n' || b == q) << j)
            }),
        }
    }

    /// The first delimiter, line feed or quote at or after `from`, found 64 bytes at a time
    /// (the chunk's mask is kept for the next field, which usually lies in it too).
    fn next_special(&mut self, from: usize) -> Option<usize> {
        let mut base = from & !63;
        if base != self.mask_base {
            self.mask_base = base;
            self.mask = self.chunk_mask(base);
        }
        let mut m = self.mask & (u64::MAX << (from - base));
        loop {
            if m != 0 {
                return Some(base + m.trailing_zeros() as usize);
            }
            base += 64;
            if base >= self.buf.len() {
                return None;
            }
            self.mask_base = base;
            self.mask = self.chunk_mask(base);
            m = self.mask;
        }
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
        fields.clear();
        if !self.skip_ignorable() {
            return Ok(None);
        }
        let buf = self.buf;
        let len = buf.len();
        let d = self.dialect.delimiter;
        let record = RecordInfo {
            start: self.pos,
            line: self.line,
            terminated: true,
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
                        ..record
                    }));
                }
                match buf[i] {
                    b if b == d => self.pos = i + 1,
                    b'\n' => {
                        self.pos = i + 1;
                        self.line += 1;
                        return Ok(Some(record));
                    }
                    // A lone `\r` can only end the input: blocks are cut after `\n`.
                    b'\r' if i + 1 == len => {
                        self.pos = len;
                        return Ok(Some(RecordInfo {
                            terminated: false,
                            ..record
                        }));
                    }
                    b'\r' if buf.get(i + 1) == Some(&b'\n') => {
                        self.pos = i + 2;
                        self.line += 1;
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
                    return Ok(Some(record));
                }
            }
        }
    }
}

/// Bit `j` set where `chunk[j]` is `d`, a line feed or `q`: sixteen bytes per compare.
#[cfg(target_arch = "x86_64")]
fn special_mask(chunk: &[u8; 64], d: u8, q: u8) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of the x86_64 baseline, so every machine this compiles for has
    // these instructions; each load reads bytes `16k..16k + 16` of the 64-byte array, and
    // `_mm_loadu_si128` accepts unaligned addresses.
    unsafe {
        let (dv, nv, qv) = (
            _mm_set1_epi8(d as i8),
            _mm_set1_epi8(b'\n' as i8),
            _mm_set1_epi8(q as i8),
        );
        let mut m = 0u64;
        for k in 0..4 {
            let v = _mm_loadu_si128(chunk.as_ptr().add(16 * k).cast::<__m128i>());
            let hit = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, dv), _mm_cmpeq_epi8(v, nv)),
                _mm_cmpeq_epi8(v, qv),
            );
            m |= u64::from(_mm_movemask_epi8(hit) as u16) << (16 * k);
        }
        m
    }
}

/// Bit `j` set where `chunk[j]` is `d`, a line feed or `q`.
#[cfg(not(target_arch = "x86_64"))]
fn special_mask(chunk: &[u8; 64], d: u8, q: u8) -> u64 {
    chunk.iter().enumerate().fold(0, |m, (j, &b)| {
        m | (u64::from(b == d || b == b'\n' || b == q) << j)
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
        Dialect {
            delimiter: b',',
            quote: Some(b'"'),
            comment: Some(b"#".to_vec()),
        }
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
