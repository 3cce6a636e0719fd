//! Function names to built-in functions (matched once here, then by enum everywhere else).

use morsel_planner::schema::edit_distance;
use morsel_planner::{AggFunc, ScalarFunc};

pub enum FunctionKind {
    Aggregate(AggFunc),
    Scalar(ScalarFunc),
    /// Bound by rewriting: `nullif(a, b)` is a CASE; date-part functions take the part name
    /// as a constant first argument.
    NullIf,
    DatePart,
    DateTrunc,
    DateDiff,
}

const NAMES: &[&str] = &[
    "count",
    "sum",
    "avg",
    "mean",
    "min",
    "max",
    "stddev",
    "stddev_samp",
    "stddev_pop",
    "variance",
    "var_samp",
    "var_pop",
    "median",
    "quantile_cont",
    "percentile_cont",
    "string_agg",
    "group_concat",
    "listagg",
    "bool_and",
    "bool_or",
    "every",
    "abs",
    "round",
    "floor",
    "ceil",
    "ceiling",
    "sqrt",
    "ln",
    "log",
    "log10",
    "exp",
    "power",
    "pow",
    "lower",
    "upper",
    "length",
    "char_length",
    "trim",
    "ltrim",
    "rtrim",
    "substring",
    "substr",
    "strpos",
    "instr",
    "replace",
    "split_part",
    "starts_with",
    "concat",
    "left",
    "right",
    "regexp_matches",
    "coalesce",
    "nullif",
    "greatest",
    "least",
    "date_part",
    "datepart",
    "date_trunc",
    "datetrunc",
    "date_diff",
    "datediff",
];

pub fn lookup(name: &str) -> Option<FunctionKind> {
    use FunctionKind::{Aggregate as A, Scalar as S};
    Some(match name {
        "count" => A(AggFunc::Count),
        "sum" => A(AggFunc::Sum),
        "avg" | "mean" => A(AggFunc::Avg),
        "min" => A(AggFunc::Min),
        "max" => A(AggFunc::Max),
        "stddev" | "stddev_samp" => A(AggFunc::StddevSamp),
        "stddev_pop" => A(AggFunc::StddevPop),
        "variance" | "var_samp" => A(AggFunc::VarSamp),
        "var_pop" => A(AggFunc::VarPop),
        "median" => A(AggFunc::Median),
        "quantile_cont" | "percentile_cont" => A(AggFunc::QuantileCont),
        "string_agg" | "group_concat" | "listagg" => A(AggFunc::StringAgg),
        "bool_and" | "every" => A(AggFunc::BoolAnd),
        "bool_or" => A(AggFunc::BoolOr),
        "abs" => S(ScalarFunc::Abs),
        "round" => S(ScalarFunc::Round),
        "floor" => S(ScalarFunc::Floor),
        "ceil" | "ceiling" => S(ScalarFunc::Ceil),
        "sqrt" => S(ScalarFunc::Sqrt),
        "ln" => S(ScalarFunc::Ln),
        // DuckDB's one-argument log is base 10.
        "log" | "log10" => S(ScalarFunc::Log10),
        "exp" => S(ScalarFunc::Exp),
        "power" | "pow" => S(ScalarFunc::Power),
        "lower" => S(ScalarFunc::Lower),
        "upper" => S(ScalarFunc::Upper),
        "length" | "char_length" => S(ScalarFunc::Length),
        "trim" => S(ScalarFunc::Trim),
        "ltrim" => S(ScalarFunc::Ltrim),
        "rtrim" => S(ScalarFunc::Rtrim),
        "substring" | "substr" => S(ScalarFunc::Substring),
        "strpos" | "instr" => S(ScalarFunc::Position),
        "replace" => S(ScalarFunc::Replace),
        "split_part" => S(ScalarFunc::SplitPart),
        "starts_with" => S(ScalarFunc::StartsWith),
        "concat" => S(ScalarFunc::Concat),
        "left" => S(ScalarFunc::Left),
        "right" => S(ScalarFunc::Right),
        "regexp_matches" => S(ScalarFunc::RegexpMatches),
        "coalesce" => S(ScalarFunc::Coalesce),
        "greatest" => S(ScalarFunc::Greatest),
        "least" => S(ScalarFunc::Least),
        "nullif" => FunctionKind::NullIf,
        "date_part" | "datepart" => FunctionKind::DatePart,
        "date_trunc" | "datetrunc" => FunctionKind::DateTrunc,
        "date_diff" | "datediff" => FunctionKind::DateDiff,
        _ => return None,
    })
}

/// Known function names close to `name`.
pub fn suggestions(name: &str) -> Vec<String> {
    let mut v: Vec<(usize, &str)> = NAMES
        .iter()
        .map(|n| (edit_distance(name, n), *n))
        .filter(|(d, _)| *d <= 2)
        .collect();
    v.sort();
    v.into_iter().take(3).map(|(_, n)| n.to_string()).collect()
}
