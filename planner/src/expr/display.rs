//! SQL-like rendering of expressions. The text of an unaliased expression is also the name of
//! the column it produces, so it must be stable: plan snapshots and users depend on it.

use std::fmt;

use morsel_storage::ScalarValue;

use super::{ColumnRef, Expr, SortExpr};

impl fmt::Display for ColumnRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.relation {
            Some(r) => write!(f, "{r}.{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

fn literal(f: &mut fmt::Formatter<'_>, v: &ScalarValue) -> fmt::Result {
    match v {
        ScalarValue::Utf8(s) => write!(f, "'{}'", s.replace('\'', "''")),
        ScalarValue::Date32(_) => write!(f, "DATE '{v}'"),
        ScalarValue::Timestamp(_) => write!(f, "TIMESTAMP '{v}'"),
        ScalarValue::Float64(x) if x.fract() == 0.0 && x.is_finite() => write!(f, "{x:.1}"),
        other => write!(f, "{other}"),
    }
}

/// Operands that are themselves operators get parentheses, so the text is unambiguous.
struct Operand<'a>(&'a Expr);

impl fmt::Display for Operand<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            e @ (Expr::Binary { .. }
            | Expr::Between { .. }
            | Expr::Like { .. }
            | Expr::InList { .. }) => {
                write!(f, "({e})")
            }
            e => write!(f, "{e}"),
        }
    }
}

fn list(f: &mut fmt::Formatter<'_>, items: &[Expr]) -> fmt::Result {
    for (i, e) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{e}")?;
    }
    Ok(())
}

impl fmt::Display for Expr {
    #[recursive::recursive]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Column(c) => write!(f, "{c}"),
            Expr::Literal(v) => literal(f, v),
            Expr::Binary { left, op, right } => {
                write!(f, "{} {} {}", Operand(left), op.symbol(), Operand(right))
            }
            Expr::Not(e) => write!(f, "NOT {}", Operand(e)),
            Expr::Negative(e) => write!(f, "-{}", Operand(e)),
            Expr::IsNull(e) => write!(f, "{} IS NULL", Operand(e)),
            Expr::IsNotNull(e) => write!(f, "{} IS NOT NULL", Operand(e)),
            Expr::Cast { expr, to } => write!(f, "CAST({expr} AS {})", to.sql_name()),
            Expr::Case {
                operand,
                branches,
                otherwise,
            } => {
                f.write_str("CASE")?;
                if let Some(o) = operand {
                    write!(f, " {o}")?;
                }
                for (w, t) in branches {
                    write!(f, " WHEN {w} THEN {t}")?;
                }
                if let Some(e) = otherwise {
                    write!(f, " ELSE {e}")?;
                }
                f.write_str(" END")
            }
            Expr::InList {
                expr,
                list: items,
                negated,
            } => {
                write!(
                    f,
                    "{} {}IN (",
                    Operand(expr),
                    if *negated { "NOT " } else { "" }
                )?;
                list(f, items)?;
                f.write_str(")")
            }
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => write!(
                f,
                "{} {}BETWEEN {} AND {}",
                Operand(expr),
                if *negated { "NOT " } else { "" },
                Operand(low),
                Operand(high)
            ),
            Expr::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
                escape,
            } => {
                write!(
                    f,
                    "{} {}{} {}",
                    Operand(expr),
                    if *negated { "NOT " } else { "" },
                    if *case_insensitive { "ILIKE" } else { "LIKE" },
                    Operand(pattern)
                )?;
                match escape {
                    Some(c) => write!(f, " ESCAPE '{c}'"),
                    None => Ok(()),
                }
            }
            Expr::Function { func, args } => {
                write!(f, "{}(", func.name())?;
                list(f, args)?;
                f.write_str(")")
            }
            Expr::Window(w) => write!(f, "{w}"),
            Expr::Aggregate {
                func,
                args,
                distinct,
            } => {
                write!(f, "{}(", func.name())?;
                if *distinct {
                    f.write_str("DISTINCT ")?;
                }
                if args.is_empty() {
                    f.write_str("*")?;
                }
                list(f, args)?;
                f.write_str(")")
            }
            Expr::Alias { expr, name } => write!(f, "{expr} AS {name}"),
        }
    }
}

impl fmt::Display for SortExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {}",
            self.expr,
            if self.asc { "ASC" } else { "DESC" },
            if self.nulls_first {
                "NULLS FIRST"
            } else {
                "NULLS LAST"
            }
        )
    }
}
