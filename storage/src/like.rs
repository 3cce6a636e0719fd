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
}

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
        Ok(Self {
            tokens,
            fast,
            case_insensitive,
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
        let values = Bitmap::from_fn(c.len(), |i| self.matches(c.value(i)) != negated);
        BooleanColumn::new(values, c.validity().cloned())
    }
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
}
