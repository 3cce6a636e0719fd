//! Window function calls: `f(...) OVER (PARTITION BY ... ORDER BY ... frame)`. The select
//! block evaluates them in a Window node after grouping and HAVING, before the projection.

use morsel_planner::{
    AggFunc, Expr, FrameBound, FrameUnits, PlanSchema, WindowExpr, WindowFrame, WindowFunc,
};
use sqlparser::ast::{self, Spanned};

use super::functions::{self, FunctionKind};
use super::query::sort_expr;
use super::Binder;
use crate::error::SqlError;

/// How deeply named windows may refer to each other (a cycle would not end).
const MAX_WINDOW_REFERENCES: usize = 64;

impl Binder<'_> {
    /// The window the select block's `WINDOW name AS ...` defines.
    fn named_window(&self, name: &ast::Ident, depth: usize) -> Result<ast::WindowSpec, SqlError> {
        if depth > MAX_WINDOW_REFERENCES {
            return Err(SqlError::invalid(format!(
                "the window {name} refers to itself through other named windows"
            )));
        }
        let def = self
            .windows
            .borrow()
            .iter()
            .find(|d| d.0.value.eq_ignore_ascii_case(&name.value))
            .map(|d| d.1.clone());
        match def {
            None => Err(
                SqlError::invalid(format!("no window named {name} in this query block"))
                    .at(name.span),
            ),
            Some(ast::NamedWindowExpr::NamedWindow(other)) => self.named_window(&other, depth + 1),
            Some(ast::NamedWindowExpr::WindowSpec(spec)) => self.resolve_window(&spec, depth + 1),
        }
    }

    /// `spec` with the named window it starts from (`OVER (w ORDER BY x)`) filled in: the
    /// named window's partitioning, its ordering unless `spec` orders (not both), and
    /// `spec`'s frame, as the SQL standard combines them.
    fn resolve_window(
        &self,
        spec: &ast::WindowSpec,
        depth: usize,
    ) -> Result<ast::WindowSpec, SqlError> {
        let Some(base) = &spec.window_name else {
            return Ok(spec.clone());
        };
        let mut out = self.named_window(base, depth)?;
        if !spec.partition_by.is_empty() {
            return Err(SqlError::invalid(format!(
                "a window over {base} cannot add PARTITION BY (the named window partitions)"
            )));
        }
        if !spec.order_by.is_empty() {
            if !out.order_by.is_empty() {
                return Err(SqlError::invalid(format!(
                    "a window over {base} cannot order again: {base} has an ORDER BY"
                )));
            }
            out.order_by = spec.order_by.clone();
        }
        if spec.window_frame.is_some() {
            out.window_frame = spec.window_frame.clone();
        }
        out.window_name = None;
        Ok(out)
    }

    pub(crate) fn window_function(
        &self,
        f: &ast::Function,
        name: &str,
        list: &ast::FunctionArgumentList,
        scope: &PlanSchema,
    ) -> Result<Expr, SqlError> {
        let spec = match &f.over {
            Some(ast::WindowType::WindowSpec(spec)) => self.resolve_window(spec, 0)?,
            Some(ast::WindowType::NamedWindow(name)) => self.named_window(name, 0)?,
            None => return Err(SqlError::invalid(format!("{name}() has no OVER clause"))),
        };
        let spec = &spec;
        // `f(x) IGNORE NULLS OVER ...` or `f(x IGNORE NULLS) OVER ...`.
        let mut treatment = f.null_treatment;
        let mut clauses = 0;
        for c in &list.clauses {
            if let ast::FunctionArgumentClause::IgnoreOrRespectNulls(t) = c {
                treatment = Some(*t);
            } else {
                clauses += 1;
            }
        }
        let ignore_nulls = treatment == Some(ast::NullTreatment::IgnoreNulls);
        if f.filter.is_some()
            || list.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct)
            || clauses > 0
        {
            return Err(SqlError::unsupported(format!(
                "DISTINCT, FILTER or ORDER BY inside the window function {name}()"
            )));
        }
        let (args, star) = self.function_args(name, list, scope)?;
        let func = match name {
            "row_number" => WindowFunc::RowNumber,
            "rank" => WindowFunc::Rank,
            "dense_rank" => WindowFunc::DenseRank,
            "ntile" => WindowFunc::Ntile,
            "lag" => WindowFunc::Lag,
            "lead" => WindowFunc::Lead,
            "first_value" => WindowFunc::FirstValue,
            "last_value" => WindowFunc::LastValue,
            "nth_value" => WindowFunc::NthValue,
            _ => match functions::lookup(name) {
                Some(FunctionKind::Aggregate(AggFunc::Count)) if star => {
                    WindowFunc::Aggregate(AggFunc::CountStar)
                }
                Some(FunctionKind::Aggregate(a)) => WindowFunc::Aggregate(a),
                _ => {
                    return Err(SqlError::unsupported(format!(
                        "{name}() as a window function"
                    )))
                }
            },
        };
        if star && func != WindowFunc::Aggregate(AggFunc::CountStar) {
            return Err(SqlError::invalid(format!("{name}(*) is not a function")));
        }
        if args.iter().any(Expr::contains_window) {
            return Err(SqlError::invalid("window function calls cannot be nested"));
        }
        let partition_by = spec
            .partition_by
            .iter()
            .map(|e| self.expr(e, scope))
            .collect::<Result<Vec<_>, _>>()?;
        let order_by = spec
            .order_by
            .iter()
            .map(|o| Ok(sort_expr(self.expr(&o.expr, scope)?, o)))
            .collect::<Result<Vec<_>, SqlError>>()?;
        let frame = match &spec.window_frame {
            None => WindowFrame::default_for(!order_by.is_empty()),
            Some(fr) => frame(fr, !order_by.is_empty())?,
        };
        if ignore_nulls
            && !matches!(
                func,
                WindowFunc::FirstValue
                    | WindowFunc::LastValue
                    | WindowFunc::NthValue
                    | WindowFunc::Lag
                    | WindowFunc::Lead
            )
        {
            return Err(SqlError::invalid(format!(
                "IGNORE NULLS in {name}() (first_value, last_value, nth_value, lag and lead \
                 take it)"
            )));
        }
        Ok(Expr::Window(Box::new(WindowExpr {
            func,
            args,
            partition_by,
            order_by,
            frame,
            ignore_nulls,
        })))
    }
}

fn frame(fr: &ast::WindowFrame, ordered: bool) -> Result<WindowFrame, SqlError> {
    let units = match fr.units {
        ast::WindowFrameUnits::Rows => FrameUnits::Rows,
        ast::WindowFrameUnits::Range => FrameUnits::Range,
        ast::WindowFrameUnits::Groups => FrameUnits::Groups,
    };
    // ROWS and GROUPS offsets count (rows, peer groups); RANGE offsets are distances.
    let rows = units != FrameUnits::Range;
    let start = bound(&fr.start_bound, rows)?;
    let end = match &fr.end_bound {
        Some(b) => bound(b, rows)?,
        None => FrameBound::CurrentRow,
    };
    if start == FrameBound::UnboundedFollowing || end == FrameBound::UnboundedPreceding {
        return Err(SqlError::invalid(format!(
            "the frame cannot start at {start} or end at {end}"
        )));
    }
    let offsets = [start, end]
        .iter()
        .any(|b| matches!(b, FrameBound::Preceding(_) | FrameBound::Following(_)));
    if units == FrameUnits::Range && offsets && !ordered {
        return Err(SqlError::invalid(
            "a RANGE frame with an offset needs ORDER BY",
        ));
    }
    Ok(WindowFrame { units, start, end })
}

fn bound(b: &ast::WindowFrameBound, rows: bool) -> Result<FrameBound, SqlError> {
    let offset = |e: &ast::Expr| -> Result<f64, SqlError> {
        let v = match e {
            // A ROWS offset is a row count up to i64::MAX; a RANGE offset a distance.
            ast::Expr::Value(v) => match &v.value {
                ast::Value::Number(n, _) if rows => n.parse::<i64>().ok().map(|n| n as f64),
                ast::Value::Number(n, _) => n.parse::<f64>().ok(),
                _ => None,
            },
            _ => None,
        };
        match v {
            Some(x) if x >= 0.0 && (!rows || x.fract() == 0.0) => Ok(x),
            _ => Err(SqlError::invalid(format!(
                "a frame offset must be a non-negative {}constant, got {e}",
                if rows { "integer " } else { "" }
            ))
            .at(e.span())),
        }
    };
    Ok(match b {
        ast::WindowFrameBound::CurrentRow => FrameBound::CurrentRow,
        ast::WindowFrameBound::Preceding(None) => FrameBound::UnboundedPreceding,
        ast::WindowFrameBound::Following(None) => FrameBound::UnboundedFollowing,
        ast::WindowFrameBound::Preceding(Some(e)) => FrameBound::Preceding(offset(e)?),
        ast::WindowFrameBound::Following(Some(e)) => FrameBound::Following(offset(e)?),
    })
}
