//! Type derivation and coercion.
//!
//! [`coerce`] checks an expression against an input schema and rewrites it so that every
//! operator sees operands of one type: it inserts casts (Int32 + Int64 -> Int64, integer `/`
//! -> Float64, date vs string literal -> date), lowers sugar the executor need not know
//! (`BETWEEN`, simple `CASE`, date +/- integer), and folds casts of literals so a date literal
//! is parsed once, at plan time. It also reports unknown columns with suggestions.

use morsel_storage::temporal;
use morsel_storage::{DataType, ScalarValue};

use super::{AggFunc, BinaryOp, Expr, ScalarFunc};
use crate::error::{PlanError, PlanResult};
use crate::schema::PlanSchema;

fn numeric_rank(t: DataType) -> Option<u8> {
    match t {
        DataType::Int32 => Some(1),
        DataType::Int64 => Some(2),
        DataType::Float64 => Some(3),
        _ => None,
    }
}

/// The type two values are brought to before they are compared or combined.
pub(crate) fn common_type(l: DataType, r: DataType) -> Option<DataType> {
    use DataType::*;
    if l == r {
        return Some(l);
    }
    match (l, r) {
        (Null, t) | (t, Null) => Some(t),
        (a, b) if numeric_rank(a).is_some() && numeric_rank(b).is_some() => {
            Some(if numeric_rank(a) > numeric_rank(b) {
                a
            } else {
                b
            })
        }
        (Date32, Timestamp) | (Timestamp, Date32) => Some(Timestamp),
        // A string meets a typed value: the string is read as that type (DuckDB does too).
        (Utf8, t) | (t, Utf8) => Some(t),
        _ => None,
    }
}

/// Casts `e` (of type `from`) to `to`, folding literal casts now.
fn cast(e: Expr, from: DataType, to: DataType) -> PlanResult<Expr> {
    if from == to {
        return Ok(e);
    }
    match e {
        Expr::Literal(v) if !v.is_null() => Ok(Expr::Literal(v.cast_to(to)?)),
        Expr::Cast { expr, to: _ } if matches!(*expr, Expr::Literal(ScalarValue::Null)) => {
            Ok(Expr::Cast { expr, to })
        }
        e => Ok(Expr::Cast {
            expr: Box::new(e),
            to,
        }),
    }
}

fn typed(e: Expr, schema: &PlanSchema) -> PlanResult<(Expr, DataType)> {
    let e = coerce(e, schema)?;
    let t = match &e {
        // Coerced arithmetic has operands of its own type: the right one, which in the
        // left-deep chains the parser builds is a leaf, so a chain of n terms is typed in
        // n steps, not n squared.
        Expr::Binary { op, right, .. }
            if !op.is_comparison()
                && !matches!(op, BinaryOp::And | BinaryOp::Or | BinaryOp::Concat)
                && *op != BinaryOp::Divide =>
        {
            right.data_type(schema)?
        }
        e => e.data_type(schema)?,
    };
    Ok((e, t))
}

fn boolean(e: Expr, schema: &PlanSchema, what: &str) -> PlanResult<Expr> {
    let (e, t) = typed(e, schema)?;
    match t {
        DataType::Boolean => Ok(e),
        DataType::Null => cast(e, t, DataType::Boolean),
        other => Err(PlanError::mismatch(format!(
            "{what} expects BOOLEAN, got {} ({e})",
            other.sql_name()
        ))),
    }
}

/// Brings every expression in `items` to one common type.
fn unify(items: Vec<Expr>, schema: &PlanSchema, what: &str) -> PlanResult<(Vec<Expr>, DataType)> {
    let typed_items = items
        .into_iter()
        .map(|e| typed(e, schema))
        .collect::<PlanResult<Vec<_>>>()?;
    // Prefer a non-string type so that string literals are read as it.
    let mut target = DataType::Null;
    for (_, t) in &typed_items {
        let next = if target == DataType::Utf8 && *t != DataType::Null {
            Some(*t)
        } else {
            common_type(target, *t)
        };
        target = next.ok_or_else(|| PlanError::cannot_apply(what, target, *t))?;
    }
    let out = typed_items
        .into_iter()
        .map(|(e, t)| cast(e, t, target))
        .collect::<PlanResult<Vec<_>>>()?;
    Ok((out, target))
}

fn fold_date_arith(func: ScalarFunc, args: &[Expr]) -> Option<Expr> {
    match (args.first()?, args.get(1)?) {
        (Expr::Literal(ScalarValue::Date32(d)), Expr::Literal(ScalarValue::Int64(n))) => {
            let n = i32::try_from(*n).ok()?;
            let out = match func {
                ScalarFunc::AddDays => d.checked_add(n)?,
                ScalarFunc::AddMonths => temporal::add_months(*d, n)?,
                _ => return None,
            };
            Some(Expr::Literal(ScalarValue::Date32(out)))
        }
        _ => None,
    }
}

/// Type-checks `expr` against `schema` and inserts the casts its operators need.
#[recursive::recursive]
pub fn coerce(expr: Expr, schema: &PlanSchema) -> PlanResult<Expr> {
    Ok(match expr {
        Expr::Column(c) => {
            schema.index_of(&c)?;
            Expr::Column(c)
        }
        e @ Expr::Literal(_) => e,
        Expr::Alias { expr, name } => Expr::Alias {
            expr: Box::new(coerce(*expr, schema)?),
            name,
        },
        Expr::Binary { left, op, right } => coerce_binary(*left, op, *right, schema)?,
        Expr::Not(e) => Expr::Not(Box::new(boolean(*e, schema, "NOT")?)),
        Expr::Negative(e) => {
            let (e, t) = typed(*e, schema)?;
            // An untyped NULL negated is a BIGINT NULL (as in DuckDB).
            let (e, t) = match t {
                DataType::Null => (cast(e, t, DataType::Int64)?, DataType::Int64),
                t => (e, t),
            };
            if !t.is_numeric() {
                return Err(PlanError::mismatch(format!(
                    "cannot negate {} ({e})",
                    t.sql_name()
                )));
            }
            Expr::Negative(Box::new(e))
        }
        Expr::IsNull(e) => Expr::IsNull(Box::new(coerce(*e, schema)?)),
        Expr::IsNotNull(e) => Expr::IsNotNull(Box::new(coerce(*e, schema)?)),
        Expr::Cast { expr, to } => {
            let (e, t) = typed(*expr, schema)?;
            match e {
                Expr::Literal(ScalarValue::Null) => Expr::Cast {
                    expr: Box::new(e),
                    to,
                },
                e => cast(e, t, to)?,
            }
        }
        Expr::Between {
            expr,
            low,
            high,
            negated,
        } => {
            // A NULL tested against a range is NULL, but the bounds are still computed (and
            // may fail), as in DuckDB.
            if matches!(*expr, Expr::Literal(ScalarValue::Null))
                || matches!(&*expr, Expr::Cast { expr: x, .. } if matches!(**x, Expr::Literal(ScalarValue::Null)))
            {
                let bounds_known = (*low).is_null().or((*high).is_null());
                return coerce(
                    Expr::Case {
                        operand: None,
                        branches: vec![(bounds_known, Expr::Literal(ScalarValue::Null))],
                        otherwise: None,
                    }
                    .cast(DataType::Boolean),
                    schema,
                );
            }
            let range = (*expr.clone()).gt_eq(*low).and((*expr).lt_eq(*high));
            let range = coerce(range, schema)?;
            if negated {
                Expr::Not(Box::new(range))
            } else {
                range
            }
        }
        Expr::Case {
            operand,
            branches,
            otherwise,
        } => {
            let mut whens = Vec::with_capacity(branches.len());
            let mut thens = Vec::with_capacity(branches.len() + 1);
            for (w, t) in branches {
                let cond = match &operand {
                    Some(o) => (**o).clone().eq(w),
                    None => w,
                };
                whens.push(boolean(cond, schema, "CASE WHEN")?);
                thens.push(t);
            }
            let has_else = otherwise.is_some();
            thens.extend(otherwise.map(|e| *e));
            let (mut thens, _) = unify(thens, schema, "CASE")?;
            let otherwise = if has_else {
                thens.pop().map(Box::new)
            } else {
                None
            };
            Expr::Case {
                operand: None,
                branches: whens.into_iter().zip(thens).collect(),
                otherwise,
            }
        }
        Expr::InList {
            expr,
            list,
            negated,
        } => {
            let mut items = vec![*expr];
            items.extend(list);
            let (mut items, _) = unify(items, schema, "IN")?;
            let expr = items.remove(0);
            Expr::InList {
                expr: Box::new(expr),
                list: items,
                negated,
            }
        }
        Expr::Like {
            expr,
            pattern,
            negated,
            case_insensitive,
            escape,
        } => {
            let (e, t) = typed(*expr, schema)?;
            let (p, pt) = typed(*pattern, schema)?;
            Expr::Like {
                expr: Box::new(cast(e, t, DataType::Utf8)?),
                pattern: Box::new(cast(p, pt, DataType::Utf8)?),
                negated,
                case_insensitive,
                escape,
            }
        }
        Expr::Function { func, args } => coerce_function(func, args, schema)?,
        Expr::Window(w) => coerce_window(*w, schema)?,
        Expr::Aggregate {
            func,
            args,
            distinct,
        } => {
            // first / last take a FILTER mask as a second argument.
            let masked = matches!(func, AggFunc::First | AggFunc::Last) && args.len() == 2;
            if !masked {
                func.check_arity(args.len()).map_err(PlanError::Invalid)?;
            }
            let mut out = Vec::with_capacity(args.len());
            for (n, a) in args.into_iter().enumerate() {
                let (a, t) = typed(a, schema)?;
                if n == 1 && masked {
                    out.push(boolean(a, schema, func.name())?);
                    continue;
                }
                if n == 1 && !func.takes_two_columns() {
                    // The constant second argument: a fraction or a separator.
                    out.push(constant_agg_arg(func, a, t)?);
                    continue;
                }
                if a.contains_aggregate() {
                    return Err(PlanError::Invalid(format!(
                        "aggregate calls cannot be nested: {a}"
                    )));
                }
                let (a, t) = untyped_agg_arg(func, a, t)?;
                let a = match func {
                    AggFunc::Sum | AggFunc::Avg if t == DataType::Int32 => {
                        cast(a, t, DataType::Int64)?
                    }
                    AggFunc::Sum
                    | AggFunc::Avg
                    | AggFunc::StddevSamp
                    | AggFunc::StddevPop
                    | AggFunc::VarSamp
                    | AggFunc::VarPop
                    | AggFunc::Median
                    | AggFunc::QuantileCont
                    | AggFunc::Product
                        if !t.is_numeric() && t != DataType::Null =>
                    {
                        return Err(PlanError::mismatch(format!(
                            "{}() expects a number, got {} ({a})",
                            func.name(),
                            t.sql_name()
                        )));
                    }
                    AggFunc::StddevSamp
                    | AggFunc::StddevPop
                    | AggFunc::VarSamp
                    | AggFunc::VarPop
                    | AggFunc::Median
                    | AggFunc::QuantileCont
                    | AggFunc::Product => cast(a, t, DataType::Float64)?,
                    f if f.is_two_column_statistic() => {
                        if !t.is_numeric() && t != DataType::Null {
                            return Err(PlanError::mismatch(format!(
                                "{}() expects numbers, got {} ({a})",
                                func.name(),
                                t.sql_name()
                            )));
                        }
                        cast(a, t, DataType::Float64)?
                    }
                    AggFunc::BoolAnd | AggFunc::BoolOr => boolean(a, schema, func.name())?,
                    AggFunc::StringAgg => cast(a, t, DataType::Utf8)?,
                    _ => a,
                };
                out.push(a);
            }
            Expr::Aggregate {
                func,
                args: out,
                distinct,
            }
        }
    })
}

/// An aggregate over an untyped NULL aggregates INTEGER NULLs (as DuckDB does), except
/// where the aggregate names its argument's type itself.
fn untyped_agg_arg(func: AggFunc, a: Expr, t: DataType) -> PlanResult<(Expr, DataType)> {
    match (func, t) {
        (AggFunc::BoolAnd | AggFunc::BoolOr | AggFunc::StringAgg, _) => Ok((a, t)),
        (_, DataType::Null) => Ok((cast(a, t, DataType::Int32)?, DataType::Int32)),
        _ => Ok((a, t)),
    }
}

/// Window calls: arguments as for the aggregate or function, then the PARTITION BY and ORDER
/// BY expressions.
fn coerce_window(w: super::WindowExpr, schema: &PlanSchema) -> PlanResult<Expr> {
    use super::WindowFunc as W;
    let name = w.func.name();
    let (min, max) = match w.func {
        W::RowNumber | W::Rank | W::DenseRank => (0, 0),
        W::Ntile | W::FirstValue | W::LastValue => (1, 1),
        W::NthValue => (2, 2),
        W::Lag | W::Lead => (1, 3),
        W::Aggregate(a) => (a.arity(), a.arity()),
    };
    if w.args.len() < min || w.args.len() > max {
        return Err(PlanError::Invalid(format!(
            "{name}() takes {} arguments, got {}",
            if min == max {
                min.to_string()
            } else {
                format!("{min} to {max}")
            },
            w.args.len()
        )));
    }
    let args = match w.func {
        W::Aggregate(func) => {
            if !matches!(
                func,
                AggFunc::Count
                    | AggFunc::CountStar
                    | AggFunc::Sum
                    | AggFunc::Avg
                    | AggFunc::Min
                    | AggFunc::Max
            ) {
                return Err(PlanError::Invalid(format!(
                    "{name}() cannot be used as a window function yet"
                )));
            }
            // Like the aggregate's arguments (which may hold aggregates of a GROUP BY).
            let mut out = Vec::with_capacity(w.args.len());
            for a in w.args {
                let (a, t) = typed(a, schema)?;
                let (a, t) = untyped_agg_arg(func, a, t)?;
                out.push(match func {
                    AggFunc::Sum | AggFunc::Avg if t == DataType::Int32 => {
                        cast(a, t, DataType::Int64)?
                    }
                    AggFunc::Sum | AggFunc::Avg if !t.is_numeric() && t != DataType::Null => {
                        return Err(PlanError::mismatch(format!(
                            "{name}() expects a number, got {} ({a})",
                            t.sql_name()
                        )));
                    }
                    _ => a,
                });
            }
            out
        }
        W::Ntile => {
            let (n, t) = typed(w.args.into_iter().next().expect("checked"), schema)?;
            if !t.is_integer() {
                return Err(PlanError::mismatch(format!(
                    "ntile() takes an integer, got {} ({n})",
                    t.sql_name()
                )));
            }
            vec![cast(n, t, DataType::Int64)?]
        }
        W::NthValue => {
            let mut it = w.args.into_iter();
            let (x, _) = typed(it.next().expect("checked"), schema)?;
            let (n, t) = typed(it.next().expect("checked"), schema)?;
            if !t.is_integer() {
                return Err(PlanError::mismatch(format!(
                    "nth_value() takes an integer position, got {} ({n})",
                    t.sql_name()
                )));
            }
            vec![x, cast(n, t, DataType::Int64)?]
        }
        W::Lag | W::Lead => {
            let mut it = w.args.into_iter();
            let (x, xt) = typed(it.next().expect("checked"), schema)?;
            let offset = it.next();
            let default = it.next().map(|d| typed(d, schema)).transpose()?;
            // The value and its default meet at one type (an untyped NULL takes the
            // other's, or INTEGER).
            let t = match &default {
                Some((_, dt)) => {
                    common_type(xt, *dt).ok_or_else(|| PlanError::cannot_apply(name, xt, *dt))?
                }
                None => xt,
            };
            let t = if t == DataType::Null {
                DataType::Int32
            } else {
                t
            };
            let mut out = vec![cast(x, xt, t)?];
            if let Some(off) = offset {
                let (o, ot) = typed(off, schema)?;
                if !matches!(o, Expr::Literal(_)) || !ot.is_integer() {
                    return Err(PlanError::Invalid(format!(
                        "the offset of {name}() must be a constant integer, got {o}"
                    )));
                }
                out.push(cast(o, ot, DataType::Int64)?);
            }
            if let Some((d, dt)) = default {
                out.push(cast(d, dt, t)?);
            }
            out
        }
        _ => w
            .args
            .into_iter()
            .map(|a| coerce(a, schema))
            .collect::<PlanResult<_>>()?,
    };
    let partition_by = w
        .partition_by
        .into_iter()
        .map(|e| coerce(e, schema))
        .collect::<PlanResult<_>>()?;
    let order_by = w
        .order_by
        .into_iter()
        .map(|o| {
            Ok(super::SortExpr {
                expr: coerce(o.expr, schema)?,
                ..o
            })
        })
        .collect::<PlanResult<_>>()?;
    Ok(Expr::Window(Box::new(super::WindowExpr {
        args,
        partition_by,
        order_by,
        ..w
    })))
}

fn coerce_binary(left: Expr, op: BinaryOp, right: Expr, schema: &PlanSchema) -> PlanResult<Expr> {
    use BinaryOp::*;
    if matches!(op, And | Or) {
        let l = boolean(left, schema, op.symbol())?;
        let r = boolean(right, schema, op.symbol())?;
        return Ok(Expr::Binary {
            left: Box::new(l),
            op,
            right: Box::new(r),
        });
    }
    let (l, lt) = typed(left, schema)?;
    let (r, rt) = typed(right, schema)?;
    let bin = |l, r| {
        Ok(Expr::Binary {
            left: Box::new(l),
            op,
            right: Box::new(r),
        })
    };
    if op == Concat {
        return bin(cast(l, lt, DataType::Utf8)?, cast(r, rt, DataType::Utf8)?);
    }
    if op.is_comparison() {
        // A DATE compared with a TIMESTAMP literal at midnight compares as dates: the same
        // answer for every operator, without casting the column row by row.
        let midnight = |e: &Expr| match e {
            Expr::Literal(ScalarValue::Timestamp(t))
                if t.rem_euclid(temporal::MICROS_PER_DAY) == 0 =>
            {
                Some(Expr::Literal(ScalarValue::Date32(
                    t.div_euclid(temporal::MICROS_PER_DAY) as i32,
                )))
            }
            _ => None,
        };
        if lt == DataType::Date32 && rt == DataType::Timestamp {
            if let Some(d) = midnight(&r) {
                return bin(l, d);
            }
        }
        if lt == DataType::Timestamp && rt == DataType::Date32 {
            if let Some(d) = midnight(&l) {
                return bin(d, r);
            }
        }
        let t = common_type(lt, rt).ok_or_else(|| PlanError::cannot_apply(op.symbol(), lt, rt))?;
        return bin(cast(l, lt, t)?, cast(r, rt, t)?);
    }
    // Arithmetic. Dates first: date +/- integer days, date - date = days. An untyped NULL
    // beside a date is the number of days when added or subtracted from it, and a date
    // when a date is subtracted from it.
    let (r, rt) = match (lt, op, rt) {
        (DataType::Date32, Plus | Minus, DataType::Null) => {
            (cast(r, rt, DataType::Int64)?, DataType::Int64)
        }
        _ => (r, rt),
    };
    let (l, lt) = match (lt, op, rt) {
        (DataType::Null, Plus, DataType::Date32) => {
            (cast(l, lt, DataType::Int64)?, DataType::Int64)
        }
        (DataType::Null, Minus, DataType::Date32) => {
            (cast(l, lt, DataType::Date32)?, DataType::Date32)
        }
        _ => (l, lt),
    };
    match (lt, op, rt) {
        (DataType::Date32, Plus | Minus, t) if t.is_integer() => {
            let n = cast(r, rt, DataType::Int64)?;
            let n = if op == Minus {
                coerce(Expr::Negative(Box::new(n)), schema)?
            } else {
                n
            };
            let n = fold_negation(n);
            return coerce_function(ScalarFunc::AddDays, vec![l, n], schema);
        }
        (t, Plus, DataType::Date32) if t.is_integer() => {
            let n = cast(l, lt, DataType::Int64)?;
            return coerce_function(ScalarFunc::AddDays, vec![r, n], schema);
        }
        (DataType::Date32, Minus, DataType::Date32) => {
            return bin(cast(l, lt, DataType::Int64)?, cast(r, rt, DataType::Int64)?);
        }
        _ => {}
    }
    // An untyped NULL operand makes the result an untyped NULL, which takes the type its
    // context asks for (`nullif(dt, NULL - i)` compares dates), as in DuckDB.
    let untyped = |e: &Expr| matches!(e, Expr::Literal(ScalarValue::Null));
    if untyped(&l) || untyped(&r) {
        return Ok(Expr::Literal(ScalarValue::Null));
    }
    let t = match common_type(lt, rt) {
        Some(DataType::Null) => DataType::Int32,
        Some(t) if t.is_numeric() => t,
        _ => return Err(PlanError::cannot_apply(op.symbol(), lt, rt)),
    };
    let t = if op == Divide { DataType::Float64 } else { t };
    bin(cast(l, lt, t)?, cast(r, rt, t)?)
}

fn fold_negation(e: Expr) -> Expr {
    match e {
        Expr::Negative(inner) => match *inner {
            Expr::Literal(ScalarValue::Int64(v)) if v != i64::MIN => {
                Expr::Literal(ScalarValue::Int64(-v))
            }
            other => Expr::Negative(Box::new(other)),
        },
        e => e,
    }
}

fn expect_args<T>(func: ScalarFunc, args: &[T], min: usize, max: usize) -> PlanResult<()> {
    if args.len() < min || args.len() > max {
        let want = if min == max {
            format!("{min}")
        } else if max == usize::MAX {
            format!("at least {min}")
        } else {
            format!("{min} to {max}")
        };
        return Err(PlanError::Invalid(format!(
            "{}() takes {want} arguments, got {}",
            func.name(),
            args.len()
        )));
    }
    Ok(())
}

fn coerce_function(func: ScalarFunc, args: Vec<Expr>, schema: &PlanSchema) -> PlanResult<Expr> {
    use ScalarFunc::*;
    let typed_args = args
        .into_iter()
        .map(|a| typed(a, schema))
        .collect::<PlanResult<Vec<_>>>()?;
    let want = |(e, t): (Expr, DataType), to: DataType| -> PlanResult<Expr> {
        let ok = t == to
            || t == DataType::Null
            || (to == DataType::Float64 && t.is_numeric())
            || (to == DataType::Int64 && t.is_integer())
            || to == DataType::Utf8
            || t == DataType::Utf8;
        if !ok {
            return Err(PlanError::mismatch(format!(
                "{}() cannot take {} ({e})",
                func.name(),
                t.sql_name()
            )));
        }
        cast(e, t, to)
    };
    let args: Vec<Expr> = match func {
        Abs | Round | Floor | Ceil => {
            expect_args(func, &typed_args, 1, if func == Round { 2 } else { 1 })?;
            let mut it = typed_args.into_iter();
            let (x, t) = it.next().expect("checked");
            // An untyped NULL takes the type DuckDB gives it here: BIGINT for abs() and
            // round(), DOUBLE for floor() and ceil().
            let (x, t) = match (t, func) {
                (DataType::Null, Abs | Round) => (cast(x, t, DataType::Int64)?, DataType::Int64),
                (DataType::Null, _) => (cast(x, t, DataType::Float64)?, DataType::Float64),
                (t, _) => (x, t),
            };
            if !t.is_numeric() {
                return Err(PlanError::mismatch(format!(
                    "{}() expects a number, got {} ({x})",
                    func.name(),
                    t.sql_name()
                )));
            }
            let mut v = vec![x];
            for a in it {
                v.push(want(a, DataType::Int64)?);
            }
            v
        }
        Sqrt => {
            expect_args(func, &typed_args, 1, 1)?;
            typed_args
                .into_iter()
                .map(|a| want(a, DataType::Float64))
                .collect::<PlanResult<_>>()?
        }
        Ln | Log10 | Exp | Power => {
            let n = if func == Power { 2 } else { 1 };
            expect_args(func, &typed_args, n, n)?;
            typed_args
                .into_iter()
                .map(|a| want(a, DataType::Float64))
                .collect::<PlanResult<_>>()?
        }
        Ltrim | Rtrim | Trim => {
            // The second argument, where given, is the set of characters to trim.
            expect_args(func, &typed_args, 1, 2)?;
            typed_args
                .into_iter()
                .map(|a| want(a, DataType::Utf8))
                .collect::<PlanResult<_>>()?
        }
        Replace | StartsWith | EndsWith | Contains | Position | Strptime | TryStrptime => {
            let n = if func == Replace { 3 } else { 2 };
            expect_args(func, &typed_args, n, n)?;
            typed_args
                .into_iter()
                .map(|a| want(a, DataType::Utf8))
                .collect::<PlanResult<_>>()?
        }
        SplitPart | Left | Right => {
            let n = if func == SplitPart { 3 } else { 2 };
            expect_args(func, &typed_args, n, n)?;
            let last = typed_args.len() - 1;
            typed_args
                .into_iter()
                .enumerate()
                .map(|(i, a)| {
                    want(
                        a,
                        if i == last {
                            DataType::Int64
                        } else {
                            DataType::Utf8
                        },
                    )
                })
                .collect::<PlanResult<_>>()?
        }
        Concat => {
            expect_args(func, &typed_args, 1, usize::MAX)?;
            typed_args
                .into_iter()
                .map(|a| want(a, DataType::Utf8))
                .collect::<PlanResult<_>>()?
        }
        Greatest | Least => {
            expect_args(func, &typed_args, 1, usize::MAX)?;
            unify(
                typed_args.into_iter().map(|(e, _)| e).collect(),
                schema,
                &func.name(),
            )?
            .0
        }
        Lpad | Rpad | Repeat | Chr | RegexpMatches | RegexpReplace | RegexpExtract | ConcatWs => {
            use DataType::{Int64 as I, Utf8 as S};
            let (min, max, types): (usize, usize, &[DataType]) = match func {
                Lpad | Rpad => (3, 3, &[S, I, S]),
                Repeat => (2, 2, &[S, I]),
                Chr => (1, 1, &[I]),
                RegexpMatches => (2, 3, &[S, S, S]),
                RegexpReplace => (3, 4, &[S, S, S, S]),
                RegexpExtract => (2, 3, &[S, S, I]),
                _ => (2, usize::MAX, &[]),
            };
            expect_args(func, &typed_args, min, max)?;
            typed_args
                .into_iter()
                .enumerate()
                .map(|(i, a)| want(a, types.get(i).copied().unwrap_or(S)))
                .collect::<PlanResult<_>>()?
        }
        Sign | Trunc => {
            expect_args(func, &typed_args, 1, 1)?;
            let (x, t) = typed_args.into_iter().next().expect("checked");
            match t {
                DataType::Null => vec![cast(x, t, DataType::Float64)?],
                t if t.is_numeric() => vec![x],
                t => {
                    return Err(PlanError::mismatch(format!(
                        "{}() expects a number, got {} ({x})",
                        func.name(),
                        t.sql_name()
                    )))
                }
            }
        }
        Gcd | Lcm => {
            expect_args(func, &typed_args, 2, 2)?;
            typed_args
                .into_iter()
                .map(|(x, t)| match t {
                    t if t.is_integer() || t == DataType::Null => cast(x, t, DataType::Int64),
                    t => Err(PlanError::mismatch(format!(
                        "{}() expects integers, got {} ({x})",
                        func.name(),
                        t.sql_name()
                    ))),
                })
                .collect::<PlanResult<_>>()?
        }
        Atan2 | Math(_) | IsNan | IsInf | IsFinite => {
            let n = if func == Atan2 { 2 } else { 1 };
            expect_args(func, &typed_args, n, n)?;
            typed_args
                .into_iter()
                .map(|(x, t)| match t {
                    t if t.is_numeric() || t == DataType::Null => cast(x, t, DataType::Float64),
                    t => Err(PlanError::mismatch(format!(
                        "{}() expects a number, got {} ({x})",
                        func.name(),
                        t.sql_name()
                    ))),
                })
                .collect::<PlanResult<_>>()?
        }
        TryCast(_) => {
            expect_args(func, &typed_args, 1, 1)?;
            typed_args.into_iter().map(|(e, _)| e).collect()
        }
        DateTrunc(_) | DateDiff(_) => {
            let n = if matches!(func, DateDiff(_)) { 2 } else { 1 };
            expect_args(func, &typed_args, n, n)?;
            typed_args
                .into_iter()
                .map(|(e, t)| match t {
                    DataType::Timestamp => Ok(e),
                    DataType::Date32 | DataType::Utf8 | DataType::Null => {
                        cast(e, t, DataType::Timestamp)
                    }
                    other => Err(PlanError::mismatch(format!(
                        "{}() expects a DATE or TIMESTAMP, got {} ({e})",
                        func.name(),
                        other.sql_name()
                    ))),
                })
                .collect::<PlanResult<_>>()?
        }
        Lower | Upper | Length | Reverse | Ascii | OctetLength => {
            expect_args(func, &typed_args, 1, 1)?;
            typed_args
                .into_iter()
                .map(|a| want(a, DataType::Utf8))
                .collect::<PlanResult<_>>()?
        }
        Substring => {
            expect_args(func, &typed_args, 2, 3)?;
            let mut it = typed_args.into_iter();
            let mut v = vec![want(it.next().expect("checked"), DataType::Utf8)?];
            for a in it {
                v.push(want(a, DataType::Int64)?);
            }
            v
        }
        Coalesce => {
            if typed_args.is_empty() {
                return Err(PlanError::Invalid(
                    "coalesce() needs at least one argument".into(),
                ));
            }
            unify(
                typed_args.into_iter().map(|(e, _)| e).collect(),
                schema,
                "coalesce",
            )?
            .0
        }
        Extract(_) => {
            expect_args(func, &typed_args, 1, 1)?;
            let (e, t) = typed_args.into_iter().next().expect("checked");
            let e = match t {
                DataType::Date32 | DataType::Timestamp => e,
                DataType::Utf8 | DataType::Null => cast(e, t, DataType::Date32)?,
                other => {
                    return Err(PlanError::mismatch(format!(
                        "extract() expects a DATE or TIMESTAMP, got {} ({e})",
                        other.sql_name()
                    )));
                }
            };
            vec![e]
        }
        AddDays | AddMonths | AddMicros => {
            expect_args(func, &typed_args, 2, 2)?;
            let mut it = typed_args.into_iter();
            let (d, dt) = it.next().expect("checked");
            let n = want(it.next().expect("checked"), DataType::Int64)?;
            match (func, dt) {
                // Days on a TIMESTAMP are 24 hours (there are no time zones).
                (AddDays, DataType::Timestamp) => {
                    let micros = match &n {
                        Expr::Literal(ScalarValue::Int64(k)) => Expr::Literal(ScalarValue::Int64(
                            k.checked_mul(temporal::MICROS_PER_DAY).ok_or_else(|| {
                                PlanError::Invalid(format!("INTERVAL of {k} days is out of range"))
                            })?,
                        )),
                        _ => Expr::Binary {
                            left: Box::new(n),
                            op: BinaryOp::Multiply,
                            right: Box::new(Expr::Literal(ScalarValue::Int64(
                                temporal::MICROS_PER_DAY,
                            ))),
                        },
                    };
                    return coerce_function(AddMicros, vec![d, micros], schema);
                }
                (AddMonths, DataType::Timestamp) => vec![d, n],
                (AddMicros, DataType::Timestamp) => vec![d, n],
                (_, DataType::Date32 | DataType::Utf8 | DataType::Null) => {
                    let to = if func == AddMicros {
                        DataType::Timestamp
                    } else {
                        DataType::Date32
                    };
                    vec![cast(d, dt, to)?, n]
                }
                _ => {
                    return Err(PlanError::mismatch(format!(
                        "interval arithmetic expects a DATE or TIMESTAMP, got {} ({d})",
                        dt.sql_name()
                    )))
                }
            }
        }
        Strftime | DayName | MonthName | Epoch => {
            let n = if func == Strftime { 2 } else { 1 };
            expect_args(func, &typed_args, n, n)?;
            let mut it = typed_args.into_iter();
            let (e, t) = it.next().expect("checked");
            let e = match t {
                DataType::Timestamp => e,
                DataType::Date32 | DataType::Utf8 | DataType::Null => {
                    cast(e, t, DataType::Timestamp)?
                }
                other => {
                    return Err(PlanError::mismatch(format!(
                        "{}() expects a DATE or TIMESTAMP, got {} ({e})",
                        func.name(),
                        other.sql_name()
                    )))
                }
            };
            let mut v = vec![e];
            for a in it {
                v.push(want(a, DataType::Utf8)?);
            }
            v
        }
        LastDay => {
            expect_args(func, &typed_args, 1, 1)?;
            let (e, t) = typed_args.into_iter().next().expect("checked");
            match t {
                DataType::Date32 | DataType::Timestamp | DataType::Utf8 | DataType::Null => {
                    vec![cast(e, t, DataType::Date32)?]
                }
                other => {
                    return Err(PlanError::mismatch(format!(
                        "last_day() expects a DATE or TIMESTAMP, got {} ({e})",
                        other.sql_name()
                    )))
                }
            }
        }
        MakeDate => {
            expect_args(func, &typed_args, 3, 3)?;
            typed_args
                .into_iter()
                .map(|(x, t)| match t {
                    t if t.is_integer() || t == DataType::Null => cast(x, t, DataType::Int64),
                    t => Err(PlanError::mismatch(format!(
                        "make_date() expects integers, got {} ({x})",
                        t.sql_name()
                    ))),
                })
                .collect::<PlanResult<_>>()?
        }
    };
    if matches!(func, AddDays | AddMonths) {
        if let Some(folded) = fold_date_arith(func, &args) {
            return Ok(folded);
        }
    }
    Ok(Expr::Function { func, args })
}

impl Expr {
    /// The type this (coerced) expression produces over `schema`.
    #[recursive::recursive]
    pub fn data_type(&self, schema: &PlanSchema) -> PlanResult<DataType> {
        use BinaryOp::*;
        Ok(match self {
            Expr::Column(c) => schema.field(schema.index_of(c)?).data_type,
            Expr::Literal(v) => v.data_type(),
            Expr::Alias { expr, .. } => expr.data_type(schema)?,
            Expr::Binary { left, op, right } => match op {
                And | Or | Eq | NotEq | Lt | LtEq | Gt | GtEq => DataType::Boolean,
                Concat => DataType::Utf8,
                Divide => DataType::Float64,
                _ => {
                    let (l, r) = (left.data_type(schema)?, right.data_type(schema)?);
                    common_type(l, r).unwrap_or(l)
                }
            },
            Expr::Not(_)
            | Expr::IsNull(_)
            | Expr::IsNotNull(_)
            | Expr::InList { .. }
            | Expr::Between { .. }
            | Expr::Like { .. } => DataType::Boolean,
            Expr::Negative(e) => e.data_type(schema)?,
            Expr::Cast { to, .. } => *to,
            Expr::Case {
                branches,
                otherwise,
                ..
            } => {
                let mut t = DataType::Null;
                for e in branches
                    .iter()
                    .map(|(_, t)| t)
                    .chain(otherwise.iter().map(|b| b.as_ref()))
                {
                    t = common_type(t, e.data_type(schema)?).unwrap_or(t);
                }
                t
            }
            Expr::Function { func, args } => match func {
                ScalarFunc::Abs
                | ScalarFunc::Round
                | ScalarFunc::Floor
                | ScalarFunc::Ceil
                | ScalarFunc::Coalesce => args[0].data_type(schema)?,
                ScalarFunc::Sqrt => DataType::Float64,
                ScalarFunc::Lower
                | ScalarFunc::Upper
                | ScalarFunc::Trim
                | ScalarFunc::Substring => DataType::Utf8,
                ScalarFunc::Length | ScalarFunc::Extract(_) => DataType::Int64,
                ScalarFunc::AddDays => DataType::Date32,
                ScalarFunc::AddMonths => match args[0].data_type(schema)? {
                    DataType::Timestamp => DataType::Timestamp,
                    _ => DataType::Date32,
                },
                ScalarFunc::AddMicros => DataType::Timestamp,
                ScalarFunc::Strftime | ScalarFunc::DayName | ScalarFunc::MonthName => {
                    DataType::Utf8
                }
                ScalarFunc::MakeDate | ScalarFunc::LastDay => DataType::Date32,
                ScalarFunc::Strptime | ScalarFunc::TryStrptime => DataType::Timestamp,
                ScalarFunc::Epoch => DataType::Float64,
                ScalarFunc::Ln | ScalarFunc::Log10 | ScalarFunc::Exp | ScalarFunc::Power => {
                    DataType::Float64
                }
                ScalarFunc::Ltrim
                | ScalarFunc::Rtrim
                | ScalarFunc::Replace
                | ScalarFunc::SplitPart
                | ScalarFunc::Concat
                | ScalarFunc::Left
                | ScalarFunc::Right => DataType::Utf8,
                ScalarFunc::Position | ScalarFunc::DateDiff(_) => DataType::Int64,
                ScalarFunc::StartsWith | ScalarFunc::RegexpMatches => DataType::Boolean,
                ScalarFunc::Greatest | ScalarFunc::Least => {
                    let mut t = DataType::Null;
                    for a in args {
                        let at = a.data_type(schema)?;
                        if at != DataType::Null {
                            t = at;
                        }
                    }
                    t
                }
                ScalarFunc::TryCast(t) => *t,
                ScalarFunc::DateTrunc(_) => DataType::Timestamp,
                ScalarFunc::Lpad
                | ScalarFunc::Rpad
                | ScalarFunc::Repeat
                | ScalarFunc::Reverse
                | ScalarFunc::ConcatWs
                | ScalarFunc::Chr
                | ScalarFunc::RegexpReplace
                | ScalarFunc::RegexpExtract => DataType::Utf8,
                ScalarFunc::EndsWith
                | ScalarFunc::Contains
                | ScalarFunc::IsNan
                | ScalarFunc::IsInf
                | ScalarFunc::IsFinite => DataType::Boolean,
                ScalarFunc::Ascii | ScalarFunc::OctetLength => DataType::Int64,
                ScalarFunc::Gcd | ScalarFunc::Lcm => DataType::Int64,
                ScalarFunc::Sign => DataType::Int32,
                ScalarFunc::Trunc => args[0].data_type(schema)?,
                ScalarFunc::Atan2 | ScalarFunc::Math(_) => DataType::Float64,
            },
            Expr::Window(w) => {
                let arg = w.args.first().map(|a| a.data_type(schema)).transpose()?;
                w.result_type(arg)
            }
            Expr::Aggregate { func, args, .. } => match func {
                AggFunc::CountStar | AggFunc::Count => DataType::Int64,
                AggFunc::Avg => DataType::Float64,
                AggFunc::Sum => match args[0].data_type(schema)? {
                    DataType::Float64 => DataType::Float64,
                    _ => DataType::Int64,
                },
                AggFunc::Min
                | AggFunc::Max
                | AggFunc::Single
                | AggFunc::First
                | AggFunc::Last
                | AggFunc::AnyValue
                | AggFunc::ArgMin
                | AggFunc::ArgMax
                | AggFunc::Mode => args[0].data_type(schema)?,
                AggFunc::RegrCount => DataType::Int64,
                AggFunc::Product
                | AggFunc::CovarPop
                | AggFunc::CovarSamp
                | AggFunc::Corr
                | AggFunc::RegrAvgX
                | AggFunc::RegrAvgY
                | AggFunc::RegrSlope
                | AggFunc::RegrIntercept
                | AggFunc::RegrR2
                | AggFunc::RegrSxx
                | AggFunc::RegrSyy
                | AggFunc::RegrSxy => DataType::Float64,
                AggFunc::StddevSamp
                | AggFunc::StddevPop
                | AggFunc::VarSamp
                | AggFunc::VarPop
                | AggFunc::Median
                | AggFunc::QuantileCont => DataType::Float64,
                AggFunc::StringAgg => DataType::Utf8,
                AggFunc::BoolAnd | AggFunc::BoolOr => DataType::Boolean,
            },
        })
    }

    /// Whether this expression can produce NULL (conservative: true unless provably not).
    #[recursive::recursive]
    pub fn nullable(&self, schema: &PlanSchema) -> bool {
        match self {
            Expr::Column(c) => schema.position(c).is_none_or(|i| schema.field(i).nullable),
            Expr::Literal(v) => v.is_null(),
            Expr::IsNull(_) | Expr::IsNotNull(_) => false,
            Expr::Aggregate {
                func: AggFunc::Count | AggFunc::CountStar | AggFunc::RegrCount,
                ..
            } => false,
            Expr::Alias { expr, .. }
            | Expr::Not(expr)
            | Expr::Negative(expr)
            | Expr::Cast { expr, .. } => expr.nullable(schema),
            Expr::Binary { left, op, right } => {
                matches!(
                    op,
                    BinaryOp::Divide | BinaryOp::IntDivide | BinaryOp::Modulo
                ) || left.nullable(schema)
                    || right.nullable(schema)
            }
            _ => true,
        }
    }
}

/// The constant second argument of `quantile_cont` (a fraction in [0, 1]) or `string_agg`
/// (a separator).
fn constant_agg_arg(func: AggFunc, a: Expr, t: DataType) -> PlanResult<Expr> {
    let Expr::Literal(v) = &a else {
        return Err(PlanError::Invalid(format!(
            "the second argument of {}() must be a constant, got {a}",
            func.name()
        )));
    };
    match func {
        AggFunc::QuantileCont => match v.clone().cast_to(DataType::Float64) {
            Ok(ScalarValue::Float64(q)) if (0.0..=1.0).contains(&q) => {
                Ok(Expr::Literal(ScalarValue::Float64(q)))
            }
            _ => Err(PlanError::Invalid(format!(
                "quantile_cont() takes a fraction between 0 and 1, got {a}"
            ))),
        },
        _ if t == DataType::Utf8 => Ok(a),
        _ => Err(PlanError::mismatch(format!(
            "the separator of {}() must be a string, got {}",
            func.name(),
            t.sql_name()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{col, lit, lit_date};
    use crate::schema::PlanField;

    fn schema() -> PlanSchema {
        PlanSchema::new(vec![
            PlanField::new(None, "i", DataType::Int32, true),
            PlanField::new(None, "l", DataType::Int64, true),
            PlanField::new(None, "f", DataType::Float64, true),
            PlanField::new(None, "d", DataType::Date32, true),
            PlanField::new(None, "s", DataType::Utf8, true),
        ])
    }

    #[test]
    fn inserts_casts_and_folds_literals() {
        let s = schema();
        let e = coerce(col("i") + col("l"), &s).unwrap();
        assert_eq!(e.to_string(), "CAST(i AS BIGINT) + l");
        let e = coerce(col("i") / col("i"), &s).unwrap();
        assert_eq!(e.data_type(&s).unwrap(), DataType::Float64);
        let e = coerce(col("d").lt_eq(lit("1998-09-02")), &s).unwrap();
        assert_eq!(e.to_string(), "d <= DATE '1998-09-02'");
        let e = coerce(lit_date("1998-12-01") - lit(90i64), &s).unwrap();
        assert_eq!(e.to_string(), "DATE '1998-09-02'");
        let e = coerce(col("f").between(lit(1), lit(2)), &s).unwrap();
        assert_eq!(e.to_string(), "(f >= 1.0) AND (f <= 2.0)");
    }

    #[test]
    fn reports_bad_types_and_columns() {
        let s = schema();
        assert!(coerce(col("d") + col("f"), &s)
            .unwrap_err()
            .to_string()
            .contains("cannot apply + to DATE and DOUBLE"));
        assert!(coerce(col("i").and(col("l")), &s)
            .unwrap_err()
            .to_string()
            .contains("AND expects BOOLEAN"));
        assert!(coerce(col("d").lt(lit("not a date")), &s).is_err());
        let e = coerce(col("ff"), &s).unwrap_err().to_string();
        assert!(e.contains("did you mean f?"), "{e}");
    }
}
