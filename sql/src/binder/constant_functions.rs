//! Functions the binder answers with a constant: `typeof(x)` (the name of x's type, known
//! once x is bound), `version()`, `pi()`, `current_setting('name')`, and the statement's clock (`now()`,
//! `current_timestamp`, `current_date`, `today()`), read once per statement so that every
//! call in it sees the same instant, as in DuckDB (where it is the transaction's start).

use std::time::{SystemTime, UNIX_EPOCH};

use morsel_planner::{Expr, PlanSchema};
use morsel_storage::temporal::MICROS_PER_DAY;
use morsel_storage::{DataType, ScalarValue};

use super::functions::FunctionKind;
use super::Binder;
use crate::error::SqlError;

impl Binder<'_> {
    /// The constant `kind` (one of the constant-bound kinds) is, called with `args`.
    pub(crate) fn constant_function(
        &self,
        kind: &FunctionKind,
        name: &str,
        args: Vec<Expr>,
        scope: &PlanSchema,
    ) -> Result<Expr, SqlError> {
        let arity = |n: usize| match args.len() == n {
            true => Ok(()),
            false => Err(SqlError::invalid(format!(
                "{name}() takes {n} argument{}, got {}",
                if n == 1 { "" } else { "s" },
                args.len()
            ))),
        };
        let value =
            match kind {
                FunctionKind::TypeOf => {
                    arity(1)?;
                    let x = &args[0];
                    if x.contains_aggregate() || x.contains_window() {
                        return Err(SqlError::unsupported(
                            "typeof() of an aggregate or window function",
                        ));
                    }
                    let x = morsel_planner::expr::coerce(x.clone(), scope)?;
                    match x.data_type(scope)? {
                        // DuckDB's name for the type of an untyped NULL.
                        DataType::Null => ScalarValue::Utf8("\"NULL\"".into()),
                        t => ScalarValue::Utf8(t.sql_name().into()),
                    }
                }
                FunctionKind::Version => {
                    arity(0)?;
                    ScalarValue::Utf8(concat!("v", env!("CARGO_PKG_VERSION")).into())
                }
                FunctionKind::CurrentSetting => {
                    arity(1)?;
                    let Expr::Literal(ScalarValue::Utf8(setting)) = &args[0] else {
                        return Err(SqlError::invalid(
                            "current_setting() takes the setting's name as a constant string",
                        ));
                    };
                    self.catalog.setting(setting).ok_or_else(|| {
                        SqlError::invalid(format!("there is no setting named {setting}"))
                    })?
                }
                FunctionKind::Pi => {
                    arity(0)?;
                    ScalarValue::Float64(std::f64::consts::PI)
                }
                FunctionKind::Now => {
                    arity(0)?;
                    ScalarValue::Timestamp(self.statement_time())
                }
                FunctionKind::Today => {
                    arity(0)?;
                    let days = self.statement_time().div_euclid(MICROS_PER_DAY);
                    ScalarValue::Date32(i32::try_from(days).map_err(|_| {
                        SqlError::invalid("the system clock is outside the DATE range")
                    })?)
                }
                _ => {
                    return Err(SqlError::invalid(format!(
                        "internal: {name}() is not bound to a constant"
                    )))
                }
            };
        Ok(Expr::Literal(value))
    }

    /// The statement's clock: microseconds since 1970-01-01 UTC, read at its first use.
    fn statement_time(&self) -> i64 {
        if let Some(t) = self.clock.get() {
            return t;
        }
        let t = match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
            Err(before) => -i64::try_from(before.duration().as_micros()).unwrap_or(i64::MAX),
        };
        self.clock.set(Some(t));
        t
    }
}
