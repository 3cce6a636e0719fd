//! Calendar functions over DATE and TIMESTAMP columns: `strftime` and its inverse
//! `strptime`, `make_date`, `last_day`,
//! `dayname` / `monthname`, `epoch`, and interval arithmetic on timestamps (months keeping
//! the time of day, microseconds). Results that leave the representable range are errors,
//! never wrapped values.

use morsel_storage::temporal::{
    add_months, civil_from_days, days_from_civil, days_in_month, MICROS_PER_DAY,
};
use morsel_storage::{Buffer, Column, DataType, PrimitiveBuilder, PrimitiveColumn, Utf8Builder};

use super::int64_arg;
use super::string::as_utf8;
use super::temporal::timestamps;
use crate::error::{ExecError, ExecResult};

const DAY_NAMES: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

fn dates(c: &Column) -> ExecResult<&PrimitiveColumn<i32>> {
    match c {
        Column::Date32(d) => Ok(d),
        other => Err(ExecError::Internal(format!(
            "expected DATE, got {}",
            other.data_type()
        ))),
    }
}

fn overflow() -> ExecError {
    ExecError::Overflow {
        op: "date arithmetic",
        ty: DataType::Timestamp,
    }
}

/// A timestamp's calendar fields.
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    /// Days since 1970-01-01 (a Thursday).
    days: i64,
    micros_of_day: i64,
}

impl Civil {
    fn of(micros: i64) -> Civil {
        let days = micros.div_euclid(MICROS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            days,
            micros_of_day: micros.rem_euclid(MICROS_PER_DAY),
        }
    }

    /// 0 = Sunday.
    fn weekday(&self) -> usize {
        (self.days + 4).rem_euclid(7) as usize
    }

    /// 1-based.
    fn day_of_year(&self) -> i64 {
        self.days - days_from_civil(self.year, 1, 1) + 1
    }
}

/// Writes `t` by `format` (DuckDB's strftime specifiers) into `out`.
fn write_strftime(t: &Civil, format: &str, out: &mut String) -> ExecResult<()> {
    use std::fmt::Write;
    let secs = t.micros_of_day / 1_000_000;
    let (h, mi, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    let frac = t.micros_of_day % 1_000_000;
    let h12 = if h % 12 == 0 { 12 } else { h % 12 };
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = chars.next();
        let unpadded = spec == Some('-');
        if unpadded {
            spec = chars.next();
        }
        let num = |out: &mut String, v: i64, width: usize| {
            let _ = match unpadded {
                true => write!(out, "{v}"),
                false => write!(out, "{v:0width$}"),
            };
        };
        match spec {
            Some('Y') => {
                let _ = write!(out, "{}", t.year);
            }
            Some('y') => num(out, t.year.rem_euclid(100), 2),
            Some('m') => num(out, i64::from(t.month), 2),
            Some('d') => num(out, i64::from(t.day), 2),
            Some('e') => {
                let _ = write!(out, "{:>2}", t.day);
            }
            Some('H') => num(out, h, 2),
            Some('I') => num(out, h12, 2),
            Some('M') => num(out, mi, 2),
            Some('S') => num(out, s, 2),
            Some('f') => num(out, frac, 6),
            Some('g') => num(out, frac / 1000, 3),
            Some('n') => num(out, frac * 1000, 9),
            Some('j') => num(out, t.day_of_year(), 3),
            Some('p') => out.push_str(if h < 12 { "AM" } else { "PM" }),
            Some('a') => out.push_str(&DAY_NAMES[t.weekday()][..3]),
            Some('A') => out.push_str(DAY_NAMES[t.weekday()]),
            Some('w') => num(out, t.weekday() as i64, 1),
            Some('u') => num(out, ((t.weekday() + 6) % 7 + 1) as i64, 1),
            Some('b' | 'h') => out.push_str(&MONTH_NAMES[t.month as usize - 1][..3]),
            Some('B') => out.push_str(MONTH_NAMES[t.month as usize - 1]),
            // Weeks of the year starting on Sunday (%U) or Monday (%W); days before the
            // first such day are week 0.
            Some('U') => num(out, (t.day_of_year() + 6 - t.weekday() as i64) / 7, 2),
            Some('W') => {
                let monday_based = (t.weekday() as i64 + 6) % 7;
                num(out, (t.day_of_year() + 6 - monday_based) / 7, 2)
            }
            Some('%') => out.push('%'),
            Some(other) => {
                return Err(ExecError::InvalidArgument(format!(
                    "strftime(): unknown format specifier %{other}"
                )))
            }
            None => {
                return Err(ExecError::InvalidArgument(
                    "strftime(): the format ends in a lone %".into(),
                ))
            }
        }
    }
    Ok(())
}

/// `strftime(ts, format)`.
pub fn strftime(ts: &Column, format: &Column) -> ExecResult<Column> {
    let (ts, format) = (timestamps(ts)?, as_utf8(format)?);
    let mut b = Utf8Builder::with_capacity(ts.len(), ts.len() * 20);
    let mut buf = String::new();
    for i in 0..ts.len() {
        let (Some(t), Some(f)) = (ts.get(i), format.get(i)) else {
            b.push_null();
            continue;
        };
        buf.clear();
        write_strftime(&Civil::of(t), f, &mut buf)?;
        b.push(&buf);
    }
    Ok(Column::Utf8(b.finish()))
}

/// Reads `text` by `format` (the specifiers of [`write_strftime`]; `-` flags are accepted,
/// a space matches any run of white space, numbers may have fewer digits than their width):
/// microseconds since 1970-01-01, or what did not match.
fn parse_strptime(text: &str, format: &str) -> Result<i64, String> {
    let bytes = text.as_bytes();
    let mut at = 0usize;
    let (mut year, mut month, mut day) = (1970i64, 1u32, 1u32);
    let (mut hour, mut minute, mut second, mut micros) = (0i64, 0i64, 0i64, 0i64);
    let mut day_of_year: Option<i64> = None;
    let mut pm: Option<bool> = None;
    let skip_space = |at: &mut usize| {
        while *at < bytes.len() && bytes[*at].is_ascii_whitespace() {
            *at += 1;
        }
    };
    // A number of 1 to `width` digits (white space before it skipped).
    let number = |at: &mut usize, width: usize| -> Result<i64, String> {
        skip_space(at);
        let start = *at;
        while *at < bytes.len() && *at - start < width && bytes[*at].is_ascii_digit() {
            *at += 1;
        }
        text[start..*at]
            .parse::<i64>()
            .map_err(|_| format!("expected a number at position {}", start + 1))
    };
    // One of `names` (or its first three letters), case-insensitively: its index.
    let name = |at: &mut usize, names: &[&str]| -> Result<usize, String> {
        skip_space(at);
        let rest = text[*at..].to_ascii_lowercase();
        for (i, n) in names.iter().enumerate() {
            let full = n.to_ascii_lowercase();
            for candidate in [&full[..], &full[..3]] {
                if rest.starts_with(candidate) {
                    *at += candidate.len();
                    return Ok(i);
                }
            }
        }
        Err(format!("expected a name at position {}", *at + 1))
    };
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c.is_whitespace() {
            skip_space(&mut at);
            continue;
        }
        if c != '%' {
            let mut buf = [0u8; 4];
            let lit = c.encode_utf8(&mut buf).as_bytes();
            if !bytes[at..].starts_with(lit) {
                return Err(format!("expected '{c}' at position {}", at + 1));
            }
            at += lit.len();
            continue;
        }
        let mut spec = chars.next();
        if spec == Some('-') {
            spec = chars.next();
        }
        match spec {
            Some('Y') => year = number(&mut at, 9)?,
            Some('y') => {
                let y = number(&mut at, 2)?;
                // POSIX's pivot: 69-99 are the 1900s, 00-68 the 2000s.
                year = if y >= 69 { 1900 + y } else { 2000 + y };
            }
            Some('m') => month = number(&mut at, 2)? as u32,
            Some('d' | 'e') => day = number(&mut at, 2)? as u32,
            Some('H') => hour = number(&mut at, 2)?,
            Some('I') => hour = number(&mut at, 2)?,
            Some('M') => minute = number(&mut at, 2)?,
            Some('S') => second = number(&mut at, 2)?,
            Some(w @ ('f' | 'g' | 'n')) => {
                skip_space(&mut at);
                let start = at;
                let digits = match w {
                    'g' => 3,
                    'f' => 6,
                    _ => 9,
                };
                let v = number(&mut at, digits)?;
                let scale = 10i64.pow((digits - (at - start)) as u32);
                micros = match w {
                    'g' => v * scale * 1000,
                    'f' => v * scale,
                    _ => v * scale / 1000,
                };
            }
            Some('j') => day_of_year = Some(number(&mut at, 3)?),
            Some('p') => {
                skip_space(&mut at);
                let rest = text[at..].to_ascii_lowercase();
                pm = Some(match () {
                    _ if rest.starts_with("am") => false,
                    _ if rest.starts_with("pm") => true,
                    _ => return Err(format!("expected AM or PM at position {}", at + 1)),
                });
                at += 2;
            }
            Some('b' | 'h' | 'B') => month = name(&mut at, &MONTH_NAMES)? as u32 + 1,
            Some('a' | 'A') => {
                name(&mut at, &DAY_NAMES)?;
            }
            Some('%') => {
                if bytes.get(at) != Some(&b'%') {
                    return Err(format!("expected '%' at position {}", at + 1));
                }
                at += 1;
            }
            Some(other) => return Err(format!("unknown format specifier %{other}")),
            None => return Err("the format ends in a lone %".into()),
        }
    }
    if at != bytes.len() {
        return Err(format!("unexpected text at position {}", at + 1));
    }
    if let Some(pm) = pm {
        if !(1..=12).contains(&hour) {
            return Err(format!("hour {hour} with AM/PM"));
        }
        hour = hour % 12 + if pm { 12 } else { 0 };
    }
    if !(0..24).contains(&hour) || !(0..60).contains(&minute) || !(0..60).contains(&second) {
        return Err(format!("time {hour}:{minute}:{second} out of range"));
    }
    let days = match day_of_year {
        Some(j) if (1..=366).contains(&j) => days_from_civil(year, 1, 1) + j - 1,
        Some(j) => return Err(format!("day of year {j} out of range")),
        None => {
            let valid = (1..=12).contains(&month)
                && (-5_000_000..=5_000_000).contains(&year)
                && day >= 1
                && day <= days_in_month(year, month);
            if !valid {
                return Err(format!("{year}-{month}-{day} is not a date"));
            }
            days_from_civil(year, month, day)
        }
    };
    let time = ((hour * 60 + minute) * 60 + second) * 1_000_000 + micros;
    days.checked_mul(MICROS_PER_DAY)
        .and_then(|d| d.checked_add(time))
        .ok_or_else(|| "the timestamp is out of range".into())
}

/// `strptime(text, format)`; with `lenient` (`try_strptime`), NULL where it does not parse.
pub fn strptime(text: &Column, format: &Column, lenient: bool) -> ExecResult<Column> {
    let (text, format) = (as_utf8(text)?, as_utf8(format)?);
    let mut b = PrimitiveBuilder::<i64>::with_capacity(text.len());
    for i in 0..text.len() {
        let (Some(t), Some(f)) = (text.get(i), format.get(i)) else {
            b.push_null();
            continue;
        };
        match parse_strptime(t, f) {
            Ok(v) => b.push(v),
            Err(_) if lenient => b.push_null(),
            Err(why) => {
                return Err(ExecError::InvalidArgument(format!(
                    "strptime(): cannot read {t:?} as {f:?}: {why}"
                )))
            }
        }
    }
    Ok(Column::Timestamp(b.finish()))
}

/// `dayname(ts)` (`monthname` with `month`).
pub fn name_of(ts: &Column, month: bool) -> ExecResult<Column> {
    let ts = timestamps(ts)?;
    let mut b = Utf8Builder::with_capacity(ts.len(), ts.len() * 8);
    for i in 0..ts.len() {
        match ts.get(i).map(Civil::of) {
            None => b.push_null(),
            Some(c) if month => b.push(MONTH_NAMES[c.month as usize - 1]),
            Some(c) => b.push(DAY_NAMES[c.weekday()]),
        }
    }
    Ok(Column::Utf8(b.finish()))
}

/// `epoch(ts)`: seconds since 1970-01-01 00:00:00, with the fraction.
pub fn epoch(ts: &Column) -> ExecResult<Column> {
    let ts = timestamps(ts)?;
    Ok(Column::Float64(PrimitiveColumn::new(
        Buffer::from_vec(ts.values().iter().map(|&v| v as f64 / 1e6).collect()),
        ts.validity().cloned(),
    )))
}

/// `last_day(date)`.
pub fn last_day(d: &Column) -> ExecResult<Column> {
    let d = dates(d)?;
    let mut b = PrimitiveBuilder::<i32>::with_capacity(d.len());
    for i in 0..d.len() {
        match d.get(i) {
            None => b.push_null(),
            Some(days) => {
                let (y, m, _) = civil_from_days(i64::from(days));
                let last = days_from_civil(y, m, days_in_month(y, m));
                b.push(i32::try_from(last).map_err(|_| overflow())?);
            }
        }
    }
    Ok(Column::Date32(b.finish()))
}

/// `make_date(year, month, day)`: a date that does not exist is an error.
pub fn make_date(y: &Column, m: &Column, d: &Column) -> ExecResult<Column> {
    let (y, m, d) = (int64_arg(y)?, int64_arg(m)?, int64_arg(d)?);
    let mut b = PrimitiveBuilder::<i32>::with_capacity(y.len());
    for i in 0..y.len() {
        let (Some(yy), Some(mm), Some(dd)) = (y.get(i), m.get(i), d.get(i)) else {
            b.push_null();
            continue;
        };
        let valid = (1..=12).contains(&mm)
            && (-5_000_000..=5_000_000).contains(&yy)
            && dd >= 1
            && dd <= i64::from(days_in_month(yy, mm as u32));
        let days = valid
            .then(|| days_from_civil(yy, mm as u32, dd as u32))
            .and_then(|days| i32::try_from(days).ok());
        match days {
            Some(days) => b.push(days),
            None => {
                return Err(ExecError::InvalidArgument(format!(
                    "make_date(): {yy}-{mm}-{dd} is not a date"
                )))
            }
        }
    }
    Ok(Column::Date32(b.finish()))
}

/// `ts + n microseconds`.
pub fn add_micros(ts: &Column, n: &Column) -> ExecResult<Column> {
    let (ts, n) = (timestamps(ts)?, int64_arg(n)?);
    let mut b = PrimitiveBuilder::<i64>::with_capacity(ts.len());
    for i in 0..ts.len() {
        match (ts.get(i), n.get(i)) {
            (Some(t), Some(k)) => b.push(t.checked_add(k).ok_or_else(overflow)?),
            _ => b.push_null(),
        }
    }
    Ok(Column::Timestamp(b.finish()))
}

/// `ts + n months`: the date part moves (its day clamped to the month's length), the time
/// of day stays.
pub fn add_months_to_timestamps(ts: &Column, n: &Column) -> ExecResult<Column> {
    let (ts, n) = (timestamps(ts)?, int64_arg(n)?);
    let mut b = PrimitiveBuilder::<i64>::with_capacity(ts.len());
    for i in 0..ts.len() {
        match (ts.get(i), n.get(i)) {
            (Some(t), Some(k)) => {
                let c = Civil::of(t);
                let moved = i32::try_from(c.days)
                    .ok()
                    .zip(i32::try_from(k).ok())
                    .and_then(|(d, k)| add_months(d, k))
                    .and_then(|d| i64::from(d).checked_mul(MICROS_PER_DAY))
                    .and_then(|d| d.checked_add(c.micros_of_day))
                    .ok_or_else(overflow)?;
                b.push(moved);
            }
            _ => b.push_null(),
        }
    }
    Ok(Column::Timestamp(b.finish()))
}

#[cfg(test)]
mod tests {
    use super::{write_strftime, Civil};

    fn format(micros: i64, f: &str) -> String {
        let mut out = String::new();
        write_strftime(&Civil::of(micros), f, &mut out).expect("valid format");
        out
    }

    #[test]
    fn parses_what_it_formats() {
        let t = 1_583_586_309_012_345;
        for f in [
            "%Y-%m-%d %H:%M:%S.%f",
            "%a %d %B %Y %I:%M:%S.%f %p",
            "%j/%Y %H%M%S.%f",
        ] {
            assert_eq!(super::parse_strptime(&format(t, f), f), Ok(t), "{f}");
        }
        assert_eq!(
            super::parse_strptime("2020-3-7", "%Y-%m-%d"),
            Ok(1_583_539_200_000_000)
        );
        assert!(super::parse_strptime("2020-02-30", "%Y-%m-%d").is_err());
        assert!(super::parse_strptime("2020-03-07 10", "%Y-%m-%d").is_err());
        assert!(super::parse_strptime("x", "%Y").is_err());
    }

    #[test]
    fn formats_as_duckdb_does() {
        // 2020-03-07 (a Saturday) 13:05:09.012345
        let t = 1_583_586_309_012_345;
        assert_eq!(
            format(t, "%Y-%m-%d %H:%M:%S.%f"),
            "2020-03-07 13:05:09.012345"
        );
        assert_eq!(
            format(t, "%a %A %b %B %-d %-m %y %j %w"),
            "Sat Saturday Mar March 7 3 20 067 6"
        );
        assert_eq!(format(t, "%I:%M %p %%"), "01:05 PM %");
        assert_eq!(format(0, "%A %U %W"), "Thursday 00 00");
        let mut out = String::new();
        assert!(write_strftime(&Civil::of(0), "%Q", &mut out).is_err());
    }
}
