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
    /// Per column, its sample, taken when the planner first asks about the column (a query
    /// reads a few of a table's columns; sampling all of them cost the first query over
    /// lineitem 13 ms).
    sample: Vec<OnceLock<SampledColumn>>,
    /// Filter selectivities measured on the sample, by column and conjuncts (the planner
    /// asks for the same few many times while it orders joins).
    fractions: Mutex<Vec<Measured>>,
    /// Whole scans' estimated selectivities.
    pub(crate) scans: ScanSelectivities,
}

/// A filter's measured fraction: the column, its conjuncts, the fraction (if measurable).
type Measured = (usize, Vec<Expr>, Option<f64>);

/// One column's values at rows spread evenly over the table.
#[derive(Debug)]
struct SampledColumn {
    /// The sampled values (NULLs included), in table order.
    values: Vec<ScalarValue>,
    /// The column's estimated distinct values.
    distinct: f64,
}

/// Rows sampled at most; fewer for wide tables, so a sample holds at most
/// [`SAMPLE_VALUES`] values.
const SAMPLE_ROWS: usize = 4096;
const SAMPLE_VALUES: usize = 1 << 20;

impl MemTable {
    pub fn new(schema: SchemaRef, batches: Vec<Batch>) -> Self {
        Self {
            sample: (0..schema.len()).map(|_| OnceLock::new()).collect(),
            schema,
            rows: batches.iter().map(Batch::num_rows).sum(),
            batches,
            fractions: Mutex::new(Vec::new()),
            scans: ScanSelectivities::default(),
        }
    }

    pub fn num_rows(&self) -> usize {
        self.rows
    }

    /// Estimated distinct values of column `col` (from its sample, taken once).
    pub fn estimated_distinct(&self, col: usize) -> Option<f64> {
        self.sampled(col).map(|s| s.distinct)
    }

    /// Column `col`'s sampled values (NULLs included), in table order; `None` for a column
    /// the table does not have.
    pub fn sampled_values(&self, col: usize) -> Option<&[ScalarValue]> {
        self.sampled(col).map(|s| s.values.as_slice())
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
        let values = &self.sampled(col)?.values;
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

    /// Column `col`'s sample (`None` for a column the table does not have), taken on first
    /// use: the same rows for every column, as many as the table's width allows.
    fn sampled(&self, col: usize) -> Option<&SampledColumn> {
        let cell = self.sample.get(col)?;
        Some(cell.get_or_init(|| {
            let rows = self.num_rows();
            let wanted = SAMPLE_ROWS
                .min(SAMPLE_VALUES / self.schema.len().max(1))
                .max(64);
            self.sample_column(col, rows, (rows / wanted).max(1))
        }))
    }

    /// Column `c`'s values at every `step`-th row, and its estimated distinct values. Each
    /// sampled row is also compared with the next one: a column stored in runs of equal
    /// values (clustered, like line items by order) has at most as many distinct values as
    /// runs, where the sample alone sees nearly every value as new.
    fn sample_column(&self, c: usize, rows: usize, step: usize) -> SampledColumn {
        let mut values = Vec::with_capacity(rows / step + 1);
        let (mut pairs, mut repeats) = (0usize, 0usize);
        let mut base: usize = 0;
        let mut at = Vec::new();
        for b in &self.batches {
            let rows = b.num_rows();
            let sampled = (base.div_ceil(step) * step - base..rows).step_by(step);
            base += rows;
            // Each sampled row and the row after it (where the batch has one), gathered in
            // one pass so that their cache misses overlap (the rows lie pages apart).
            at.clear();
            for i in sampled.clone() {
                at.extend((i..rows.min(i + 2)).map(|r| r as u32));
            }
            if at.is_empty() {
                continue;
            }
            let got = b.column(c).take(&at);
            let mut k = 0;
            for i in sampled {
                let value = got.scalar_at(k);
                if i + 1 < rows {
                    if !value.is_null() && got.is_valid(k + 1) {
                        pairs += 1;
                        repeats += usize::from(got.scalar_at(k + 1) == value);
                    }
                    k += 1;
                }
                k += 1;
                values.push(value);
            }
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
        SampledColumn {
            distinct: sampled.min(runs).max(counts.distinct as f64),
            values,
        }
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use morsel_storage::{Batch, Column, DataType, Field, PrimitiveColumn, ScalarValue, Schema};

    use super::MemTable;

    /// Three batches of 10, 7 and 1 rows: column `a` holds the row number, `b` ten times it.
    fn table() -> MemTable {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, false),
            Field::new("b", DataType::Int64, false),
        ]));
        let batch = |rows: std::ops::Range<i64>| {
            let a = rows.clone().collect();
            let b = rows.clone().map(|r| r * 10).collect();
            let columns = vec![
                Column::Int64(PrimitiveColumn::from_vec(a)),
                Column::Int64(PrimitiveColumn::from_vec(b)),
            ];
            Batch::try_new(schema.clone(), columns, rows.count()).expect("batch")
        };
        MemTable::new(
            schema.clone(),
            vec![batch(0..10), batch(10..17), batch(17..18)],
        )
    }

    /// A column is sampled when the planner first asks about it, and alone; every row is
    /// sampled (fewer rows than the sample holds), across batch boundaries, with the last
    /// row of each batch (no row after it there) kept too.
    #[test]
    fn columns_are_sampled_on_first_use_at_every_row_across_batches() {
        let t = table();
        assert!(t.sample.iter().all(|s| s.get().is_none()));
        let b = t.sampled_values(1).expect("a column").to_vec();
        assert!(t.sample[0].get().is_none(), "column a was not asked about");
        let want: Vec<ScalarValue> = (0..18).map(|r| ScalarValue::Int64(r * 10)).collect();
        assert_eq!(b, want);
        // All distinct: the sample sees no repeats, and no runs of equal values.
        assert_eq!(t.estimated_distinct(0), Some(18.0));
        assert!(t.sampled_values(2).is_none(), "no such column");
    }
}
