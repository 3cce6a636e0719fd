//! Writes batches as CSV: RFC 4180 quoting, NULL as an empty field, an empty string as `""`,
//! and floats in shortest round-trip form (never rounded).

use std::io::{self, Write};

use crate::batch::Batch;
use crate::column::Column;
use crate::datatype::Schema;
use crate::temporal;

#[derive(Clone, Debug)]
pub struct CsvWriteOptions {
    pub delimiter: u8,
    pub header: bool,
}

impl Default for CsvWriteOptions {
    fn default() -> Self {
        Self {
            delimiter: b',',
            header: true,
        }
    }
}

/// Shortest text that parses back to the same f64 (`inf`, `-inf`, `NaN` for specials).
pub fn format_float(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        format!("{v}")
    }
}

fn write_text(w: &mut impl Write, s: &str, delimiter: u8) -> io::Result<()> {
    let needs_quotes = s.is_empty()
        || s.bytes()
            .any(|b| b == delimiter || b == b'"' || b == b'\n' || b == b'\r');
    if !needs_quotes {
        return w.write_all(s.as_bytes());
    }
    w.write_all(b"\"")?;
    w.write_all(s.replace('"', "\"\"").as_bytes())?;
    w.write_all(b"\"")
}

fn write_cell(w: &mut impl Write, col: &Column, row: usize, delimiter: u8) -> io::Result<()> {
    if !col.is_valid(row) {
        return Ok(());
    }
    match col {
        Column::Boolean(c) => write!(w, "{}", c.values().get(row)),
        Column::Int32(c) => write!(w, "{}", c.values()[row]),
        Column::Int64(c) => write!(w, "{}", c.values()[row]),
        Column::Float64(c) => w.write_all(format_float(c.values()[row]).as_bytes()),
        Column::Utf8(c) => write_text(w, c.value(row), delimiter),
        Column::Date32(c) => w.write_all(temporal::format_date(c.values()[row]).as_bytes()),
        Column::Timestamp(c) => w.write_all(temporal::format_timestamp(c.values()[row]).as_bytes()),
    }
}

pub fn write_csv(
    w: &mut impl Write,
    schema: &Schema,
    batches: &[Batch],
    opts: &CsvWriteOptions,
) -> io::Result<()> {
    let d = [opts.delimiter];
    if opts.header {
        for (i, f) in schema.fields.iter().enumerate() {
            if i > 0 {
                w.write_all(&d)?;
            }
            write_text(w, &f.name, opts.delimiter)?;
        }
        w.write_all(b"\n")?;
    }
    for batch in batches {
        for row in 0..batch.num_rows() {
            for (i, col) in batch.columns().iter().enumerate() {
                if i > 0 {
                    w.write_all(&d)?;
                }
                write_cell(w, col, row, opts.delimiter)?;
            }
            w.write_all(b"\n")?;
        }
    }
    Ok(())
}
