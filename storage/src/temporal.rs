//! Calendar arithmetic for Date32 (days since the epoch) and Timestamp (microseconds).
//!
//! Uses the proleptic Gregorian calendar. Parsing is strict: `YYYY-MM-DD` with a real day of
//! the month, optionally followed (for timestamps) by `T` or a space and `HH:MM:SS[.ffffff]`.

pub const MICROS_PER_DAY: i64 = 86_400_000_000;

const fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

pub fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(y) => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 of a civil date (era-based algorithm, valid for all i32 years).
pub const fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date (year, month, day) of a day number.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    (y, m, d)
}

fn digits(b: &[u8]) -> Option<u32> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0u32, |acc, d| acc * 10 + (d - b'0') as u32))
}

/// The first year of [`YEAR_STARTS`].
const TABLE_FIRST_YEAR: u32 = 1900;

/// Days since the epoch of January 1st of the years 1900..2156, where nearly every date in
/// data falls: a lookup instead of the calendar arithmetic when parsing.
static YEAR_STARTS: [i32; 256] = {
    let mut t = [0i32; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = days_from_civil(TABLE_FIRST_YEAR as i64 + i as i64, 1, 1) as i32;
        i += 1;
    }
    t
};

/// Days before the first of each month in a common year.
const DAYS_BEFORE_MONTH: [u16; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];

/// Parses `YYYY-MM-DD` into days since the epoch.
#[inline]
pub fn parse_date(s: &[u8]) -> Option<i32> {
    let s: &[u8; 10] = s.try_into().ok()?;
    if s[4] != b'-' || s[7] != b'-' {
        return None;
    }
    let digit = |i: usize| u32::from(s[i].wrapping_sub(b'0'));
    let ds = [
        digit(0),
        digit(1),
        digit(2),
        digit(3),
        digit(5),
        digit(6),
        digit(8),
        digit(9),
    ];
    if ds.iter().any(|&d| d > 9) {
        return None;
    }
    let y = ds[0] * 1000 + ds[1] * 100 + ds[2] * 10 + ds[3];
    let m = ds[4] * 10 + ds[5];
    let d = ds[6] * 10 + ds[7];
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(i64::from(y), m) {
        return None;
    }
    match YEAR_STARTS.get(y.wrapping_sub(TABLE_FIRST_YEAR) as usize) {
        Some(&start) => {
            let leap_day = i32::from(m > 2 && is_leap(i64::from(y)));
            Some(start + i32::from(DAYS_BEFORE_MONTH[m as usize - 1]) + leap_day + d as i32 - 1)
        }
        None => i32::try_from(days_from_civil(i64::from(y), m, d)).ok(),
    }
}

/// Parses `YYYY-MM-DD[( |T)HH:MM:SS[.f{1,9}]]` into microseconds since the epoch.
pub fn parse_timestamp(s: &[u8]) -> Option<i64> {
    if s.len() < 10 {
        return None;
    }
    let days = parse_date(&s[..10])? as i64;
    let rest = &s[10..];
    if rest.is_empty() {
        return Some(days * MICROS_PER_DAY);
    }
    if rest.len() < 9 || !(rest[0] == b' ' || rest[0] == b'T') || rest[3] != b':' || rest[6] != b':'
    {
        return None;
    }
    let h = digits(&rest[1..3])? as i64;
    let mi = digits(&rest[4..6])? as i64;
    let sec = digits(&rest[7..9])? as i64;
    if h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    let mut micros = 0i64;
    let frac = &rest[9..];
    if !frac.is_empty() {
        if frac[0] != b'.' || frac.len() < 2 || frac.len() > 10 {
            return None;
        }
        let f = &frac[1..];
        digits(f)?;
        for i in 0..6 {
            micros = micros * 10 + f.get(i).map_or(0, |d| (d - b'0') as i64);
        }
    }
    Some(days * MICROS_PER_DAY + ((h * 60 + mi) * 60 + sec) * 1_000_000 + micros)
}

pub fn format_date(days: i32) -> String {
    let (y, m, d) = civil_from_days(days as i64);
    if (0..=9999).contains(&y) {
        format!("{y:04}-{m:02}-{d:02}")
    } else {
        format!("{y}-{m:02}-{d:02}")
    }
}

pub fn format_timestamp(micros: i64) -> String {
    let days = micros.div_euclid(MICROS_PER_DAY);
    let rem = micros.rem_euclid(MICROS_PER_DAY);
    let secs = rem / 1_000_000;
    let frac = rem % 1_000_000;
    let date = format_date(days as i32);
    let (h, mi, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    if frac == 0 {
        format!("{date} {h:02}:{mi:02}:{s:02}")
    } else {
        format!("{date} {h:02}:{mi:02}:{s:02}.{frac:06}")
    }
}

/// Adds `months` to a date, clamping the day to the target month's length
/// (2024-01-31 + 1 month = 2024-02-29), as DuckDB and PostgreSQL do.
pub fn add_months(days: i32, months: i32) -> Option<i32> {
    let (y, m, d) = civil_from_days(days as i64);
    let total = y * 12 + (m as i64 - 1) + months as i64;
    let (ny, nm) = (total.div_euclid(12), (total.rem_euclid(12) + 1) as u32);
    let nd = d.min(days_in_month(ny, nm));
    i32::try_from(days_from_civil(ny, nm, nd)).ok()
}

/// A date part for EXTRACT / DATE_PART / DATE_TRUNC / DATE_DIFF.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DatePart {
    Year,
    Quarter,
    Month,
    /// ISO 8601 week (weeks start on Monday; week 1 holds the year's first Thursday).
    Week,
    Day,
    /// Day of the week, Sunday = 0 (DuckDB's and PostgreSQL's `dow`).
    DayOfWeek,
    /// Day of the year, 1-based.
    DayOfYear,
    Hour,
    Minute,
    Second,
}

impl DatePart {
    /// Parses a part name as SQL spells it (`'year'`, `'years'`, `'dow'`, ...).
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "year" | "years" | "y" | "yr" | "yrs" => DatePart::Year,
            "quarter" | "quarters" => DatePart::Quarter,
            "month" | "months" | "mon" | "mons" => DatePart::Month,
            "week" | "weeks" | "w" => DatePart::Week,
            "day" | "days" | "d" => DatePart::Day,
            "dow" | "dayofweek" | "weekday" => DatePart::DayOfWeek,
            "doy" | "dayofyear" => DatePart::DayOfYear,
            "hour" | "hours" | "h" => DatePart::Hour,
            "minute" | "minutes" | "m" | "min" | "mins" => DatePart::Minute,
            "second" | "seconds" | "s" | "sec" | "secs" => DatePart::Second,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            DatePart::Year => "year",
            DatePart::Quarter => "quarter",
            DatePart::Month => "month",
            DatePart::Week => "week",
            DatePart::Day => "day",
            DatePart::DayOfWeek => "dow",
            DatePart::DayOfYear => "doy",
            DatePart::Hour => "hour",
            DatePart::Minute => "minute",
            DatePart::Second => "second",
        }
    }

    /// The part of a date (time-of-day parts are 0).
    pub fn of_days(self, days: i32) -> i64 {
        let days = days as i64;
        let (y, m, d) = civil_from_days(days);
        match self {
            DatePart::Year => y,
            DatePart::Quarter => (m as i64 - 1) / 3 + 1,
            DatePart::Month => m as i64,
            DatePart::Day => d as i64,
            DatePart::DayOfWeek => (days + 4).rem_euclid(7),
            DatePart::DayOfYear => days - days_from_civil(y, 1, 1) + 1,
            DatePart::Week => {
                // The ISO week is numbered within the year of its Thursday.
                let thursday = days - (days + 3).rem_euclid(7) + 3;
                let (ty, _, _) = civil_from_days(thursday);
                (thursday - days_from_civil(ty, 1, 1)) / 7 + 1
            }
            DatePart::Hour | DatePart::Minute | DatePart::Second => 0,
        }
    }

    /// The part of a timestamp (microseconds since the epoch).
    pub fn of_micros(self, micros: i64) -> i64 {
        let in_day = micros.rem_euclid(MICROS_PER_DAY);
        match self {
            DatePart::Hour => in_day / 3_600_000_000,
            DatePart::Minute => in_day / 60_000_000 % 60,
            DatePart::Second => in_day / 1_000_000 % 60,
            _ => self.of_days(micros.div_euclid(MICROS_PER_DAY) as i32),
        }
    }

    /// `date_trunc`: the timestamp at the start of the part containing `micros`.
    pub fn truncate(self, micros: i64) -> i64 {
        let days = micros.div_euclid(MICROS_PER_DAY);
        let (y, m, _) = civil_from_days(days);
        let day_start = |d: i64| d * MICROS_PER_DAY;
        match self {
            DatePart::Year => day_start(days_from_civil(y, 1, 1)),
            DatePart::Quarter => day_start(days_from_civil(y, (m - 1) / 3 * 3 + 1, 1)),
            DatePart::Month => day_start(days_from_civil(y, m, 1)),
            DatePart::Week => day_start(days - (days + 3).rem_euclid(7)),
            DatePart::Day | DatePart::DayOfWeek | DatePart::DayOfYear => day_start(days),
            DatePart::Hour => micros - micros.rem_euclid(3_600_000_000),
            DatePart::Minute => micros - micros.rem_euclid(60_000_000),
            DatePart::Second => micros - micros.rem_euclid(1_000_000),
        }
    }

    /// `date_diff`: how many part boundaries lie between `a` and `b` (negative if b < a).
    pub fn diff(self, a: i64, b: i64) -> i64 {
        let months = |x: i64| {
            let (y, m, _) = civil_from_days(x.div_euclid(MICROS_PER_DAY));
            y * 12 + m as i64 - 1
        };
        match self {
            DatePart::Year => DatePart::Year.of_micros(b) - DatePart::Year.of_micros(a),
            DatePart::Quarter => months(b).div_euclid(3) - months(a).div_euclid(3),
            DatePart::Month => months(b) - months(a),
            DatePart::Week => (self.truncate(b) - self.truncate(a)) / (7 * MICROS_PER_DAY),
            DatePart::Day | DatePart::DayOfWeek | DatePart::DayOfYear => {
                b.div_euclid(MICROS_PER_DAY) - a.div_euclid(MICROS_PER_DAY)
            }
            DatePart::Hour => b.div_euclid(3_600_000_000) - a.div_euclid(3_600_000_000),
            DatePart::Minute => b.div_euclid(60_000_000) - a.div_euclid(60_000_000),
            DatePart::Second => b.div_euclid(1_000_000) - a.div_euclid(1_000_000),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsed_dates_match_the_calendar_arithmetic_in_and_out_of_the_year_table() {
        for day in days_from_civil(1, 1, 1)..=days_from_civil(9999, 12, 31) {
            let (y, m, d) = civil_from_days(day);
            let text = format!("{y:04}-{m:02}-{d:02}");
            assert_eq!(parse_date(text.as_bytes()), Some(day as i32), "{text}");
        }
        for bad in [
            "1999-02-29",
            "2000-02-30",
            "1900-02-29",
            "2023-13-01",
            "2023-00-10",
            "2023-01-00",
            "2023-1-01",
            "2023/01/01",
            "2023-01-0a",
            " 2023-01-01",
            "+023-01-01",
            "2023-04-31",
        ] {
            assert_eq!(parse_date(bad.as_bytes()), None, "{bad}");
        }
        assert_eq!(
            parse_date(b"2000-02-29"),
            Some(days_from_civil(2000, 2, 29) as i32)
        );
    }

    /// Every byte of a date replaced by each of the 256 values: a date only where a digit
    /// stays a digit and a dash a dash, and the day is real.
    #[test]
    fn every_single_byte_change_is_checked() {
        for base in ["2023-06-15", "1996-02-29", "2100-12-31", "0000-01-01"] {
            for pos in 0..10 {
                for b in 0..=255u8 {
                    let mut t = base.as_bytes().to_vec();
                    t[pos] = b;
                    let shaped = t.iter().enumerate().all(|(i, &c)| match i {
                        4 | 7 => c == b'-',
                        _ => c.is_ascii_digit(),
                    });
                    let expect = shaped.then(|| {
                        let text = std::str::from_utf8(&t).unwrap();
                        let y: i64 = text[0..4].parse().unwrap();
                        let m: u32 = text[5..7].parse().unwrap();
                        let d: u32 = text[8..10].parse().unwrap();
                        let real = (1..=12).contains(&m) && d >= 1 && d <= days_in_month(y, m);
                        real.then(|| days_from_civil(y, m, d) as i32)
                    });
                    assert_eq!(parse_date(&t), expect.flatten(), "{t:?}");
                }
            }
        }
    }

    #[test]
    fn round_trips_dates() {
        for s in [
            "1970-01-01",
            "1998-12-01",
            "2000-02-29",
            "1600-03-01",
            "0001-01-01",
            "9999-12-31",
        ] {
            let d = parse_date(s.as_bytes()).unwrap();
            assert_eq!(format_date(d), s);
        }
        assert_eq!(parse_date(b"1970-01-02"), Some(1));
        assert_eq!(parse_date(b"1969-12-31"), Some(-1));
        for bad in [
            "2023-02-29",
            "2024-13-01",
            "2024-00-10",
            "2024-1-01",
            "20240101",
            "2024-02-28x",
        ] {
            assert_eq!(parse_date(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn timestamps() {
        let t = parse_timestamp(b"2024-03-01 12:34:56.5").unwrap();
        assert_eq!(format_timestamp(t), "2024-03-01 12:34:56.500000");
        assert_eq!(
            parse_timestamp(b"2024-03-01T00:00:01"),
            Some(19783 * MICROS_PER_DAY + 1_000_000)
        );
        assert_eq!(format_timestamp(-1), "1969-12-31 23:59:59.999999");
        assert!(parse_timestamp(b"2024-03-01 24:00:00").is_none());
    }

    #[test]
    fn month_arithmetic_clamps() {
        let d = parse_date(b"2024-01-31").unwrap();
        assert_eq!(format_date(add_months(d, 1).unwrap()), "2024-02-29");
        assert_eq!(format_date(add_months(d, -13).unwrap()), "2022-12-31");
        assert_eq!(DatePart::Month.of_days(d), 1);
    }
}
