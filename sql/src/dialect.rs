//! The SQL dialect morsel parses: sqlparser's DuckDB dialect, plus the DuckDB syntax that
//! dialect does not switch on (`* RENAME (a AS b)`, `first_value(x IGNORE NULLS)`).
//!
//! sqlparser asks a dialect both through its methods and, in many places, by type
//! (`dialect_of!(self is DuckDbDialect)`, which compares [`Dialect::dialect`]). This
//! dialect answers every method as [`DuckDbDialect`] does unless it says otherwise here,
//! and reports DuckDB's type, so the parser treats it as DuckDB everywhere.

use std::any::TypeId;

use sqlparser::dialect::{Dialect, DuckDbDialect};

/// DuckDB's dialect with the additions the module docs list.
#[derive(Debug, Default)]
pub(crate) struct MorselDialect;

/// Methods answered as DuckDB answers them (those [`DuckDbDialect`] overrides).
macro_rules! as_duckdb {
    ($($name:ident),* $(,)?) => {
        $(fn $name(&self) -> bool {
            DuckDbDialect {}.$name()
        })*
    };
}

impl Dialect for MorselDialect {
    fn dialect(&self) -> TypeId {
        TypeId::of::<DuckDbDialect>()
    }

    fn supports_select_wildcard_rename(&self) -> bool {
        true
    }

    fn supports_window_function_null_treatment_arg(&self) -> bool {
        true
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        DuckDbDialect {}.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        DuckDbDialect {}.is_identifier_part(ch)
    }

    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        DuckDbDialect {}.identifier_quote_style(identifier)
    }

    fn supports_string_literal_column_alias(&self, explicit: bool) -> bool {
        DuckDbDialect {}.supports_string_literal_column_alias(explicit)
    }

    fn supports_string_literal_table_alias(&self, explicit: bool) -> bool {
        DuckDbDialect {}.supports_string_literal_table_alias(explicit)
    }

    as_duckdb!(
        supports_cte_materialization,
        supports_trailing_commas,
        supports_filter_during_aggregation,
        supports_group_by_expr,
        supports_bitwise_shift_operators,
        supports_tilde_like_match_operator,
        supports_aggregate_order_by_with_empty_args,
        supports_comparison_in_between_low_bound,
        supports_named_fn_args_with_eq_operator,
        supports_named_fn_args_with_assignment_operator,
        supports_dictionary_syntax,
        support_map_literal_syntax,
        supports_lambda_functions,
        allow_extract_single_quotes,
        supports_explain_with_utility_options,
        supports_load_extension,
        supports_array_typedef_with_brackets,
        supports_from_first_select,
        supports_order_by_all,
        supports_select_wildcard_exclude,
        supports_notnull_operator,
        supports_install,
        supports_detach,
        supports_select_wildcard_replace,
        supports_comma_separated_trim,
        supports_numeric_literal_underscores,
        supports_nested_comments,
        supports_add_column_if_not_exists,
    );
}

#[cfg(test)]
mod tests {
    use sqlparser::parser::Parser;

    use super::*;

    /// Every statement parses to the same tree under both dialects (so nothing DuckDB's
    /// dialect switches on is lost), and RENAME parses only under ours.
    #[test]
    fn parses_as_duckdb_does() {
        for sql in [
            "SELECT * EXCLUDE (a) REPLACE (b + 1 AS b) FROM 'x.csv' ORDER BY ALL",
            "FROM t SELECT a, b,",
            "SELECT {'a': 1}, [1, 2], x::INT // 2, 1_000 FROM t WHERE a NOTNULL",
            "SELECT count(*) FILTER (WHERE a > 1), list_transform(l, x -> x + 1) FROM t",
            "SELECT \"Quoted\" AS 'alias' FROM t /* a /* nested */ comment */",
            "SELECT trim(s, 'x'), extract('year' FROM d) FROM t GROUP BY ALL",
        ] {
            let ours = Parser::parse_sql(&MorselDialect, sql).map(|s| format!("{s:?}"));
            let duckdb = Parser::parse_sql(&DuckDbDialect {}, sql).map(|s| format!("{s:?}"));
            assert_eq!(ours, duckdb, "{sql}");
        }
        for ours_only in [
            "SELECT * RENAME (a AS b) FROM t",
            "SELECT first_value(x IGNORE NULLS) OVER (ORDER BY y) FROM t",
        ] {
            assert!(Parser::parse_sql(&MorselDialect, ours_only).is_ok());
            assert!(Parser::parse_sql(&DuckDbDialect {}, ours_only).is_err());
        }
    }
}
