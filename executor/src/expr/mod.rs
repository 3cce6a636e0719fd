//! Physical expressions: a logical expression with column references resolved to positions,
//! evaluated a whole batch at a time by the kernels, or, for elementwise subtrees, by one
//! fused program (see [`fused`]).

pub mod fused;
mod lazy;

use morsel_planner::{BinaryOp, Expr, PlanSchema, ScalarFunc};
use morsel_storage::{Batch, Column, DataType, ScalarValue, Schema};

use self::fused::FusedProgram;

use crate::error::{ExecError, ExecResult};
use crate::kernels::{
    arith, boolean, calendar, cast, compare, int64_arg, math, regex, select, string, temporal, text,
};
use morsel_storage::like::LikeMatcher;

/// How an expression is evaluated: every operand over the whole batch, or CASE branches and
/// COALESCE arguments only at the rows that reach them ([`PhysExpr::evaluate`]), or, for a
/// predicate, also the right side of AND / OR only at the rows the left side left open
/// ([`PhysExpr::evaluate_predicate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Fast,
    Precise,
    Predicate,
}

#[derive(Clone, Debug)]
pub enum PhysExpr {
    Column(usize),
    Literal {
        value: ScalarValue,
        ty: DataType,
    },
    Binary {
        left: Box<PhysExpr>,
        op: BinaryOp,
        right: Box<PhysExpr>,
    },
    Not(Box<PhysExpr>),
    Negative(Box<PhysExpr>),
    IsNull {
        expr: Box<PhysExpr>,
        negated: bool,
    },
    Cast {
        expr: Box<PhysExpr>,
        to: DataType,
    },
    Case {
        branches: Vec<(PhysExpr, PhysExpr)>,
        otherwise: Option<Box<PhysExpr>>,
        ty: DataType,
    },
    InList {
        expr: Box<PhysExpr>,
        list: Vec<PhysExpr>,
        negated: bool,
    },
    Like {
        expr: Box<PhysExpr>,
        matcher: LikeMatcher,
        negated: bool,
    },
    Function {
        func: ScalarFunc,
        args: Vec<PhysExpr>,
        ty: DataType,
    },
    /// An elementwise subtree compiled into one program.
    Fused(Box<FusedProgram>),
    /// An operation that can fail on a value (a cast, arithmetic, a function), with its
    /// text (`Expr::located_text`): an error it raises names it
    /// ([`ExecError::InExpression`]), and the session finds where it is in the SQL.
    /// Transparent otherwise (fusion looks through it).
    Located {
        expr: Box<PhysExpr>,
        text: std::sync::Arc<str>,
        /// Its text with columns written `?` (`Expr::located_shape`).
        shape: std::sync::Arc<str>,
    },
}

/// Replaces every elementwise subtree of `e` with at least two operations by a fused program
/// (largest subtrees first); `schema` is the input's.
pub fn fuse(e: PhysExpr, schema: &Schema) -> ExecResult<PhysExpr> {
    match FusedProgram::try_new(&e, schema, 2)? {
        Some(program) => Ok(PhysExpr::Fused(Box::new(program))),
        None => e.map_children(&mut |c| fuse(c, schema)),
    }
}

/// Compiles a (coerced) logical expression against the schema of its input.
#[recursive::recursive]
pub fn compile(e: &Expr, schema: &PlanSchema) -> ExecResult<PhysExpr> {
    let p = compile_node(e, schema)?;
    let named = e.can_fail_on_a_value()
        && !matches!(p, PhysExpr::Literal { .. })
        && e.has_at_most_nodes(morsel_planner::LOCATED_NODES);
    Ok(match named {
        true => PhysExpr::Located {
            expr: Box::new(p),
            text: e.located_text().into(),
            shape: e.located_shape().into(),
        },
        false => p,
    })
}

fn compile_node(e: &Expr, schema: &PlanSchema) -> ExecResult<PhysExpr> {
    let c = |x: &Expr| compile(x, schema).map(Box::new);
    Ok(match e {
        Expr::Column(r) => PhysExpr::Column(schema.index_of(r)?),
        Expr::Literal(v) => PhysExpr::Literal {
            value: v.clone(),
            ty: v.data_type(),
        },
        Expr::Alias { expr, .. } => compile(expr, schema)?,
        Expr::Binary { left, op, right } => PhysExpr::Binary {
            left: c(left)?,
            op: *op,
            right: c(right)?,
        },
        Expr::Not(x) => PhysExpr::Not(c(x)?),
        Expr::Negative(x) => PhysExpr::Negative(c(x)?),
        Expr::IsNull(x) => PhysExpr::IsNull {
            expr: c(x)?,
            negated: false,
        },
        Expr::IsNotNull(x) => PhysExpr::IsNull {
            expr: c(x)?,
            negated: true,
        },
        Expr::Cast { expr, to } => match expr.as_ref() {
            Expr::Literal(v) => PhysExpr::Literal {
                value: v.cast_to(*to)?,
                ty: *to,
            },
            _ => PhysExpr::Cast {
                expr: c(expr)?,
                to: *to,
            },
        },
        Expr::Case {
            operand: None,
            branches,
            otherwise,
        } => PhysExpr::Case {
            branches: branches
                .iter()
                .map(|(w, t)| Ok((compile(w, schema)?, compile(t, schema)?)))
                .collect::<ExecResult<_>>()?,
            otherwise: otherwise
                .as_deref()
                .map(|o| compile(o, schema).map(Box::new))
                .transpose()?,
            ty: e.data_type(schema)?,
        },
        Expr::InList {
            expr,
            list,
            negated,
        } => PhysExpr::InList {
            expr: c(expr)?,
            list: list
                .iter()
                .map(|x| compile(x, schema))
                .collect::<ExecResult<_>>()?,
            negated: *negated,
        },
        Expr::Like {
            expr,
            pattern,
            negated,
            case_insensitive,
            escape,
        } => match pattern.as_ref() {
            Expr::Literal(ScalarValue::Utf8(p)) => PhysExpr::Like {
                expr: c(expr)?,
                matcher: LikeMatcher::new(p, *case_insensitive, *escape)?,
                negated: *negated,
            },
            other => {
                return Err(ExecError::Unsupported(format!(
                    "LIKE with a non-constant pattern ({other})"
                )))
            }
        },
        Expr::Function { func, args } => PhysExpr::Function {
            func: *func,
            args: args
                .iter()
                .map(|x| compile(x, schema))
                .collect::<ExecResult<_>>()?,
            ty: e.data_type(schema)?,
        },
        Expr::Case { .. } | Expr::Between { .. } => {
            return Err(ExecError::Internal(format!(
                "{e} should have been lowered by the planner"
            )))
        }
        Expr::Aggregate { .. } | Expr::Window(_) => {
            return Err(ExecError::Internal(format!(
                "aggregate or window function {e} in a scalar context"
            )))
        }
    })
}

impl PhysExpr {
    /// The type this expression yields over input `schema`.
    pub fn data_type(&self, schema: &Schema) -> ExecResult<DataType> {
        Ok(match self {
            PhysExpr::Column(i) => schema.field(*i).data_type,
            PhysExpr::Literal { ty, .. }
            | PhysExpr::Cast { to: ty, .. }
            | PhysExpr::Case { ty, .. }
            | PhysExpr::Function { ty, .. } => *ty,
            // Arithmetic operands have the result's type: the right one is read (a leaf in
            // the parser's left-deep chains, so typing a chain is linear).
            PhysExpr::Binary { op, right, .. } => match op {
                BinaryOp::Concat => DataType::Utf8,
                op if op.is_comparison() || matches!(op, BinaryOp::And | BinaryOp::Or) => {
                    DataType::Boolean
                }
                _ => right.data_type(schema)?,
            },
            PhysExpr::Negative(x) | PhysExpr::Located { expr: x, .. } => x.data_type(schema)?,
            PhysExpr::Not(_)
            | PhysExpr::IsNull { .. }
            | PhysExpr::InList { .. }
            | PhysExpr::Like { .. } => DataType::Boolean,
            PhysExpr::Fused(p) => p.data_type(),
        })
    }

    /// Rebuilds this node with `f` applied to each direct child.
    pub fn map_children(
        self,
        f: &mut impl FnMut(PhysExpr) -> ExecResult<PhysExpr>,
    ) -> ExecResult<PhysExpr> {
        Ok(match self {
            leaf @ (PhysExpr::Column(_) | PhysExpr::Literal { .. } | PhysExpr::Fused(_)) => leaf,
            PhysExpr::Binary { left, op, right } => PhysExpr::Binary {
                left: Box::new(f(*left)?),
                op,
                right: Box::new(f(*right)?),
            },
            PhysExpr::Not(x) => PhysExpr::Not(Box::new(f(*x)?)),
            PhysExpr::Negative(x) => PhysExpr::Negative(Box::new(f(*x)?)),
            PhysExpr::Located { expr, text, shape } => PhysExpr::Located {
                expr: Box::new(f(*expr)?),
                text,
                shape,
            },
            PhysExpr::IsNull { expr, negated } => PhysExpr::IsNull {
                expr: Box::new(f(*expr)?),
                negated,
            },
            PhysExpr::Cast { expr, to } => PhysExpr::Cast {
                expr: Box::new(f(*expr)?),
                to,
            },
            PhysExpr::Case {
                branches,
                otherwise,
                ty,
            } => PhysExpr::Case {
                branches: branches
                    .into_iter()
                    .map(|(w, t)| Ok((f(w)?, f(t)?)))
                    .collect::<ExecResult<_>>()?,
                otherwise: otherwise.map(|o| f(*o).map(Box::new)).transpose()?,
                ty,
            },
            PhysExpr::InList {
                expr,
                list,
                negated,
            } => PhysExpr::InList {
                expr: Box::new(f(*expr)?),
                list: list.into_iter().map(&mut *f).collect::<ExecResult<_>>()?,
                negated,
            },
            PhysExpr::Like {
                expr,
                matcher,
                negated,
            } => PhysExpr::Like {
                expr: Box::new(f(*expr)?),
                matcher,
                negated,
            },
            PhysExpr::Function { func, args, ty } => PhysExpr::Function {
                func,
                args: args.into_iter().map(&mut *f).collect::<ExecResult<_>>()?,
                ty,
            },
        })
    }

    /// The fused programs inside this expression, for EXPLAIN.
    pub fn fused_programs(&self) -> Vec<&FusedProgram> {
        match self {
            PhysExpr::Fused(p) => vec![p],
            PhysExpr::Column(_) | PhysExpr::Literal { .. } => Vec::new(),
            PhysExpr::Binary { left, right, .. } => {
                let mut v = left.fused_programs();
                v.extend(right.fused_programs());
                v
            }
            PhysExpr::Not(x)
            | PhysExpr::Negative(x)
            | PhysExpr::IsNull { expr: x, .. }
            | PhysExpr::Cast { expr: x, .. }
            | PhysExpr::Like { expr: x, .. }
            | PhysExpr::Located { expr: x, .. } => x.fused_programs(),
            PhysExpr::Case {
                branches,
                otherwise,
                ..
            } => branches
                .iter()
                .flat_map(|(w, t)| [w, t])
                .chain(otherwise.as_deref())
                .flat_map(PhysExpr::fused_programs)
                .collect(),
            PhysExpr::InList { expr, list, .. } => std::iter::once(expr.as_ref())
                .chain(list)
                .flat_map(PhysExpr::fused_programs)
                .collect(),
            PhysExpr::Function { args, .. } => {
                args.iter().flat_map(PhysExpr::fused_programs).collect()
            }
        }
    }

    /// A short description naming columns by `names` (for a fused program's inputs).
    pub fn describe(&self, names: &[String]) -> String {
        match self {
            PhysExpr::Column(i) => names.get(*i).cloned().unwrap_or_else(|| format!("#{i}")),
            PhysExpr::Literal {
                value: ScalarValue::Utf8(s),
                ..
            } => format!("'{s}'"),
            PhysExpr::Literal { value, .. } => value.to_string(),
            PhysExpr::Like { expr, negated, .. } => format!(
                "{} {}LIKE ..",
                expr.describe(names),
                if *negated { "NOT " } else { "" }
            ),
            PhysExpr::InList { expr, list, .. } => {
                format!("{} IN ({} values)", expr.describe(names), list.len())
            }
            PhysExpr::Function { func, args, .. } => format!(
                "{func:?}({})",
                args.iter()
                    .map(|a| a.describe(names))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            PhysExpr::Binary { left, op, right } => format!(
                "{} {} {}",
                left.describe(names),
                op.symbol(),
                right.describe(names)
            ),
            PhysExpr::Cast { expr, to } => format!("CAST({} AS {to})", expr.describe(names)),
            PhysExpr::Fused(p) => p.to_string(),
            PhysExpr::Located { expr, .. } => expr.describe(names),
            _ => "expr".into(),
        }
    }

    /// The input column this expression is, when it is one as it is.
    pub fn as_column(&self) -> Option<usize> {
        match self {
            PhysExpr::Column(c) => Some(*c),
            _ => None,
        }
    }

    /// `column op constant` for a comparison of a column with a non-NULL constant (either
    /// side), as the column's index, the operator with the column on the left, and the value.
    pub fn column_against_constant(&self) -> Option<(usize, BinaryOp, ScalarValue)> {
        match self {
            PhysExpr::Binary { left, op, right } if op.is_comparison() => {
                match (left.as_ref(), right.as_ref()) {
                    (PhysExpr::Column(c), other) => Some((*c, *op, other.constant()?)),
                    (other, PhysExpr::Column(c)) => Some((*c, op.swap(), other.constant()?)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// `column op column` for a comparison of two columns, as their indexes and the operator.
    pub fn columns_compared(&self) -> Option<(usize, BinaryOp, usize)> {
        match self {
            PhysExpr::Binary { left, op, right } if op.is_comparison() => {
                match (left.as_ref(), right.as_ref()) {
                    (PhysExpr::Column(a), PhysExpr::Column(b)) => Some((*a, *op, *b)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// `column [NOT] IN (constants)` for a list of non-NULL constants, as the column's
    /// index, the values and whether it is negated.
    pub fn column_in_constants(&self) -> Option<(usize, Vec<ScalarValue>, bool)> {
        match self {
            PhysExpr::InList {
                expr,
                list,
                negated,
            } => match expr.as_ref() {
                PhysExpr::Column(c) => {
                    let values = list.iter().map(PhysExpr::constant).collect::<Option<_>>()?;
                    Some((*c, values, *negated))
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// A non-NULL constant, as a value of its type.
    fn constant(&self) -> Option<ScalarValue> {
        match self {
            PhysExpr::Literal { value, ty } if !value.is_null() => {
                if value.data_type() == *ty {
                    Some(value.clone())
                } else {
                    value.cast_to(*ty).ok()
                }
            }
            _ => None,
        }
    }

    /// Evaluates this expression over every row of `batch`.
    ///
    /// Every operand is computed over the whole batch first (the fast way). Where that
    /// fails and the tree holds a CASE or COALESCE, it is evaluated again the precise way
    /// ([`lazy`]), where a branch or argument is computed only at the rows that reach it, so
    /// that `CASE WHEN x <> 0 THEN 10 // x END` fails only where a row divides by zero.
    pub fn evaluate(&self, batch: &Batch) -> ExecResult<Column> {
        match self.eval(batch, Mode::Fast) {
            Err(_) if self.has_lazy_parts(Mode::Precise) => self.eval(batch, Mode::Precise),
            result => result,
        }
        .map_err(|e| self.locate(batch, e))
    }

    /// `e`, an error evaluating this expression over `batch`, naming the operation that
    /// raised it: a fused program's error does not, so its plain tree is evaluated again
    /// (on the error path only) to find it.
    fn locate(&self, batch: &Batch, e: ExecError) -> ExecError {
        if !e.is_value_error() || self.fused_programs().is_empty() {
            return e;
        }
        match self.eval(batch, Mode::Precise) {
            Err(located @ ExecError::InExpression { .. }) => located,
            _ => e,
        }
    }

    /// Evaluates a filter's predicate: as [`PhysExpr::evaluate`], and where that fails, the
    /// right side of each AND / OR only where the left side has not decided the row (as
    /// DuckDB filters: `x > 0 AND 10 // x = 5` does not fail where `x` is 0).
    pub fn evaluate_predicate(&self, batch: &Batch) -> ExecResult<Column> {
        match self.eval(batch, Mode::Fast) {
            Err(_) if self.has_lazy_parts(Mode::Predicate) => lazy::filter(self, batch),
            result => result,
        }
        .map_err(|e| self.locate(batch, e))
    }

    /// Whether evaluating in `mode` can differ from the fast way: the tree holds a CASE or
    /// COALESCE, or for a predicate an AND or OR (fused programs included).
    #[recursive::recursive]
    fn has_lazy_parts(&self, mode: Mode) -> bool {
        match self {
            PhysExpr::Case { .. }
            | PhysExpr::Function {
                func: ScalarFunc::Coalesce,
                ..
            } => true,
            PhysExpr::Binary {
                op: BinaryOp::And | BinaryOp::Or,
                ..
            } if mode == Mode::Predicate => true,
            PhysExpr::Fused(p) => p.plain().has_lazy_parts(mode),
            other => {
                let mut found = false;
                other.for_each_child(&mut |c| found |= c.has_lazy_parts(mode));
                found
            }
        }
    }

    /// Calls `f` on each direct child.
    fn for_each_child(&self, f: &mut impl FnMut(&PhysExpr)) {
        match self {
            PhysExpr::Column(_) | PhysExpr::Literal { .. } | PhysExpr::Fused(_) => {}
            PhysExpr::Binary { left, right, .. } => {
                f(left);
                f(right);
            }
            PhysExpr::Not(x)
            | PhysExpr::Negative(x)
            | PhysExpr::IsNull { expr: x, .. }
            | PhysExpr::Cast { expr: x, .. }
            | PhysExpr::Like { expr: x, .. }
            | PhysExpr::Located { expr: x, .. } => f(x),
            PhysExpr::Case {
                branches,
                otherwise,
                ..
            } => {
                for (w, t) in branches {
                    f(w);
                    f(t);
                }
                otherwise.iter().for_each(|o| f(o));
            }
            PhysExpr::InList { expr, list, .. } => {
                f(expr);
                list.iter().for_each(f);
            }
            PhysExpr::Function { args, .. } => args.iter().for_each(f),
        }
    }

    /// Evaluates over every row of `batch`, the fast or the precise way.
    // A deep expression (a chain of thousands of ORs) recurses once per level, on a worker's
    // stack: it grows on the heap rather than overflow.
    #[recursive::recursive]
    pub(crate) fn eval(&self, batch: &Batch, mode: Mode) -> ExecResult<Column> {
        let rows = batch.num_rows();
        if mode != Mode::Fast {
            match self {
                PhysExpr::Case {
                    branches,
                    otherwise,
                    ty,
                } => return lazy::case(branches, otherwise.as_deref(), *ty, batch, mode),
                PhysExpr::Function {
                    func: ScalarFunc::Coalesce,
                    args,
                    ty,
                } => return lazy::coalesce(args, *ty, batch, mode),
                PhysExpr::Binary {
                    left,
                    op: op @ (BinaryOp::And | BinaryOp::Or),
                    right,
                } if mode == Mode::Predicate => {
                    return lazy::and_or(left, *op == BinaryOp::And, right, batch)
                }
                PhysExpr::Fused(p) => return p.plain().eval(batch, mode),
                _ => {}
            }
        }
        let evaluate = |e: &PhysExpr, b: &Batch| e.eval(b, mode);
        Ok(match self {
            PhysExpr::Located { expr, text, shape } => {
                return expr
                    .eval(batch, mode)
                    .map_err(|e| e.in_expression(text, shape))
            }
            PhysExpr::Column(i) => batch.column(*i).clone(),
            PhysExpr::Literal { value, ty } => cast::broadcast(value, *ty, rows)?,
            PhysExpr::Binary { left, op, right } if op.is_comparison() => {
                Column::Boolean(compare_exprs(*op, left, right, batch, mode)?)
            }
            PhysExpr::Binary { left, op, right } => {
                let (l, r) = (evaluate(left, batch)?, evaluate(right, batch)?);
                match op {
                    BinaryOp::And => Column::Boolean(boolean::and(
                        boolean::as_boolean(&l)?,
                        boolean::as_boolean(&r)?,
                    )),
                    BinaryOp::Or => Column::Boolean(boolean::or(
                        boolean::as_boolean(&l)?,
                        boolean::as_boolean(&r)?,
                    )),
                    BinaryOp::Concat => string::concat(string::as_utf8(&l)?, string::as_utf8(&r)?),
                    op if op.is_comparison() => Column::Boolean(compare::compare(*op, &l, &r)?),
                    op => arith::arith(*op, &l, &r)?,
                }
            }
            PhysExpr::Not(x) => {
                Column::Boolean(boolean::not(boolean::as_boolean(&evaluate(x, batch)?)?))
            }
            PhysExpr::Negative(x) => arith::negate(&evaluate(x, batch)?)?,
            PhysExpr::IsNull { expr, negated } => {
                Column::Boolean(boolean::is_null(&evaluate(expr, batch)?, *negated))
            }
            PhysExpr::Cast { expr, to } => cast::cast(&evaluate(expr, batch)?, *to)?,
            PhysExpr::Case {
                branches,
                otherwise,
                ty,
            } => {
                // Row i takes the THEN of the first WHEN that is true, else the ELSE (or NULL).
                let mut values = Vec::with_capacity(branches.len() + 1);
                let mut choice = vec![u32::MAX; rows];
                let mut decided = vec![false; rows];
                for (k, (when, then)) in branches.iter().enumerate() {
                    let cond = evaluate(when, batch)?;
                    let mask = boolean::as_boolean(&cond)?.true_mask();
                    for i in mask.set_indices() {
                        if !decided[i] {
                            decided[i] = true;
                            choice[i] = k as u32;
                        }
                    }
                    values.push(evaluate(then, batch)?);
                }
                if let Some(o) = otherwise {
                    values.push(evaluate(o, batch)?);
                    let k = (values.len() - 1) as u32;
                    for i in 0..rows {
                        if !decided[i] {
                            choice[i] = k;
                        }
                    }
                }
                let refs: Vec<&Column> = values.iter().collect();
                select::interleave(&refs, &choice, *ty)?
            }
            PhysExpr::InList {
                expr,
                list,
                negated,
            } => {
                let v = evaluate(expr, batch)?;
                // A list of constants is one pass over the rows, not one comparison with a
                // column of copies per item.
                let constants = list
                    .iter()
                    .map(PhysExpr::constant)
                    .collect::<Option<Vec<_>>>();
                if let Some(found) = constants.and_then(|c| compare::in_list(&v, &c)) {
                    return Ok(Column::Boolean(if *negated {
                        boolean::not(&found)
                    } else {
                        found
                    }));
                }
                let mut acc: Option<morsel_storage::BooleanColumn> = None;
                for item in list {
                    let eq = compare::compare(BinaryOp::Eq, &v, &evaluate(item, batch)?)?;
                    acc = Some(match acc {
                        None => eq,
                        Some(a) => boolean::or(&a, &eq),
                    });
                }
                let acc = acc.ok_or_else(|| ExecError::Internal("empty IN list".into()))?;
                Column::Boolean(if *negated { boolean::not(&acc) } else { acc })
            }
            PhysExpr::Like {
                expr,
                matcher,
                negated,
            } => Column::Boolean(matcher.eval(string::as_utf8(&evaluate(expr, batch)?)?, *negated)),
            PhysExpr::Function { func, args, ty } => {
                let cols = args
                    .iter()
                    .map(|a| evaluate(a, batch))
                    .collect::<ExecResult<Vec<_>>>()?;
                eval_function(*func, &cols, *ty, rows)?
            }
            PhysExpr::Fused(p) => p.evaluate(batch)?,
        })
    }
}

fn eval_function(
    func: ScalarFunc,
    args: &[Column],
    ty: DataType,
    rows: usize,
) -> ExecResult<Column> {
    use ScalarFunc::*;
    Ok(match func {
        Abs | Floor | Ceil | Sqrt | Round => {
            math::unary(func, &args[0], args.get(1).map(int64_arg).transpose()?)?
        }
        Lower => string::lower(string::as_utf8(&args[0])?),
        Upper => string::upper(string::as_utf8(&args[0])?),
        Trim | Ltrim | Rtrim if args.len() == 2 => {
            text::trim_chars(&args[0], &args[1], func != Rtrim, func != Ltrim)?
        }
        Trim => string::trim(string::as_utf8(&args[0])?),
        Length => string::length(string::as_utf8(&args[0])?),
        Substring => string::substring(
            string::as_utf8(&args[0])?,
            int64_arg(&args[1])?,
            args.get(2).map(int64_arg).transpose()?,
        )?,
        Coalesce => {
            let choice: Vec<u32> = (0..rows)
                .map(|i| {
                    args.iter()
                        .position(|c| c.is_valid(i))
                        .map_or(u32::MAX, |k| k as u32)
                })
                .collect();
            let refs: Vec<&Column> = args.iter().collect();
            select::interleave(&refs, &choice, ty)?
        }
        Extract(part) => temporal::extract(part, &args[0])?,
        DateTrunc(part) => temporal::trunc(part, &args[0])?,
        DateDiff(part) => temporal::diff(part, &args[0], &args[1])?,
        Ln | Log10 | Exp => math::unary(func, &args[0], None)?,
        Power => math::power(&args[0], &args[1])?,
        Ltrim => text::ltrim(&args[0])?,
        Rtrim => text::rtrim(&args[0])?,
        Replace => text::replace(&args[0], &args[1], &args[2])?,
        SplitPart => text::split_part(&args[0], &args[1], &args[2])?,
        Left | Right => text::left_right(&args[0], &args[1], func == Right)?,
        Position => text::position(&args[0], &args[1])?,
        StartsWith => text::starts_with(&args[0], &args[1])?,
        RegexpMatches => regex::regexp_matches(&args[0], &args[1], args.get(2))?,
        RegexpReplace => regex::regexp_replace(&args[0], &args[1], &args[2], args.get(3))?,
        RegexpExtract => regex::regexp_extract(&args[0], &args[1], args.get(2))?,
        EndsWith => text::ends_with(&args[0], &args[1])?,
        Contains => text::contains(&args[0], &args[1])?,
        Lpad | Rpad => text::pad(&args[0], &args[1], &args[2], func == Rpad)?,
        Repeat => text::repeat(&args[0], &args[1])?,
        Reverse => text::reverse(&args[0])?,
        Ascii => text::ascii(&args[0])?,
        Chr => text::chr(&args[0])?,
        OctetLength => text::octet_length(&args[0])?,
        ConcatWs => text::concat_ws(args)?,
        Sign => math::sign(&args[0])?,
        Trunc => math::trunc(&args[0])?,
        Gcd | Lcm => math::gcd_lcm(&args[0], &args[1], func == Lcm)?,
        Atan2 => math::atan2(&args[0], &args[1])?,
        Math(m) => math::float_unary(m, &args[0])?,
        IsNan | IsInf | IsFinite => math::float_test(func, &args[0])?,
        Concat => text::concat(args)?,
        TryCast(to) => cast::try_cast(&args[0], to)?,
        Greatest | Least => {
            // Per row, the argument holding the extreme non-NULL value.
            let choice: Vec<u32> = (0..rows)
                .map(|i| {
                    let mut best: Option<usize> = None;
                    for (k, c) in args.iter().enumerate() {
                        if !c.is_valid(i) {
                            continue;
                        }
                        let wins = best.is_none_or(|b| {
                            let ord = compare::cmp_rows(c, i, &args[b], i);
                            if func == Greatest {
                                ord.is_gt()
                            } else {
                                ord.is_lt()
                            }
                        });
                        if wins {
                            best = Some(k);
                        }
                    }
                    best.map_or(u32::MAX, |k| k as u32)
                })
                .collect();
            let refs: Vec<&Column> = args.iter().collect();
            select::interleave(&refs, &choice, ty)?
        }
        AddMicros => calendar::add_micros(&args[0], &args[1])?,
        Strftime => calendar::strftime(&args[0], &args[1])?,
        Strptime | TryStrptime => calendar::strptime(&args[0], &args[1], func == TryStrptime)?,
        DayName | MonthName => calendar::name_of(&args[0], func == MonthName)?,
        Epoch => calendar::epoch(&args[0])?,
        LastDay => calendar::last_day(&args[0])?,
        MakeDate => calendar::make_date(&args[0], &args[1], &args[2])?,
        AddMonths if matches!(args[0], Column::Timestamp(_)) => {
            calendar::add_months_to_timestamps(&args[0], &args[1])?
        }
        AddDays | AddMonths => match &args[0] {
            Column::Date32(d) => temporal::add(d, int64_arg(&args[1])?, func == AddMonths)?,
            other => {
                return Err(ExecError::Internal(format!(
                    "date arithmetic on {}",
                    other.data_type()
                )))
            }
        },
    })
}

/// `left op right` for a comparison; a side that is a constant is compared as the value
/// itself where the kernel covers the type, not as a column of copies.
fn compare_exprs(
    op: BinaryOp,
    left: &PhysExpr,
    right: &PhysExpr,
    batch: &Batch,
    mode: Mode,
) -> ExecResult<morsel_storage::BooleanColumn> {
    if let Some(value) = right.constant() {
        let l = left.eval(batch, mode)?;
        if let Some(out) = compare::compare_scalar(op, &l, &value) {
            return Ok(out);
        }
        return compare::compare(op, &l, &right.eval(batch, mode)?);
    }
    if let Some(value) = left.constant() {
        let r = right.eval(batch, mode)?;
        if let Some(out) = compare::compare_scalar(op.swap(), &r, &value) {
            return Ok(out);
        }
        return compare::compare(op, &left.eval(batch, mode)?, &r);
    }
    compare::compare(op, &left.eval(batch, mode)?, &right.eval(batch, mode)?)
}
