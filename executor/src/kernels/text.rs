//! String functions of several arguments: replace, split_part, left/right, position,
//! starts_with / ends_with / contains, concat / concat_ws, ltrim/rtrim (of spaces or of a
//! set of characters), lpad/rpad, repeat, reverse, ascii/chr and strlen. Positions and
//! lengths count characters, like DuckDB. A NULL argument gives NULL, except in `concat`
//! and `concat_ws`, which skip NULL values.

use morsel_storage::{BooleanColumn, Buffer, Column, PrimitiveColumn, Utf8Builder, Utf8Column};

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

/// `trim(s, chars)` (`ltrim`, `rtrim` with one side): drops the characters of `chars` from
/// the ends of `s`.
pub fn trim_chars(s: &Column, chars: &Column, left: bool, right: bool) -> ExecResult<Column> {
    let (s, chars) = (as_utf8(s)?, as_utf8(chars)?);
    Ok(rows_to_utf8(s.len(), |i, out| {
        let (Some(x), Some(set)) = (s.get(i), chars.get(i)) else {
            return false;
        };
        let drop = |c: char| set.contains(c);
        let mut t = x;
        if left {
            t = t.trim_start_matches(drop);
        }
        if right {
            t = t.trim_end_matches(drop);
        }
        out.push_str(t);
        true
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

pub fn ends_with(s: &Column, suffix: &Column) -> ExecResult<Column> {
    predicate2(s, suffix, |x, p| Ok(x.ends_with(p)))
}

pub fn contains(s: &Column, needle: &Column) -> ExecResult<Column> {
    predicate2(s, needle, |x, p| Ok(x.contains(p)))
}

/// The most bytes one string value may hold, as in DuckDB: a result longer than this (from
/// `repeat` or the pads) is an error rather than an allocation the process cannot survive.
const MAX_STRING_BYTES: usize = 1 << 32;

fn too_long(func: &str) -> ExecError {
    ExecError::InvalidArgument(format!(
        "{func}() would build a string of more than {MAX_STRING_BYTES} bytes"
    ))
}

/// `lpad(s, n, pad)` (`rpad` with `right`): `s` cut to n characters, or filled to n with
/// copies of `pad` on that side; an empty `pad` that would have to fill is an error.
pub fn pad(s: &Column, n: &Column, fill: &Column, right: bool) -> ExecResult<Column> {
    let (s, n, fill) = (as_utf8(s)?, int64_arg(n)?, as_utf8(fill)?);
    let func = if right { "rpad" } else { "lpad" };
    let mut failed = None;
    let out = rows_to_utf8(s.len(), |i, out| {
        let (Some(x), Some(k), Some(p)) = (s.get(i), n.get(i), fill.get(i)) else {
            return false;
        };
        let want = usize::try_from(k.max(0)).unwrap_or(usize::MAX);
        let len = x.chars().count();
        if want <= len {
            out.extend(x.chars().take(want));
            return true;
        }
        let missing = want - len;
        let bytes = p.len().saturating_mul(missing);
        if p.is_empty() || bytes.saturating_add(x.len()) > MAX_STRING_BYTES {
            failed = Some(match p.is_empty() {
                true => ExecError::InvalidArgument(format!(
                    "{func}() has no padding characters to fill with"
                )),
                false => too_long(func),
            });
            return false;
        }
        if right {
            out.push_str(x);
        }
        out.extend(p.chars().cycle().take(missing));
        if !right {
            out.push_str(x);
        }
        true
    });
    failed.map_or(Ok(out), Err)
}

/// `repeat(s, n)`: '' for n <= 0.
pub fn repeat(s: &Column, n: &Column) -> ExecResult<Column> {
    let (s, n) = (as_utf8(s)?, int64_arg(n)?);
    let mut failed = false;
    let out = rows_to_utf8(s.len(), |i, out| {
        let (Some(x), Some(k)) = (s.get(i), n.get(i)) else {
            return false;
        };
        let k = usize::try_from(k.max(0)).unwrap_or(usize::MAX);
        if x.len().saturating_mul(k) > MAX_STRING_BYTES {
            failed = true;
            return false;
        }
        for _ in 0..k {
            out.push_str(x);
        }
        true
    });
    match failed {
        true => Err(too_long("repeat")),
        false => Ok(out),
    }
}

pub fn reverse(c: &Column) -> ExecResult<Column> {
    Ok(map_str(as_utf8(c)?, |s, out| out.extend(s.chars().rev())))
}

/// `ascii(s)`: the code point of the first character; 0 for ''.
pub fn ascii(c: &Column) -> ExecResult<Column> {
    let c = as_utf8(c)?;
    Ok(Column::Int64(PrimitiveColumn::from_options(
        (0..c.len()).map(|i| c.get(i).map(|s| s.chars().next().map_or(0, |ch| ch as i64))),
    )))
}

/// `strlen(s)`: the length in bytes.
pub fn octet_length(c: &Column) -> ExecResult<Column> {
    let c = as_utf8(c)?;
    Ok(Column::Int64(PrimitiveColumn::from_options(
        (0..c.len()).map(|i| c.get(i).map(|s| s.len() as i64)),
    )))
}

/// `chr(n)`: the character of code point n; one that is not a character is an error.
pub fn chr(n: &Column) -> ExecResult<Column> {
    let n = int64_arg(n)?;
    let mut bad = None;
    let out = rows_to_utf8(n.len(), |i, out| {
        let Some(k) = n.get(i) else {
            return false;
        };
        match u32::try_from(k).ok().and_then(char::from_u32) {
            Some(ch) => out.push(ch),
            None => bad = Some(k),
        }
        true
    });
    match bad {
        Some(k) => Err(ExecError::InvalidArgument(format!(
            "chr(): {k} is not a Unicode code point"
        ))),
        None => Ok(out),
    }
}

/// `concat_ws(sep, a, ...)`: the non-NULL values joined by `sep`; NULL where `sep` is.
pub fn concat_ws(args: &[Column]) -> ExecResult<Column> {
    let cols = args
        .iter()
        .map(as_utf8)
        .collect::<ExecResult<Vec<&Utf8Column>>>()?;
    let Some((sep, values)) = cols.split_first() else {
        return Err(ExecError::Internal("concat_ws() without arguments".into()));
    };
    Ok(rows_to_utf8(sep.len(), |i, out| {
        let Some(sep) = sep.get(i) else {
            return false;
        };
        let mut first = true;
        for v in values.iter().filter_map(|c| c.get(i)) {
            if !first {
                out.push_str(sep);
            }
            out.push_str(v);
            first = false;
        }
        true
    }))
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
