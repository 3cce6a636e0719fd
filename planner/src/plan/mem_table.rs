//! In-memory tables, and what the planner learns about them from a sample of their rows:
//! distinct counts per column (for join and group estimates) and the fraction of rows a scan
//! filter keeps (see `optimizer::sample_filter`).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use morsel_storage::stats::{estimate_distinct, SampleCounts};
use morsel_storage::{Batch, ScalarValue, SchemaRef};

use super::remembered::{remember, ScanSelectivities};
use crate::expr::Expr;

/// An in-memory table: batches that share one schema.
#[derive(Debug)]
pub struct MemTable {
    pub schema: SchemaRef,
    pub batches: Vec<Batch>,
    /// The batches' rows in all (the planner asks for them at every estimate).
    rows: usize,
    /// Taken on first use by the planner.
    sample: OnceLock<Sample>,
    /// Filter selectivities measured on the sample, by column and conjuncts (the planner
    /// asks for the same few many times while it orders joins).
    fractions: Mutex<Vec<Measured>>,
    /// Whole scans' estimated selectivities.
    pub(crate) scans: ScanSelectivities,
}

/// A filter's measured fraction: the column, its conjuncts, the fraction (if measurable).
type Measured = (usize, Vec<Expr>, Option<f64>);

/// Rows spread evenly over the table.
#[derive(Debug)]
struct Sample {
    /// Per column, the sampled values (NULLs included), in table order.
    values: Vec<Vec<ScalarValue>>,
    /// Per column, the estimated distinct values.
    distinct: Vec<f64>,
}

/// Rows sampled at most; fewer for wide tables, so a sample holds at most
/// [`SAMPLE_VALUES`] values.
const SAMPLE_ROWS: usize = 4096;
const SAMPLE_VALUES: usize = 1 << 20;

impl MemTable {
    pub fn new(schema: SchemaRef, batches: Vec<Batch>) -> Self {
        Self {
            schema,
            rows: batches.iter().map(Batch::num_rows).sum(),
            batches,
            sample: OnceLock::new(),
            fractions: Mutex::new(Vec::new()),
            scans: ScanSelectivities::default(),
        }
    }

    pub fn num_rows(&self) -> usize {
        self.rows
    }

    /// Estimated distinct values of column `col` (from the sample, taken once).
    pub fn estimated_distinct(&self, col: usize) -> Option<f64> {
        self.sample().distinct.get(col).copied()
    }

    /// Column `col`'s sampled values (NULLs included), in table order; `None` for a column
    /// the table does not have.
    pub fn sampled_values(&self, col: usize) -> Option<&[ScalarValue]> {
        self.sample().values.get(col).map(Vec::as_slice)
    }

    /// The fraction of rows that `conjuncts` (over column `col` alone) keep, as `keep` finds
    /// it on the column's sampled values (`None`: it cannot judge them); remembered.
    pub fn sample_fraction(
        &self,
        col: usize,
        conjuncts: &[&Expr],
        keep: impl FnOnce(&[ScalarValue]) -> Option<Vec<bool>>,
    ) -> Option<f64> {
        let known = self.fractions.lock().expect("fractions");
        let same = |(c, exprs, _): &&Measured| {
            *c == col
                && exprs.len() == conjuncts.len()
                && exprs.iter().zip(conjuncts).all(|(a, b)| a == *b)
        };
        if let Some((.., f)) = known.iter().find(same) {
            return *f;
        }
        drop(known);
        let values = self.sample().values.get(col)?;
        let fraction = match values.is_empty() {
            true => None,
            false => keep(values).map(|kept| {
                let hits = kept.iter().filter(|&&k| k).count();
                (hits.max(1) as f64 / (values.len() + 1) as f64).min(1.0)
            }),
        };
        let exprs = conjuncts.iter().map(|&c| c.clone()).collect();
        remember(&self.fractions, (col, exprs, fraction));
        fraction
    }

    fn sample(&self) -> &Sample {
        self.sample.get_or_init(|| {
            let rows = self.num_rows();
            let wanted = SAMPLE_ROWS
                .min(SAMPLE_VALUES / self.schema.len().max(1))
                .max(64);
            let step = (rows / wanted).max(1);
            let (values, distinct) = (0..self.schema.len())
                .map(|c| self.sample_column(c, rows, step))
                .unzip();
            Sample { values, distinct }
        })
    }

    /// Column `c`'s values at every `step`-th row, and its estimated distinct values. Each
    /// sampled row is also compared with the next one: a column stored in runs of equal
    /// values (clustered, like line items by order) has at most as many distinct values as
    /// runs, where the sample alone sees nearly every value as new.
    fn sample_column(&self, c: usize, rows: usize, step: usize) -> (Vec<ScalarValue>, f64) {
        let mut values = Vec::with_capacity(rows / step + 1);
        let (mut pairs, mut repeats) = (0usize, 0usize);
        let mut base: usize = 0;
        for b in &self.batches {
            let column = b.column(c);
            let first = base.div_ceil(step) * step - base;
            for i in (first..b.num_rows()).step_by(step) {
                let value = column.scalar_at(i);
                if !value.is_null() && i + 1 < b.num_rows() && column.is_valid(i + 1) {
                    pairs += 1;
                    repeats += usize::from(column.scalar_at(i + 1) == value);
                }
                values.push(value);
            }
            base += b.num_rows();
        }
        let mut freq: HashMap<SampleKey, u32> = HashMap::with_capacity(values.len());
        for key in values.iter().filter_map(SampleKey::of) {
            *freq.entry(key).or_default() += 1;
        }
        let counts = SampleCounts::from_frequencies(freq.into_values());
        let sampled = estimate_distinct(counts, rows as f64);
        let runs = match pairs {
            0 => rows as f64,
            _ => rows as f64 * (pairs - repeats) as f64 / pairs as f64,
        };
        (values, sampled.min(runs).max(counts.distinct as f64))
    }
}

/// A sampled value as a key for counting repeats: numbers, dates and booleans by their bits
/// (one column holds one type), text by its bytes; `None` for NULL. Equal keys are equal
/// values; equal values have equal keys but for a float's -0.0 and 0.0, or NaNs of other
/// bits, which count apart (moving an estimate by one or two at most).
#[derive(Hash, PartialEq, Eq)]
enum SampleKey<'a> {
    Bits(u64),
    Text(&'a str),
}

impl<'a> SampleKey<'a> {
    fn of(v: &'a ScalarValue) -> Option<Self> {
        Some(match v {
            ScalarValue::Null => return None,
            ScalarValue::Boolean(b) => SampleKey::Bits(u64::from(*b)),
            ScalarValue::Int32(x) | ScalarValue::Date32(x) => SampleKey::Bits(*x as u64),
            ScalarValue::Int64(x) | ScalarValue::Timestamp(x) => SampleKey::Bits(*x as u64),
            ScalarValue::Float64(x) => SampleKey::Bits(x.to_bits()),
            ScalarValue::Utf8(s) => SampleKey::Text(s),
        })
    }
}
