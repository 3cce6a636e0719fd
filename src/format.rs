//! Rendering results for people (aligned tables) and programs (JSON). CSV output lives in
//! storage's writer. Floats print in shortest round-trip form everywhere.

use morsel_storage::csv::format_float;
use morsel_storage::{Batch, Column, DataType, ScalarValue, Schema};

fn cell(c: &Column, row: usize) -> String {
    match c.scalar_at(row) {
        ScalarValue::Null => "NULL".to_string(),
        ScalarValue::Float64(v) => format_float(v),
        v => v.to_string(),
    }
}

/// An aligned text table with a header, numbers right-aligned, and a row count.
pub fn render_table(schema: &Schema, batches: &[Batch]) -> String {
    let header: Vec<String> = schema.fields.iter().map(|f| f.name.clone()).collect();
    let types: Vec<String> = schema
        .fields
        .iter()
        .map(|f| f.data_type.sql_name().to_lowercase())
        .collect();
    let mut rows: Vec<Vec<String>> = Vec::new();
    for b in batches {
        for r in 0..b.num_rows() {
            rows.push(b.columns().iter().map(|c| cell(c, r)).collect());
        }
    }
    let n = header.len();
    let mut width: Vec<usize> = (0..n)
        .map(|i| header[i].chars().count().max(types[i].chars().count()))
        .collect();
    for row in &rows {
        for (i, v) in row.iter().enumerate() {
            width[i] = width[i].max(v.chars().count());
        }
    }
    let line = |l: char, m: char, r: char| {
        let mut s = String::new();
        s.push(l);
        for (i, w) in width.iter().enumerate() {
            s.push_str(&"─".repeat(w + 2));
            s.push(if i + 1 == n { r } else { m });
        }
        s.push('\n');
        s
    };
    let numeric: Vec<bool> = schema
        .fields
        .iter()
        .map(|f| f.data_type.is_numeric())
        .collect();
    let fmt_row = |cells: &[String], right: &[bool]| {
        let mut s = String::from("│");
        for (i, v) in cells.iter().enumerate() {
            let pad = width[i] - v.chars().count();
            if right[i] {
                s.push_str(&format!(" {}{} │", " ".repeat(pad), v));
            } else {
                s.push_str(&format!(" {}{} │", v, " ".repeat(pad)));
            }
        }
        s.push('\n');
        s
    };
    if n == 0 {
        return format!("({} rows, no columns)\n", rows.len());
    }
    let left = vec![false; n];
    let mut out = line('┌', '┬', '┐');
    out.push_str(&fmt_row(&header, &left));
    out.push_str(&fmt_row(&types, &left));
    out.push_str(&line('├', '┼', '┤'));
    for row in &rows {
        out.push_str(&fmt_row(row, &numeric));
    }
    out.push_str(&line('└', '┴', '┘'));
    out.push_str(&format!(
        "{} row{}\n",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" }
    ));
    out
}

/// `s` as a JSON string literal.
pub(crate) fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON array with one object per row. Non-finite floats, which JSON cannot hold, are
/// written as the strings "NaN", "inf" and "-inf".
pub fn render_json(schema: &Schema, batches: &[Batch]) -> String {
    let mut out = String::from("[");
    let mut first = true;
    for b in batches {
        for r in 0..b.num_rows() {
            out.push_str(if first { "\n  {" } else { ",\n  {" });
            first = false;
            for (i, (f, c)) in schema.fields.iter().zip(b.columns()).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&json_string(&f.name));
                out.push_str(": ");
                let v = c.scalar_at(r);
                out.push_str(&match (&v, f.data_type) {
                    (ScalarValue::Null, _) => "null".to_string(),
                    (ScalarValue::Float64(x), _) if x.is_finite() => format_float(*x),
                    (ScalarValue::Float64(x), _) => json_string(&format_float(*x)),
                    (_, DataType::Boolean | DataType::Int32 | DataType::Int64) => v.to_string(),
                    (v, _) => json_string(&v.to_string()),
                });
            }
            out.push('}');
        }
    }
    out.push_str(if first { "]\n" } else { "\n]\n" });
    out
}
