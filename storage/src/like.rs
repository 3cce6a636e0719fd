//! LIKE / ILIKE matching. `%` matches any run of characters, `_` exactly one character.
//! Common shapes (`abc`, `abc%`, `%abc`, `%abc%`) take fast paths, and so does any pattern
//! without `_` (`%special%requests%`): its literal pieces are found left to right by substring
//! search, which is exact for `%`-only patterns. Everything else uses a greedy matcher that
//! backtracks only to the last `%`, so it runs in linear time for patterns with at most one
//! `%` and never worse than O(pattern x text).

use crate::{Bitmap, BooleanColumn, StorageError, StorageResult, Utf8Column};
use memchr::memmem::Finder;

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Lit(char),
    One,
    Any,
}

#[derive(Clone, Debug)]
pub struct LikeMatcher {
    tokens: Vec<Token>,
    fast: Fast,
    case_insensitive: bool,
    /// A literal run every matching text contains, searched for in a column's bytes at once
    /// (case-sensitive patterns other than `abc`, `abc%` and `%abc`, whose rows are cheap to
    /// test one by one).
    scan: Option<Box<Finder<'static>>>,
}

/// A floating run this short is too common for a whole-buffer search to skip many rows
/// (unless finding it is the whole match).
const SCAN_MIN_RUN: usize = 3;

#[derive(Clone, Debug)]
enum Fast {
    Exact(String),
    Prefix(String),
    Suffix(String),
    /// A vectorized substring search, built once per pattern.
    Contains(Box<Finder<'static>>),
    /// Literal pieces separated by `%`, the first anchored at the start and the last at the
    /// end when the pattern does not begin or end with `%`.
    Pieces {
        anchored_start: bool,
        anchored_end: bool,
        pieces: Vec<Finder<'static>>,
    },
    General,
}

impl LikeMatcher {
    /// Compiles `pattern`; with `escape`, the character after it is literal (an escape at
    /// the end of the pattern is an error, as in DuckDB).
    pub fn new(pattern: &str, case_insensitive: bool, escape: Option<char>) -> StorageResult<Self> {
        let pattern = if case_insensitive {
            pattern.to_lowercase()
        } else {
            pattern.to_string()
        };
        let mut tokens: Vec<Token> = Vec::with_capacity(pattern.len());
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            tokens.push(match c {
                c if Some(c) == escape => match chars.next() {
                    Some(next) => Token::Lit(next),
                    None => return Err(StorageError::LikeEscapeAtEnd(pattern)),
                },
                '%' => Token::Any,
                '_' => Token::One,
                c => Token::Lit(c),
            });
        }
        let lits = |t: &[Token]| -> Option<String> {
            t.iter()
                .map(|x| {
                    if let Token::Lit(c) = x {
                        Some(*c)
                    } else {
                        None
                    }
                })
                .collect()
        };
        let n = tokens.len();
        let fast = if let Some(s) = lits(&tokens) {
            Fast::Exact(s)
        } else if n >= 2
            && tokens[0] == Token::Any
            && tokens[n - 1] == Token::Any
            && lits(&tokens[1..n - 1]).is_some()
        {
            let s = lits(&tokens[1..n - 1]).unwrap_or_default();
            Fast::Contains(Box::new(Finder::new(s.as_bytes()).into_owned()))
        } else if n >= 1 && tokens[n - 1] == Token::Any && lits(&tokens[..n - 1]).is_some() {
            Fast::Prefix(lits(&tokens[..n - 1]).unwrap_or_default())
        } else if n >= 1 && tokens[0] == Token::Any && lits(&tokens[1..]).is_some() {
            Fast::Suffix(lits(&tokens[1..]).unwrap_or_default())
        } else if !tokens.contains(&Token::One) {
            let pieces: Vec<Finder<'static>> = tokens
                .split(|t| *t == Token::Any)
                .filter(|run| !run.is_empty())
                .map(|run| Finder::new(lits(run).unwrap_or_default().as_bytes()).into_owned())
                .collect();
            Fast::Pieces {
                anchored_start: tokens.first() != Some(&Token::Any),
                anchored_end: tokens.last() != Some(&Token::Any),
                pieces,
            }
        } else {
            Fast::General
        };
        let scan = match &fast {
            _ if case_insensitive => None,
            Fast::Contains(f) => (!f.needle().is_empty()).then(|| f.clone()),
            Fast::Pieces { .. } | Fast::General => tokens
                .split(|t| matches!(t, Token::Any | Token::One))
                .filter_map(lits)
                .max_by_key(String::len)
                .filter(|run| run.len() >= SCAN_MIN_RUN)
                .map(|run| Box::new(Finder::new(run.as_bytes()).into_owned())),
            Fast::Exact(_) | Fast::Prefix(_) | Fast::Suffix(_) => None,
        };
        Ok(Self {
            tokens,
            fast,
            case_insensitive,
            scan,
        })
    }

    pub fn matches(&self, text: &str) -> bool {
        let lowered;
        let text = if self.case_insensitive {
            lowered = text.to_lowercase();
            lowered.as_str()
        } else {
            text
        };
        match &self.fast {
            Fast::Exact(s) => text == s,
            Fast::Prefix(s) => text.starts_with(s.as_str()),
            Fast::Suffix(s) => text.ends_with(s.as_str()),
            Fast::Contains(f) => f.find(text.as_bytes()).is_some(),
            Fast::Pieces {
                anchored_start,
                anchored_end,
                pieces,
            } => pieces_match(text, *anchored_start, *anchored_end, pieces),
            Fast::General => self.general(text),
        }
    }

    fn general(&self, text: &str) -> bool {
        let t: Vec<char> = text.chars().collect();
        let p = &self.tokens;
        let (mut ti, mut pi) = (0, 0);
        let mut backtrack: Option<(usize, usize)> = None;
        while ti < t.len() {
            match p.get(pi) {
                Some(Token::Any) => {
                    backtrack = Some((pi, ti));
                    pi += 1;
                }
                Some(Token::One) => {
                    pi += 1;
                    ti += 1;
                }
                Some(Token::Lit(c)) if *c == t[ti] => {
                    pi += 1;
                    ti += 1;
                }
                _ => match backtrack {
                    Some((bp, bt)) => {
                        pi = bp + 1;
                        ti = bt + 1;
                        backtrack = Some((bp, bt + 1));
                    }
                    None => return false,
                },
            }
        }
        p[pi..].iter().all(|x| *x == Token::Any)
    }

    pub fn eval(&self, c: &Utf8Column, negated: bool) -> BooleanColumn {
        let values = match &self.scan {
            Some(run) => self.scan_column(c, run, negated),
            None => Bitmap::from_fn(c.len(), |i| self.matches(c.value(i)) != negated),
        };
        BooleanColumn::new(values, c.validity().cloned())
    }

    /// Each row's match (`!= negated`), finding `run` in the column's bytes from one row's
    /// start to the next occurrence: the row holding it is tested (or, for `%run%`, matches),
    /// and the search goes on from the next row's start. A row the run is not in cannot
    /// match. An occurrence straddling two rows belongs to neither, and no occurrence in the
    /// first can start later (it would straddle too).
    fn scan_column(&self, c: &Utf8Column, run: &Finder<'static>, negated: bool) -> Bitmap {
        let (offsets, data, n) = (c.offsets(), c.data(), c.len());
        let mut hits = vec![0u64; n.div_ceil(64)];
        let end = offsets[n] as usize;
        let (mut row, mut pos) = (0, offsets[0] as usize);
        while row < n {
            let Some(i) = run.find(&data[pos..end]) else {
                break;
            };
            let at = pos + i;
            row = row_holding(offsets, row, at);
            let row_end = offsets[row + 1] as usize;
            let inside = at + run.needle().len() <= row_end;
            if inside && (matches!(self.fast, Fast::Contains(_)) || self.matches(c.value(row))) {
                hits[row / 64] |= 1 << (row % 64);
            }
            (row, pos) = (row + 1, row_end);
        }
        let flip = if negated { u64::MAX } else { 0 };
        Bitmap::from_word_fn(n, |w| hits[w] ^ flip)
    }
}

/// The row whose bytes hold byte `at`: the last row from `from` on that starts at or before
/// it (`offsets[from] <= at < offsets[len]`), found by galloping forward from `from` (hits
/// on nearby rows cost a few steps, distant ones a binary search).
fn row_holding(offsets: &[i64], from: usize, at: usize) -> usize {
    let n = offsets.len() - 1;
    let at = at as i64;
    let (mut lo, mut step) = (from, 1);
    while lo + step < n && offsets[lo + step] <= at {
        lo += step;
        step *= 2;
    }
    let hi = (lo + step).min(n);
    lo + offsets[lo + 1..hi].partition_point(|&o| o <= at)
}

/// `text` against `%`-separated literal pieces: the anchored ends first, then each middle
/// piece at its leftmost occurrence after the previous one (leftmost is always safe when
/// only `%` separates the pieces). Bytes suffice: a piece is whole characters, so it can
/// only match at character boundaries.
fn pieces_match(
    text: &str,
    anchored_start: bool,
    anchored_end: bool,
    pieces: &[Finder<'static>],
) -> bool {
    let (mut rest, mut pieces) = (text.as_bytes(), pieces);
    if anchored_start {
        let Some((first, more)) = pieces.split_first() else {
            return rest.is_empty();
        };
        let Some(r) = rest.strip_prefix(first.needle()) else {
            return false;
        };
        (rest, pieces) = (r, more);
    }
    if anchored_end {
        let Some((last, more)) = pieces.split_last() else {
            return true;
        };
        let Some(r) = rest.strip_suffix(last.needle()) else {
            return false;
        };
        (rest, pieces) = (r, more);
    }
    for p in pieces {
        match p.find(rest) {
            Some(i) => rest = &rest[i + p.needle().len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::LikeMatcher;

    #[test]
    fn patterns() {
        let cases = [
            ("abc", "abc", true),
            ("abc", "abd", false),
            ("a%", "abc", true),
            ("%c", "abc", true),
            ("%b%", "abc", true),
            ("a_c", "abc", true),
            ("a_c", "abbc", false),
            ("%a%b%c%", "xaxbxcx", true),
            ("%a%b%c%", "xaxcxbx", false),
            ("_", "é", true),
            (
                "%special%requests%",
                "blithely special foxes requests",
                true,
            ),
            ("", "", true),
            ("%", "", true),
            ("a%b", "ab", true),
            ("a%b", "a", false),
            ("a%a", "a", false),
            ("a%a", "aa", true),
            ("a%b%c", "abc", true),
            ("a%b%c", "acb", false),
            ("a%%c", "ac", true),
            ("%ab%ab", "xabab", true),
            ("%ab%ab", "xab", false),
            ("ab%", "a", false),
            ("%special%requests%", "requests special", false),
        ];
        for (p, t, want) in cases {
            assert_eq!(
                LikeMatcher::new(p, false, None).unwrap().matches(t),
                want,
                "{t:?} LIKE {p:?}"
            );
        }
        assert!(LikeMatcher::new("ABC%", true, None)
            .unwrap()
            .matches("abcdef"));
    }

    #[test]
    fn fast_paths_agree_with_the_general_matcher() {
        let pattern_chars = ['a', 'b', '%', '_', 'é'];
        let text_chars = ['a', 'b', 'é'];
        let mut rng = crate::test_rng::Rng(0x1234_5678_9ABC_DEF1);
        let mut next = move |n: usize| rng.below(n as u64) as usize;
        for _ in 0..20_000 {
            let p: String = (0..next(7)).map(|_| pattern_chars[next(5)]).collect();
            let t: String = (0..next(9)).map(|_| text_chars[next(3)]).collect();
            let m = LikeMatcher::new(&p, false, None).unwrap();
            assert_eq!(m.matches(&t), m.general(&t), "{t:?} LIKE {p:?}");
        }
    }

    /// Whole-column matching (searching the byte buffer for a floating run) agrees with
    /// matching row by row: runs straddling two rows, empty rows, NULLs, windows that start
    /// part way into the buffer, negation.
    #[test]
    fn column_scan_agrees_with_row_by_row() {
        use crate::Utf8Column;
        let pattern_chars = ['a', 'b', '%', '_', 'é'];
        let text_chars = ['a', 'b', 'é'];
        let mut rng = crate::test_rng::Rng(0x0DDB_A11C_0FFE_E123);
        let mut next = move |n: usize| rng.below(n as u64) as usize;
        let mut scanned = 0;
        for _ in 0..3_000 {
            let p: String = (0..1 + next(8)).map(|_| pattern_chars[next(5)]).collect();
            let m = LikeMatcher::new(&p, false, None).unwrap();
            scanned += usize::from(m.scan.is_some());
            let rows: Vec<Option<String>> = (0..next(40))
                .map(|_| {
                    let t: String = (0..next(7)).map(|_| text_chars[next(3)]).collect();
                    (next(8) != 0).then_some(t)
                })
                .collect();
            let col = Utf8Column::from_strs(rows.iter().map(Option::as_deref));
            let skip = next(rows.len() + 1);
            let col = col.slice(skip, rows.len() - skip);
            for negated in [false, true] {
                let got = m.eval(&col, negated);
                for i in 0..col.len() {
                    if col.is_valid(i) {
                        let want = m.matches(col.value(i)) != negated;
                        assert_eq!(got.values().get(i), want, "{:?} LIKE {p:?}", col.value(i));
                    }
                }
            }
        }
        assert!(
            scanned > 300,
            "only {scanned} patterns took the column scan"
        );
    }
}
