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
    if let Some(v) = parse_plain_decimal(s) {
        return Some(v);
    }
    let text = std::str::from_utf8(s).ok()?;
    text.parse::<f64>().ok()
}

/// Clinger's fast path for `[+-]digits[.digits]`: when the digits, read as an integer `m`,
/// fit in 53 bits and there are at most 22 of them after the point, `m` and `10^frac` are
/// both exact doubles, so the one IEEE division `m / 10^frac` is the correctly rounded
/// value. Anything else (exponents, long mantissas, `inf`) is left to the full parser.
#[inline]
fn parse_plain_decimal(s: &[u8]) -> Option<f64> {
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ];
    let (neg, s) = match s.first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (mut m, mut digits, mut frac, mut point) = (0u64, 0usize, 0usize, false);
    for &b in s {
        if b == b'.' && !point {
            point = true;
            continue;
        }
        let d = b.wrapping_sub(b'0');
        if d > 9 || digits == 19 {
            return None;
        }
        m = m * 10 + u64::from(d);
        digits += 1;
        frac += usize::from(point);
    }
    if digits == 0 || m > 1 << 53 || frac > 22 {
        return None;
    }
    let v = m as f64 / POW10[frac];
    Some(if neg { -v } else { v })
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

    /// The fast path agrees with the standard library's correctly rounded parser, bit for
    /// bit, on plain decimals of every shape it takes and the ones it must pass on.
    #[test]
    fn plain_decimal_fast_path_matches_the_full_parser() {
        let mut rng = crate::test_rng::Rng(0x2545_f491_4f6c_dd1d);
        let mut next = move || rng.next_u64();
        let mut texts: Vec<String> = [
            "0",
            "-0",
            "-0.0",
            "0.5",
            ".5",
            "5.",
            "+1.25",
            "9007199254740993",
            "9007199254740992",
            "123456789012345678",
            "1234567890123456789",
            "0.1000000000000000055511151231257827",
            "1.7976931348623157",
            "00001.2300",
            "1..2",
            "-",
            ".",
            "1.2.3",
            "",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for _ in 0..20_000 {
            let int = next() % 1_000_000_000_000;
            let frac_digits = (next() % 24) as usize;
            let frac = next() % 10u64.pow(frac_digits.min(19) as u32).max(1);
            let sign = if next() % 2 == 0 { "-" } else { "" };
            texts.push(format!("{sign}{int}.{frac:0frac_digits$}"));
        }
        for t in &texts {
            let fast = parse_plain_decimal(t.as_bytes());
            let full = t.parse::<f64>().ok();
            if let Some(v) = fast {
                assert_eq!(Some(v.to_bits()), full.map(f64::to_bits), "{t}");
            }
            assert_eq!(
                parse_f64(t.as_bytes()).map(f64::to_bits),
                full.map(f64::to_bits),
                "{t}"
            );
        }
    }
}
