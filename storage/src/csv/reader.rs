//! [`CsvReader`]: reads the head of an input (BOM, skipped lines, header), fixes the schema,
//! and hands out the splitter and decoder that read the data part block by block.

use std::sync::Arc;

use super::decode::{BlockDecoder, SkippedRow};
use super::error::{CsvError, CsvErrorKind};
use super::infer::{infer_types, ColumnInference, InferenceReport};
use super::input::CsvInput;
use super::options::CsvOptions;
use super::split::{Block, BlockSplitter, LineOrigin};
use super::stretch::StretchSplitter;
use super::tokenize::{field_bytes, Dialect, Tokenizer};
use crate::batch::Batch;
use crate::datatype::{Field, Schema, SchemaRef};

/// Everything read from a file: batches in file order and the records skipped on the way.
#[derive(Debug)]
pub struct CsvData {
    pub schema: SchemaRef,
    pub batches: Vec<Batch>,
    pub skipped: Vec<SkippedRow>,
}

#[derive(Clone, Debug)]
pub struct CsvReader {
    input: CsvInput,
    options: CsvOptions,
    dialect: Dialect,
    schema: SchemaRef,
    data_start: u64,
    data_line: u64,
    inference: InferenceReport,
    /// The input's size when it was opened (estimates are asked for many times while a
    /// query is planned; a file's size is a system call).
    input_len: u64,
}

/// What cuts a scan's data into blocks.
pub enum DataSplitter {
    /// One block after another, by one worker at a time.
    InOrder(Box<BlockSplitter>),
    /// Blocks that workers read at the same time, shared by them.
    Parallel(Arc<StretchSplitter>),
}

/// Where the data begins and what the header says.
struct Head {
    names: Vec<String>,
    data_start: u64,
    data_line: u64,
}

impl CsvReader {
    pub fn open(input: CsvInput, options: CsvOptions) -> Result<Self, CsvError> {
        let dialect = Dialect {
            delimiter: options.delimiter,
            quote: options.quote,
            comment: options
                .comment
                .as_ref()
                .filter(|c| !c.is_empty())
                .map(|c| c.as_bytes().to_vec()),
        };
        let head = read_head(&input, &options, &dialect)?;
        let file = input.name();
        let (schema, inference) = match &options.schema {
            Some(schema) => {
                if !head.names.is_empty() && schema.len() != head.names.len() {
                    let kind = CsvErrorKind::SchemaMismatch {
                        expected: schema.len(),
                        found: head.names.len(),
                    };
                    return Err(CsvError::new(file, kind));
                }
                let columns = schema
                    .fields
                    .iter()
                    .map(|f| ColumnInference {
                        name: f.name.clone(),
                        data_type: f.data_type,
                        reason: "given by the schema".into(),
                        sample_counts: Default::default(),
                        sample_points: Vec::new(),
                    })
                    .collect();
                (
                    schema.clone(),
                    InferenceReport {
                        columns,
                        sampled_records: 0,
                        sampled_bytes: 0,
                    },
                )
            }
            None => {
                if head.names.is_empty() {
                    return Err(CsvError::new(file, CsvErrorKind::Empty));
                }
                let (mut types, mut report) = infer_types(
                    &input,
                    &dialect,
                    &head.names,
                    &options,
                    head.data_start,
                    head.data_line,
                )?;
                for (name, ty) in &options.column_types {
                    let Some(i) = head.names.iter().position(|n| n == name) else {
                        let kind = CsvErrorKind::UnknownColumn {
                            name: name.clone(),
                            available: head.names.clone(),
                        };
                        return Err(CsvError::new(file, kind));
                    };
                    types[i] = *ty;
                    report.columns[i].data_type = *ty;
                    report.columns[i].reason = "set by a type override".into();
                }
                let fields = head
                    .names
                    .iter()
                    .zip(types)
                    .map(|(n, t)| Field::new(n.clone(), t, true))
                    .collect();
                (Arc::new(Schema::new(fields)), report)
            }
        };
        Ok(Self {
            input_len: input.len().unwrap_or(0),
            input,
            options,
            dialect,
            schema,
            data_start: head.data_start,
            data_line: head.data_line,
            inference,
        })
    }

    /// The number of records, estimated from the file's size when opened and the width of
    /// the sampled records (for planning; exact counts need a full read).
    pub fn estimated_rows(&self) -> f64 {
        let bytes = self.input_len.saturating_sub(self.data_start) as f64;
        let r = &self.inference;
        let width = if r.sampled_records > 0 && r.sampled_bytes > 0 {
            r.sampled_bytes as f64 / r.sampled_records as f64
        } else {
            // No sample (a given schema): assume eight bytes per field.
            8.0 * self.schema.len().max(1) as f64
        };
        let rows = (bytes / width).round();
        match self.options.n_rows {
            Some(n) => rows.min(n as f64),
            None => rows,
        }
    }

    /// The number of distinct values in column `col`, estimated from the inference sample
    /// (see [`crate::stats::estimate_distinct`]). `None` without a sample.
    pub fn estimated_distinct(&self, col: usize) -> Option<f64> {
        let c = self.inference.columns.get(col)?;
        if c.sample_counts.sampled == 0 {
            return None;
        }
        Some(crate::stats::estimate_distinct(
            c.sample_counts,
            self.estimated_rows(),
        ))
    }

    /// The fraction of sampled values of column `col` for which `keep` holds (at least
    /// one in `sample + 1`, so a predicate the sample never meets is rare, not impossible);
    /// `None` for text columns and without a sample.
    pub fn sample_fraction(&self, col: usize, keep: impl Fn(f64) -> bool) -> Option<f64> {
        let points = &self.inference.columns.get(col)?.sample_points;
        if points.is_empty() {
            return None;
        }
        let hits = points.iter().filter(|&&p| keep(p)).count();
        Some((hits.max(1) as f64 / (points.len() + 1) as f64).min(1.0))
    }

    /// The schema of the file (all columns).
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    pub fn input(&self) -> &CsvInput {
        &self.input
    }

    pub fn options(&self) -> &CsvOptions {
        &self.options
    }

    /// Why each column got its type.
    pub fn inference(&self) -> &InferenceReport {
        &self.inference
    }

    /// Whether scans read the data in parallel ([`StretchSplitter`]) rather than one block
    /// after another ([`BlockSplitter`]): unless comment lines, `ignore_errors` or `n_rows`
    /// need records counted in order.
    pub fn reads_in_parallel(&self) -> bool {
        self.dialect.comment.is_none()
            && !self.options.ignore_errors
            && self.options.n_rows.is_none()
    }

    /// A splitter over the data part; call once per scan.
    pub fn splitter(&self) -> Result<DataSplitter, CsvError> {
        if self.reads_in_parallel() {
            return Ok(DataSplitter::Parallel(Arc::new(StretchSplitter::new(
                &self.input,
                self.data_start,
                self.data_line,
                self.dialect.quote,
                self.options.block_size,
            )?)));
        }
        Ok(DataSplitter::InOrder(Box::new(BlockSplitter::new(
            &self.input,
            self.data_start,
            self.data_line,
            self.dialect.clone(),
            self.options.block_size,
            self.options.n_rows,
            self.options.ignore_errors,
        )?)))
    }

    /// A decoder for the columns at `projection` (file column indexes; `None` = all).
    pub fn decoder(&self, projection: Option<&[usize]>) -> BlockDecoder {
        let projection =
            projection.map_or_else(|| (0..self.schema.len()).collect(), <[usize]>::to_vec);
        BlockDecoder::new(
            self.input.name(),
            self.dialect.clone(),
            self.schema.clone(),
            projection,
            &self.options,
            LineOrigin::new(&self.input, self.data_start, self.data_line),
        )
    }

    /// Reads everything serially (tests, tools); queries use the executor's parallel scan.
    pub fn read_all(&self, projection: Option<&[usize]>) -> Result<CsvData, CsvError> {
        let decoder = self.decoder(projection);
        let schema = decoder.schema().clone();
        let mut batches = Vec::new();
        let mut skipped = Vec::new();
        let mut add = |block: &Block| -> Result<(), CsvError> {
            let decoded = decoder.decode(block)?;
            skipped.extend(decoded.skipped);
            if decoded.batch.num_rows() > 0 {
                batches.push(decoded.batch);
            }
            Ok(())
        };
        match self.splitter()? {
            DataSplitter::InOrder(mut splitter) => {
                while let Some(block) = splitter.next_block()? {
                    add(&block)?;
                }
            }
            DataSplitter::Parallel(splitter) => {
                for k in 0..splitter.stretches() {
                    if let Some((block, _)) = splitter.block(k)? {
                        add(&block)?;
                    }
                }
            }
        }
        Ok(CsvData {
            schema,
            batches,
            skipped,
        })
    }
}

/// Reads the head in growing chunks until the header record is complete.
fn read_head(input: &CsvInput, options: &CsvOptions, dialect: &Dialect) -> Result<Head, CsvError> {
    let total = input.len()?;
    let mut want = 64 << 10;
    loop {
        let buf = input.read_at(0, want)?;
        let complete = buf.len() as u64 >= total;
        if let Some(head) = parse_head(&buf, complete, options, dialect, input)? {
            return Ok(head);
        }
        want *= 4;
    }
}

/// `None` when `buf` is too short to hold the whole head and more of the input exists.
fn parse_head(
    buf: &[u8],
    complete: bool,
    options: &CsvOptions,
    dialect: &Dialect,
    input: &CsvInput,
) -> Result<Option<Head>, CsvError> {
    let mut pos = if buf.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let mut line = 1u64;
    for _ in 0..options.skip_rows {
        match memchr::memchr(b'\n', &buf[pos..]) {
            Some(k) => {
                pos += k + 1;
                line += 1;
            }
            None if complete => pos = buf.len(),
            None => return Ok(None),
        }
    }
    let mut tok = Tokenizer::new(&buf[pos..], line, dialect);
    let mut fields = Vec::new();
    let record = match tok.next_record(&mut fields) {
        Ok(Some(r)) if r.terminated || complete => Some(r),
        Ok(Some(_)) => return Ok(None),
        Ok(None) => None,
        Err(_) if !complete => return Ok(None),
        Err(e) => {
            let kind = match e.kind {
                super::tokenize::TokenErrorKind::UnterminatedQuote => {
                    CsvErrorKind::UnterminatedQuote
                }
                super::tokenize::TokenErrorKind::CharAfterQuote(b) => {
                    CsvErrorKind::CharAfterQuote { found: b as char }
                }
                super::tokenize::TokenErrorKind::StrayQuote => CsvErrorKind::StrayQuote {
                    text: "in the header".into(),
                },
            };
            return Err(CsvError::new(input.name(), kind).at_line(e.line));
        }
    };
    if record.is_none() {
        return Ok(Some(Head {
            names: Vec::new(),
            data_start: pos as u64,
            data_line: line,
        }));
    }
    let quote = dialect.quote.unwrap_or(b'"');
    let mut scratch = Vec::new();
    let raw: Vec<String> = fields
        .iter()
        .map(|f| {
            String::from_utf8_lossy(field_bytes(&buf[pos..], *f, quote, &mut scratch)).into_owned()
        })
        .collect();
    if !options.has_header {
        let names = (0..raw.len()).map(|i| format!("column{i}")).collect();
        return Ok(Some(Head {
            names,
            data_start: pos as u64,
            data_line: line,
        }));
    }
    let names = unique_names(raw);
    Ok(Some(Head {
        names,
        data_start: (pos + tok.position()) as u64,
        data_line: line_after(&buf[pos..pos + tok.position()], line),
    }))
}

fn line_after(consumed: &[u8], first_line: u64) -> u64 {
    first_line + memchr::memchr_iter(b'\n', consumed).count() as u64
}

/// Blank names become `column{i}`; repeated names get `_1`, `_2`, ... suffixes.
fn unique_names(raw: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(raw.len());
    for (i, name) in raw.into_iter().enumerate() {
        let base = if name.trim().is_empty() {
            format!("column{i}")
        } else {
            name
        };
        let mut candidate = base.clone();
        let mut k = 1;
        while out.contains(&candidate) {
            candidate = format!("{base}_{k}");
            k += 1;
        }
        out.push(candidate);
    }
    out
}
