//! Function names to built-in functions (matched once here, then by enum everywhere else).

use morsel_planner::schema::edit_distance;
use morsel_planner::{AggFunc, ScalarFunc};

pub enum FunctionKind {
    Aggregate(AggFunc),
    Scalar(ScalarFunc),
}

const NAMES: &[&str] = &[
    "count",
    "sum",
    "avg",
    "mean",
    "min",
    "max",
    "abs",
    "round",
    "floor",
    "ceil",
    "ceiling",
    "sqrt",
    "lower",
    "upper",
    "length",
    "char_length",
    "trim",
    "substring",
    "substr",
    "coalesce",
];

pub fn lookup(name: &str) -> Option<FunctionKind> {
    use FunctionKind::{Aggregate as A, Scalar as S};
    Some(match name {
        "count" => A(AggFunc::Count),
        "sum" => A(AggFunc::Sum),
        "avg" | "mean" => A(AggFunc::Avg),
        "min" => A(AggFunc::Min),
        "max" => A(AggFunc::Max),
        "abs" => S(ScalarFunc::Abs),
        "round" => S(ScalarFunc::Round),
        "floor" => S(ScalarFunc::Floor),
        "ceil" | "ceiling" => S(ScalarFunc::Ceil),
        "sqrt" => S(ScalarFunc::Sqrt),
        "lower" => S(ScalarFunc::Lower),
        "upper" => S(ScalarFunc::Upper),
        "length" | "char_length" => S(ScalarFunc::Length),
        "trim" => S(ScalarFunc::Trim),
        "substring" | "substr" => S(ScalarFunc::Substring),
        "coalesce" => S(ScalarFunc::Coalesce),
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
