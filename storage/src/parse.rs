//! Text to value parsing shared by the CSV decoder, schema inference and scalar casts.
//!
//! Integers are parsed by hand with overflow checks; floats use the standard library's parser,
//! which is correctly rounded. Nothing here accepts surrounding whitespace.

/// Parses an optionally signed decimal integer that fits in `i64`.
#[inline]
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + d as u64;
    }
    if neg {
        if v <= i64::MAX as u64 + 1 {
            Some((v as i64).wrapping_neg())
        } else {
            None
        }
    } else {
        i64::try_from(v).ok()
    }
}

pub fn parse_i32(s: &[u8]) -> Option<i32> {
    parse_i64(s).and_then(|v| i32::try_from(v).ok())
}

/// Parses a float, correctly rounded. Accepts `inf`, `-inf`, `infinity` and `nan` in any case.
#[inline]
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(s).ok()?;
    text.parse::<f64>().ok()
}

/// True when `s` looks like a plain decimal number (digits, one point, optional exponent):
/// schema inference only proposes Float64 for such text, so a name like "NaN" stays a string.
pub fn looks_numeric(s: &[u8]) -> bool {
    let s = match s.first() {
        Some(b'-') | Some(b'+') => &s[1..],
        _ => s,
    };
    let mut seen_digit = false;
    let mut i = 0;
    while i < s.len() && (s[i].is_ascii_digit() || s[i] == b'.') {
        seen_digit |= s[i].is_ascii_digit();
        i += 1;
    }
    if i < s.len() && (s[i] == b'e' || s[i] == b'E') {
        i += 1;
        if i < s.len() && (s[i] == b'-' || s[i] == b'+') {
            i += 1;
        }
        let start = i;
        while i < s.len() && s[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    seen_digit && i == s.len()
}

/// `true` / `false`, case-insensitive.
pub fn parse_bool(s: &[u8]) -> Option<bool> {
    if s.eq_ignore_ascii_case(b"true") {
        Some(true)
    } else if s.eq_ignore_ascii_case(b"false") {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"99999999999999999999"), None);
        assert_eq!(parse_i64(b"+12"), Some(12));
        for bad in ["", "-", "1.0", " 1", "1e3", "2024-02-28", "١"] {
            assert_eq!(parse_i64(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn floats_are_exact_and_dates_are_not_numbers() {
        assert_eq!(parse_f64(b"0.1"), Some(0.1));
        assert_eq!(
            parse_f64(b"2.2250738585072011e-308"),
            Some(2.225_073_858_507_201e-308)
        );
        assert_eq!(parse_f64(b"2024-02-28"), None);
        assert!(looks_numeric(b"-1.5e10"));
        assert!(!looks_numeric(b"NaN"));
        assert!(!looks_numeric(b"."));
        assert!(!looks_numeric(b"1e"));
        assert!(!looks_numeric(b"2024-02-28"));
    }
}
