//! String functions of several arguments: replace, split_part, left/right, position,
//! starts_with, concat, ltrim/rtrim and regexp_matches. Positions and lengths count
//! characters, like DuckDB. A NULL argument gives NULL, except in `concat`, which skips it.

use std::collections::HashMap;

use morsel_storage::{BooleanColumn, Buffer, Column, PrimitiveColumn, Utf8Builder, Utf8Column};
use regex::Regex;

use super::int64_arg;
use super::string::{as_utf8, map_str};
use crate::error::{ExecError, ExecResult};

/// Builds a string column row by row from `f` (None = NULL).
fn rows_to_utf8(rows: usize, mut f: impl FnMut(usize, &mut String) -> bool) -> Column {
    let mut b = Utf8Builder::with_capacity(rows, rows * 8);
    let mut buf = String::new();
    for i in 0..rows {
        buf.clear();
        if f(i, &mut buf) {
            b.push(&buf);
        } else {
            b.push_null();
        }
    }
    Column::Utf8(b.finish())
}

pub fn ltrim(c: &Column) -> ExecResult<Column> {
    Ok(map_str(as_utf8(c)?, |s, out| {
        out.push_str(s.trim_start_matches(' '))
    }))
}

pub fn rtrim(c: &Column) -> ExecResult<Column> {
    Ok(map_str(as_utf8(c)?, |s, out| {
        out.push_str(s.trim_end_matches(' '))
    }))
}

/// `replace(s, from, to)`: every occurrence; an empty `from` leaves `s` as it is.
pub fn replace(s: &Column, from: &Column, to: &Column) -> ExecResult<Column> {
    let (s, from, to) = (as_utf8(s)?, as_utf8(from)?, as_utf8(to)?);
    Ok(rows_to_utf8(s.len(), |i, out| {
        match (s.get(i), from.get(i), to.get(i)) {
            (Some(x), Some(""), Some(_)) => out.push_str(x),
            (Some(x), Some(f), Some(t)) => out.push_str(&x.replace(f, t)),
            _ => return false,
        }
        true
    }))
}

/// `split_part(s, delim, n)`: the n-th field (1-based; negative counts from the end), or ''
/// when there is no such field. An empty delimiter splits into characters.
pub fn split_part(s: &Column, delim: &Column, n: &Column) -> ExecResult<Column> {
    let (s, delim, n) = (as_utf8(s)?, as_utf8(delim)?, int64_arg(n)?);
    Ok(rows_to_utf8(s.len(), |i, out| {
        let (Some(x), Some(d), Some(k)) = (s.get(i), delim.get(i), n.get(i)) else {
            return false;
        };
        let parts: Vec<&str> = if d.is_empty() {
            x.char_indices()
                .map(|(p, ch)| &x[p..p + ch.len_utf8()])
                .collect()
        } else {
            x.split(d).collect()
        };
        let idx = if k > 0 {
            Some(k as usize - 1)
        } else if k < 0 {
            parts.len().checked_sub(k.unsigned_abs() as usize)
        } else {
            None
        };
        if let Some(p) = idx.and_then(|j| parts.get(j)) {
            out.push_str(p);
        }
        true
    }))
}

/// `left(s, n)` (`right` with `from_right`): the first (last) n characters; a negative n
/// drops that many from the other end.
pub fn left_right(s: &Column, n: &Column, from_right: bool) -> ExecResult<Column> {
    let (s, n) = (as_utf8(s)?, int64_arg(n)?);
    Ok(rows_to_utf8(s.len(), |i, out| {
        let (Some(x), Some(k)) = (s.get(i), n.get(i)) else {
            return false;
        };
        let len = x.chars().count() as i64;
        let take = if k >= 0 { k.min(len) } else { (len + k).max(0) };
        let skip = if from_right { len - take } else { 0 };
        out.extend(x.chars().skip(skip as usize).take(take as usize));
        true
    }))
}

/// `strpos(haystack, needle)`: the 1-based character position of the first match, 0 if none.
pub fn position(haystack: &Column, needle: &Column) -> ExecResult<Column> {
    let (h, n) = (as_utf8(haystack)?, as_utf8(needle)?);
    let mut values = Vec::with_capacity(h.len());
    let mut valid = Vec::with_capacity(h.len());
    for i in 0..h.len() {
        match (h.get(i), n.get(i)) {
            (Some(x), Some(y)) => {
                values.push(x.find(y).map_or(0, |b| x[..b].chars().count() as i64 + 1));
                valid.push(true);
            }
            _ => {
                values.push(0);
                valid.push(false);
            }
        }
    }
    let validity = valid
        .iter()
        .any(|v| !v)
        .then(|| morsel_storage::Bitmap::from_fn(valid.len(), |i| valid[i]));
    Ok(Column::Int64(PrimitiveColumn::new(
        Buffer::from_vec(values),
        validity,
    )))
}

/// Applies a string predicate to pairs of values.
fn predicate2(
    a: &Column,
    b: &Column,
    f: impl Fn(&str, &str) -> ExecResult<bool>,
) -> ExecResult<Column> {
    let (a, b) = (as_utf8(a)?, as_utf8(b)?);
    let mut out = Vec::with_capacity(a.len());
    for i in 0..a.len() {
        out.push(match (a.get(i), b.get(i)) {
            (Some(x), Some(y)) => Some(f(x, y)?),
            _ => None,
        });
    }
    Ok(Column::Boolean(BooleanColumn::from_options(out)))
}

pub fn starts_with(s: &Column, prefix: &Column) -> ExecResult<Column> {
    predicate2(s, prefix, |x, p| Ok(x.starts_with(p)))
}

/// `regexp_matches(s, pattern)`: whether `pattern` matches anywhere in `s`. Each distinct
/// pattern is compiled once per batch.
pub fn regexp_matches(s: &Column, pattern: &Column) -> ExecResult<Column> {
    let mut compiled: HashMap<String, Regex> = HashMap::new();
    let mut get = |p: &str| -> ExecResult<Regex> {
        if let Some(r) = compiled.get(p) {
            return Ok(r.clone());
        }
        let r = Regex::new(p).map_err(|e| {
            ExecError::InvalidArgument(format!("invalid regular expression {p:?}: {e}"))
        })?;
        compiled.insert(p.to_string(), r.clone());
        Ok(r)
    };
    let (sc, pc) = (as_utf8(s)?, as_utf8(pattern)?);
    let mut out = Vec::with_capacity(sc.len());
    for i in 0..sc.len() {
        out.push(match (sc.get(i), pc.get(i)) {
            (Some(x), Some(p)) => Some(get(p)?.is_match(x)),
            _ => None,
        });
    }
    Ok(Column::Boolean(BooleanColumn::from_options(out)))
}

/// `concat(a, b, ...)`: NULL arguments are skipped; the result is never NULL.
pub fn concat(args: &[Column]) -> ExecResult<Column> {
    let cols = args
        .iter()
        .map(as_utf8)
        .collect::<ExecResult<Vec<&Utf8Column>>>()?;
    let rows = cols.first().map_or(0, |c| c.len());
    Ok(rows_to_utf8(rows, |i, out| {
        for c in &cols {
            if let Some(v) = c.get(i) {
                out.push_str(v);
            }
        }
        true
    }))
}
