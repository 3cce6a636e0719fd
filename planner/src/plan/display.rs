//! Renders a logical plan as an indented tree, one node per line (EXPLAIN's core).

use std::fmt;

use super::{JoinKind, LogicalPlan, TableSource};
use crate::expr::Expr;

fn join_exprs(exprs: &[Expr]) -> String {
    exprs
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl LogicalPlan {
    /// The node's own line, without children.
    pub fn node_line(&self) -> String {
        match self {
            LogicalPlan::Scan(s) => {
                let kind = match &s.source {
                    TableSource::Csv(f) if f.readers().len() > 1 => {
                        format!("csv, {} files", f.readers().len())
                    }
                    TableSource::Csv(_) => "csv".to_string(),
                    TableSource::Memory(_) => "memory".to_string(),
                };
                let mut line = format!("Scan: {} ({kind})", s.table);
                if s.alias != s.table {
                    line.push_str(&format!(" AS {}", s.alias));
                }
                if s.projection.is_some() {
                    let cols: Vec<&str> =
                        s.schema.fields().iter().map(|f| f.name.as_str()).collect();
                    line.push_str(&format!(" projection=[{}]", cols.join(", ")));
                }
                if !s.filters.is_empty() {
                    line.push_str(&format!(" filters=[{}]", join_exprs(&s.filters)));
                }
                line
            }
            LogicalPlan::Filter { predicate, .. } => format!("Filter: {predicate}"),
            LogicalPlan::Projection { exprs, .. } if exprs.is_empty() => {
                "Projection: no columns (row counts only)".into()
            }
            LogicalPlan::Projection { exprs, .. } => format!("Projection: {}", join_exprs(exprs)),
            LogicalPlan::Aggregate { group, aggs, .. } => {
                format!(
                    "Aggregate: group=[{}] aggs=[{}]",
                    join_exprs(group),
                    join_exprs(aggs)
                )
            }
            LogicalPlan::Join {
                kind, on, filter, ..
            } => {
                let keys: Vec<String> = on.iter().map(|(l, r)| format!("{l} = {r}")).collect();
                let mut line = if on.is_empty() && filter.is_none() && *kind == JoinKind::Inner {
                    "CrossJoin".to_string()
                } else {
                    format!("Join: {} on=[{}]", kind.name(), keys.join(", "))
                };
                if let Some(f) = filter {
                    line.push_str(&format!(" filter={f}"));
                }
                line
            }
            LogicalPlan::Window { exprs, .. } => format!("Window: {}", join_exprs(exprs)),
            LogicalPlan::Sort { keys, .. } => {
                format!(
                    "Sort: {}",
                    keys.iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
            LogicalPlan::Limit { skip, fetch, .. } => match fetch {
                Some(n) => format!("Limit: skip={skip} fetch={n}"),
                None => format!("Limit: skip={skip}"),
            },
            LogicalPlan::Distinct { .. } => "Distinct".into(),
            LogicalPlan::Union { .. } => "Union".into(),
            LogicalPlan::Values { rows, .. } => format!("Values: {} rows", rows.len()),
            LogicalPlan::SubqueryAlias { alias, .. } => format!("SubqueryAlias: {alias}"),
        }
    }

    fn fmt_indent(&self, f: &mut fmt::Formatter<'_>, depth: usize) -> fmt::Result {
        writeln!(f, "{:indent$}{}", "", self.node_line(), indent = depth * 2)?;
        for c in self.children() {
            c.fmt_indent(f, depth + 1)?;
        }
        Ok(())
    }
}

impl fmt::Display for LogicalPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_indent(f, 0)
    }
}
