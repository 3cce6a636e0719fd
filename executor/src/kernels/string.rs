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

/// The characters of `text` at 0-based positions `from..to` (`from <= to`; past the end:
/// as many as there are). ASCII text is cut at those byte positions.
fn chars_between(text: &str, from: u64, to: u64) -> &str {
    let len = text.len() as u64;
    if text.is_ascii() {
        return &text[from.min(len) as usize..to.min(len) as usize];
    }
    let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    let mut bounds = text.char_indices().map(|(b, _)| b).chain([text.len()]);
    let Some(start) = bounds.nth(count(from)) else {
        return "";
    };
    let end = match to - from {
        0 => start,
        n => bounds.nth(count(n - 1)).unwrap_or(text.len()),
    };
    &text[start..end]
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
        // As DuckDB: a negative start counts from the end (-1 is the last character), and
        // a negative length takes the characters before the start.
        let st = if st < 0 {
            (text.chars().count() as i64)
                .saturating_add(st)
                .saturating_add(1)
        } else {
            st
        };
        let (from, end) = match len {
            None => (st, i64::MAX),
            Some(l) => match l.get(i) {
                None => {
                    b.push_null();
                    continue;
                }
                Some(n) if n < 0 => (st.saturating_add(n), st),
                Some(n) => (st, st.saturating_add(n)),
            },
        };
        // Characters at 1-based positions `from..end`, sliced out of the text in place.
        let from = from.max(1);
        b.push(if end <= from {
            ""
        } else {
            chars_between(text, (from - 1) as u64, (end - 1) as u64)
        });
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The characters at SQL positions `start..start + len`, picked one by one.
    fn by_chars(text: &str, start: i64, len: Option<i64>) -> String {
        let start = if start < 0 {
            text.chars().count() as i64 + start + 1
        } else {
            start
        };
        let (start, end) = match len {
            None => (start, i64::MAX),
            Some(n) if n < 0 => (start + n, start),
            Some(n) => (start, start + n),
        };
        let pos = |k: usize| k as i64 + 1;
        let picked = text.chars().enumerate();
        picked
            .filter(|&(k, _)| pos(k) >= start.max(1) && pos(k) < end)
            .map(|(_, c)| c)
            .collect()
    }

    /// Slicing in place equals picking characters one by one: ASCII and multi-byte text,
    /// starts before 1 (eating into the length), past the end, zero lengths, NULLs.
    #[test]
    fn substring_slices_the_characters_it_would_pick() {
        let texts = [
            Some("hello"),
            Some(""),
            Some("héllo wörld"),
            Some("日本語"),
            None,
            Some("a"),
        ];
        let col = Utf8Column::from_strs(texts);
        for start in -3..14i64 {
            for len in [
                None,
                Some(-7),
                Some(-2),
                Some(0),
                Some(1),
                Some(2),
                Some(5),
                Some(40),
            ] {
                let starts = PrimitiveColumn::from_options(vec![Some(start); texts.len()]);
                let lens = len.map(|n| PrimitiveColumn::from_options(vec![Some(n); texts.len()]));
                let got = substring(&col, &starts, lens.as_ref()).unwrap();
                let got = got.as_utf8().unwrap();
                for (i, t) in texts.iter().enumerate() {
                    let want = t.map(|t| by_chars(t, start, len));
                    assert_eq!(
                        got.get(i),
                        want.as_deref(),
                        "{t:?} from {start} for {len:?}"
                    );
                }
            }
        }
    }
}
