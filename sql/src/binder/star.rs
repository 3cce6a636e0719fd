//! What a `*` (or `t.*`) in a select list expands to: the columns in scope, less those its
//! `EXCLUDE (...)` names, with `REPLACE (expr AS name)` and `RENAME (name AS new)` applied,
//! as DuckDB spells them. A name in either list that matches no column is an error (it is
//! a typo more often than not), and so is a `*` that excludes every column.

use morsel_planner::{Expr, PlanField, PlanSchema};
use sqlparser::ast::{self, Spanned};

use super::Binder;
use crate::error::SqlError;

impl Binder<'_> {
    /// The columns `fields` (those a `*` covers) become under `opts`; `input` is the scope
    /// `REPLACE` expressions are bound in.
    pub(crate) fn star_columns(
        &self,
        fields: &[&PlanField],
        opts: &ast::WildcardAdditionalOptions,
        input: &PlanSchema,
        item: &ast::SelectItem,
    ) -> Result<Vec<Expr>, SqlError> {
        if opts.opt_ilike.is_some() || opts.opt_except.is_some() || opts.opt_alias.is_some() {
            return Err(
                SqlError::unsupported("* ILIKE / EXCEPT / AS; use * EXCLUDE (...)").at(item.span()),
            );
        }
        let excluded: Vec<&ast::ObjectName> = match &opts.opt_exclude {
            None => Vec::new(),
            Some(ast::ExcludeSelectItem::Single(n)) => vec![n],
            Some(ast::ExcludeSelectItem::Multiple(v)) => v.iter().collect(),
        };
        let renamed: Vec<&ast::IdentWithAlias> = match &opts.opt_rename {
            None => Vec::new(),
            Some(ast::RenameSelectItem::Single(r)) => vec![r],
            Some(ast::RenameSelectItem::Multiple(v)) => v.iter().collect(),
        };
        let replaced: Vec<&ast::ReplaceSelectElement> = match &opts.opt_replace {
            None => Vec::new(),
            Some(r) => r.items.iter().map(|b| b.as_ref()).collect(),
        };
        for name in &excluded {
            if !fields.iter().any(|f| excludes(name, f)) {
                return Err(SqlError::invalid(format!(
                    "column {name} in the EXCLUDE list is not in the FROM clause"
                ))
                .at(name.span()));
            }
        }
        let named = |list: &str, ident: &ast::Ident| -> Result<(), SqlError> {
            match fields
                .iter()
                .any(|f| f.name.eq_ignore_ascii_case(&ident.value))
            {
                true => Ok(()),
                false => Err(SqlError::invalid(format!(
                    "column {ident} in the {list} list is not in the FROM clause"
                ))
                .at(ident.span)),
            }
        };
        for r in &renamed {
            named("RENAME", &r.ident)?;
        }
        for r in &replaced {
            named("REPLACE", &r.column_name)?;
        }
        let mut columns = Vec::with_capacity(fields.len());
        for f in fields {
            if excluded.iter().any(|n| excludes(n, f)) {
                continue;
            }
            let same = |i: &ast::Ident| f.name.eq_ignore_ascii_case(&i.value);
            let mut e = match replaced.iter().find(|r| same(&r.column_name)) {
                Some(r) => self.expr(&r.expr, input)?.alias(f.name.clone()),
                None => Expr::Column(f.column_ref()),
            };
            if let Some(r) = renamed.iter().find(|r| same(&r.ident)) {
                e = e.unalias().alias(r.alias.value.clone());
            }
            columns.push(e);
        }
        if columns.is_empty() {
            return Err(SqlError::invalid(
                "the select list is empty once * drops its EXCLUDE columns",
            )
            .at(item.span()));
        }
        Ok(columns)
    }
}

/// Whether the EXCLUDE entry `name` (`a` or `t.a`) names `field`.
fn excludes(name: &ast::ObjectName, field: &PlanField) -> bool {
    let parts: Vec<&str> = name
        .0
        .iter()
        .filter_map(|p| p.as_ident())
        .map(|i| i.value.as_str())
        .collect();
    match parts.as_slice() {
        [column] => field.name.eq_ignore_ascii_case(column),
        [.., relation, column] => {
            field.name.eq_ignore_ascii_case(column)
                && field
                    .relation
                    .as_deref()
                    .is_some_and(|r| r.eq_ignore_ascii_case(relation))
        }
        [] => false,
    }
}
