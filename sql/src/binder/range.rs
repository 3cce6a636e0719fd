//! The table functions `range(...)` and `generate_series(...)`: one BIGINT column counting
//! from `start` by `step`, up to `stop` (`range` leaves `stop` out, `generate_series` takes
//! it in), as DuckDB spells them: `range(stop)` is `range(0, stop, 1)`. The rows are built
//! when the statement is bound, as an in-memory table, so the count is capped.

use std::sync::Arc;

use morsel_planner::{Expr, MemTable, PlanBuilder, PlanSchema, TableSource};
use morsel_storage::{
    Batch, Buffer, Column, DataType, Field, PrimitiveColumn, ScalarValue, Schema,
};
use sqlparser::ast::{self, Spanned};

use super::Binder;
use crate::error::SqlError;

/// The most rows one call may produce: its column is built in memory (8 bytes a row, so
/// 2 GiB here) before the query runs.
const MAX_ROWS: u64 = 1 << 28;

/// Rows per batch of the built table (the scan cuts batches into morsels of its own).
const BATCH_ROWS: u64 = 1 << 20;

impl Binder<'_> {
    /// `range(...)` (`inclusive` false) or `generate_series(...)` (true) in FROM.
    pub(crate) fn range_function(
        &self,
        name: &str,
        args: &[ast::FunctionArg],
        alias: Option<String>,
    ) -> Result<PlanBuilder, SqlError> {
        let inclusive = name == "generate_series";
        let empty = PlanSchema::new(Vec::new());
        let mut values = Vec::with_capacity(args.len());
        for a in args {
            let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = a else {
                return Err(SqlError::invalid(format!("{name}() takes integers")).at(a.span()));
            };
            values.push(match self.expr(e, &empty)? {
                Expr::Literal(ScalarValue::Int32(v)) => Some(i64::from(v)),
                Expr::Literal(ScalarValue::Int64(v)) => Some(v),
                // `-9223372036854775808` binds as the DOUBLE of its digits, negated.
                Expr::Literal(ScalarValue::Float64(v))
                    if v.fract() == 0.0 && v >= i64::MIN as f64 && v < i64::MAX as f64 =>
                {
                    Some(v as i64)
                }
                Expr::Literal(ScalarValue::Null) => None,
                _ => {
                    return Err(SqlError::unsupported(format!(
                        "{name}() of anything but integer constants"
                    ))
                    .at(e.span()))
                }
            });
        }
        let (start, stop, step) = match values.as_slice() {
            [stop] => (Some(0), *stop, Some(1)),
            [start, stop] => (*start, *stop, Some(1)),
            [start, stop, step] => (*start, *stop, *step),
            _ => {
                return Err(SqlError::invalid(format!(
                    "{name}() takes 1 to 3 arguments, got {}",
                    args.len()
                )))
            }
        };
        let field = Field::new(name, DataType::Int64, false);
        let schema = Arc::new(Schema::new(vec![field]));
        // A NULL argument gives no rows, as in DuckDB.
        let batches = match (start, stop, step) {
            (Some(start), Some(stop), Some(step)) => series(name, start, stop, step, inclusive)?
                .into_iter()
                .map(|c| {
                    let rows = c.len();
                    Batch::try_new(schema.clone(), vec![c], rows)
                        .map_err(|e| SqlError::invalid(format!("internal: {e}")))
                })
                .collect::<Result<Vec<_>, _>>()?,
            _ => Vec::new(),
        };
        let source = TableSource::Memory(Arc::new(MemTable::new(schema, batches)));
        Ok(PlanBuilder::scan(
            name,
            alias.unwrap_or_else(|| name.to_string()),
            source,
        ))
    }
}

/// The values from `start` by `step` to `stop`, in batches of [`BATCH_ROWS`].
fn series(
    name: &str,
    start: i64,
    stop: i64,
    step: i64,
    inclusive: bool,
) -> Result<Vec<Column>, SqlError> {
    if step == 0 {
        return Err(SqlError::invalid(format!(
            "{name}(): the step must not be 0"
        )));
    }
    // Counted in i128: start, stop and step span all of BIGINT.
    let span = i128::from(stop) - i128::from(start);
    let step_wide = i128::from(step);
    let count: i128 = if (span > 0 && step < 0) || (span < 0 && step > 0) {
        i128::from(inclusive && span == 0)
    } else if span == 0 {
        i128::from(inclusive)
    } else {
        let whole = span / step_wide;
        let exact = span % step_wide == 0;
        whole + i128::from(!exact || inclusive)
    };
    let count = u64::try_from(count.max(0)).unwrap_or(u64::MAX);
    if count > MAX_ROWS {
        return Err(SqlError::unsupported(format!(
            "{name}() of more than {MAX_ROWS} rows (its rows are built in memory)"
        )));
    }
    let mut out = Vec::new();
    let mut done = 0u64;
    while done < count {
        let n = (count - done).min(BATCH_ROWS);
        // Every value lies between start and stop, so none overflows.
        let first = i128::from(start) + i128::from(done) * step_wide;
        let values: Vec<i64> = (0..n)
            .map(|i| (first + i128::from(i) * step_wide) as i64)
            .collect();
        out.push(Column::Int64(PrimitiveColumn::new(
            Buffer::from_vec(values),
            None,
        )));
        done += n;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::series;

    fn values(start: i64, stop: i64, step: i64, inclusive: bool) -> Vec<i64> {
        series("range", start, stop, step, inclusive)
            .expect("valid")
            .iter()
            .flat_map(|c| match c {
                morsel_storage::Column::Int64(p) => p.values().to_vec(),
                _ => Vec::new(),
            })
            .collect()
    }

    #[test]
    fn counts_as_duckdb_does() {
        assert_eq!(values(0, 3, 1, false), [0, 1, 2]);
        assert_eq!(values(0, 3, 1, true), [0, 1, 2, 3]);
        assert_eq!(values(1, 10, 4, false), [1, 5, 9]);
        assert_eq!(values(1, 9, 4, false), [1, 5]);
        assert_eq!(values(1, 9, 4, true), [1, 5, 9]);
        assert_eq!(values(5, 0, -2, false), [5, 3, 1]);
        assert_eq!(values(5, 1, -2, true), [5, 3, 1]);
        assert_eq!(values(3, 0, 1, false), Vec::<i64>::new());
        assert_eq!(values(3, 3, 1, false), Vec::<i64>::new());
        assert_eq!(values(3, 3, 1, true), [3]);
        assert_eq!(values(i64::MAX - 1, i64::MAX, 5, true), [i64::MAX - 1]);
        assert!(series("range", 0, 1, 0, false).is_err());
        assert!(series("range", i64::MIN, i64::MAX, 1, false).is_err());
    }
}
