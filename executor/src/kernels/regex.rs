//! Regular-expression functions: `regexp_matches`, `regexp_replace`, `regexp_extract`, with
//! DuckDB's option letters (`g` every match, `i` / `c` case-insensitive / -sensitive, `l`
//! the pattern is a literal string, `s` / `m` / `n` / `p` whether `.` matches a newline)
//! and its replacement syntax (`\1` is the first group, `\0` the whole match, `\\` a
//! backslash). The syntax of patterns is the `regex` crate's, which like DuckDB's RE2 has
//! no backreferences or lookaround and runs in linear time. Each distinct pattern is
//! compiled once per batch.

use std::collections::HashMap;

use morsel_storage::{BooleanColumn, Column, Utf8Column};
use regex::{Regex, RegexBuilder};

use super::int64_arg;
use super::string::as_utf8;
use crate::error::{ExecError, ExecResult};

/// What a call's option letters ask for.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
struct Options {
    global: bool,
    case_insensitive: bool,
    literal: bool,
    dot_matches_newline: bool,
}

impl Options {
    fn parse(letters: Option<&str>) -> ExecResult<Options> {
        let mut o = Options::default();
        let Some(letters) = letters else {
            return Err(ExecError::InvalidArgument(
                "the options of a regular expression function must not be NULL".into(),
            ));
        };
        for ch in letters.chars() {
            match ch {
                'g' => o.global = true,
                'i' => o.case_insensitive = true,
                'c' => o.case_insensitive = false,
                'l' => o.literal = true,
                's' => o.dot_matches_newline = true,
                'm' | 'n' | 'p' => o.dot_matches_newline = false,
                other => {
                    return Err(ExecError::InvalidArgument(format!(
                        "unknown regular expression option '{other}' (options are g, i, c, l, s, m, n, p)"
                    )))
                }
            }
        }
        Ok(o)
    }
}

/// The patterns one call compiled, by text and options.
#[derive(Default)]
struct Compiled(HashMap<(String, Options), Regex>);

impl Compiled {
    fn get(&mut self, pattern: &str, o: Options) -> ExecResult<&Regex> {
        let key = (pattern.to_string(), o);
        if !self.0.contains_key(&key) {
            let text = match o.literal {
                true => regex::escape(pattern),
                false => pattern.to_string(),
            };
            let r = RegexBuilder::new(&text)
                .case_insensitive(o.case_insensitive)
                .dot_matches_new_line(o.dot_matches_newline)
                .build()
                .map_err(|e| {
                    ExecError::InvalidArgument(format!(
                        "invalid regular expression {pattern:?}: {e}"
                    ))
                })?;
            self.0.insert(key.clone(), r);
        }
        Ok(&self.0[&key])
    }
}

/// The options column's value at row `i` (none given: the defaults).
fn options_at(options: Option<&Utf8Column>, i: usize) -> ExecResult<Options> {
    match options {
        None => Ok(Options::default()),
        Some(c) => Options::parse(c.get(i)),
    }
}

/// `regexp_matches(s, pattern[, options])`: whether `pattern` matches anywhere in `s`.
pub fn regexp_matches(
    s: &Column,
    pattern: &Column,
    options: Option<&Column>,
) -> ExecResult<Column> {
    let (sc, pc) = (as_utf8(s)?, as_utf8(pattern)?);
    let oc = options.map(as_utf8).transpose()?;
    let mut compiled = Compiled::default();
    let mut out = Vec::with_capacity(sc.len());
    for i in 0..sc.len() {
        out.push(match (sc.get(i), pc.get(i)) {
            (Some(x), Some(p)) => Some(compiled.get(p, options_at(oc, i)?)?.is_match(x)),
            _ => None,
        });
    }
    Ok(Column::Boolean(BooleanColumn::from_options(out)))
}

/// A DuckDB replacement string (`\1`, `\0`, `\\`) in the `regex` crate's syntax (`${1}`,
/// with `$` itself written `$$`).
fn replacement(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' => match chars.peek().copied() {
                Some(d) if d.is_ascii_digit() => {
                    chars.next();
                    out.push_str("${");
                    out.push(d);
                    out.push('}');
                }
                Some('\\') => {
                    chars.next();
                    out.push('\\');
                }
                _ => out.push('\\'),
            },
            '$' => out.push_str("$$"),
            c => out.push(c),
        }
    }
    out
}

/// `regexp_replace(s, pattern, replacement[, options])`: the first match replaced (every
/// match with option `g`).
pub fn regexp_replace(
    s: &Column,
    pattern: &Column,
    with: &Column,
    options: Option<&Column>,
) -> ExecResult<Column> {
    let (sc, pc, wc) = (as_utf8(s)?, as_utf8(pattern)?, as_utf8(with)?);
    let oc = options.map(as_utf8).transpose()?;
    let mut compiled = Compiled::default();
    let mut b = morsel_storage::Utf8Builder::with_capacity(sc.len(), sc.data().len());
    for i in 0..sc.len() {
        let (Some(x), Some(p), Some(w)) = (sc.get(i), pc.get(i), wc.get(i)) else {
            b.push_null();
            continue;
        };
        let o = options_at(oc, i)?;
        let r = compiled.get(p, o)?;
        let w = match o.literal {
            true => w.replace('$', "$$"),
            false => replacement(w),
        };
        let limit = if o.global { 0 } else { 1 };
        b.push(&r.replacen(x, limit, w.as_str()));
    }
    Ok(Column::Utf8(b.finish()))
}

/// `regexp_extract(s, pattern[, group])`: the text of group `group` (0, the whole match, by
/// default) in the first match; '' where nothing matches or the group took no part.
pub fn regexp_extract(s: &Column, pattern: &Column, group: Option<&Column>) -> ExecResult<Column> {
    let (sc, pc) = (as_utf8(s)?, as_utf8(pattern)?);
    let gc = group.map(int64_arg).transpose()?;
    let mut compiled = Compiled::default();
    let mut b = morsel_storage::Utf8Builder::with_capacity(sc.len(), sc.len() * 4);
    for i in 0..sc.len() {
        let (Some(x), Some(p)) = (sc.get(i), pc.get(i)) else {
            b.push_null();
            continue;
        };
        let g = match gc {
            None => Some(0),
            Some(c) => c.get(i),
        };
        // DuckDB answers '' for a NULL group.
        let Some(g) = g else {
            b.push("");
            continue;
        };
        if !(0..=9).contains(&g) {
            return Err(ExecError::InvalidArgument(format!(
                "regexp_extract(): the group index must be between 0 and 9, got {g}"
            )));
        }
        let r = compiled.get(p, Options::default())?;
        let text = r
            .captures(x)
            .and_then(|c| c.get(g as usize))
            .map_or("", |m| m.as_str());
        b.push(text);
    }
    Ok(Column::Utf8(b.finish()))
}

#[cfg(test)]
mod tests {
    use super::replacement;

    #[test]
    fn replacements_in_duckdb_syntax() {
        assert_eq!(replacement(r"[\1]"), "[${1}]");
        assert_eq!(replacement(r"\0\\$1"), "${0}\\$$1");
        assert_eq!(replacement(r"a\"), "a\\");
    }
}
