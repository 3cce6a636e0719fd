//! Decodes one block into a batch of the projected columns.
//!
//! Two passes: the tokenizer finds every projected field, then each projected column is
//! parsed in one tight loop straight into its builder. Unprojected fields are never parsed:
//! a block of the usual shape is tokenized at once (`separators`), where a field is found
//! by index, and when all its records have the expected width its fields are read in place
//! from the separators; otherwise the span of each projected field is listed per column
//! (so each column's parse loop reads its spans in sequence), and a block of an unusual
//! shape is tokenized record by record (`tokenize`), where the fields after the last
//! projected one are only counted. Errors are reported for the first offending record in
//! file order, whichever column finds it.

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use super::error::{CsvError, CsvErrorKind};
use super::separators::{self, BlockTokens, UniformFields};
use super::split::{Block, LineOrigin};
use super::tokenize::{field_bytes, Dialect, FieldSpan, TokenError, TokenErrorKind, Tokenizer};
use crate::batch::Batch;
use crate::bitmap::Bitmap;
use crate::cache_hint::prefetch;
use crate::column::{Column, ColumnBuilder};
use crate::datatype::{DataType, SchemaRef};
use crate::parse;
use crate::temporal;

/// A record skipped under `ignore_errors`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedRow {
    pub file: String,
    pub line: u64,
    pub reason: String,
}

#[derive(Debug)]
pub struct DecodedBlock {
    pub seq: u64,
    pub batch: Batch,
    pub skipped: Vec<SkippedRow>,
    /// Records read from the block (before any filter).
    pub rows_read: usize,
    /// Time finding field boundaries, and parsing fields into columns (nanoseconds).
    pub tokenize_ns: u64,
    pub decode_ns: u64,
    /// The block was tokenized record by record (not at once: see `separators`).
    pub record_by_record: bool,
}

/// A filter that [`BlockDecoder::decode_filtered`] evaluates while decoding: it reads the
/// projected columns at `slots` (positions in the decoder's output schema) and says which
/// rows to keep.
pub trait DecodeFilter {
    type Error;
    fn slots(&self) -> &[usize];
    /// `batch` holds the `slots` columns, in that order.
    fn keep(&self, batch: &Batch) -> Result<Bitmap, Self::Error>;
}

/// Why [`BlockDecoder::decode_filtered`] failed.
#[derive(Debug)]
pub enum FilteredDecodeError<E> {
    Csv(CsvError),
    Filter(E),
}

/// Decodes blocks of one file; shared by all workers (it holds no per-block state).
#[derive(Clone, Debug)]
pub struct BlockDecoder {
    file: String,
    dialect: Dialect,
    file_schema: SchemaRef,
    projection: Vec<usize>,
    out_schema: SchemaRef,
    null_values: Vec<Vec<u8>>,
    allow_quoted_nulls: bool,
    null_padding: bool,
    truncate_extra_fields: bool,
    ignore_errors: bool,
    /// Finds the file line of a block whose lines the splitter did not count.
    origin: LineOrigin,
}

/// A missing field (the record was short and `null_padding` is on).
const MISSING: FieldSpan = FieldSpan {
    start: u32::MAX,
    end: u32::MAX,
    quoted: false,
    escaped: false,
};

/// Where the projected fields of a tokenized block lie.
enum Fields {
    /// The spans of each projected column (one list per projection slot, a span per row):
    /// each column's parse loop then reads its spans in sequence.
    Spans(Vec<Vec<FieldSpan>>),
    /// Read in place from the block's separators.
    Uniform(UniformFields),
}

struct Tokenized {
    /// Whether the record-by-record tokenizer read the block.
    record_by_record: bool,
    /// The separator scan found every byte of the block ASCII.
    ascii: bool,
    fields: Fields,
    /// Each row's line, for [`Fields::Spans`].
    lines: Vec<u64>,
    skipped: Vec<SkippedRow>,
    /// A syntax error that stopped tokenizing before row `.0` (without ignore_errors).
    stop: Option<(usize, CsvError)>,
}

impl Tokenized {
    fn rows(&self) -> usize {
        match &self.fields {
            Fields::Spans(_) => self.lines.len(),
            Fields::Uniform(u) => u.rows(),
        }
    }

    /// The 1-based line of row `row`.
    fn line(&self, row: usize) -> u64 {
        match &self.fields {
            Fields::Spans(_) => self.lines[row],
            Fields::Uniform(u) => u.line(row),
        }
    }
}

impl BlockDecoder {
    pub(crate) fn new(
        file: String,
        dialect: Dialect,
        file_schema: SchemaRef,
        projection: Vec<usize>,
        options: &super::CsvOptions,
        origin: LineOrigin,
    ) -> Self {
        let out_schema = Arc::new(file_schema.project(&projection));
        Self {
            file,
            dialect,
            file_schema,
            projection,
            out_schema,
            null_values: options
                .null_values
                .iter()
                .map(|s| s.as_bytes().to_vec())
                .collect(),
            allow_quoted_nulls: options.allow_quoted_nulls,
            null_padding: options.null_padding,
            truncate_extra_fields: options.truncate_extra_fields,
            ignore_errors: options.ignore_errors,
            origin,
        }
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.out_schema
    }

    fn column_name(&self, field: usize) -> String {
        self.file_schema
            .fields
            .get(field)
            .map_or_else(|| format!("column{field}"), |f| f.name.clone())
    }

    fn token_error(&self, buf: &[u8], e: &TokenError) -> CsvError {
        let kind = match e.kind {
            TokenErrorKind::UnterminatedQuote => CsvErrorKind::UnterminatedQuote,
            TokenErrorKind::CharAfterQuote(b) => CsvErrorKind::CharAfterQuote { found: b as char },
            TokenErrorKind::StrayQuote => {
                let line_end = memchr::memchr(b'\n', &buf[e.record_start..])
                    .map_or(buf.len(), |k| e.record_start + k);
                let text = String::from_utf8_lossy(&buf[e.record_start..line_end]);
                CsvErrorKind::StrayQuote {
                    text: text.chars().take(80).collect(),
                }
            }
        };
        CsvError::new(&self.file, kind)
            .at_line(e.line)
            .in_column(e.field, self.column_name(e.field))
    }

    fn tokenize(&self, block: &Block) -> Tokenized {
        let buf = &block.data[..];
        let width = self.projection.len();
        let expected = self.file_schema.len();
        let mut columns = vec![Vec::new(); width];
        let mut out = Tokenized {
            record_by_record: false,
            ascii: false,
            fields: Fields::Spans(Vec::new()),
            lines: Vec::new(),
            skipped: Vec::new(),
            stop: None,
        };
        // Without a counted first line, lines are numbered from 1 within the block (see
        // `decode`).
        let first_line = block.first_line.unwrap_or(1);
        match separators::tokenize_block(
            buf,
            first_line,
            &self.dialect,
            &self.projection,
            expected,
            &mut columns,
            &mut out.lines,
        ) {
            BlockTokens::Uniform(u) => {
                out.ascii = u.ascii();
                out.fields = Fields::Uniform(u);
                return out;
            }
            BlockTokens::Spans { ascii } => {
                out.ascii = ascii;
                out.fields = Fields::Spans(columns);
                return out;
            }
            BlockTokens::Declined => {}
        }
        out.record_by_record = true;
        let mut tok = Tokenizer::new(buf, first_line, &self.dialect);
        let mut fields = Vec::with_capacity(expected);
        // Fields after the last projected one are only counted.
        let keep = self.projection.iter().max().map_or(0, |&c| c + 1);
        loop {
            let rec = match tok.next_record_keeping(&mut fields, keep) {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) => {
                    let err = self.token_error(buf, &e);
                    if !self.ignore_errors {
                        out.stop = Some((out.lines.len(), err));
                        break;
                    }
                    out.skipped.push(SkippedRow {
                        file: self.file.clone(),
                        line: e.line,
                        reason: err.reason(),
                    });
                    tok.resync_after(&e);
                    continue;
                }
            };
            let found = rec.fields;
            let ragged = if found < expected && !self.null_padding {
                Some(CsvErrorKind::TooFewFields { expected, found })
            } else if found > expected && !self.truncate_extra_fields {
                Some(CsvErrorKind::TooManyFields { expected, found })
            } else {
                None
            };
            if let Some(kind) = ragged {
                let err = CsvError::new(&self.file, kind).at_line(rec.line);
                if !self.ignore_errors {
                    out.stop = Some((out.lines.len(), err));
                    break;
                }
                out.skipped.push(SkippedRow {
                    file: self.file.clone(),
                    line: rec.line,
                    reason: err.reason(),
                });
                continue;
            }
            for (column, &c) in columns.iter_mut().zip(&self.projection) {
                column.push(fields.get(c).copied().unwrap_or(MISSING));
            }
            out.lines.push(rec.line);
            if out.lines.len() == 32 {
                // Size the rest from the records so far, instead of growing by doubling.
                let per_record = tok.position().max(1) / 32;
                let rows = buf.len() / per_record.max(1) + 32;
                out.lines.reserve(rows);
                columns.iter_mut().for_each(|c| c.reserve(rows));
            }
        }
        debug_assert!(columns.iter().all(|c| c.len() == out.lines.len()));
        out.fields = Fields::Spans(columns);
        out
    }

    #[inline]
    fn is_null(&self, span: FieldSpan, bytes: &[u8]) -> bool {
        (!span.quoted || self.allow_quoted_nulls) && self.null_values.iter().any(|n| n == bytes)
    }

    /// Decodes a block; on malformed input returns the first error in file order, or with
    /// `ignore_errors` skips the offending records and lists them.
    pub fn decode(&self, block: &Block) -> Result<DecodedBlock, CsvError> {
        if block.first_line.is_some() {
            return self.decode_lines(block);
        }
        // The block's lines were numbered from 1: an error's line moves to the file's, found
        // by counting line feeds from the data's start (when that fails, it has no line).
        // Nothing is skipped here: the splitter counts lines wherever records may be.
        match self.decode_lines(block) {
            Ok(d) => {
                debug_assert!(d.skipped.is_empty(), "skipped records need counted lines");
                Ok(d)
            }
            Err(mut e) => {
                e.line = e
                    .line
                    .and_then(|line| Some(self.origin.line_at(block.offset).ok()? + line - 1));
                Err(e)
            }
        }
    }

    /// [`Self::decode`], with lines numbered from the block's first line (1 when it was not
    /// counted).
    fn decode_lines(&self, block: &Block) -> Result<DecodedBlock, CsvError> {
        let started = Instant::now();
        let mut tokenized = self.tokenize(block);
        let tokenize_ns = started.elapsed().as_nanos() as u64;
        let rows = tokenized.rows();
        let width = self.projection.len();
        let buf = &block.data[..];
        let utf8 = BlockUtf8::new(buf, &self.dialect, tokenized.ascii);
        // Without ignore_errors: the first (row, field) that failed. With it: a reason per row.
        let mut first: Option<(usize, usize, CsvError)> = None;
        let mut bad: Vec<Option<String>> = Vec::new();
        let mut columns = Vec::with_capacity(width);
        for (slot, &field) in self.projection.iter().enumerate() {
            let ty = self.file_schema.field(field).data_type;
            let mut builder = ColumnBuilder::with_capacity(ty, rows);
            let end = first
                .as_ref()
                .map_or(rows, |f| if field < f.1 { f.0 + 1 } else { f.0 });
            let mut from = 0;
            while let Err((row, kind)) =
                self.parse_into(&mut builder, buf, &tokenized, slot, from..end, None, &utf8)
            {
                let err = CsvError::new(&self.file, kind)
                    .at_line(tokenized.line(row))
                    .in_column(field, self.column_name(field));
                if !self.ignore_errors {
                    first = Some((row, field, err));
                    break;
                }
                if bad.is_empty() {
                    bad = vec![None; rows];
                }
                bad[row].get_or_insert_with(|| err.reason());
                builder.push_null();
                from = row + 1;
            }
            columns.push(builder);
        }
        if let Some((row, _, err)) = first {
            let before_stop = tokenized
                .stop
                .as_ref()
                .is_none_or(|(stop_row, _)| row < *stop_row);
            if before_stop {
                return Err(err);
            }
        }
        if let Some((_, err)) = tokenized.stop.take() {
            return Err(err);
        }
        let mut columns: Vec<Column> = columns.into_iter().map(ColumnBuilder::finish).collect();
        let mut skipped = std::mem::take(&mut tokenized.skipped);
        let mut kept_rows = rows;
        if !bad.is_empty() {
            let keep = crate::bitmap::Bitmap::from_bools(bad.iter().map(Option::is_none));
            kept_rows = keep.count_ones();
            columns = columns.iter().map(|c| c.filter(&keep)).collect();
            for (row, reason) in bad.into_iter().enumerate() {
                if let Some(reason) = reason {
                    skipped.push(SkippedRow {
                        file: self.file.clone(),
                        line: tokenized.line(row),
                        reason,
                    });
                }
            }
            skipped.sort_by_key(|s| s.line);
        }
        let batch = Batch::try_new(self.out_schema.clone(), columns, kept_rows)
            .expect("decoder builds columns of the schema's types and equal lengths");
        Ok(DecodedBlock {
            seq: block.seq,
            batch,
            skipped,
            rows_read: rows,
            tokenize_ns,
            record_by_record: tokenized.record_by_record,
            decode_ns: (started.elapsed().as_nanos() as u64).saturating_sub(tokenize_ns),
        })
    }

    /// Decodes a block keeping only the rows `filter` accepts: the filter's columns are
    /// parsed first, the filter runs on them, and the other projected columns are then built
    /// only for the kept rows. Fields of dropped rows are still parsed (and discarded), so a
    /// malformed value is reported whatever the filter says. A block holding any error, and
    /// every block under `ignore_errors` (whose skipped rows the filter must not see), is
    /// decoded whole and filtered after, so errors are exactly the unfiltered ones.
    pub fn decode_filtered<F: DecodeFilter>(
        &self,
        block: &Block,
        filter: &F,
    ) -> Result<DecodedBlock, FilteredDecodeError<F::Error>> {
        if self.ignore_errors {
            return self.decode_then_filter(block, filter);
        }
        let started = Instant::now();
        let tokenized = self.tokenize(block);
        let tokenize_ns = started.elapsed().as_nanos() as u64;
        if tokenized.stop.is_some() {
            return self.decode_then_filter(block, filter);
        }
        let rows = tokenized.rows();
        let buf = &block.data[..];
        let utf8 = BlockUtf8::new(buf, &self.dialect, tokenized.ascii);
        let slots = filter.slots();
        let mut filter_columns = Vec::with_capacity(slots.len());
        for &slot in slots {
            match self.parse_column(buf, &tokenized, slot, None, &utf8) {
                Some(c) => filter_columns.push(c),
                None => return self.decode_then_filter(block, filter),
            }
        }
        let filter_batch = self.slots_batch(slots, filter_columns, rows);
        let keep = filter
            .keep(&filter_batch)
            .map_err(FilteredDecodeError::Filter)?;
        let kept = keep.count_ones();
        let mut columns: Vec<Option<Column>> = vec![None; self.projection.len()];
        for (i, &slot) in slots.iter().enumerate() {
            let c = filter_batch.column(i);
            columns[slot] = Some(if kept == rows {
                c.clone()
            } else {
                c.filter(&keep)
            });
        }
        for (slot, column) in columns.iter_mut().enumerate() {
            if column.is_none() {
                match self.parse_column(buf, &tokenized, slot, Some(&keep), &utf8) {
                    Some(c) => *column = Some(c),
                    None => return self.decode_then_filter(block, filter),
                }
            }
        }
        let columns = columns.into_iter().flatten().collect();
        let batch = Batch::try_new(self.out_schema.clone(), columns, kept)
            .expect("decoder builds columns of the schema's types and equal lengths");
        Ok(DecodedBlock {
            seq: block.seq,
            batch,
            skipped: Vec::new(),
            rows_read: rows,
            tokenize_ns,
            record_by_record: tokenized.record_by_record,
            decode_ns: (started.elapsed().as_nanos() as u64).saturating_sub(tokenize_ns),
        })
    }

    /// The slow path of [`Self::decode_filtered`]: decode everything, then filter.
    fn decode_then_filter<F: DecodeFilter>(
        &self,
        block: &Block,
        filter: &F,
    ) -> Result<DecodedBlock, FilteredDecodeError<F::Error>> {
        let mut d = self.decode(block).map_err(FilteredDecodeError::Csv)?;
        let rows = d.batch.num_rows();
        let slots = filter.slots();
        let cols = slots.iter().map(|&s| d.batch.column(s).clone()).collect();
        let keep = filter
            .keep(&self.slots_batch(slots, cols, rows))
            .map_err(FilteredDecodeError::Filter)?;
        let kept = keep.count_ones();
        if kept < rows {
            let columns = d.batch.columns().iter().map(|c| c.filter(&keep)).collect();
            d.batch = Batch::try_new(self.out_schema.clone(), columns, kept)
                .expect("filtering keeps the schema");
        }
        Ok(d)
    }

    /// A batch of the output columns at `slots`.
    fn slots_batch(&self, slots: &[usize], columns: Vec<Column>, rows: usize) -> Batch {
        Batch::try_new(Arc::new(self.out_schema.project(slots)), columns, rows)
            .expect("decoder builds columns of the schema's types and equal lengths")
    }

    /// Parses projected column `slot` of every tokenized row, appending only the rows
    /// `keep` selects (all when `None`); the others are parsed only to check them. `None`
    /// when any field fails to parse.
    fn parse_column(
        &self,
        buf: &[u8],
        tokenized: &Tokenized,
        slot: usize,
        keep: Option<&Bitmap>,
        utf8: &BlockUtf8,
    ) -> Option<Column> {
        let rows = tokenized.rows();
        let ty = self.file_schema.field(self.projection[slot]).data_type;
        let mut builder = ColumnBuilder::with_capacity(ty, keep.map_or(rows, Bitmap::count_ones));
        self.parse_into(&mut builder, buf, tokenized, slot, 0..rows, keep, utf8)
            .ok()?;
        Some(builder.finish())
    }

    /// Parses rows `rows` of projected column `slot` into `builder`, appending the rows
    /// `keep` selects (all when `None`) and only checking the others; stops at the first
    /// field that does not parse, with its row and why. One loop per column type, so the
    /// per-field work has no type dispatch.
    #[allow(clippy::too_many_arguments)]
    fn parse_into(
        &self,
        builder: &mut ColumnBuilder,
        buf: &[u8],
        tokenized: &Tokenized,
        slot: usize,
        rows: Range<usize>,
        keep: Option<&Bitmap>,
        utf8: &BlockUtf8,
    ) -> Result<(), (usize, CsvErrorKind)> {
        let fields = FieldCursor {
            decoder: self,
            buf,
            tokenized,
            slot,
            column: self.projection[slot],
            keep,
        };
        match builder {
            ColumnBuilder::Boolean(b) => fields.each(rows, DataType::Boolean, |v, append| {
                push_value(v.map(parse::parse_bool), append, |x| b.push_option(x))
            }),
            ColumnBuilder::Int32(b) => fields.each(rows, DataType::Int32, |v, append| {
                push_value(v.map(parse::parse_i32), append, |x| b.push_option(x))
            }),
            ColumnBuilder::Int64(b) => fields.each(rows, DataType::Int64, |v, append| {
                push_value(v.map(parse::parse_i64), append, |x| b.push_option(x))
            }),
            ColumnBuilder::Float64(b) => fields.each(rows, DataType::Float64, |v, append| {
                push_value(v.map(parse::parse_f64), append, |x| b.push_option(x))
            }),
            ColumnBuilder::Date32(b) => fields.each(rows, DataType::Date32, |v, append| {
                push_value(v.map(temporal::parse_date), append, |x| b.push_option(x))
            }),
            ColumnBuilder::Timestamp(b) => fields.each(rows, DataType::Timestamp, |v, append| {
                push_value(v.map(temporal::parse_timestamp), append, |x| {
                    b.push_option(x)
                })
            }),
            ColumnBuilder::Utf8(b) => {
                let checked = utf8.is_valid();
                fields.each_utf8(rows, |v, append| {
                    let text = match v {
                        None => None,
                        // SAFETY: the whole block is valid UTF-8 and the delimiter and quote
                        // are ASCII, so a field (which starts and ends next to an ASCII byte or
                        // the block's ends, themselves after a line feed) never splits a
                        // multi-byte character, and undoing doubled quotes only drops ASCII
                        // bytes: the field is valid UTF-8 too.
                        Some(bytes) if checked => {
                            Some(unsafe { std::str::from_utf8_unchecked(bytes) })
                        }
                        Some(bytes) => Some(
                            std::str::from_utf8(bytes).map_err(|_| CsvErrorKind::InvalidUtf8)?,
                        ),
                    };
                    if append {
                        match text {
                            Some(t) => b.push(t),
                            None => b.push_null(),
                        }
                    }
                    Ok(())
                })
            }
        }
    }
}

/// Appends a parsed value (`Some(None)`: the field did not parse; `None`: NULL) when
/// `append`; a field that did not parse is an error either way.
#[inline(always)]
fn push_value<T>(
    parsed: Option<Option<T>>,
    append: bool,
    mut push: impl FnMut(Option<T>),
) -> Result<(), ()> {
    let value = match parsed {
        Some(Some(v)) => Some(v),
        Some(None) => return Err(()),
        None => None,
    };
    if append {
        push(value);
    }
    Ok(())
}

/// Whether a block is valid UTF-8 as a whole: known when the separator scan found it all
/// ASCII, else checked once, when a text column first needs to know (then no field needs
/// its own check). The check cost 2% of a one-thread TPC-H Q1 over CSV.
struct BlockUtf8<'a> {
    buf: &'a [u8],
    ascii_syntax: bool,
    valid: std::cell::OnceCell<bool>,
}

impl<'a> BlockUtf8<'a> {
    /// `ascii`: every byte of `buf` is known to be ASCII.
    fn new(buf: &'a [u8], dialect: &Dialect, ascii: bool) -> Self {
        let valid = std::cell::OnceCell::new();
        if ascii {
            valid.set(true).expect("a fresh cell");
        }
        Self {
            buf,
            ascii_syntax: dialect.delimiter.is_ascii()
                && dialect.quote.is_none_or(|q| q.is_ascii()),
            valid,
        }
    }

    fn is_valid(&self) -> bool {
        self.ascii_syntax
            && *self
                .valid
                .get_or_init(|| std::str::from_utf8(self.buf).is_ok())
    }
}

/// How many rows ahead a column's field bytes are hinted to the cache: a column's fields
/// lie a record apart, at varying gaps the hardware prefetcher does not follow (lineitem
/// decode: 3-4% less CPU, `parse_date` waited mostly on its field's first load; text
/// fields, copied whole, gained nothing from it).
const FIELDS_AHEAD: usize = 32;

/// The fields of one projected column of a tokenized block.
struct FieldCursor<'a> {
    decoder: &'a BlockDecoder,
    buf: &'a [u8],
    tokenized: &'a Tokenized,
    slot: usize,
    /// The file column at `slot`.
    column: usize,
    keep: Option<&'a Bitmap>,
}

impl FieldCursor<'_> {
    /// Calls `f(field, append)` for each row in `rows`, the field `None` when NULL or missing
    /// and `append` false for rows `keep` drops; a parse failure (`Err(())`) stops with the
    /// row and a parse error for type `ty`.
    #[inline(always)]
    fn each(
        &self,
        rows: Range<usize>,
        ty: DataType,
        mut f: impl FnMut(Option<&[u8]>, bool) -> Result<(), ()>,
    ) -> Result<(), (usize, CsvErrorKind)> {
        let mut scratch = Vec::new();
        for row in rows {
            self.hint_ahead(row);
            let field = self.field(row, &mut scratch);
            if f(field, self.appends(row)).is_err() {
                let text = self.field(row, &mut scratch).unwrap_or_default();
                return Err((
                    row,
                    CsvErrorKind::Parse {
                        text: String::from_utf8_lossy(text).into_owned(),
                        data_type: ty,
                    },
                ));
            }
        }
        Ok(())
    }

    /// Like [`Self::each`] for text, whose only failure is invalid UTF-8.
    #[inline(always)]
    fn each_utf8(
        &self,
        rows: Range<usize>,
        mut f: impl FnMut(Option<&[u8]>, bool) -> Result<(), CsvErrorKind>,
    ) -> Result<(), (usize, CsvErrorKind)> {
        let mut scratch = Vec::new();
        for row in rows {
            let field = self.field(row, &mut scratch);
            f(field, self.appends(row)).map_err(|kind| (row, kind))?;
        }
        Ok(())
    }

    /// Hints the field [`FIELDS_AHEAD`] rows after `row` to the cache.
    #[inline(always)]
    fn hint_ahead(&self, row: usize) {
        let ahead = row + FIELDS_AHEAD;
        let start = match &self.tokenized.fields {
            Fields::Spans(columns) => columns[self.slot].get(ahead).map(|s| s.start as usize),
            Fields::Uniform(u) => (ahead < u.rows()).then(|| u.start(ahead, self.column)),
        };
        if let Some(b) = start.and_then(|s| self.buf.get(s)) {
            prefetch(b);
        }
    }

    #[inline(always)]
    fn appends(&self, row: usize) -> bool {
        self.keep.is_none_or(|k| k.get(row))
    }

    /// Row `row`'s field, or `None` when it is missing or a null string.
    #[inline(always)]
    fn field<'s>(&'s self, row: usize, scratch: &'s mut Vec<u8>) -> Option<&'s [u8]> {
        let span = match &self.tokenized.fields {
            Fields::Spans(columns) => columns[self.slot][row],
            Fields::Uniform(u) => u.span(self.buf, row, self.column),
        };
        if span.start == MISSING.start {
            return None;
        }
        let quote = self.decoder.dialect.quote.unwrap_or(b'"');
        let bytes = field_bytes(self.buf, span, quote, scratch);
        (!self.decoder.is_null(span, bytes)).then_some(bytes)
    }
}
