//! Simplifies predicates and expressions without changing any result, under SQL's
//! three-valued logic: `x AND TRUE` is `x`, `x AND FALSE` is `FALSE` (also for a NULL `x`),
//! `x OR TRUE` is `TRUE`, `x OR FALSE` is `x`, `NOT NOT x` is `x`, `NOT (a < b)` is `a >= b`,
//! a one-element `IN` list is an equality, and `x = x` is `TRUE` when `x` cannot be NULL. A
//! filter left with `TRUE` disappears. Constants fold: arithmetic, comparisons, negation and
//! casts of literals are computed once here (`8101 - 8035` becomes `66`), except where the
//! computation would fail (overflow, division by zero, a bad cast), which is left for run
//! time so that it fails only if a row reaches it.

use morsel_storage::ScalarValue;

use crate::error::PlanResult;
use crate::expr::{BinaryOp, Expr, ScalarFunc};
use crate::optimizer::OptimizerRule;
use crate::plan::LogicalPlan;
use crate::schema::PlanSchema;

pub struct SimplifyExpressions;

impl OptimizerRule for SimplifyExpressions {
    fn name(&self) -> &'static str {
        "simplify_expressions"
    }

    fn rewrite(&self, plan: LogicalPlan) -> PlanResult<LogicalPlan> {
        rewrite(plan)
    }
}

fn rewrite(plan: LogicalPlan) -> PlanResult<LogicalPlan> {
    let plan = plan.map_children(rewrite)?;
    Ok(match plan {
        LogicalPlan::Filter { input, predicate } => {
            let predicate = simplify(predicate, input.schema());
            if predicate == Expr::Literal(ScalarValue::Boolean(true)) {
                *input
            } else {
                LogicalPlan::Filter { input, predicate }
            }
        }
        LogicalPlan::Projection {
            input,
            exprs,
            schema,
        } => {
            let exprs = exprs
                .into_iter()
                .map(|e| match e {
                    // Keep the output name the user sees.
                    Expr::Alias { expr, name } => Expr::Alias {
                        expr: Box::new(simplify(*expr, input.schema())),
                        name,
                    },
                    e => {
                        let name = e.output_name();
                        let s = simplify(e.clone(), input.schema());
                        if s == e {
                            e
                        } else {
                            s.alias(name)
                        }
                    }
                })
                .collect();
            LogicalPlan::Projection {
                input,
                exprs,
                schema,
            }
        }
        LogicalPlan::Aggregate {
            input,
            group,
            aggs,
            schema,
        } => {
            // Aggregate arguments, under the aggregate's own output name.
            let aggs = aggs
                .into_iter()
                .map(|a| {
                    let name = a.output_name();
                    let s = simplify(a.clone(), input.schema());
                    if s == a {
                        a
                    } else {
                        s.unalias().alias(name)
                    }
                })
                .collect();
            LogicalPlan::Aggregate {
                input,
                group,
                aggs,
                schema,
            }
        }
        LogicalPlan::Scan(mut scan) => {
            let schema = scan.schema.clone();
            scan.filters = scan
                .filters
                .into_iter()
                .map(|f| simplify(f, &schema))
                .filter(|f| *f != Expr::Literal(ScalarValue::Boolean(true)))
                .collect();
            LogicalPlan::Scan(scan)
        }
        other => other,
    })
}

fn boolean(v: bool) -> Expr {
    Expr::Literal(ScalarValue::Boolean(v))
}

fn is_bool(e: &Expr, v: bool) -> bool {
    *e == boolean(v)
}

/// `e` simplified bottom-up; `schema` is the input it is evaluated over (for nullability).
pub fn simplify(e: Expr, schema: &PlanSchema) -> Expr {
    e.transform_up(&mut |x| simplify_node(x, schema))
}

fn simplify_node(e: Expr, schema: &PlanSchema) -> Expr {
    // Arithmetic, comparisons, negation and functions that are NULL for a NULL argument,
    // given a NULL constant, are NULL whatever their other operands are, so those are not
    // computed (as DuckDB folds them: `CAST(d AS INTEGER) + NULL` is NULL even where the
    // cast would fail).
    if null_in_null_out(&e) {
        return typed_null(e, schema);
    }
    match e {
        Expr::Binary {
            left,
            op: BinaryOp::And,
            right,
        } => match (*left, *right) {
            (l, r) if is_bool(&l, true) => r,
            (l, r) if is_bool(&r, true) => l,
            (l, r) if is_bool(&l, false) || is_bool(&r, false) => boolean(false),
            (l, r) => l.and(r),
        },
        Expr::Binary {
            left,
            op: BinaryOp::Or,
            right,
        } => match (*left, *right) {
            (l, r) if is_bool(&l, false) => r,
            (l, r) if is_bool(&r, false) => l,
            (l, r) if is_bool(&l, true) || is_bool(&r, true) => boolean(true),
            (l, r) => l.or(r),
        },
        Expr::Not(inner) => match *inner {
            Expr::Not(x) => *x,
            Expr::Literal(ScalarValue::Boolean(b)) => boolean(!b),
            Expr::Binary { left, op, right } if op.is_comparison() => Expr::Binary {
                left,
                op: op.negated(),
                right,
            },
            other => Expr::Not(Box::new(other)),
        },
        Expr::InList {
            expr,
            mut list,
            negated,
        } if list.len() == 1 => {
            let v = list.pop().expect("one element");
            Expr::Binary {
                left: expr,
                op: if negated {
                    BinaryOp::NotEq
                } else {
                    BinaryOp::Eq
                },
                right: Box::new(v),
            }
        }
        Expr::Binary { left, op, right }
            if matches!((&*left, &*right), (Expr::Literal(_), Expr::Literal(_))) =>
        {
            match (&*left, &*right) {
                (Expr::Literal(l), Expr::Literal(r)) => match fold_binary(l, op, r) {
                    Some(v) => Expr::Literal(v),
                    None => Expr::Binary { left, op, right },
                },
                _ => Expr::Binary { left, op, right },
            }
        }
        Expr::Negative(inner) => match *inner {
            Expr::Literal(ScalarValue::Int64(v)) if v != i64::MIN => {
                Expr::Literal(ScalarValue::Int64(-v))
            }
            Expr::Literal(ScalarValue::Int32(v)) if v != i32::MIN => {
                Expr::Literal(ScalarValue::Int32(-v))
            }
            Expr::Literal(ScalarValue::Float64(v)) => Expr::Literal(ScalarValue::Float64(-v)),
            other => Expr::Negative(Box::new(other)),
        },
        Expr::Cast { expr, to } => match *expr {
            // A cast of a NULL constant is a NULL of the outer type.
            Expr::Cast { expr: inner, .. } if is_null_constant(&inner) => {
                Expr::Literal(ScalarValue::Null).cast(to)
            }
            Expr::Literal(v) if !v.is_null() => match v.cast_to(to) {
                Ok(c) => Expr::Literal(c),
                Err(_) => Expr::Cast {
                    expr: Box::new(Expr::Literal(v)),
                    to,
                },
            },
            other => Expr::Cast {
                expr: Box::new(other),
                to,
            },
        },
        Expr::Binary {
            left,
            op: BinaryOp::Eq,
            right,
        } if left == right && !left.nullable(schema) && is_deterministic(&left) => boolean(true),
        Expr::Case {
            operand: None,
            branches,
            otherwise,
        } => simplify_case(branches, otherwise, schema),
        // Their NULL constant arguments change nothing (some argument is not one).
        Expr::Function {
            func: func @ (ScalarFunc::Coalesce | ScalarFunc::Greatest | ScalarFunc::Least),
            args,
        } if args.iter().any(is_null_constant) => {
            let mut args: Vec<Expr> = args.into_iter().filter(|a| !is_null_constant(a)).collect();
            if args.len() == 1 {
                args.pop().expect("one argument")
            } else {
                Expr::Function { func, args }
            }
        }
        other => other,
    }
}

/// A NULL of `e`'s type (or `e` itself where its type cannot be derived).
fn typed_null(e: Expr, schema: &PlanSchema) -> Expr {
    match e.data_type(schema) {
        Ok(t) => Expr::Literal(ScalarValue::Null).cast(t),
        Err(_) => e,
    }
}

/// `CASE`: branches whose condition is a FALSE or NULL constant go; a first branch whose
/// condition is TRUE is the answer.
fn simplify_case(
    branches: Vec<(Expr, Expr)>,
    otherwise: Option<Box<Expr>>,
    schema: &PlanSchema,
) -> Expr {
    let whole = |branches, otherwise| Expr::Case {
        operand: None,
        branches,
        otherwise,
    };
    let never = |w: &Expr| is_bool(w, false) || is_null_constant(w);
    if !branches.iter().any(|(w, _)| never(w) || is_bool(w, true)) {
        return whole(branches, otherwise);
    }
    // The CASE's type, before the branches that give it go.
    let Ok(t) = whole(branches.clone(), otherwise.clone()).data_type(schema) else {
        return whole(branches, otherwise);
    };
    // Branches that never hold go; one that always holds ends the CASE as its ELSE.
    let mut kept = Vec::with_capacity(branches.len());
    let mut otherwise = otherwise;
    for (w, then) in branches {
        if never(&w) {
            continue;
        }
        if is_bool(&w, true) {
            otherwise = Some(Box::new(then));
            break;
        }
        kept.push((w, then));
    }
    match (kept.is_empty(), otherwise) {
        (true, Some(o)) => *o,
        (true, None) => Expr::Literal(ScalarValue::Null).cast(t),
        (false, otherwise) => whole(kept, otherwise),
    }
}

/// A NULL literal, or a cast of one.
fn is_null_constant(x: &Expr) -> bool {
    match x {
        Expr::Literal(ScalarValue::Null) => true,
        Expr::Cast { expr, .. } => is_null_constant(expr),
        _ => false,
    }
}

/// An operator or function that is NULL when an operand is, applied to a NULL constant.
fn null_in_null_out(e: &Expr) -> bool {
    let is_null = is_null_constant;
    match e {
        Expr::Negative(x) | Expr::Not(x) => is_null(x),
        Expr::InList { expr, .. } => is_null(expr),
        Expr::Like { expr, pattern, .. } => is_null(expr) || is_null(pattern),
        // coalesce(), greatest() and least() skip NULLs: NULL only when all are.
        Expr::Function { func, args } => match func {
            ScalarFunc::Coalesce | ScalarFunc::Greatest | ScalarFunc::Least => {
                args.iter().all(is_null)
            }
            ScalarFunc::Concat => false,
            // concat_ws() skips NULL values; only a NULL separator makes it NULL.
            ScalarFunc::ConcatWs => args.first().is_some_and(is_null),
            _ => args.iter().any(is_null),
        },
        e => null_arithmetic(e, is_null),
    }
}

/// An arithmetic operator or comparison one of whose operands is a NULL constant.
fn null_arithmetic(e: &Expr, is_null: fn(&Expr) -> bool) -> bool {
    matches!(e, Expr::Binary { left, op, right }
        if matches!(
            op,
            BinaryOp::Plus
                | BinaryOp::Minus
                | BinaryOp::Multiply
                | BinaryOp::Divide
                | BinaryOp::IntDivide
                | BinaryOp::Modulo
                | BinaryOp::Eq
                | BinaryOp::NotEq
                | BinaryOp::Lt
                | BinaryOp::LtEq
                | BinaryOp::Gt
                | BinaryOp::GtEq
        ) && (is_null(left) || is_null(right)))
}

/// `l op r` for two non-NULL literals of one type, when it cannot fail; `None` leaves the
/// expression as it is.
pub(crate) fn fold_binary(l: &ScalarValue, op: BinaryOp, r: &ScalarValue) -> Option<ScalarValue> {
    use ScalarValue as V;
    if op.is_comparison() {
        let ord = match (l, r) {
            (V::Int64(a), V::Int64(b)) | (V::Timestamp(a), V::Timestamp(b)) => a.cmp(b),
            (V::Int32(a), V::Int32(b)) | (V::Date32(a), V::Date32(b)) => a.cmp(b),
            (V::Boolean(a), V::Boolean(b)) => a.cmp(b),
            (V::Utf8(a), V::Utf8(b)) => a.as_bytes().cmp(b.as_bytes()),
            // NaN equals NaN and sorts above every number, as at run time.
            (V::Float64(a), V::Float64(b)) => morsel_storage::cmp_f64(*a, *b),
            _ => return None,
        };
        return Some(V::Boolean(op.holds(ord)));
    }
    macro_rules! int {
        ($a:expr, $b:expr, $wrap:path) => {
            match op {
                BinaryOp::Plus => $a.checked_add(*$b),
                BinaryOp::Minus => $a.checked_sub(*$b),
                BinaryOp::Multiply => $a.checked_mul(*$b),
                BinaryOp::IntDivide => $a.checked_div(*$b),
                BinaryOp::Modulo => $a.checked_rem(*$b),
                _ => None,
            }
            .map($wrap)
        };
    }
    match (l, r) {
        (V::Int64(a), V::Int64(b)) => int!(a, b, V::Int64),
        (V::Int32(a), V::Int32(b)) => int!(a, b, V::Int32),
        (V::Float64(a), V::Float64(b)) => Some(V::Float64(match op {
            BinaryOp::Plus => a + b,
            BinaryOp::Minus => a - b,
            BinaryOp::Multiply => a * b,
            BinaryOp::Divide | BinaryOp::IntDivide => a / b,
            BinaryOp::Modulo => a % b,
            _ => return None,
        })),
        _ => None,
    }
}

/// Every expression morsel has is deterministic except those that may fail on some rows
/// (their failure must not be optimized away): division and casts.
fn is_deterministic(e: &Expr) -> bool {
    let mut ok = true;
    e.visit(&mut |x| {
        if matches!(
            x,
            Expr::Cast { .. }
                | Expr::Binary {
                    op: BinaryOp::Divide | BinaryOp::IntDivide | BinaryOp::Modulo,
                    ..
                }
        ) {
            ok = false;
        }
    });
    ok
}

#[cfg(test)]
mod tests {
    use morsel_storage::DataType;

    use super::simplify;
    use crate::expr::{col, lit, Expr};
    use crate::schema::{PlanField, PlanSchema};

    fn schema() -> PlanSchema {
        PlanSchema::new(vec![
            PlanField::new(None, "a", DataType::Int64, true),
            PlanField::new(None, "k", DataType::Int64, false),
        ])
    }

    fn s(e: Expr) -> String {
        simplify(e, &schema()).to_string()
    }

    #[test]
    fn simplifies_under_three_valued_logic() {
        let p = col("a").gt(lit(1));
        assert_eq!(s(p.clone().and(lit(true))), "a > 1");
        assert_eq!(s(p.clone().and(lit(false))), "false");
        assert_eq!(s(p.clone().or(lit(true))), "true");
        assert_eq!(s(p.clone().or(lit(false))), "a > 1");
        assert_eq!(s(!!p.clone()), "a > 1");
        assert_eq!(s(!p), "a <= 1");
        let one = Expr::InList {
            expr: Box::new(col("a")),
            list: vec![lit(3)],
            negated: true,
        };
        assert_eq!(s(one), "a <> 3");
        // x = x is TRUE only when x cannot be NULL.
        assert_eq!(s(col("k").eq(col("k"))), "true");
        assert_eq!(s(col("a").eq(col("a"))), "a = a");
    }

    #[test]
    fn folds_constants_unless_they_would_fail() {
        assert_eq!(s(col("a").gt(lit(8101) - lit(8035))), "a > 66");
        assert_eq!(
            s(lit(2.5) * lit(4.0) + col("a").cast(DataType::Float64)),
            "10.0 + CAST(a AS DOUBLE)"
        );
        assert_eq!(s(lit(3).lt(lit(4)).and(col("a").gt(lit(1)))), "a > 1");
        assert_eq!(s(lit(1).cast(DataType::Float64)), "1.0");
        // Overflow and division by zero stay, to fail at run time if a row reaches them.
        assert_eq!(s(lit(i64::MAX) + lit(1)), "9223372036854775807 + 1");
        let div = Expr::Binary {
            left: Box::new(lit(1)),
            op: crate::expr::BinaryOp::IntDivide,
            right: Box::new(lit(0)),
        };
        assert_eq!(s(div), "1 // 0");
        assert_eq!(s(lit("x").cast(DataType::Int64)), "CAST('x' AS BIGINT)");
    }
}
