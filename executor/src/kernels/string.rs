//! String functions over UTF-8 columns. Lengths and positions count characters, not bytes.

use morsel_storage::{Buffer, Column, PrimitiveColumn, Utf8Builder, Utf8Column};

use crate::error::{ExecError, ExecResult};

pub fn as_utf8(c: &Column) -> ExecResult<&Utf8Column> {
    c.as_utf8()
        .ok_or_else(|| ExecError::Internal(format!("expected VARCHAR, got {}", c.data_type())))
}

/// Applies `f` to every valid string.
pub fn map_str(c: &Utf8Column, f: impl Fn(&str, &mut String)) -> Column {
    let mut b = Utf8Builder::with_capacity(c.len(), c.data().len());
    let mut buf = String::new();
    for i in 0..c.len() {
        match c.get(i) {
            None => b.push_null(),
            Some(s) => {
                buf.clear();
                f(s, &mut buf);
                b.push(&buf);
            }
        }
    }
    Column::Utf8(b.finish())
}

pub fn lower(c: &Utf8Column) -> Column {
    map_str(c, |s, out| out.push_str(&s.to_lowercase()))
}

pub fn upper(c: &Utf8Column) -> Column {
    map_str(c, |s, out| out.push_str(&s.to_uppercase()))
}

pub fn trim(c: &Utf8Column) -> Column {
    map_str(c, |s, out| out.push_str(s.trim_matches(' ')))
}

pub fn length(c: &Utf8Column) -> Column {
    let values = (0..c.len())
        .map(|i| c.value(i).chars().count() as i64)
        .collect();
    Column::Int64(PrimitiveColumn::new(
        Buffer::from_vec(values),
        c.validity().cloned(),
    ))
}

/// `substring(s, start[, len])`: 1-based start; a start before 1 eats into `len` (SQL rule).
pub fn substring(
    s: &Utf8Column,
    start: &PrimitiveColumn<i64>,
    len: Option<&PrimitiveColumn<i64>>,
) -> ExecResult<Column> {
    let mut b = Utf8Builder::with_capacity(s.len(), s.data().len());
    for i in 0..s.len() {
        let (Some(text), Some(st)) = (s.get(i), start.get(i)) else {
            b.push_null();
            continue;
        };
        let end = match len {
            None => i64::MAX,
            Some(l) => match l.get(i) {
                None => {
                    b.push_null();
                    continue;
                }
                Some(n) if n < 0 => {
                    return Err(ExecError::Unsupported(
                        "substring with a negative length".into(),
                    ))
                }
                Some(n) => st.saturating_add(n),
            },
        };
        let from = st.max(1);
        let out: String = text
            .chars()
            .enumerate()
            .filter(|(k, _)| {
                let pos = *k as i64 + 1;
                pos >= from && pos < end
            })
            .map(|(_, ch)| ch)
            .collect();
        b.push(&out);
    }
    Ok(Column::Utf8(b.finish()))
}

/// `a || b`: NULL if either side is NULL.
pub fn concat(a: &Utf8Column, b: &Utf8Column) -> Column {
    let mut out = Utf8Builder::with_capacity(a.len(), a.data().len() + b.data().len());
    for i in 0..a.len() {
        match (a.get(i), b.get(i)) {
            (Some(x), Some(y)) => {
                let mut s = String::with_capacity(x.len() + y.len());
                s.push_str(x);
                s.push_str(y);
                out.push(&s);
            }
            _ => out.push_null(),
        }
    }
    Column::Utf8(out.finish())
}
