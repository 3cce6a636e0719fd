//! Binds SQL expressions to planner expressions. Column references are checked against the
//! scope right away, so an unknown column is reported at its own position.

use morsel_planner::{AggFunc, BinaryOp, ColumnRef, Expr, PlanSchema, ScalarFunc};
use morsel_storage::temporal::{self, DatePart};
use morsel_storage::ScalarValue;
use sqlparser::ast::{self, Spanned};

use super::functions::{self, FunctionKind};
use super::types::sql_type;
use super::Binder;
use crate::error::{SqlError, SqlErrorKind};
use crate::positions::ExprPositions;

/// A bound `INTERVAL`: a count of days or of months.
enum Interval {
    Days(i64),
    Months(i64),
    Micros(i64),
}

/// Where `e` starts (as sqlparser's span does), found down its leftmost operands without
/// recursion: sqlparser computes a span over the whole subtree, recursively, which for a
/// chain of thousands of terms (or parentheses) is deep and quadratic in all.
fn start_of(e: &ast::Expr) -> sqlparser::tokenizer::Location {
    let mut e = e;
    loop {
        e = match e {
            ast::Expr::Nested(x)
            | ast::Expr::BinaryOp { left: x, .. }
            | ast::Expr::UnaryOp { expr: x, .. }
            | ast::Expr::Cast { expr: x, .. } => x,
            ast::Expr::Identifier(i) => return i.span.start,
            ast::Expr::CompoundIdentifier(parts) if !parts.is_empty() => {
                return parts[0].span.start
            }
            ast::Expr::Value(v) => return v.span.start,
            ast::Expr::Function(f) => match f.name.0.first().and_then(|p| p.as_ident()) {
                Some(i) => return i.span.start,
                None => return e.span().start,
            },
            other => return other.span().start,
        }
    }
}

fn ident_name(i: &ast::Ident) -> String {
    i.value.clone()
}

impl Binder<'_> {
    /// Binds `e`, resolving columns in `scope`.
    pub(crate) fn expr(&self, e: &ast::Expr, scope: &PlanSchema) -> Result<Expr, SqlError> {
        let bound = self.expr_inner(e, scope).map_err(|err| err.at(e.span()))?;
        // Where a run-time error of this operation is reported (not for a view's query,
        // whose positions are in its own text). Only a short operation's span is asked for:
        // sqlparser computes a span over the whole subtree, recursively.
        if let Some(op) = ExprPositions::operation(&bound) {
            if self.views.borrow().is_empty() {
                let start = start_of(e);
                self.positions
                    .borrow_mut()
                    .record(op, (start.line, start.column));
            }
        }
        Ok(bound)
    }

    fn column(&self, c: ColumnRef, scope: &PlanSchema) -> Result<Expr, SqlError> {
        match scope.index_of(&c) {
            Ok(_) => Ok(Expr::Column(c)),
            Err(err @ morsel_planner::PlanError::ColumnNotFound { .. }) => {
                // `t2.a` after `JOIN t2 USING (a)`: the right input's copy, kept under an
                // internal name.
                if c.relation.is_some() {
                    let using = self.using_columns.borrow();
                    let kept = using.iter().rev().find(|(original, hidden)| {
                        original.name.eq_ignore_ascii_case(&c.name)
                            && original
                                .relation
                                .as_deref()
                                .zip(c.relation.as_deref())
                                .is_some_and(|(a, b)| a.eq_ignore_ascii_case(b))
                            && scope.has(hidden)
                    });
                    if let Some((_, hidden)) = kept {
                        return Ok(Expr::Column(hidden.clone()));
                    }
                }
                if c.relation.is_none() {
                    let aliases = self.aliases.borrow();
                    if let Some((_, e)) = aliases
                        .iter()
                        .find(|(a, _)| a.eq_ignore_ascii_case(&c.name))
                    {
                        return Ok(e.clone());
                    }
                }
                // An outer column a domain stands for (see `domain`).
                match self.domain_column(&c) {
                    Some((d, true)) if scope.has(&d) => return Ok(Expr::Column(d)),
                    Some((d, false)) => {
                        if let Some(outer) = self.outer_column(&d)? {
                            return Ok(outer);
                        }
                    }
                    _ => {}
                }
                match self.outer_column(&c)? {
                    Some(outer) => Ok(outer),
                    None => Err(err.into()),
                }
            }
            Err(err) => Err(err.into()),
        }
    }

    #[recursive::recursive]
    fn expr_inner(&self, e: &ast::Expr, scope: &PlanSchema) -> Result<Expr, SqlError> {
        use ast::Expr as A;
        let b = |x: &ast::Expr| self.expr(x, scope).map(Box::new);
        Ok(match e {
            A::Identifier(i) => self.column(ColumnRef::new(ident_name(i)), scope)?,
            A::CompoundIdentifier(parts) => match parts.as_slice() {
                [rel, name] => self.column(
                    ColumnRef::qualified(ident_name(rel), ident_name(name)),
                    scope,
                )?,
                _ => return Err(SqlError::unsupported(format!("the column reference {e}"))),
            },
            A::Value(v) => Expr::Literal(literal(&v.value)?),
            A::TypedString(ts) => typed_string(&ts.data_type, &ts.value.value)?,
            A::Nested(x) => self.expr(x, scope)?,
            A::BinaryOp { left, op, right } => self.binary(left, op, right, scope)?,
            A::UnaryOp { op, expr } => match op {
                ast::UnaryOperator::Not => Expr::Not(b(expr)?),
                ast::UnaryOperator::Plus => self.expr(expr, scope)?,
                ast::UnaryOperator::Minus => match self.expr(expr, scope)? {
                    Expr::Literal(ScalarValue::Int32(v)) => Expr::Literal(ScalarValue::Int32(-v)),
                    Expr::Literal(ScalarValue::Int64(v)) => Expr::Literal(
                        v.checked_neg()
                            .map_or(ScalarValue::Float64(-(v as f64)), ScalarValue::Int64),
                    ),
                    Expr::Literal(ScalarValue::Float64(v)) => {
                        Expr::Literal(ScalarValue::Float64(-v))
                    }
                    x => Expr::Negative(Box::new(x)),
                },
                other => return Err(SqlError::unsupported(format!("the operator {other}"))),
            },
            A::IsNull(x) => Expr::IsNull(b(x)?),
            // Equal, or both NULL: never NULL itself.
            A::IsNotDistinctFrom(l, r) | A::IsDistinctFrom(l, r) => {
                let (l, r) = (self.expr(l, scope)?, self.expr(r, scope)?);
                let same = Expr::Function {
                    func: morsel_planner::ScalarFunc::Coalesce,
                    args: vec![l.clone().eq(r.clone()), l.is_null().and(r.is_null())],
                };
                match e {
                    A::IsDistinctFrom(..) => Expr::Not(Box::new(same)),
                    _ => same,
                }
            }
            A::IsNotNull(x) => Expr::IsNotNull(b(x)?),
            // `x IS [NOT] TRUE | FALSE`: never NULL; a NULL x is neither true nor false.
            A::IsTrue(x) | A::IsNotTrue(x) | A::IsFalse(x) | A::IsNotFalse(x) => {
                let x = match e {
                    A::IsFalse(_) | A::IsNotFalse(_) => Expr::Not(b(x)?),
                    _ => self.expr(x, scope)?,
                };
                let holds = Expr::Function {
                    func: ScalarFunc::Coalesce,
                    args: vec![x, Expr::Literal(ScalarValue::Boolean(false))],
                };
                match e {
                    A::IsNotTrue(_) | A::IsNotFalse(_) => Expr::Not(Box::new(holds)),
                    _ => holds,
                }
            }
            A::Between {
                expr,
                negated,
                low,
                high,
            } => Expr::Between {
                expr: b(expr)?,
                low: b(low)?,
                high: b(high)?,
                negated: *negated,
            },
            A::In {
                expr,
                target: ast::InTarget::List(list),
                negated,
                ..
            } => Expr::InList {
                expr: b(expr)?,
                list: list
                    .iter()
                    .map(|x| self.expr(x, scope))
                    .collect::<Result<_, _>>()?,
                negated: *negated,
            },
            A::Like {
                negated,
                any: false,
                expr,
                pattern,
                escape_char,
            }
            | A::ILike {
                negated,
                any: false,
                expr,
                pattern,
                escape_char,
            } => Expr::Like {
                expr: b(expr)?,
                pattern: b(pattern)?,
                negated: *negated,
                case_insensitive: matches!(e, A::ILike { .. }),
                escape: escape_char.as_deref().map(escape_character).transpose()?,
            },
            A::Position { expr, r#in } => Expr::Function {
                func: ScalarFunc::Position,
                args: vec![self.expr(r#in, scope)?, self.expr(expr, scope)?],
            },
            A::Cast {
                kind,
                expr,
                data_type,
                format: None,
            } => match kind {
                ast::CastKind::Cast | ast::CastKind::DoubleColon => Expr::Cast {
                    expr: b(expr)?,
                    to: sql_type(data_type)?,
                },
                ast::CastKind::TryCast | ast::CastKind::SafeCast => Expr::Function {
                    func: ScalarFunc::TryCast(sql_type(data_type)?),
                    args: vec![self.expr(expr, scope)?],
                },
            },
            A::Extract { field, expr, .. } => Expr::Function {
                func: match field {
                    ast::DateTimeField::Epoch => ScalarFunc::Epoch,
                    f => ScalarFunc::Extract(date_part(f)?),
                },
                args: vec![self.expr(expr, scope)?],
            },
            A::Ceil {
                expr,
                field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
            } => Expr::Function {
                func: ScalarFunc::Ceil,
                args: vec![self.expr(expr, scope)?],
            },
            A::Floor {
                expr,
                field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
            } => Expr::Function {
                func: ScalarFunc::Floor,
                args: vec![self.expr(expr, scope)?],
            },
            A::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let mut args = vec![self.expr(expr, scope)?];
                args.push(match substring_from {
                    Some(f) => self.expr(f, scope)?,
                    None => Expr::Literal(ScalarValue::Int64(1)),
                });
                if let Some(f) = substring_for {
                    args.push(self.expr(f, scope)?);
                }
                Expr::Function {
                    func: ScalarFunc::Substring,
                    args,
                }
            }
            // `TRIM([BOTH | LEADING | TRAILING] [chars FROM] s)` and DuckDB's `trim(s, chars)`.
            A::Trim {
                expr,
                trim_where,
                trim_what,
                trim_characters,
            } if trim_characters
                .as_ref()
                .is_none_or(|c| c.len() == 1 && trim_what.is_none()) =>
            {
                let mut args = vec![self.expr(expr, scope)?];
                if let Some(chars) = trim_what
                    .as_deref()
                    .or(trim_characters.as_ref().map(|c| &c[0]))
                {
                    args.push(self.expr(chars, scope)?);
                }
                Expr::Function {
                    func: match trim_where {
                        None | Some(ast::TrimWhereField::Both) => ScalarFunc::Trim,
                        Some(ast::TrimWhereField::Leading) => ScalarFunc::Ltrim,
                        Some(ast::TrimWhereField::Trailing) => ScalarFunc::Rtrim,
                    },
                    args,
                }
            }
            A::Case {
                operand,
                conditions,
                else_result,
                ..
            } => Expr::Case {
                operand: operand.as_deref().map(&b).transpose()?,
                branches: conditions
                    .iter()
                    .map(|w| {
                        Ok((
                            self.expr(&w.condition, scope)?,
                            self.expr(&w.result, scope)?,
                        ))
                    })
                    .collect::<Result<_, SqlError>>()?,
                otherwise: else_result.as_deref().map(&b).transpose()?,
            },
            A::Function(f) => self.function(f, scope)?,
            A::Interval(_) => {
                return Err(SqlError::invalid(
                    "an INTERVAL can only be added to or subtracted from a DATE",
                ));
            }
            A::Subquery(q) => self.scalar_subquery(q, scope)?,
            A::Exists { subquery, negated } => {
                self.mark_subquery(subquery, None, *negated, scope)?
            }
            A::In {
                expr,
                target: ast::InTarget::Subquery(q),
                negated,
                ..
            } => self.mark_subquery(q, Some(expr), *negated, scope)?,
            A::AnyOp {
                left,
                compare_op,
                right,
                ..
            } => match right.as_ref() {
                A::Subquery(q) => self.quantified(left, compare_op, q, false, scope)?,
                other => return Err(SqlError::unsupported(format!("ANY over {other}"))),
            },
            A::AllOp {
                left,
                compare_op,
                right,
            } => match right.as_ref() {
                A::Subquery(q) => self.quantified(left, compare_op, q, true, scope)?,
                other => return Err(SqlError::unsupported(format!("ALL over {other}"))),
            },
            other => return Err(SqlError::unsupported(format!("the expression {other}"))),
        })
    }

    fn binary(
        &self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        scope: &PlanSchema,
    ) -> Result<Expr, SqlError> {
        use ast::BinaryOperator as O;
        // date +/- INTERVAL
        if matches!(op, O::Plus | O::Minus) {
            if let ast::Expr::Interval(iv) = right {
                let date = self.expr(left, scope)?;
                return add_interval(
                    date,
                    interval(iv).map_err(|e| e.at(right.span()))?,
                    *op == O::Minus,
                );
            }
            if let (ast::Expr::Interval(iv), O::Plus) = (left, op) {
                let date = self.expr(right, scope)?;
                return add_interval(date, interval(iv).map_err(|e| e.at(left.span()))?, false);
            }
        }
        let op =
            binary_op(op).ok_or_else(|| SqlError::unsupported(format!("the operator {op}")))?;
        Ok(Expr::Binary {
            left: Box::new(self.expr(left, scope)?),
            op,
            right: Box::new(self.expr(right, scope)?),
        })
    }

    fn function(&self, f: &ast::Function, scope: &PlanSchema) -> Result<Expr, SqlError> {
        let name = f.name.to_string().to_ascii_lowercase();
        let no_args = ast::FunctionArgumentList {
            duplicate_treatment: None,
            args: Vec::new(),
            clauses: Vec::new(),
        };
        let list = match &f.args {
            ast::FunctionArguments::List(list) => list,
            // `current_date`, `current_timestamp`: the clock, called without parentheses.
            ast::FunctionArguments::None
                if matches!(
                    functions::lookup(&name),
                    Some(FunctionKind::Now | FunctionKind::Today)
                ) =>
            {
                &no_args
            }
            _ => {
                return Err(SqlError::unsupported(format!(
                    "{name} without an argument list"
                )))
            }
        };
        if f.over.is_some() {
            return self.window_function(f, &name, list, scope);
        }
        let order = match list.clauses.as_slice() {
            [] => None,
            [ast::FunctionArgumentClause::OrderBy(order)] => Some(order),
            _ => {
                return Err(SqlError::unsupported(format!(
                    "clauses other than ORDER BY inside {name}()"
                )))
            }
        };
        let mut distinct = matches!(
            list.duplicate_treatment,
            Some(ast::DuplicateTreatment::Distinct)
        );
        let mut kind = functions::lookup(&name).ok_or_else(|| {
            SqlError::new(SqlErrorKind::UnknownFunction {
                name: name.clone(),
                candidates: functions::suggestions(&name),
            })
        })?;
        if matches!(kind, FunctionKind::Grouping) {
            let args: Vec<&ast::Expr> = list
                .args
                .iter()
                .filter_map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e),
                    _ => None,
                })
                .collect();
            if args.len() != list.args.len() || args.is_empty() {
                return Err(SqlError::invalid(format!(
                    "{name}() takes grouping expressions"
                )));
            }
            // Under a plain GROUP BY every key is grouped by.
            let value = match &*self.grouping.borrow() {
                Some(branch) => branch.grouping_value(&args)?,
                None => 0,
            };
            return Ok(Expr::Literal(ScalarValue::Int64(value)));
        }
        let (mut args, star) = self.function_args(&name, list, scope)?;
        if !f.within_group.is_empty() {
            args = self.within_group(&name, f, args, scope)?;
        }
        if matches!(kind, FunctionKind::ApproxCountDistinct) {
            // Answered exactly: count(DISTINCT x) (an estimate may be exact).
            kind = FunctionKind::Aggregate(AggFunc::Count);
            distinct = true;
        }
        if matches!(kind, FunctionKind::CountIf) {
            // count_if(c) counts the rows where c holds, and like DuckDB's is NULL where c
            // is never true or false: sum(CASE WHEN c THEN 1 WHEN NOT c THEN 0 END).
            let [c]: [Expr; 1] = args
                .try_into()
                .map_err(|_| SqlError::invalid("count_if() takes 1 argument"))?;
            args = vec![Expr::Case {
                operand: None,
                branches: vec![
                    (c.clone(), Expr::Literal(ScalarValue::Int32(1))),
                    (Expr::Not(Box::new(c)), Expr::Literal(ScalarValue::Int32(0))),
                ],
                otherwise: None,
            }];
            kind = FunctionKind::Aggregate(AggFunc::Sum);
        }
        if let Some(order) = order {
            match kind {
                // Aggregates whose answer depends on their input's order: the block sorts
                // its input by this ORDER BY before aggregating.
                FunctionKind::Aggregate(a) if a.depends_on_order() => {
                    self.aggregate_orders.borrow_mut().push(order.clone())
                }
                // The others' answers do not depend on it.
                FunctionKind::Aggregate(_) => {}
                _ => {
                    return Err(SqlError::invalid(format!(
                        "ORDER BY inside {name}(), which is not an aggregate"
                    )))
                }
            }
        }
        let plain = |what: &str| -> Result<(), SqlError> {
            if star || distinct || f.filter.is_some() {
                return Err(SqlError::invalid(format!(
                    "{what}() does not take *, DISTINCT or FILTER"
                )));
            }
            Ok(())
        };
        Ok(match kind {
            FunctionKind::Aggregate(func) => {
                let func = match (func, star) {
                    (AggFunc::Count, true) if args.is_empty() => AggFunc::CountStar,
                    (_, false) => func,
                    _ => {
                        return Err(SqlError::invalid(format!("{name}(*) is not a function")));
                    }
                };
                func.check_arity(args.len()).map_err(SqlError::invalid)?;
                if distinct && args.len() == 2 && func.takes_two_columns() {
                    return Err(SqlError::unsupported(format!(
                        "DISTINCT in {name}(), which takes two columns"
                    )));
                }
                let (func, args) = match &f.filter {
                    // agg(x) FILTER (WHERE c) is agg(CASE WHEN c THEN x END): aggregates skip
                    // NULLs, and count(*) counts the rows where c holds.
                    Some(cond) => {
                        let cond = self.expr(cond, scope)?;
                        let when = |x: Expr| Expr::Case {
                            operand: None,
                            branches: vec![(cond.clone(), x)],
                            otherwise: None,
                        };
                        if func == AggFunc::CountStar {
                            (
                                AggFunc::Count,
                                vec![when(Expr::Literal(ScalarValue::Int32(1)))],
                            )
                        } else if matches!(func, AggFunc::First | AggFunc::Last) && !distinct {
                            // These keep NULLs, so the filter goes along as a mask (their
                            // DISTINCT forms skip NULLs, as other aggregates do).
                            let mut args = args;
                            args.push(cond);
                            (func, args)
                        } else {
                            let mut args = args;
                            args[0] = when(args[0].clone());
                            (func, args)
                        }
                    }
                    None => (func, args),
                };
                Expr::Aggregate {
                    func,
                    args,
                    distinct,
                }
            }
            FunctionKind::Scalar(func) => {
                plain(&name)?;
                Expr::Function { func, args }
            }
            FunctionKind::NullIf => {
                plain(&name)?;
                let [a, b]: [Expr; 2] = args
                    .try_into()
                    .map_err(|_| SqlError::invalid("nullif() takes 2 arguments"))?;
                Expr::Case {
                    operand: None,
                    branches: vec![(a.clone().eq(b), Expr::Literal(ScalarValue::Null))],
                    otherwise: Some(Box::new(a)),
                }
            }
            FunctionKind::Mod => {
                plain(&name)?;
                let [a, b]: [Expr; 2] = args
                    .try_into()
                    .map_err(|_| SqlError::invalid("mod() takes 2 arguments"))?;
                Expr::Binary {
                    left: Box::new(a),
                    op: BinaryOp::Modulo,
                    right: Box::new(b),
                }
            }
            FunctionKind::TypeOf
            | FunctionKind::CurrentSetting
            | FunctionKind::Version
            | FunctionKind::Pi
            | FunctionKind::Now
            | FunctionKind::Today => {
                plain(&name)?;
                self.constant_function(&kind, &name, args, scope)?
            }
            FunctionKind::CountIf | FunctionKind::ApproxCountDistinct | FunctionKind::Grouping => {
                return Err(SqlError::invalid(format!(
                    "internal: {name}() was not rewritten"
                )))
            }
            FunctionKind::DatePart | FunctionKind::DateTrunc | FunctionKind::DateDiff => {
                plain(&name)?;
                let mut it = args.into_iter();
                let part = match it.next() {
                    Some(Expr::Literal(ScalarValue::Utf8(p)))
                        if matches!(kind, FunctionKind::DatePart)
                            && p.eq_ignore_ascii_case("epoch") =>
                    {
                        return Ok(Expr::Function {
                            func: ScalarFunc::Epoch,
                            args: it.collect(),
                        });
                    }
                    Some(Expr::Literal(ScalarValue::Utf8(p))) => DatePart::parse(&p)
                        .ok_or_else(|| SqlError::invalid(format!("unknown date part '{p}'")))?,
                    _ => {
                        return Err(SqlError::invalid(format!(
                            "{name}() takes the date part as a constant string first"
                        )))
                    }
                };
                let func = match kind {
                    FunctionKind::DatePart => ScalarFunc::Extract(part),
                    FunctionKind::DateTrunc => ScalarFunc::DateTrunc(part),
                    _ => ScalarFunc::DateDiff(part),
                };
                Expr::Function {
                    func,
                    args: it.collect(),
                }
            }
        })
    }

    /// The bound arguments of a call, and whether it was `f(*)`.
    pub(crate) fn function_args(
        &self,
        name: &str,
        list: &ast::FunctionArgumentList,
        scope: &PlanSchema,
    ) -> Result<(Vec<Expr>, bool), SqlError> {
        let mut star = false;
        let mut args = Vec::with_capacity(list.args.len());
        for a in &list.args {
            match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => {
                    args.push(self.expr(x, scope)?)
                }
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => star = true,
                other => {
                    return Err(SqlError::unsupported(format!(
                        "the argument {other} of {name}()"
                    )))
                }
            }
        }
        Ok((args, star))
    }

    /// `percentile_cont(q) WITHIN GROUP (ORDER BY x [DESC])`: `quantile_cont(x, q)`.
    fn within_group(
        &self,
        name: &str,
        f: &ast::Function,
        args: Vec<Expr>,
        scope: &PlanSchema,
    ) -> Result<Vec<Expr>, SqlError> {
        match (name, f.within_group.as_slice(), args.as_slice()) {
            ("percentile_cont" | "quantile_cont", [key], [q]) => {
                let x = self.expr(&key.expr, scope)?;
                let q = match (q, &key.options.sort) {
                    (Expr::Literal(v), Some(ast::OrderBySort::Desc)) => {
                        match v.clone().cast_to(morsel_storage::DataType::Float64) {
                            Ok(ScalarValue::Float64(q)) => {
                                Expr::Literal(ScalarValue::Float64(1.0 - q))
                            }
                            _ => q.clone(),
                        }
                    }
                    _ => q.clone(),
                };
                Ok(vec![x, q])
            }
            _ => Err(SqlError::unsupported(format!("WITHIN GROUP on {name}()"))),
        }
    }
}

/// The character of `ESCAPE 'c'`.
fn escape_character(e: &ast::Expr) -> Result<char, SqlError> {
    if let ast::Expr::Value(v) = e {
        if let ast::Value::SingleQuotedString(s) = &v.value {
            let mut chars = s.chars();
            if let (Some(c), None) = (chars.next(), chars.next()) {
                return Ok(c);
            }
        }
    }
    Err(SqlError::invalid(format!("ESCAPE takes a single character, got {e}")).at(e.span()))
}

/// `date +/- INTERVAL`: a TIMESTAMP, as in DuckDB and PostgreSQL.
fn add_interval(date: Expr, iv: Interval, negate: bool) -> Result<Expr, SqlError> {
    let (func, n) = match iv {
        Interval::Days(n) => (ScalarFunc::AddDays, n),
        Interval::Months(n) => (ScalarFunc::AddMonths, n),
        Interval::Micros(n) => (ScalarFunc::AddMicros, n),
    };
    let n = match negate {
        true => n
            .checked_neg()
            .ok_or_else(|| SqlError::invalid("the INTERVAL is out of range"))?,
        false => n,
    };
    Ok(Expr::Function {
        func,
        args: vec![date, Expr::Literal(ScalarValue::Int64(n))],
    }
    .cast(morsel_storage::DataType::Timestamp))
}

fn unit_interval(n: i64, unit: &str) -> Result<Interval, SqlError> {
    let unit = unit.to_ascii_lowercase();
    let scaled = |k: i64| {
        n.checked_mul(k)
            .ok_or_else(|| SqlError::invalid(format!("INTERVAL {n} {unit} is out of range")))
    };
    Ok(match unit.trim_end_matches('s') {
        "day" => Interval::Days(n),
        "week" => Interval::Days(scaled(7)?),
        "month" => Interval::Months(n),
        "year" => Interval::Months(scaled(12)?),
        "hour" => Interval::Micros(scaled(3_600_000_000)?),
        "minute" => Interval::Micros(scaled(60_000_000)?),
        "second" => Interval::Micros(scaled(1_000_000)?),
        "millisecond" => Interval::Micros(scaled(1_000)?),
        "microsecond" => Interval::Micros(n),
        _ => return Err(SqlError::unsupported(format!("INTERVAL unit {unit}"))),
    })
}

/// `INTERVAL '3' MONTH`, `INTERVAL 3 DAY`, `INTERVAL '90 days'`.
fn interval(iv: &ast::Interval) -> Result<Interval, SqlError> {
    let text = match iv.value.as_ref() {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => s.clone(),
            ast::Value::Number(n, _) => n.to_string(),
            other => return Err(SqlError::invalid(format!("invalid INTERVAL value {other}"))),
        },
        other => {
            return Err(SqlError::unsupported(format!(
                "INTERVAL of the expression {other}"
            )))
        }
    };
    let mut words = text.split_whitespace();
    let n: i64 = words
        .next()
        .and_then(|w| w.parse().ok())
        .ok_or_else(|| SqlError::invalid(format!("invalid INTERVAL value '{text}'")))?;
    match (&iv.leading_field, words.next()) {
        (Some(field), None) => unit_interval(n, &field.to_string()),
        (None, Some(unit)) => unit_interval(n, unit),
        _ => Err(SqlError::invalid(format!(
            "INTERVAL '{text}' needs exactly one unit"
        ))),
    }
}

fn date_part(field: &ast::DateTimeField) -> Result<DatePart, SqlError> {
    Ok(match field {
        ast::DateTimeField::Year | ast::DateTimeField::Years => DatePart::Year,
        ast::DateTimeField::Month | ast::DateTimeField::Months => DatePart::Month,
        ast::DateTimeField::Day | ast::DateTimeField::Days => DatePart::Day,
        other => match DatePart::parse(other.to_string().trim_matches('\'')) {
            Some(p) => p,
            None => return Err(SqlError::unsupported(format!("EXTRACT({other})"))),
        },
    })
}

/// Numbers are INTEGER when they fit, then BIGINT, else DOUBLE (DuckDB uses DECIMAL for
/// `0.05`; morsel has no DECIMAL type yet, see docs/architecture.md).
pub(crate) fn literal(v: &ast::Value) -> Result<ScalarValue, SqlError> {
    Ok(match v {
        ast::Value::Number(n, _) => {
            let s = n.to_string();
            if let Ok(i) = s.parse::<i32>() {
                ScalarValue::Int32(i)
            } else if let Ok(i) = s.parse::<i64>() {
                ScalarValue::Int64(i)
            } else {
                ScalarValue::Float64(
                    s.parse()
                        .map_err(|_| SqlError::invalid(format!("invalid number {s}")))?,
                )
            }
        }
        ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => {
            ScalarValue::Utf8(s.clone())
        }
        ast::Value::Boolean(b) => ScalarValue::Boolean(*b),
        ast::Value::Null => ScalarValue::Null,
        other => return Err(SqlError::unsupported(format!("the literal {other}"))),
    })
}

fn typed_string(t: &ast::DataType, v: &ast::Value) -> Result<Expr, SqlError> {
    let ast::Value::SingleQuotedString(s) = v else {
        return Err(SqlError::invalid(format!("invalid {t} literal {v}")));
    };
    let ty = sql_type(t)?;
    let value = match ty {
        morsel_storage::DataType::Date32 => {
            temporal::parse_date(s.trim().as_bytes()).map(ScalarValue::Date32)
        }
        morsel_storage::DataType::Timestamp => {
            temporal::parse_timestamp(s.trim().as_bytes()).map(ScalarValue::Timestamp)
        }
        other => ScalarValue::Utf8(s.clone()).cast_to(other).ok(),
    };
    value
        .map(Expr::Literal)
        .ok_or_else(|| SqlError::invalid(format!("invalid {} literal '{s}'", ty.sql_name())))
}

/// The planner's operator for a SQL binary operator, if it has one.
pub(crate) fn binary_op(op: &ast::BinaryOperator) -> Option<BinaryOp> {
    use ast::BinaryOperator as O;
    Some(match op {
        O::Plus => BinaryOp::Plus,
        O::Minus => BinaryOp::Minus,
        O::Multiply => BinaryOp::Multiply,
        O::Divide => BinaryOp::Divide,
        O::DuckIntegerDivide | O::MyIntegerDivide => BinaryOp::IntDivide,
        O::Modulo => BinaryOp::Modulo,
        O::Eq => BinaryOp::Eq,
        O::NotEq => BinaryOp::NotEq,
        O::Lt => BinaryOp::Lt,
        O::LtEq => BinaryOp::LtEq,
        O::Gt => BinaryOp::Gt,
        O::GtEq => BinaryOp::GtEq,
        O::And => BinaryOp::And,
        O::Or => BinaryOp::Or,
        O::StringConcat => BinaryOp::Concat,
        _ => return None,
    })
}
