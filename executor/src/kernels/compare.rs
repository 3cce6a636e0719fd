//! Comparisons of two columns of the same type, producing a BOOLEAN column that is NULL
//! wherever either input is. Values are packed 64 comparisons per word.

use std::cmp::Ordering;

use morsel_planner::BinaryOp;
use morsel_storage::cache_hint::{prefetch_ahead, prefetch_at};
use morsel_storage::{Bitmap, BooleanColumn, Column, ScalarValue};

use super::and_validity;
use crate::error::{ExecError, ExecResult};

pub use morsel_storage::cmp_f64;

/// `a == b`, without a call for the short values most keys and text columns hold: up to 16
/// bytes compare as two (possibly overlapping) words from each end; longer ones compare those
/// two words before the bytes between them, so most unequal values stop there.
#[inline(always)]
pub fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"));
    let half = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().expect("4 bytes"));
    match n {
        0 => true,
        // The first, middle and last bytes cover every byte of up to three.
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        _ => {
            word(a, 0) == word(b, 0)
                && word(a, n - 8) == word(b, n - 8)
                && a[8..n - 8] == b[8..n - 8]
        }
    }
}

/// The bitmap of `$test` for `$i` in `0..$n`, built a word at a time with the test written
/// into the word's loop (a closure per row may stay a call, which costs more than a short
/// test; TPC-H Q19's `IN` on text ran 15% slower as one).
macro_rules! bits_by_word {
    ($n:expr, $i:ident => $test:expr) => {{
        let n = $n;
        Bitmap::from_word_fn(n, |w| {
            let base = w * 64;
            let mut word = 0u64;
            for $i in base..(base + 64).min(n) {
                word |= u64::from($test) << ($i - base);
            }
            word
        })
    }};
}

/// A text constant that rows of a column are tested for equality with, by their offsets
/// into the column's bytes: a row of another length is unequal at once; otherwise its first
/// and last eight bytes compare as words with the constant's (masked for shorter values),
/// and only a value longer than 16 bytes compares the bytes between.
pub struct TextConst<'a> {
    bytes: &'a [u8],
    head: u64,
    tail: u64,
}

impl<'a> TextConst<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        let word = |from: usize| {
            let mut w = [0u8; 8];
            let part = &bytes[from.min(bytes.len())..];
            let n = part.len().min(8);
            w[..n].copy_from_slice(&part[..n]);
            u64::from_le_bytes(w)
        };
        TextConst {
            bytes,
            head: word(0),
            tail: word(bytes.len().saturating_sub(8)),
        }
    }

    /// Whether row `i` of the column with offsets `o` and bytes `data` equals the constant.
    #[inline(always)]
    pub fn eq_at(&self, o: &[i64], data: &[u8], i: usize) -> bool {
        let (s, e) = (o[i] as usize, o[i + 1] as usize);
        let n = self.bytes.len();
        if e - s != n {
            return false;
        }
        let word = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().expect("8 bytes"));
        match n {
            0 => true,
            // A word from the value's start, its bytes past the value masked off (when the
            // column's bytes end sooner, the bytes themselves).
            1..=7 if s + 8 <= data.len() => (word(s) ^ self.head) & ((1u64 << (8 * n)) - 1) == 0,
            1..=7 => &data[s..e] == self.bytes,
            8..=16 => word(s) == self.head && word(e - 8) == self.tail,
            _ => {
                word(s) == self.head
                    && word(e - 8) == self.tail
                    && bytes_eq(&data[s + 8..e - 8], &self.bytes[8..n - 8])
            }
        }
    }
}

/// Compares row `i` of `a` with row `j` of `b`, two valid values of one type (ascending;
/// columns of different types compare equal).
pub fn cmp_rows(a: &Column, i: usize, b: &Column, j: usize) -> Ordering {
    match (a, b) {
        (Column::Boolean(x), Column::Boolean(y)) => x.values().get(i).cmp(&y.values().get(j)),
        (Column::Int32(x), Column::Int32(y)) | (Column::Date32(x), Column::Date32(y)) => {
            x.values()[i].cmp(&y.values()[j])
        }
        (Column::Int64(x), Column::Int64(y)) | (Column::Timestamp(x), Column::Timestamp(y)) => {
            x.values()[i].cmp(&y.values()[j])
        }
        (Column::Float64(x), Column::Float64(y)) => cmp_f64(x.values()[i], y.values()[j]),
        (Column::Utf8(x), Column::Utf8(y)) => x.value_bytes(i).cmp(y.value_bytes(j)),
        _ => Ordering::Equal,
    }
}

/// `$body` with `$holds` bound to `p op q` for doubles in the float order of [`cmp_f64`]
/// (NaN equals NaN and is above every other value; -0.0 equals 0.0), one closure per
/// operator so each loop vectorizes: IEEE comparisons agree with that order except where a
/// NaN takes part, which the second terms place by hand (`|`, not `||`: no branch).
macro_rules! with_f64_order {
    ($op:expr, |$holds:ident| $body:expr) => {
        match $op {
            BinaryOp::Eq => {
                let $holds = |p: f64, q: f64| (p == q) | (p.is_nan() & q.is_nan());
                $body
            }
            BinaryOp::NotEq => {
                let $holds = |p: f64, q: f64| !((p == q) | (p.is_nan() & q.is_nan()));
                $body
            }
            BinaryOp::Lt => {
                let $holds = |p: f64, q: f64| (p < q) | (q.is_nan() & !p.is_nan());
                $body
            }
            BinaryOp::LtEq => {
                let $holds = |p: f64, q: f64| (p <= q) | q.is_nan();
                $body
            }
            BinaryOp::Gt => {
                let $holds = |p: f64, q: f64| (p > q) | (p.is_nan() & !q.is_nan());
                $body
            }
            _ => {
                let $holds = |p: f64, q: f64| (p >= q) | p.is_nan();
                $body
            }
        }
    };
}
pub(crate) use with_f64_order;

macro_rules! prim {
    ($op:expr, $a:expr, $b:expr, $cmp:expr) => {{
        let (x, y) = ($a.values(), $b.values());
        let op = $op;
        let values = match op {
            BinaryOp::Eq => Bitmap::from_pairs(x, y, |p, q| $cmp(p, q) == Ordering::Equal),
            BinaryOp::Lt => Bitmap::from_pairs(x, y, |p, q| $cmp(p, q) == Ordering::Less),
            _ => Bitmap::from_pairs(x, y, |p, q| op.holds($cmp(p, q))),
        };
        BooleanColumn::new(values, and_validity($a.validity(), $b.validity()))
    }};
}

/// `$against!(values, constant, comparator)` for a number or date column `$l` and a constant
/// `$value` of its type (`$otherwise` for any other pair): the typed arms the kernels that
/// compare a column with a constant share.
macro_rules! number_against_constant {
    ($l:expr, $value:expr, $against:ident, $otherwise:expr) => {
        match ($l, $value) {
            (
                Column::Int32(a) | Column::Date32(a),
                ScalarValue::Int32(y) | ScalarValue::Date32(y),
            ) => $against!(a, *y, |p: i32, q: i32| p.cmp(&q)),
            (
                Column::Int64(a) | Column::Timestamp(a),
                ScalarValue::Int64(y) | ScalarValue::Timestamp(y),
            ) => $against!(a, *y, |p: i64, q: i64| p.cmp(&q)),
            (Column::Float64(a), ScalarValue::Float64(y)) => $against!(a, *y, cmp_f64),
            _ => $otherwise,
        }
    };
}

/// `l op value` for one non-NULL value of `l`'s type, without a column of copies of it (one
/// loop per operator); `None` for the types this does not cover (the caller broadcasts).
pub fn compare_scalar(op: BinaryOp, l: &Column, value: &ScalarValue) -> Option<BooleanColumn> {
    macro_rules! against {
        ($a:expr, $y:expr, $cmp:expr) => {{
            let (x, y) = ($a.values(), $y);
            let values = match op {
                BinaryOp::Eq => Bitmap::from_values(x, |v| $cmp(v, y) == Ordering::Equal),
                BinaryOp::NotEq => Bitmap::from_values(x, |v| $cmp(v, y) != Ordering::Equal),
                BinaryOp::Lt => Bitmap::from_values(x, |v| $cmp(v, y) == Ordering::Less),
                BinaryOp::LtEq => Bitmap::from_values(x, |v| $cmp(v, y) != Ordering::Greater),
                BinaryOp::Gt => Bitmap::from_values(x, |v| $cmp(v, y) == Ordering::Greater),
                BinaryOp::GtEq => Bitmap::from_values(x, |v| $cmp(v, y) != Ordering::Less),
                _ => return None,
            };
            Some(BooleanColumn::new(values, $a.validity().cloned()))
        }};
    }
    match (l, value) {
        (Column::Float64(a), ScalarValue::Float64(y)) if !y.is_nan() => {
            // Against a number, IEEE comparisons (which vectorize) answer as the total order
            // does once NaN, the greatest value, is placed above it: `<`, `<=` and `=` are
            // false for NaN as they are, `>`, `>=` and `<>` true. -0.0 equals 0.0 in both.
            let (x, y) = (a.values(), *y);
            let values = match op {
                BinaryOp::Eq => Bitmap::from_values(x, |v| v == y),
                BinaryOp::NotEq => Bitmap::from_values(x, |v| v != y),
                BinaryOp::Lt => Bitmap::from_values(x, |v| v < y),
                BinaryOp::LtEq => Bitmap::from_values(x, |v| v <= y),
                BinaryOp::Gt => Bitmap::from_values(x, |v| v > y || v.is_nan()),
                BinaryOp::GtEq => Bitmap::from_values(x, |v| v >= y || v.is_nan()),
                _ => return None,
            };
            Some(BooleanColumn::new(values, a.validity().cloned()))
        }
        (Column::Utf8(a), ScalarValue::Utf8(y)) => {
            let y = y.as_bytes();
            let n = a.len();
            let (o, data, t) = (a.offsets(), a.data(), TextConst::new(y));
            let values = match op {
                // Every value one byte long (a flag, a status; known from when the column
                // was made, or else checked): the bytes compare as they lie, many to an
                // instruction, without reading the offsets row by row.
                BinaryOp::Eq | BinaryOp::NotEq if y.len() == 1 && a.all_of_width(1) => {
                    let bytes = &data[o[0] as usize..o[n] as usize];
                    let (c, eq) = (y[0], op == BinaryOp::Eq);
                    Bitmap::from_values(bytes, |b| (b == c) == eq)
                }
                // Equality needs no ordering: a length check, then words of the bytes.
                BinaryOp::Eq => bits_by_word!(n, i => t.eq_at(o, data, i)),
                BinaryOp::NotEq => bits_by_word!(n, i => !t.eq_at(o, data, i)),
                _ => Bitmap::from_fn(n, |i| op.holds(a.value_bytes(i).cmp(y))),
            };
            Some(BooleanColumn::new(values, a.validity().cloned()))
        }
        _ => number_against_constant!(l, value, against, None),
    }
}

/// Keeps the `rows` of `l` where `l op value` holds (NULL rows never do), for one non-NULL
/// value of `l`'s type, reading `l` only at those rows; false, leaving `rows` as they are,
/// for the types this does not cover.
pub fn retain_scalar(op: BinaryOp, l: &Column, value: &ScalarValue, rows: &mut Vec<u32>) -> bool {
    macro_rules! against {
        ($a:expr, $y:expr, $cmp:expr) => {{
            let (x, y, valid) = ($a.values(), $y, $a.validity());
            let ok = |r: usize| valid.is_none_or(|v| v.get(r));
            let hint = |r: usize| prefetch_at(x, r);
            match op {
                BinaryOp::Eq => retain(rows, hint, |r| ok(r) && $cmp(x[r], y) == Ordering::Equal),
                BinaryOp::NotEq => {
                    retain(rows, hint, |r| ok(r) && $cmp(x[r], y) != Ordering::Equal)
                }
                BinaryOp::Lt => retain(rows, hint, |r| ok(r) && $cmp(x[r], y) == Ordering::Less),
                BinaryOp::LtEq => {
                    retain(rows, hint, |r| ok(r) && $cmp(x[r], y) != Ordering::Greater)
                }
                BinaryOp::Gt => retain(rows, hint, |r| ok(r) && $cmp(x[r], y) == Ordering::Greater),
                BinaryOp::GtEq => retain(rows, hint, |r| ok(r) && $cmp(x[r], y) != Ordering::Less),
                _ => return false,
            }
            true
        }};
    }
    match (l, value) {
        (Column::Utf8(a), ScalarValue::Utf8(y)) if op.is_comparison() => {
            let y = y.as_bytes();
            let (o, data, t) = (a.offsets(), a.data(), TextConst::new(y));
            let valid = |r: usize| a.is_valid(r);
            let hint = |r: usize| prefetch_at(o, r);
            match op {
                BinaryOp::Eq => retain(rows, hint, |r| valid(r) && t.eq_at(o, data, r)),
                BinaryOp::NotEq => retain(rows, hint, |r| valid(r) && !t.eq_at(o, data, r)),
                _ => retain(rows, hint, |r| {
                    valid(r) && op.holds(a.value_bytes(r).cmp(y))
                }),
            }
            true
        }
        _ => number_against_constant!(l, value, against, false),
    }
}

/// `lo..=hi` within the values of integer type `$t`, as its first value and its width less
/// one read as the unsigned `$u`; `None` when no value of `$t` is in it.
macro_rules! clamp_range {
    ($lo:expr, $hi:expr, $t:ty, $u:ty) => {{
        let (lo, hi) = ($lo.max(<$t>::MIN as i64), $hi.min(<$t>::MAX as i64));
        (lo <= hi).then(|| (lo as $t, (hi as i128 - lo as i128) as $u))
    }};
}

/// `lo <= l <= hi` for an integer-like column (NULL where `l` is), one unsigned comparison
/// per row; `None` for other types.
pub fn int_range(l: &Column, lo: i64, hi: i64) -> Option<BooleanColumn> {
    macro_rules! within {
        ($a:expr, $t:ty, $u:ty) => {{
            let x = $a.values();
            let values = match clamp_range!(lo, hi, $t, $u) {
                None => Bitmap::new_filled(x.len(), false),
                Some((lo, span)) => Bitmap::from_values(x, |v| (v.wrapping_sub(lo) as $u) <= span),
            };
            Some(BooleanColumn::new(values, $a.validity().cloned()))
        }};
    }
    match l {
        Column::Int32(a) | Column::Date32(a) => within!(a, i32, u32),
        Column::Int64(a) | Column::Timestamp(a) => within!(a, i64, u64),
        _ => None,
    }
}

/// Keeps the `rows` of `l` where `lo <= l <= hi` (NULL rows never do), reading `l` only at
/// those rows; false, leaving `rows` as they are, for columns that are not integer-like.
pub fn retain_int_range(l: &Column, lo: i64, hi: i64, rows: &mut Vec<u32>) -> bool {
    macro_rules! within {
        ($a:expr, $t:ty, $u:ty) => {{
            let (x, valid) = ($a.values(), $a.validity());
            match clamp_range!(lo, hi, $t, $u) {
                None => rows.clear(),
                Some((lo, span)) => retain(
                    rows,
                    |r| prefetch_at(x, r),
                    |r| valid.is_none_or(|v| v.get(r)) && (x[r].wrapping_sub(lo) as $u) <= span,
                ),
            }
            true
        }};
    }
    match l {
        Column::Int32(a) | Column::Date32(a) => within!(a, i32, u32),
        Column::Int64(a) | Column::Timestamp(a) => within!(a, i64, u64),
        _ => false,
    }
}

/// Bounds that comparisons of a DOUBLE column with numbers (never NaN) put on it, merged: a
/// lower bound (`>` or `>=`) and an upper one (`<` or `<=`), the strict ones tested as
/// `x > v`. A row passes where every comparison alone passes it, NaN (the greatest value)
/// included: it passes a lower bound and no upper one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FloatRange {
    lo: f64,
    lo_strict: bool,
    hi: f64,
    hi_strict: bool,
    /// No upper bound: NaN passes.
    nan_passes: bool,
}

impl FloatRange {
    /// The bounds of `x op v`; `None` for NaN or an operator that is not an order
    /// comparison or `=`.
    pub fn of(op: BinaryOp, v: f64) -> Option<Self> {
        let none = FloatRange {
            lo: f64::NEG_INFINITY,
            lo_strict: false,
            hi: f64::INFINITY,
            hi_strict: false,
            nan_passes: true,
        };
        let below = |strict| FloatRange {
            hi: v,
            hi_strict: strict,
            nan_passes: false,
            ..none
        };
        let above = |strict| FloatRange {
            lo: v,
            lo_strict: strict,
            ..none
        };
        if v.is_nan() {
            return None;
        }
        Some(match op {
            BinaryOp::Lt => below(true),
            BinaryOp::LtEq => below(false),
            BinaryOp::Gt => above(true),
            BinaryOp::GtEq => above(false),
            BinaryOp::Eq => above(false).and(below(false)),
            _ => return None,
        })
    }

    /// Both bounds at once: the tighter of each (at equal values, -0.0 and 0.0 among them,
    /// the strict one).
    pub fn and(self, other: Self) -> Self {
        // Bounds are never NaN.
        let order = |a: f64, b: f64| a.partial_cmp(&b).unwrap_or(Ordering::Equal);
        let (lo, lo_strict) = match order(self.lo, other.lo) {
            Ordering::Greater => (self.lo, self.lo_strict),
            Ordering::Less => (other.lo, other.lo_strict),
            Ordering::Equal => (self.lo, self.lo_strict || other.lo_strict),
        };
        let (hi, hi_strict) = match order(self.hi, other.hi) {
            Ordering::Less => (self.hi, self.hi_strict),
            Ordering::Greater => (other.hi, other.hi_strict),
            Ordering::Equal => (self.hi, self.hi_strict || other.hi_strict),
        };
        FloatRange {
            lo,
            lo_strict,
            hi,
            hi_strict,
            nan_passes: self.nan_passes && other.nan_passes,
        }
    }

    /// Whether `x` passes: bitwise, not short-circuit, so that a loop over listed rows
    /// takes no branch a row (random values mispredict one: 8 ns a row). -0.0 equals 0.0,
    /// as in the comparisons.
    #[inline(always)]
    fn holds(self, x: f64) -> bool {
        let above = (x > self.lo) | (!self.lo_strict & (x == self.lo));
        let below = (x < self.hi) | (!self.hi_strict & (x == self.hi));
        (above & below) | (self.nan_passes & x.is_nan())
    }

    /// The bits of up to 64 values, one at a time.
    fn word(self, values: &[f64]) -> u64 {
        values
            .iter()
            .enumerate()
            .fold(0, |w, (j, &v)| w | u64::from(self.holds(v)) << j)
    }

    /// The bits of 64 values, eight to a comparison (the baseline build compares two).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn word_avx512(self, values: &[f64; 64]) -> u64 {
        use std::arch::x86_64::{
            _mm512_cmp_pd_mask, _mm512_loadu_pd, _mm512_set1_pd, _CMP_GE_OQ, _CMP_GT_OQ,
            _CMP_LE_OQ, _CMP_LT_OQ, _CMP_UNORD_Q,
        };
        let (lo, hi) = (_mm512_set1_pd(self.lo), _mm512_set1_pd(self.hi));
        let mut word = 0u64;
        for k in 0..8 {
            // SAFETY: values `8k..8k + 8` are within the array; read unaligned.
            let x = unsafe { _mm512_loadu_pd(values[8 * k..].as_ptr()) };
            let above = match self.lo_strict {
                true => _mm512_cmp_pd_mask::<_CMP_GT_OQ>(x, lo),
                false => _mm512_cmp_pd_mask::<_CMP_GE_OQ>(x, lo),
            };
            let below = match self.hi_strict {
                true => _mm512_cmp_pd_mask::<_CMP_LT_OQ>(x, hi),
                false => _mm512_cmp_pd_mask::<_CMP_LE_OQ>(x, hi),
            };
            let nan = match self.nan_passes {
                true => _mm512_cmp_pd_mask::<_CMP_UNORD_Q>(x, x),
                false => 0,
            };
            word |= u64::from((above & below) | nan) << (8 * k);
        }
        word
    }
}

/// Whether each row of a DOUBLE column passes `range` (NULL where the column is); `None`
/// for other types. One pass over the column for all its comparisons (TPC-H Q6's discount
/// range was read whole, then again at the rows left).
pub fn float_range(l: &Column, range: FloatRange) -> Option<BooleanColumn> {
    let Column::Float64(a) = l else { return None };
    let x = a.values();
    let chunk = |w: usize| &x[w * 64..(w * 64 + 64).min(x.len())];
    let words = |w: usize| {
        // The values ahead hinted to the cache, as `Bitmap::from_values` does (TPC-H Q6's
        // discount range in memory: the filter's CPU 9.1 -> 6.9 ms at 2 threads).
        prefetch_ahead(x, w * 64, 64);
        #[cfg(target_arch = "x86_64")]
        {
            if let (true, Ok(full)) = (super::avx512(), <&[f64; 64]>::try_from(chunk(w))) {
                // SAFETY: the processor has AVX-512F (`avx512`).
                return unsafe { range.word_avx512(full) };
            }
        }
        range.word(chunk(w))
    };
    let values = Bitmap::from_word_fn(x.len(), words);
    Some(BooleanColumn::new(values, a.validity().cloned()))
}

/// Keeps the `rows` of a DOUBLE column that pass `range` (NULL rows never do), reading it at
/// those rows only; false, leaving `rows` as they are, for other types.
pub fn retain_float_range(l: &Column, range: FloatRange, rows: &mut Vec<u32>) -> bool {
    let Column::Float64(a) = l else { return false };
    let (x, valid) = (a.values(), a.validity());
    retain(
        rows,
        |r| prefetch_at(x, r),
        |r| valid.is_none_or(|v| v.get(r)) && range.holds(x[r]),
    );
    true
}

/// How many places ahead in a list of rows [`retain`] hints what it will read.
const LISTED_AHEAD: usize = 48;

/// Keeps the `rows` for which `keep` holds, in order: every row is written and the end
/// advances by the outcome (no branch per row). `hint` is called with the row listed
/// [`LISTED_AHEAD`] places ahead, to ask the cache for the values `keep` will read there:
/// rows at gaps defeat the hardware prefetcher, and without the hints a test waited on
/// memory at each row (TPC-H Q6: its quantity test at the 4% of rows left, 10 ns a row).
pub(crate) fn retain(rows: &mut Vec<u32>, hint: impl Fn(usize), keep: impl Fn(usize) -> bool) {
    let mut n = 0;
    for k in 0..rows.len() {
        if let Some(&ahead) = rows.get(k + LISTED_AHEAD) {
            hint(ahead as usize);
        }
        let r = rows[k];
        rows[n] = r;
        n += usize::from(keep(r as usize));
    }
    rows.truncate(n);
}

/// Keeps the `rows` where `l op r` holds (NULL on either side never does), for two columns
/// of one integer-like or float type, reading them only at those rows; false, leaving
/// `rows` as they are, for other types.
pub fn retain_pair(op: BinaryOp, l: &Column, r: &Column, rows: &mut Vec<u32>) -> bool {
    macro_rules! pair {
        ($a:expr, $b:expr, $cmp:expr) => {{
            let (x, y) = ($a.values(), $b.values());
            let (vx, vy) = ($a.validity(), $b.validity());
            let ok = |i: usize| vx.is_none_or(|v| v.get(i)) && vy.is_none_or(|v| v.get(i));
            let hint = |i: usize| {
                prefetch_at(x, i);
                prefetch_at(y, i);
            };
            match op {
                BinaryOp::Eq => {
                    retain(rows, hint, |i| ok(i) && $cmp(x[i], y[i]) == Ordering::Equal)
                }
                BinaryOp::NotEq => {
                    retain(rows, hint, |i| ok(i) && $cmp(x[i], y[i]) != Ordering::Equal)
                }
                BinaryOp::Lt => retain(rows, hint, |i| ok(i) && $cmp(x[i], y[i]) == Ordering::Less),
                BinaryOp::LtEq => retain(rows, hint, |i| {
                    ok(i) && $cmp(x[i], y[i]) != Ordering::Greater
                }),
                BinaryOp::Gt => retain(rows, hint, |i| {
                    ok(i) && $cmp(x[i], y[i]) == Ordering::Greater
                }),
                BinaryOp::GtEq => {
                    retain(rows, hint, |i| ok(i) && $cmp(x[i], y[i]) != Ordering::Less)
                }
                _ => return false,
            }
            true
        }};
    }
    match (l, r) {
        (Column::Int32(a), Column::Int32(b)) | (Column::Date32(a), Column::Date32(b)) => {
            pair!(a, b, |p: i32, q: i32| p.cmp(&q))
        }
        (Column::Int64(a), Column::Int64(b)) | (Column::Timestamp(a), Column::Timestamp(b)) => {
            pair!(a, b, |p: i64, q: i64| p.cmp(&q))
        }
        (Column::Float64(a), Column::Float64(b)) => pair!(a, b, cmp_f64),
        _ => false,
    }
}

/// Keeps the `rows` of `l` whose value is (or with `negated`, is not) one of `list`, non-NULL
/// values of `l`'s type (NULL rows never are kept), reading `l` only at those rows; false,
/// leaving `rows` as they are, for the types this does not cover.
pub fn retain_in_list(
    l: &Column,
    list: &[ScalarValue],
    negated: bool,
    rows: &mut Vec<u32>,
) -> bool {
    macro_rules! member {
        ($a:expr, $variants:pat => $v:expr) => {{
            let Some(wanted) = list
                .iter()
                .map(|s| match s {
                    $variants => Some($v),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()
            else {
                return false;
            };
            let (x, valid) = ($a.values(), $a.validity());
            retain(
                rows,
                |r| prefetch_at(x, r),
                |r| valid.is_none_or(|v| v.get(r)) && wanted.contains(&x[r]) != negated,
            );
            true
        }};
    }
    match l {
        Column::Int32(a) | Column::Date32(a) => {
            member!(a, ScalarValue::Int32(v) | ScalarValue::Date32(v) => *v)
        }
        Column::Int64(a) | Column::Timestamp(a) => {
            member!(a, ScalarValue::Int64(v) | ScalarValue::Timestamp(v) => *v)
        }
        Column::Float64(a) => {
            // Equal as `=` says: -0.0 equals 0.0, NaN equals NaN.
            let Some(wanted) = list
                .iter()
                .map(|s| match s {
                    ScalarValue::Float64(v) => Some(*v),
                    _ => None,
                })
                .collect::<Option<Vec<f64>>>()
            else {
                return false;
            };
            let (x, valid) = (a.values(), a.validity());
            retain(
                rows,
                |r| prefetch_at(x, r),
                |r| {
                    let hit = wanted.iter().any(|w| cmp_f64(x[r], *w) == Ordering::Equal);
                    valid.is_none_or(|v| v.get(r)) && hit != negated
                },
            );
            true
        }
        Column::Utf8(a) => {
            let Some(wanted) = list
                .iter()
                .map(|s| match s {
                    ScalarValue::Utf8(v) => Some(v.as_bytes()),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()
            else {
                return false;
            };
            let (o, data) = (a.offsets(), a.data());
            retain(
                rows,
                |r| prefetch_at(o, r),
                |r| {
                    let v = &data[o[r] as usize..o[r + 1] as usize];
                    a.is_valid(r) && wanted.iter().any(|w| bytes_eq(w, v)) != negated
                },
            );
            true
        }
        _ => false,
    }
}

/// `l IN (list)` for a list of non-NULL values of `l`'s type: NULL where `l` is, else whether
/// the row equals one of them (equal as `=` says: -0.0 equals 0.0, NaN equals NaN). `None` for
/// the types this does not cover (the caller ORs comparisons).
pub fn in_list(l: &Column, list: &[ScalarValue]) -> Option<BooleanColumn> {
    macro_rules! member {
        ($a:expr, $variants:pat => $v:expr, $eq:expr) => {{
            let wanted = list
                .iter()
                .map(|s| match s {
                    $variants => Some($v),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            let x = $a.values();
            let values = Bitmap::from_values(x, |v| wanted.iter().any(|w| $eq(v, *w)));
            Some(BooleanColumn::new(values, $a.validity().cloned()))
        }};
    }
    match l {
        Column::Int32(a) | Column::Date32(a) => member!(
            a,
            ScalarValue::Int32(v) | ScalarValue::Date32(v) => *v,
            |p: i32, q: i32| p == q
        ),
        Column::Int64(a) | Column::Timestamp(a) => member!(
            a,
            ScalarValue::Int64(v) | ScalarValue::Timestamp(v) => *v,
            |p: i64, q: i64| p == q
        ),
        Column::Float64(a) => member!(
            a,
            ScalarValue::Float64(v) => *v,
            |p: f64, q: f64| cmp_f64(p, q) == Ordering::Equal
        ),
        Column::Utf8(a) => {
            let wanted = list
                .iter()
                .map(|s| match s {
                    ScalarValue::Utf8(v) => Some(v.as_bytes()),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            let values = if wanted.len() <= 8 {
                let (o, data) = (a.offsets(), a.data());
                bits_by_word!(a.len(), i => {
                    let v = &data[o[i] as usize..o[i + 1] as usize];
                    wanted.iter().any(|w| bytes_eq(w, v))
                })
            } else {
                let set: hashbrown::HashSet<&[u8]> = wanted.into_iter().collect();
                Bitmap::from_fn(a.len(), |i| set.contains(a.value_bytes(i)))
            };
            Some(BooleanColumn::new(values, a.validity().cloned()))
        }
        _ => None,
    }
}

/// `l op r` where `op` is a comparison.
pub fn compare(op: BinaryOp, l: &Column, r: &Column) -> ExecResult<BooleanColumn> {
    if !op.is_comparison() {
        return Err(ExecError::Internal(format!(
            "{} is not a comparison",
            op.symbol()
        )));
    }
    Ok(match (l, r) {
        (Column::Int32(a), Column::Int32(b)) | (Column::Date32(a), Column::Date32(b)) => {
            prim!(op, a, b, |p: i32, q: i32| p.cmp(&q))
        }
        (Column::Int64(a), Column::Int64(b)) | (Column::Timestamp(a), Column::Timestamp(b)) => {
            prim!(op, a, b, |p: i64, q: i64| p.cmp(&q))
        }
        (Column::Float64(a), Column::Float64(b)) => {
            let (x, y) = (a.values(), b.values());
            let values = with_f64_order!(op, |holds| Bitmap::from_pairs(x, y, holds));
            BooleanColumn::new(values, and_validity(a.validity(), b.validity()))
        }
        (Column::Utf8(a), Column::Utf8(b)) => {
            let values = Bitmap::from_fn(a.len(), |i| {
                op.holds(a.value_bytes(i).cmp(b.value_bytes(i)))
            });
            BooleanColumn::new(values, and_validity(a.validity(), b.validity()))
        }
        (Column::Boolean(a), Column::Boolean(b)) => {
            let (x, y) = (a.values(), b.values());
            let values = Bitmap::from_fn(a.len(), |i| op.holds(x.get(i).cmp(&y.get(i))));
            BooleanColumn::new(values, and_validity(a.validity(), b.validity()))
        }
        (a, b) => {
            return Err(ExecError::Internal(format!(
                "comparing {} with {} (the planner should have cast them)",
                a.data_type(),
                b.data_type()
            )))
        }
    })
}

#[cfg(test)]
mod tests {

    /// The vectorized float comparisons answer as the float order does for every pair of
    /// special and ordinary values, under every operator.
    #[test]
    fn float_comparisons_follow_the_float_order() {
        use super::{cmp_f64, BinaryOp};
        let values = [
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            1.5,
            -1.5,
            f64::MIN_POSITIVE,
            f64::MAX,
        ];
        for op in BinaryOp::COMPARISONS {
            for &p in &values {
                for &q in &values {
                    let want = op.holds(cmp_f64(p, q));
                    let got = with_f64_order!(op, |holds| holds(p, q));
                    assert_eq!(got, want, "{p} {} {q}", op.symbol());
                }
            }
        }
    }
    use morsel_planner::BinaryOp;
    use morsel_storage::{BooleanColumn, Column, PrimitiveColumn, ScalarValue, Utf8Column};

    use super::{
        bytes_eq, compare, compare_scalar, in_list, retain_in_list, retain_pair, retain_scalar,
    };
    use crate::kernels::boolean::or;
    use crate::kernels::cast::broadcast;

    /// Against a constant, the scalar path gives what comparing with a column of copies
    /// gives, NULLs, NaN and -0.0 included, for every operator and both integer widths.
    #[test]
    fn comparing_with_a_constant_equals_comparing_with_copies() {
        let floats = [
            Some(1.5),
            None,
            Some(f64::NAN),
            Some(-0.0),
            Some(0.0),
            Some(-2.0),
            Some(f64::INFINITY),
            Some(f64::NEG_INFINITY),
        ];
        let ints = [Some(3), None, Some(-1), Some(0), Some(7), Some(3)];
        let columns = [
            Column::Float64(PrimitiveColumn::from_options(floats)),
            Column::Utf8(Utf8Column::from_strs([
                Some("AIR"),
                None,
                Some(""),
                Some("AIR REG"),
                Some("AI"),
                Some("air"),
            ])),
            Column::Int64(PrimitiveColumn::from_options(
                ints.map(|v| v.map(i64::from)),
            )),
            Column::Date32(PrimitiveColumn::from_options(ints)),
        ];
        let constants = [
            vec![
                ScalarValue::Float64(0.0),
                ScalarValue::Float64(-0.0),
                ScalarValue::Float64(f64::NAN),
                ScalarValue::Float64(1.5),
                ScalarValue::Float64(f64::INFINITY),
            ],
            vec![
                ScalarValue::Utf8("AIR".into()),
                ScalarValue::Utf8(String::new()),
                ScalarValue::Utf8("AIR REGULAR".into()),
            ],
            vec![ScalarValue::Int64(3), ScalarValue::Int64(-5)],
            vec![ScalarValue::Date32(0), ScalarValue::Date32(7)],
        ];
        for (col, values) in columns.iter().zip(&constants) {
            for value in values {
                let copies = broadcast(value, col.data_type(), col.len()).unwrap();
                for op in BinaryOp::COMPARISONS {
                    let got = compare_scalar(op, col, value).unwrap();
                    let want = compare(op, col, &copies).unwrap();
                    assert_eq!(show(&got), show(&want), "{op:?} {value:?}");
                    // At listed rows: the ones (of every other row) where it is true.
                    let mut rows: Vec<u32> = (0..col.len() as u32).step_by(2).collect();
                    assert!(retain_scalar(op, col, value, &mut rows));
                    let kept: Vec<u32> = (0..col.len() as u32)
                        .step_by(2)
                        .filter(|&r| show(&want)[r as usize] == Some(true))
                        .collect();
                    assert_eq!(rows, kept, "{op:?} {value:?} at rows");
                }
            }
            // IN over these constants, one at a time, all, and more than the linear scan
            // takes: the same as ORing `=` with each.
            let mut lists: Vec<Vec<ScalarValue>> = values.iter().map(|v| vec![v.clone()]).collect();
            lists.push(values.clone());
            lists.push(values.iter().cycle().take(11).cloned().collect());
            for list in lists {
                let got = in_list(col, &list).unwrap();
                let mut want = compare(
                    BinaryOp::Eq,
                    col,
                    &broadcast(&list[0], col.data_type(), col.len()).unwrap(),
                )
                .unwrap();
                for v in &list[1..] {
                    let copies = broadcast(v, col.data_type(), col.len()).unwrap();
                    want = or(&want, &compare(BinaryOp::Eq, col, &copies).unwrap());
                }
                assert_eq!(show(&got), show(&want), "IN {list:?}");
                // At listed rows, IN and NOT IN: the valid rows it is true (false) at.
                for negated in [false, true] {
                    let mut rows: Vec<u32> = (0..col.len() as u32).collect();
                    assert!(retain_in_list(col, &list, negated, &mut rows));
                    let kept: Vec<u32> = (0..col.len() as u32)
                        .filter(|&r| show(&want)[r as usize] == Some(!negated))
                        .collect();
                    assert_eq!(rows, kept, "IN {list:?} negated {negated} at rows");
                }
            }
        }
    }

    /// A column of one-byte values (so known when made), whole or a window part way in,
    /// compares with a one-byte constant as with a column of copies; so does one where a
    /// single value past the first block of offsets is longer or empty (not known when made,
    /// checked), and its windows of one-byte values.
    #[test]
    fn one_byte_values_compare_as_copies_do() {
        let letters = ["A", "N", "R"];
        let base: Vec<&str> = (0..3000).map(|i| letters[i * 7 % 3]).collect();
        let (mut longer, mut empty) = (base.clone(), base.clone());
        longer[2500] = "RR";
        empty[2047] = "";
        for values in [base, longer, empty] {
            let col = Column::Utf8(Utf8Column::from_strs(values.iter().map(|&v| Some(v))));
            // Whole, windows part way in (one-byte windows of the mixed columns among
            // them), one row, none.
            for (from, len) in [
                (0, 3000),
                (1, 2999),
                (1030, 1500),
                (0, 2000),
                (2500, 1),
                (5, 0),
            ] {
                let window = col.slice(from, len);
                for value in ["R", "X", "RR", ""] {
                    let value = ScalarValue::Utf8(value.into());
                    let copies = broadcast(&value, window.data_type(), len).unwrap();
                    for op in [BinaryOp::Eq, BinaryOp::NotEq] {
                        let got = compare_scalar(op, &window, &value).unwrap();
                        let want = compare(op, &window, &copies).unwrap();
                        assert_eq!(show(&got), show(&want), "{op:?} {value:?} {from}+{len}");
                    }
                }
            }
        }
    }

    /// Comparing two columns at listed rows keeps the rows where comparing the columns
    /// whole is true (NULL and NaN included); other pairs of types are declined.
    #[test]
    fn comparing_two_columns_at_rows_equals_comparing_them_whole() {
        let a = [
            Some(1.5),
            None,
            Some(f64::NAN),
            Some(-0.0),
            Some(2.0),
            Some(f64::NAN),
        ];
        let b = [
            Some(1.5),
            Some(3.0),
            Some(f64::NAN),
            Some(0.0),
            None,
            Some(1.0),
        ];
        let ints = |x: [Option<f64>; 6]| x.map(|v| v.filter(|f| !f.is_nan()).map(|f| f as i64));
        let pairs = [
            (
                Column::Float64(PrimitiveColumn::from_options(a)),
                Column::Float64(PrimitiveColumn::from_options(b)),
            ),
            (
                Column::Int64(PrimitiveColumn::from_options(ints(a))),
                Column::Int64(PrimitiveColumn::from_options(ints(b))),
            ),
            (
                Column::Date32(PrimitiveColumn::from_options(
                    ints(a).map(|v| v.map(|x| x as i32)),
                )),
                Column::Date32(PrimitiveColumn::from_options(
                    ints(b).map(|v| v.map(|x| x as i32)),
                )),
            ),
        ];
        for (l, r) in &pairs {
            for op in BinaryOp::COMPARISONS {
                let want = show(&compare(op, l, r).unwrap());
                let mut rows: Vec<u32> = (0..l.len() as u32).collect();
                assert!(retain_pair(op, l, r, &mut rows));
                let kept: Vec<u32> = (0..l.len() as u32)
                    .filter(|&i| want[i as usize] == Some(true))
                    .collect();
                assert_eq!(rows, kept, "{op:?} {}", l.data_type());
            }
        }
        let mut rows = vec![0, 1];
        assert!(!retain_pair(
            BinaryOp::Lt,
            &pairs[1].0,
            &pairs[2].1,
            &mut rows
        ));
        assert_eq!(rows, vec![0, 1]);
    }

    fn show(c: &BooleanColumn) -> Vec<Option<bool>> {
        (0..c.len()).map(|i| c.get(i)).collect()
    }

    #[test]
    fn bytes_eq_is_slice_equality() {
        let keys: Vec<Vec<u8>> = (0..=40)
            .flat_map(|n| {
                let base: Vec<u8> = (0..n as u8).collect();
                let mut last = base.clone();
                if let Some(b) = last.last_mut() {
                    *b ^= 1;
                }
                let mut first = base.clone();
                if let Some(b) = first.first_mut() {
                    *b ^= 0x80;
                }
                let mut middle = base.clone();
                if let Some(b) = middle.get_mut(n / 2) {
                    *b ^= 4;
                }
                [base, last, first, middle]
            })
            .collect();
        for a in &keys {
            for b in &keys {
                assert_eq!(bytes_eq(a, b), a == b, "{a:?} {b:?}");
            }
        }
    }
}
