//! Scalar and aggregate expressions, the builder functions users call (`col`, `lit`, ...),
//! and their SQL-like display (which also names output columns).

mod coerce;
mod display;
mod visit;
mod window;

use std::ops;

use morsel_storage::temporal::{self, DatePart};
use morsel_storage::{DataType, ScalarValue};

pub use coerce::coerce;
pub(crate) use coerce::common_type;
pub use window::{FrameBound, FrameUnits, WindowExpr, WindowFrame, WindowFunc};

/// A column named by an optional relation (table or alias) and a name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ColumnRef {
    pub relation: Option<String>,
    pub name: String,
}

impl ColumnRef {
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            relation: None,
            name: name.into(),
        }
    }

    pub fn qualified(relation: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            relation: Some(relation.into()),
            name: name.into(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Plus,
    Minus,
    Multiply,
    /// `/`: on integers yields a DOUBLE (DuckDB semantics).
    Divide,
    /// `//`: integer division.
    IntDivide,
    Modulo,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
    /// `||` string concatenation.
    Concat,
}

impl BinaryOp {
    /// The six comparisons.
    pub const COMPARISONS: [BinaryOp; 6] = [
        BinaryOp::Eq,
        BinaryOp::NotEq,
        BinaryOp::Lt,
        BinaryOp::LtEq,
        BinaryOp::Gt,
        BinaryOp::GtEq,
    ];

    pub fn is_comparison(self) -> bool {
        Self::COMPARISONS.contains(&self)
    }

    /// `+ - * / // %`.
    pub fn is_arithmetic(self) -> bool {
        use BinaryOp::*;
        matches!(self, Plus | Minus | Multiply | Divide | IntDivide | Modulo)
    }

    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Plus => "+",
            BinaryOp::Minus => "-",
            BinaryOp::Multiply => "*",
            BinaryOp::Divide => "/",
            BinaryOp::IntDivide => "//",
            BinaryOp::Modulo => "%",
            BinaryOp::Eq => "=",
            BinaryOp::NotEq => "<>",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
            BinaryOp::And => "AND",
            BinaryOp::Or => "OR",
            BinaryOp::Concat => "||",
        }
    }

    /// Whether two values ordered `o` satisfy this comparison (`Lt` holds for `Less`).
    #[inline]
    pub fn holds(self, o: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match self {
            BinaryOp::Eq => o == Equal,
            BinaryOp::NotEq => o != Equal,
            BinaryOp::Lt => o == Less,
            BinaryOp::LtEq => o != Greater,
            BinaryOp::Gt => o == Greater,
            _ => o != Less,
        }
    }

    /// The comparison that holds exactly where this one fails (`NOT (a < b)` is `a >= b`;
    /// both are NULL where an operand is). Other operators come back as they are.
    pub fn negated(self) -> Self {
        match self {
            BinaryOp::Eq => BinaryOp::NotEq,
            BinaryOp::NotEq => BinaryOp::Eq,
            BinaryOp::Lt => BinaryOp::GtEq,
            BinaryOp::LtEq => BinaryOp::Gt,
            BinaryOp::Gt => BinaryOp::LtEq,
            BinaryOp::GtEq => BinaryOp::Lt,
            other => other,
        }
    }

    /// The operator with its operands swapped (`a < b` == `b > a`).
    pub fn swap(self) -> Self {
        match self {
            BinaryOp::Lt => BinaryOp::Gt,
            BinaryOp::LtEq => BinaryOp::GtEq,
            BinaryOp::Gt => BinaryOp::Lt,
            BinaryOp::GtEq => BinaryOp::LtEq,
            other => other,
        }
    }
}

/// Built-in scalar functions (a closed set: matched by variant, never by name string).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarFunc {
    Abs,
    Round,
    Floor,
    Ceil,
    Sqrt,
    Lower,
    Upper,
    Length,
    Trim,
    /// `substring(s, start[, len])`, 1-based like SQL.
    Substring,
    Coalesce,
    Extract(DatePart),
    /// `date + n days` (the binder's lowering of `+ INTERVAL 'n' DAY`).
    AddDays,
    /// `date + n months` (`INTERVAL 'n' MONTH` / `YEAR`), clamping the day of month; on a
    /// TIMESTAMP the time of day stays.
    AddMonths,
    /// `timestamp + n microseconds` (`INTERVAL` of days and smaller units on a TIMESTAMP).
    AddMicros,
    /// `strftime(timestamp, format)`: the timestamp written by a C-style format.
    Strftime,
    /// `strptime(text, format)`: the TIMESTAMP `text` spells in `format` (an error where it
    /// does not; `try_strptime`: NULL).
    Strptime,
    TryStrptime,
    /// `make_date(year, month, day)`.
    MakeDate,
    /// `last_day(date)`: the last day of its month.
    LastDay,
    /// `dayname(ts)` / `monthname(ts)`: English names (`Monday`, `January`).
    DayName,
    MonthName,
    /// `epoch(ts)` / `extract(epoch FROM ts)`: seconds since 1970-01-01, as a DOUBLE.
    Epoch,
    /// Natural logarithm; NULL for zero and negative numbers is an error in DuckDB, here too.
    Ln,
    Log10,
    Exp,
    Power,
    Ltrim,
    Rtrim,
    /// `position(needle IN haystack)` / `strpos(haystack, needle)`: 1-based, 0 if absent.
    /// Arguments are stored haystack first.
    Position,
    Replace,
    SplitPart,
    StartsWith,
    /// `concat(a, b, ...)`: NULL arguments count as empty strings.
    Concat,
    Left,
    Right,
    /// `regexp_matches(s, pattern[, options])`: whether the pattern matches anywhere in `s`.
    RegexpMatches,
    /// Largest / smallest argument, ignoring NULLs (NULL only if all are).
    Greatest,
    Least,
    /// `TRY_CAST(x AS t)`: NULL where the cast fails.
    TryCast(DataType),
    /// `date_trunc(part, x)`: a TIMESTAMP.
    DateTrunc(DatePart),
    /// `date_diff(part, a, b)`: part boundaries between a and b.
    DateDiff(DatePart),
    /// `lpad(s, n, pad)` / `rpad`: `s` cut or padded to n characters.
    Lpad,
    Rpad,
    /// `repeat(s, n)`: `s` n times ('' for n <= 0).
    Repeat,
    Reverse,
    /// `concat_ws(sep, a, ...)`: the non-NULL arguments joined by `sep` (NULL if `sep` is).
    ConcatWs,
    /// `ends_with(s, suffix)` / `suffix(s, suffix)`.
    EndsWith,
    /// `contains(s, needle)`.
    Contains,
    /// `ascii(s)`: the code point of the first character, 0 for ''.
    Ascii,
    /// `chr(n)`: the character of code point n.
    Chr,
    /// `strlen(s)` / `octet_length(s)`: bytes, not characters.
    OctetLength,
    /// `regexp_replace(s, pattern, replacement[, options])`: the first match (every match
    /// with option 'g'); `\1` in the replacement is the first group.
    RegexpReplace,
    /// `regexp_extract(s, pattern[, group])`: the group's text in the first match, '' if none.
    RegexpExtract,
    /// `sign(x)`: -1, 0 or 1 (0 for NaN).
    Sign,
    /// `trunc(x)`: rounded toward zero.
    Trunc,
    Gcd,
    Lcm,
    Atan2,
    /// A DOUBLE function of one DOUBLE.
    Math(MathFunc),
    IsNan,
    IsInf,
    IsFinite,
}

/// Functions from one DOUBLE to one DOUBLE, computed by the standard library's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFunc {
    Cbrt,
    Log2,
    Sin,
    Cos,
    Tan,
    Cot,
    Asin,
    Acos,
    Atan,
    Degrees,
    Radians,
}

impl MathFunc {
    pub fn name(self) -> &'static str {
        match self {
            MathFunc::Cbrt => "cbrt",
            MathFunc::Log2 => "log2",
            MathFunc::Sin => "sin",
            MathFunc::Cos => "cos",
            MathFunc::Tan => "tan",
            MathFunc::Cot => "cot",
            MathFunc::Asin => "asin",
            MathFunc::Acos => "acos",
            MathFunc::Atan => "atan",
            MathFunc::Degrees => "degrees",
            MathFunc::Radians => "radians",
        }
    }

    pub fn apply(self, x: f64) -> f64 {
        match self {
            MathFunc::Cbrt => x.cbrt(),
            MathFunc::Log2 => x.log2(),
            MathFunc::Sin => x.sin(),
            MathFunc::Cos => x.cos(),
            MathFunc::Tan => x.tan(),
            MathFunc::Cot => 1.0 / x.tan(),
            MathFunc::Asin => x.asin(),
            MathFunc::Acos => x.acos(),
            MathFunc::Atan => x.atan(),
            MathFunc::Degrees => x.to_degrees(),
            MathFunc::Radians => x.to_radians(),
        }
    }
}

impl ScalarFunc {
    pub fn name(self) -> String {
        match self {
            ScalarFunc::Abs => "abs".into(),
            ScalarFunc::Round => "round".into(),
            ScalarFunc::Floor => "floor".into(),
            ScalarFunc::Ceil => "ceil".into(),
            ScalarFunc::Sqrt => "sqrt".into(),
            ScalarFunc::Lower => "lower".into(),
            ScalarFunc::Upper => "upper".into(),
            ScalarFunc::Length => "length".into(),
            ScalarFunc::Trim => "trim".into(),
            ScalarFunc::Substring => "substring".into(),
            ScalarFunc::Coalesce => "coalesce".into(),
            ScalarFunc::Extract(p) => format!("extract_{}", p.name()),
            ScalarFunc::AddDays => "add_days".into(),
            ScalarFunc::AddMonths => "add_months".into(),
            ScalarFunc::AddMicros => "add_micros".into(),
            ScalarFunc::Strftime => "strftime".into(),
            ScalarFunc::Strptime => "strptime".into(),
            ScalarFunc::TryStrptime => "try_strptime".into(),
            ScalarFunc::MakeDate => "make_date".into(),
            ScalarFunc::LastDay => "last_day".into(),
            ScalarFunc::DayName => "dayname".into(),
            ScalarFunc::MonthName => "monthname".into(),
            ScalarFunc::Epoch => "epoch".into(),
            ScalarFunc::Ln => "ln".into(),
            ScalarFunc::Log10 => "log10".into(),
            ScalarFunc::Exp => "exp".into(),
            ScalarFunc::Power => "power".into(),
            ScalarFunc::Ltrim => "ltrim".into(),
            ScalarFunc::Rtrim => "rtrim".into(),
            ScalarFunc::Position => "strpos".into(),
            ScalarFunc::Replace => "replace".into(),
            ScalarFunc::SplitPart => "split_part".into(),
            ScalarFunc::StartsWith => "starts_with".into(),
            ScalarFunc::Concat => "concat".into(),
            ScalarFunc::Left => "left".into(),
            ScalarFunc::Right => "right".into(),
            ScalarFunc::RegexpMatches => "regexp_matches".into(),
            ScalarFunc::Greatest => "greatest".into(),
            ScalarFunc::Least => "least".into(),
            ScalarFunc::TryCast(t) => format!("try_cast_{}", t.sql_name().to_ascii_lowercase()),
            ScalarFunc::DateTrunc(p) => format!("date_trunc_{}", p.name()),
            ScalarFunc::DateDiff(p) => format!("date_diff_{}", p.name()),
            ScalarFunc::Lpad => "lpad".into(),
            ScalarFunc::Rpad => "rpad".into(),
            ScalarFunc::Repeat => "repeat".into(),
            ScalarFunc::Reverse => "reverse".into(),
            ScalarFunc::ConcatWs => "concat_ws".into(),
            ScalarFunc::EndsWith => "ends_with".into(),
            ScalarFunc::Contains => "contains".into(),
            ScalarFunc::Ascii => "ascii".into(),
            ScalarFunc::Chr => "chr".into(),
            ScalarFunc::OctetLength => "strlen".into(),
            ScalarFunc::RegexpReplace => "regexp_replace".into(),
            ScalarFunc::RegexpExtract => "regexp_extract".into(),
            ScalarFunc::Sign => "sign".into(),
            ScalarFunc::Trunc => "trunc".into(),
            ScalarFunc::Gcd => "gcd".into(),
            ScalarFunc::Lcm => "lcm".into(),
            ScalarFunc::Atan2 => "atan2".into(),
            ScalarFunc::Math(m) => m.name().into(),
            ScalarFunc::IsNan => "isnan".into(),
            ScalarFunc::IsInf => "isinf".into(),
            ScalarFunc::IsFinite => "isfinite".into(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AggFunc {
    /// `count(*)`: rows, nulls included (takes no argument).
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    /// Sample standard deviation (n - 1 in the denominator); NULL for fewer than two values.
    StddevSamp,
    StddevPop,
    /// Sample variance; NULL for fewer than two values.
    VarSamp,
    VarPop,
    /// `median(x)`: `quantile_cont(x, 0.5)`.
    Median,
    /// `quantile_cont(x, q)`: linear interpolation between the closest ranks; `q` is a
    /// constant second argument in [0, 1].
    QuantileCont,
    /// `string_agg(x, sep)`: values in input order joined by the constant `sep`.
    StringAgg,
    BoolAnd,
    BoolOr,
    /// The value of a scalar subquery: the group's only value, NULL for no rows, an error for
    /// more than one row.
    Single,
    /// `first(x)` / `last(x)`: the value (NULL included) of the group's first or last row in
    /// input order. An optional second argument is a FILTER mask: rows where it is not true
    /// are skipped.
    First,
    Last,
    /// `any_value(x)`: the group's first non-NULL value.
    AnyValue,
    /// `arg_min(x, y)` / `arg_max(x, y)`: `x` of the row with the least / greatest `y`, over
    /// the rows where neither is NULL; of tied rows, the first.
    ArgMin,
    ArgMax,
    /// `mode(x)`: the most frequent non-NULL value; of tied values, the first seen.
    Mode,
    /// `product(x)`: the DOUBLE product of the non-NULL values.
    Product,
    /// The two-column statistics, `func(y, x)` over the rows where neither is NULL:
    /// covariances, Pearson's correlation and the linear-regression family.
    CovarPop,
    CovarSamp,
    Corr,
    RegrCount,
    RegrAvgX,
    RegrAvgY,
    RegrSlope,
    RegrIntercept,
    RegrR2,
    RegrSxx,
    RegrSyy,
    RegrSxy,
}

impl AggFunc {
    pub fn name(self) -> &'static str {
        match self {
            AggFunc::CountStar | AggFunc::Count => "count",
            AggFunc::Sum => "sum",
            AggFunc::Avg => "avg",
            AggFunc::Min => "min",
            AggFunc::Max => "max",
            AggFunc::StddevSamp => "stddev_samp",
            AggFunc::StddevPop => "stddev_pop",
            AggFunc::VarSamp => "var_samp",
            AggFunc::VarPop => "var_pop",
            AggFunc::Median => "median",
            AggFunc::QuantileCont => "quantile_cont",
            AggFunc::StringAgg => "string_agg",
            AggFunc::BoolAnd => "bool_and",
            AggFunc::BoolOr => "bool_or",
            AggFunc::Single => "single_value",
            AggFunc::First => "first",
            AggFunc::Last => "last",
            AggFunc::AnyValue => "any_value",
            AggFunc::ArgMin => "arg_min",
            AggFunc::ArgMax => "arg_max",
            AggFunc::Mode => "mode",
            AggFunc::Product => "product",
            AggFunc::CovarPop => "covar_pop",
            AggFunc::CovarSamp => "covar_samp",
            AggFunc::Corr => "corr",
            AggFunc::RegrCount => "regr_count",
            AggFunc::RegrAvgX => "regr_avgx",
            AggFunc::RegrAvgY => "regr_avgy",
            AggFunc::RegrSlope => "regr_slope",
            AggFunc::RegrIntercept => "regr_intercept",
            AggFunc::RegrR2 => "regr_r2",
            AggFunc::RegrSxx => "regr_sxx",
            AggFunc::RegrSyy => "regr_syy",
            AggFunc::RegrSxy => "regr_sxy",
        }
    }

    /// Whether the second argument is a column like the first (`arg_min`, `corr`, ...), not
    /// a constant (`quantile_cont`'s fraction, `string_agg`'s separator).
    pub fn takes_two_columns(self) -> bool {
        self.is_two_column_statistic()
            || matches!(
                self,
                AggFunc::ArgMin | AggFunc::ArgMax | AggFunc::First | AggFunc::Last
            )
    }

    /// `covar_pop` ... `regr_sxy`: functions of the co-moments of two DOUBLE columns.
    pub fn is_two_column_statistic(self) -> bool {
        matches!(
            self,
            AggFunc::CovarPop
                | AggFunc::CovarSamp
                | AggFunc::Corr
                | AggFunc::RegrCount
                | AggFunc::RegrAvgX
                | AggFunc::RegrAvgY
                | AggFunc::RegrSlope
                | AggFunc::RegrIntercept
                | AggFunc::RegrR2
                | AggFunc::RegrSxx
                | AggFunc::RegrSyy
                | AggFunc::RegrSxy
        )
    }

    /// Whether the answer depends on the order of the group's rows beyond float rounding,
    /// so that `func(x ORDER BY y)` must see its input sorted.
    pub fn depends_on_order(self) -> bool {
        matches!(
            self,
            AggFunc::StringAgg
                | AggFunc::First
                | AggFunc::Last
                | AggFunc::AnyValue
                | AggFunc::ArgMin
                | AggFunc::ArgMax
                | AggFunc::Mode
        )
    }

    /// How many arguments the function takes (`count(*)` takes none).
    pub fn arity(self) -> usize {
        match self {
            AggFunc::CountStar => 0,
            AggFunc::QuantileCont | AggFunc::StringAgg | AggFunc::ArgMin | AggFunc::ArgMax => 2,
            f if f.is_two_column_statistic() => 2,
            _ => 1,
        }
    }

    /// An error message if `n` arguments are the wrong number for this function.
    pub fn check_arity(self, n: usize) -> Result<(), String> {
        let want = self.arity();
        if n == want {
            return Ok(());
        }
        Err(format!(
            "{}() takes {want} argument{}, got {n}",
            self.name(),
            if want == 1 { "" } else { "s" }
        ))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Column(ColumnRef),
    Literal(ScalarValue),
    Binary {
        left: Box<Expr>,
        op: BinaryOp,
        right: Box<Expr>,
    },
    Not(Box<Expr>),
    Negative(Box<Expr>),
    IsNull(Box<Expr>),
    IsNotNull(Box<Expr>),
    Cast {
        expr: Box<Expr>,
        to: DataType,
    },
    /// `CASE [operand] WHEN .. THEN .. [ELSE ..] END`.
    Case {
        operand: Option<Box<Expr>>,
        branches: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    Between {
        expr: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        negated: bool,
    },
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        negated: bool,
        case_insensitive: bool,
        /// `ESCAPE 'c'`: the character that makes the next `%`, `_` or itself literal.
        escape: Option<char>,
    },
    Function {
        func: ScalarFunc,
        args: Vec<Expr>,
    },
    Aggregate {
        func: AggFunc,
        args: Vec<Expr>,
        distinct: bool,
    },
    Alias {
        expr: Box<Expr>,
        name: String,
    },
    /// A window function call; evaluated by a Window plan node, never as a scalar.
    Window(Box<WindowExpr>),
}

/// A sort key: expression, direction and null placement.
#[derive(Clone, Debug, PartialEq)]
pub struct SortExpr {
    pub expr: Expr,
    pub asc: bool,
    pub nulls_first: bool,
}

impl From<Expr> for SortExpr {
    /// Ascending, NULLs last.
    fn from(e: Expr) -> Self {
        e.asc()
    }
}

/// A column by name (`"t.a"` is split into relation `t` and name `a`).
pub fn col(name: &str) -> Expr {
    match name.split_once('.') {
        Some((rel, n)) if !rel.is_empty() && !n.is_empty() => {
            Expr::Column(ColumnRef::qualified(rel, n))
        }
        _ => Expr::Column(ColumnRef::new(name)),
    }
}

/// A literal value.
pub fn lit(v: impl Into<ScalarValue2>) -> Expr {
    Expr::Literal(v.into().0)
}

/// A DATE literal; panics on malformed text (use `Expr::Literal` with a parsed value otherwise).
pub fn lit_date(s: &str) -> Expr {
    let days =
        temporal::parse_date(s.as_bytes()).unwrap_or_else(|| panic!("invalid date literal {s:?}"));
    Expr::Literal(ScalarValue::Date32(days))
}

/// Conversion helper so `lit(1)`, `lit(2.5)`, `lit("x")`, `lit(true)` all work.
pub struct ScalarValue2(pub ScalarValue);

macro_rules! lit_from {
    ($t:ty, $v:ident => $e:expr) => {
        impl From<$t> for ScalarValue2 {
            fn from($v: $t) -> Self {
                ScalarValue2($e)
            }
        }
    };
}
lit_from!(i32, v => ScalarValue::Int32(v));
lit_from!(i64, v => ScalarValue::Int64(v));
lit_from!(f64, v => ScalarValue::Float64(v));
lit_from!(bool, v => ScalarValue::Boolean(v));
lit_from!(&str, v => ScalarValue::Utf8(v.to_string()));
lit_from!(String, v => ScalarValue::Utf8(v));
lit_from!(ScalarValue, v => v);

impl Expr {
    fn binary(self, op: BinaryOp, other: Expr) -> Expr {
        Expr::Binary {
            left: Box::new(self),
            op,
            right: Box::new(other),
        }
    }

    pub fn eq(self, other: Expr) -> Expr {
        self.binary(BinaryOp::Eq, other)
    }
    pub fn not_eq(self, other: Expr) -> Expr {
        self.binary(BinaryOp::NotEq, other)
    }
    pub fn lt(self, other: Expr) -> Expr {
        self.binary(BinaryOp::Lt, other)
    }
    pub fn lt_eq(self, other: Expr) -> Expr {
        self.binary(BinaryOp::LtEq, other)
    }
    pub fn gt(self, other: Expr) -> Expr {
        self.binary(BinaryOp::Gt, other)
    }
    pub fn gt_eq(self, other: Expr) -> Expr {
        self.binary(BinaryOp::GtEq, other)
    }
    pub fn and(self, other: Expr) -> Expr {
        self.binary(BinaryOp::And, other)
    }
    pub fn or(self, other: Expr) -> Expr {
        self.binary(BinaryOp::Or, other)
    }
    pub fn between(self, low: Expr, high: Expr) -> Expr {
        Expr::Between {
            expr: Box::new(self),
            low: Box::new(low),
            high: Box::new(high),
            negated: false,
        }
    }
    pub fn is_null(self) -> Expr {
        Expr::IsNull(Box::new(self))
    }
    pub fn is_not_null(self) -> Expr {
        Expr::IsNotNull(Box::new(self))
    }
    pub fn cast(self, to: DataType) -> Expr {
        Expr::Cast {
            expr: Box::new(self),
            to,
        }
    }
    pub fn alias(self, name: impl Into<String>) -> Expr {
        Expr::Alias {
            expr: Box::new(self.unalias()),
            name: name.into(),
        }
    }

    fn agg(self, func: AggFunc) -> Expr {
        Expr::Aggregate {
            func,
            args: vec![self],
            distinct: false,
        }
    }
    pub fn sum(self) -> Expr {
        self.agg(AggFunc::Sum)
    }
    pub fn avg(self) -> Expr {
        self.agg(AggFunc::Avg)
    }
    pub fn min(self) -> Expr {
        self.agg(AggFunc::Min)
    }
    pub fn max(self) -> Expr {
        self.agg(AggFunc::Max)
    }
    pub fn count(self) -> Expr {
        self.agg(AggFunc::Count)
    }
    /// `count(*)`.
    pub fn count_star() -> Expr {
        Expr::Aggregate {
            func: AggFunc::CountStar,
            args: vec![],
            distinct: false,
        }
    }

    pub fn sort(self, asc: bool, nulls_first: bool) -> SortExpr {
        SortExpr {
            expr: self,
            asc,
            nulls_first,
        }
    }

    /// Ascending, NULLs last (DuckDB's default order).
    pub fn asc(self) -> SortExpr {
        self.sort(true, false)
    }

    /// Descending, NULLs last (DuckDB's default order).
    pub fn desc(self) -> SortExpr {
        self.sort(false, false)
    }

    /// The expression without a top-level alias.
    pub fn unalias(self) -> Expr {
        match self {
            Expr::Alias { expr, .. } => *expr,
            e => e,
        }
    }

    /// The name of the output column this expression produces.
    #[recursive::recursive]
    pub fn output_name(&self) -> String {
        match self {
            Expr::Alias { name, .. } => name.clone(),
            Expr::Column(c) => c.name.clone(),
            e => e.to_string(),
        }
    }

    pub fn is_aggregate(&self) -> bool {
        matches!(self, Expr::Aggregate { .. })
    }
}

macro_rules! arith_op {
    ($trait:ident, $method:ident, $op:ident) => {
        impl ops::$trait for Expr {
            type Output = Expr;
            fn $method(self, rhs: Expr) -> Expr {
                self.binary(BinaryOp::$op, rhs)
            }
        }
    };
}
arith_op!(Add, add, Plus);
arith_op!(Sub, sub, Minus);
arith_op!(Mul, mul, Multiply);
arith_op!(Div, div, Divide);
arith_op!(Rem, rem, Modulo);

impl ops::Not for Expr {
    type Output = Expr;
    fn not(self) -> Expr {
        Expr::Not(Box::new(self))
    }
}

impl ops::Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr::Negative(Box::new(self))
    }
}
