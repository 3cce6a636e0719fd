//! Schema inference: proposes the narrowest type that every sampled value fits, and says why.
//!
//! Samples come from the head of the data and from chunks at 1/4, 1/2, 3/4 and the end of the
//! file, so a column whose odd values only appear late is still caught. A chunk taken from the
//! middle of a file cannot know whether it starts inside a quoted field, so it is used only if
//! every record in it tokenizes cleanly with the header's field count; otherwise it is
//! dropped. A dropped chunk can only make inference see fewer values, never a wrong type.

use std::collections::HashMap;
use std::fmt;

use super::error::CsvError;
use super::input::CsvInput;
use super::options::CsvOptions;
use super::tokenize::{field_bytes, Dialect, Tokenizer};
use crate::datatype::DataType;
use crate::parse;
use crate::temporal;

/// Where a sampled value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleLocation {
    Line(u64),
    /// A chunk from the middle of the file, whose line numbers are unknown without a full scan.
    NearByte(u64),
}

impl fmt::Display for SampleLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SampleLocation::Line(l) => write!(f, "line {l}"),
            SampleLocation::NearByte(b) => write!(f, "near byte {b}"),
        }
    }
}

/// The chosen type of one column and the reason for it.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnInference {
    pub name: String,
    pub data_type: DataType,
    pub reason: String,
    /// How often the sampled non-NULL values occurred (planner statistics).
    pub sample_counts: crate::stats::SampleCounts,
    /// The sampled values of a number, date or timestamp column as doubles (dates in days,
    /// timestamps in microseconds), sorted: the planner's range selectivities. Empty for
    /// text.
    pub sample_points: Vec<f64>,
}

/// Why each column got its type; printable as one line per column.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InferenceReport {
    pub columns: Vec<ColumnInference>,
    pub sampled_records: usize,
    /// Bytes the sampled records span (for estimating the file's row count).
    pub sampled_bytes: usize,
}

impl fmt::Display for InferenceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} records sampled", self.sampled_records)?;
        for c in &self.columns {
            writeln!(f, "{}: {} ({})", c.name, c.data_type, c.reason)?;
        }
        Ok(())
    }
}

const CANDIDATES: [DataType; 5] = [
    DataType::Boolean,
    DataType::Int64,
    DataType::Float64,
    DataType::Date32,
    DataType::Timestamp,
];

fn fits(ty: DataType, v: &[u8]) -> bool {
    match ty {
        DataType::Boolean => parse::parse_bool(v).is_some(),
        DataType::Int64 => parse::parse_i64(v).is_some(),
        DataType::Float64 => parse::looks_numeric(v) && parse::parse_f64(v).is_some(),
        DataType::Date32 => temporal::parse_date(v).is_some(),
        DataType::Timestamp => temporal::parse_timestamp(v).is_some(),
        _ => true,
    }
}

/// Distinct values tracked per column while sampling.
const MAX_DISTINCT: usize = 1 << 16;

/// FNV-1a: a small, fixed hash for counting distinct sampled values.
fn fnv1a(v: &[u8]) -> u64 {
    v.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Running evidence for one column.
#[derive(Clone, Debug, Default)]
struct Evidence {
    values: usize,
    /// How often each distinct value (by hash) was seen (at most `MAX_DISTINCT` values).
    distinct: HashMap<u64, u32>,
    /// The values read as a number, else a date, else a timestamp (at most `MAX_DISTINCT`).
    points: Vec<f64>,
    example: Option<(String, SampleLocation)>,
    /// For each candidate, the first value that ruled it out.
    ruled_out: [Option<(String, SampleLocation)>; 5],
}

impl Evidence {
    fn observe(&mut self, v: &[u8], at: SampleLocation) {
        self.values += 1;
        let h = fnv1a(v);
        if let Some(n) = self.distinct.get_mut(&h) {
            *n += 1;
        } else if self.distinct.len() < MAX_DISTINCT {
            self.distinct.insert(h, 1);
        }
        if self.points.len() < MAX_DISTINCT {
            let point = crate::parse::parse_f64(v)
                .or_else(|| crate::temporal::parse_date(v).map(f64::from))
                .or_else(|| crate::temporal::parse_timestamp(v).map(|t| t as f64));
            self.points.extend(point);
        }
        let text = || {
            String::from_utf8_lossy(v)
                .chars()
                .take(40)
                .collect::<String>()
        };
        if self.example.is_none() {
            self.example = Some((text(), at));
        }
        for (i, ty) in CANDIDATES.iter().enumerate() {
            if self.ruled_out[i].is_none() && !fits(*ty, v) {
                self.ruled_out[i] = Some((text(), at));
            }
        }
    }

    fn decide(&self) -> (DataType, String) {
        if self.values == 0 {
            return (DataType::Utf8, "no non-null values in the sample".into());
        }
        let pick = (0..CANDIDATES.len()).find(|&i| self.ruled_out[i].is_none());
        let (ex, ex_at) = self.example.clone().expect("values > 0");
        match pick {
            Some(i) => {
                let ty = CANDIDATES[i];
                let mut reason = format!(
                    "all {} sampled values fit, e.g. {ex:?} at {ex_at}",
                    self.values
                );
                if i > 0 {
                    if let Some((v, at)) = &self.ruled_out[i - 1] {
                        reason.push_str(&format!(
                            "; not {} because of {v:?} at {at}",
                            CANDIDATES[i - 1]
                        ));
                    }
                }
                (ty, reason)
            }
            None => {
                let why: Vec<String> = CANDIDATES
                    .iter()
                    .zip(&self.ruled_out)
                    .filter_map(|(ty, r)| {
                        r.as_ref()
                            .map(|(v, at)| format!("not {ty} because of {v:?} at {at}"))
                    })
                    .collect();
                (DataType::Utf8, why.join("; "))
            }
        }
    }
}

/// Samples the data part of `input` (from byte `data_start`, line `data_line`) and proposes a
/// type per column; `options` gives the null strings and the sample size.
pub(crate) fn infer_types(
    input: &CsvInput,
    dialect: &Dialect,
    names: &[String],
    options: &CsvOptions,
    data_start: u64,
    data_line: u64,
) -> Result<(Vec<DataType>, InferenceReport), CsvError> {
    let (null_values, allow_quoted_nulls, infer_rows) = (
        &options.null_values,
        options.allow_quoted_nulls,
        options.infer_rows,
    );
    const HEAD_BYTES: usize = 1 << 20;
    const CHUNK_BYTES: usize = 64 << 10;
    let total = input.len()?;
    let mut evidence = vec![Evidence::default(); names.len()];
    let nulls: Vec<&[u8]> = null_values.iter().map(|s| s.as_bytes()).collect();
    let mut sampled = 0;
    let mut sampled_bytes = 0;

    let head = input.read_at(data_start, HEAD_BYTES)?;
    let head_is_all = data_start + head.len() as u64 >= total;
    let (n, head_end) = sample(
        &head,
        data_line,
        None,
        head_is_all,
        dialect,
        infer_rows,
        &nulls,
        allow_quoted_nulls,
        &mut evidence,
    )
    .expect("the head sample is never discarded");
    sampled += n;
    sampled_bytes += head_end;

    let covered = data_start + head_end as u64;
    if covered < total && total - covered > CHUNK_BYTES as u64 {
        let span = total - covered;
        let offsets = [
            covered + span / 4,
            covered + span / 2,
            covered + span * 3 / 4,
            total - CHUNK_BYTES as u64,
        ];
        for off in offsets {
            let chunk = input.read_at(off, CHUNK_BYTES)?;
            let Some(nl) = memchr::memchr(b'\n', &chunk) else {
                continue;
            };
            let body = &chunk[nl + 1..];
            let at_eof = off + chunk.len() as u64 >= total;
            let mut trial = evidence.clone();
            let start = off + nl as u64 + 1;
            // A chunk is small (64 KiB): all its records are used.
            if let Some((n, used)) = sample(
                body,
                0,
                Some(start),
                at_eof,
                dialect,
                usize::MAX,
                &nulls,
                allow_quoted_nulls,
                &mut trial,
            ) {
                evidence = trial;
                sampled += n;
                sampled_bytes += used;
            }
        }
    }

    let mut types = Vec::with_capacity(names.len());
    let mut report = InferenceReport {
        columns: Vec::new(),
        sampled_records: sampled,
        sampled_bytes,
    };
    for (name, ev) in names.iter().zip(&evidence) {
        let (ty, reason) = ev.decide();
        types.push(ty);
        report.columns.push(ColumnInference {
            name: name.clone(),
            data_type: ty,
            reason,
            sample_counts: crate::stats::SampleCounts::from_frequencies(
                ev.distinct.values().copied(),
            ),
            sample_points: match ty {
                DataType::Int32
                | DataType::Int64
                | DataType::Float64
                | DataType::Date32
                | DataType::Timestamp
                    if ev.points.len() == ev.values =>
                {
                    let mut points = ev.points.clone();
                    points.sort_by(f64::total_cmp);
                    points
                }
                _ => Vec::new(),
            },
        });
    }
    Ok((types, report))
}

/// Feeds up to `limit` complete records of `buf` into `evidence`; returns (records, bytes
/// consumed). For a mid-file chunk (`chunk_offset` set) returns `None` if the chunk does not
/// tokenize cleanly with the expected field count.
#[allow(clippy::too_many_arguments)]
fn sample(
    buf: &[u8],
    first_line: u64,
    chunk_offset: Option<u64>,
    at_eof: bool,
    dialect: &Dialect,
    limit: usize,
    nulls: &[&[u8]],
    quoted_nulls: bool,
    evidence: &mut [Evidence],
) -> Option<(usize, usize)> {
    let mut tok = Tokenizer::new(buf, first_line, dialect);
    let mut fields = Vec::new();
    let mut scratch = Vec::new();
    let quote = dialect.quote.unwrap_or(b'"');
    let mut count = 0;
    let mut consumed = 0;
    while count < limit {
        let rec = match tok.next_record(&mut fields) {
            Ok(Some(r)) if r.terminated || at_eof => r,
            Ok(_) => break,
            Err(_) if chunk_offset.is_some() => return None,
            // Syntax errors in the head are reported by the decoder with their position.
            Err(_) => break,
        };
        // Ragged records in the head are the decoder's to report (inference uses the fields
        // that are there); in a mid-file chunk they mean the chunk started inside a record.
        if fields.len() != evidence.len() && chunk_offset.is_some() {
            return None;
        }
        let at = match chunk_offset {
            Some(off) => SampleLocation::NearByte(off + rec.start as u64),
            None => SampleLocation::Line(rec.line),
        };
        for (ev, span) in evidence.iter_mut().zip(fields.iter()) {
            let v = field_bytes(buf, *span, quote, &mut scratch);
            if (!span.quoted || quoted_nulls) && nulls.contains(&v) {
                continue;
            }
            ev.observe(v, at);
        }
        count += 1;
        consumed = tok.position();
    }
    Some((count, consumed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn infer(text: &str) -> (Vec<DataType>, InferenceReport) {
        let input = CsvInput::bytes("t.csv", text.as_bytes().to_vec());
        let d = Dialect {
            delimiter: b',',
            quote: Some(b'"'),
            comment: None,
        };
        let names: Vec<String> = (0..text.lines().next().unwrap().split(',').count())
            .map(|i| format!("c{i}"))
            .collect();
        let opts = CsvOptions {
            infer_rows: 1000,
            ..CsvOptions::default()
        };
        infer_types(&input, &d, &names, &opts, 0, 1).unwrap()
    }

    #[test]
    fn picks_narrowest_type_and_explains() {
        let (types, report) = infer("1,1.5,2024-02-28,true,x,\n2,3,2024-02-29,false,7,\n");
        assert_eq!(
            types,
            vec![
                DataType::Int64,
                DataType::Float64,
                DataType::Date32,
                DataType::Boolean,
                DataType::Utf8,
                DataType::Utf8
            ]
        );
        assert!(
            report.columns[1]
                .reason
                .contains("not Int64 because of \"1.5\" at line 1"),
            "{}",
            report.columns[1].reason
        );
        assert!(
            report.columns[4].reason.contains("\"x\" at line 1"),
            "{}",
            report.columns[4].reason
        );
        assert!(report.columns[5].reason.contains("no non-null"));
    }

    #[test]
    fn samples_past_the_head() {
        let mut text = String::new();
        for i in 0..60_000 {
            text.push_str(&format!("{i},{}\n", i % 7));
        }
        text.push_str("12.5,oops\n");
        let (types, report) = infer(&text);
        // The head holds ~60k records but only infer_rows (1000) are read from it; the tail
        // chunk catches the late values.
        assert_eq!(types, vec![DataType::Float64, DataType::Utf8]);
        assert!(
            report.columns[1].reason.contains("near byte"),
            "{}",
            report.columns[1].reason
        );
    }
}
