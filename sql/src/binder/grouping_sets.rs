//! `GROUP BY ROLLUP (...)`, `CUBE (...)`, `GROUPING SETS (...)`: the select block is bound once per grouping set, grouped by that set's
//! expressions, with every other grouping expression read as a NULL of its type outside
//! aggregate arguments; the blocks' rows are concatenated (UNION ALL). `GROUPING(a, ...)`
//! is a constant in each block: one bit per argument, set where the argument is not
//! grouped by (the first argument the highest bit). A set with no expressions is a grand
//! total: one row even over no input, as in DuckDB.

use sqlparser::ast::{self, Spanned};

use super::Binder;
use crate::error::SqlError;
use morsel_planner::PlanBuilder;

/// The most grouping sets one GROUP BY may expand to (CUBE of 12 expressions).
const MAX_SETS: usize = 4096;

/// One block's grouping: the expressions it groups by, and every grouping expression of
/// the GROUP BY.
#[derive(Clone)]
pub(crate) struct GroupingBranch {
    pub(crate) keys: Vec<ast::Expr>,
    pub(crate) all: Vec<ast::Expr>,
}

impl GroupingBranch {
    /// `GROUPING(args)` in this block.
    pub(crate) fn grouping_value(&self, args: &[&ast::Expr]) -> Result<i64, SqlError> {
        if args.is_empty() || args.len() > 63 {
            return Err(SqlError::invalid(
                "GROUPING() takes 1 to 63 grouping expressions",
            ));
        }
        let mut mask = 0i64;
        for a in args {
            if !self.all.iter().any(|g| same(g, a)) {
                return Err(SqlError::invalid(format!(
                    "GROUPING() of {a}, which the GROUP BY does not group by"
                ))
                .at(a.span()));
            }
            let grouped = self.keys.iter().any(|g| same(g, a));
            mask = (mask << 1) | i64::from(!grouped);
        }
        Ok(mask)
    }
}

/// Whether two expressions are written alike (parentheses and case aside).
fn same(a: &ast::Expr, b: &ast::Expr) -> bool {
    strip(a)
        .to_string()
        .eq_ignore_ascii_case(&strip(b).to_string())
}

fn strip(mut e: &ast::Expr) -> &ast::Expr {
    while let ast::Expr::Nested(inner) = e {
        e = inner;
    }
    e
}

/// A GROUP BY's grouping sets, in the order their rows come, and every grouping
/// expression they hold.
pub(crate) struct GroupingSets {
    sets: Vec<Vec<ast::Expr>>,
    all: Vec<ast::Expr>,
}

/// The grouping sets of `group_by`, or `None` for a plain GROUP BY.
pub(crate) fn grouping_sets(group_by: &ast::GroupByExpr) -> Result<Option<GroupingSets>, SqlError> {
    let ast::GroupByExpr::Expressions(exprs, modifiers) = group_by else {
        return Ok(None);
    };
    let is_set = |e: &ast::Expr| {
        matches!(
            e,
            ast::Expr::Rollup(_) | ast::Expr::Cube(_) | ast::Expr::GroupingSets(_)
        )
    };
    if !modifiers.is_empty() {
        return Err(SqlError::unsupported(
            "GROUP BY modifiers (WITH ROLLUP, WITH TOTALS)",
        ));
    }
    if !exprs.iter().any(is_set) {
        return Ok(None);
    }
    // Each item of the GROUP BY list is a choice of sets; the block's sets are the cross
    // product of the choices.
    let mut choices: Vec<Vec<Vec<ast::Expr>>> = Vec::new();
    for e in exprs {
        choices.push(match e {
            ast::Expr::Rollup(lists) => (0..=lists.len()).map(|n| lists[..n].concat()).collect(),
            ast::Expr::Cube(lists) => cube(lists)?,
            ast::Expr::GroupingSets(lists) => lists.clone(),
            plain => vec![vec![plain.clone()]],
        });
    }
    let mut sets: Vec<Vec<ast::Expr>> = vec![Vec::new()];
    for choice in &choices {
        if sets.len().saturating_mul(choice.len()) > MAX_SETS {
            return Err(SqlError::unsupported(format!(
                "a GROUP BY of more than {MAX_SETS} grouping sets"
            )));
        }
        sets = sets
            .iter()
            .flat_map(|s| {
                choice.iter().map(move |c| {
                    let mut set = s.clone();
                    for e in c {
                        if !set.iter().any(|x| same(x, e)) {
                            set.push(e.clone());
                        }
                    }
                    set
                })
            })
            .collect();
    }
    let mut all: Vec<ast::Expr> = Vec::new();
    for e in sets.iter().flatten() {
        if !all.iter().any(|x| same(x, e)) {
            all.push(e.clone());
        }
    }
    Ok(Some(GroupingSets { sets, all }))
}

/// Every subset of `lists`, largest first (as DuckDB lists CUBE's sets).
fn cube(lists: &[Vec<ast::Expr>]) -> Result<Vec<Vec<ast::Expr>>, SqlError> {
    if lists.len() > 12 {
        return Err(SqlError::unsupported("CUBE of more than 12 expressions"));
    }
    let n = lists.len();
    Ok((0..1usize << n)
        .rev()
        .map(|mask| {
            (0..n)
                .filter(|i| mask & (1 << (n - 1 - i)) != 0)
                .flat_map(|i| lists[i].clone())
                .collect()
        })
        .collect())
}

impl Binder<'_> {
    /// A select block grouped by the grouping `sets`: one block per set, concatenated
    /// (made distinct again if the block says DISTINCT).
    pub(crate) fn grouping_sets_select(
        &self,
        s: &ast::Select,
        grouping: GroupingSets,
    ) -> Result<PlanBuilder, SqlError> {
        let mut out: Option<PlanBuilder> = None;
        for keys in grouping.sets {
            let branch = GroupingBranch {
                keys,
                all: grouping.all.clone(),
            };
            *self.next_grouping.borrow_mut() = Some(branch);
            let b = self.select(s, &[]);
            self.next_grouping.borrow_mut().take();
            let b = b?;
            out = Some(match out {
                None => b,
                Some(u) => u.union(b).map_err(|e| SqlError::from(e).at(s.span()))?,
            });
        }
        let out = out.ok_or_else(|| SqlError::invalid("internal: no grouping sets"))?;
        Ok(match s.distinct {
            Some(ast::Distinct::Distinct) => out.distinct(),
            _ => out,
        })
    }
}

#[cfg(test)]
mod tests {
    use sqlparser::parser::Parser;

    use super::grouping_sets;
    use crate::dialect::MorselDialect;

    fn sets(group_by: &str) -> Vec<String> {
        let sql = format!("SELECT 1 FROM t GROUP BY {group_by}");
        let stmt = Parser::parse_sql(&MorselDialect, &sql).expect("parses");
        let sqlparser::ast::Statement::Query(q) = &stmt[0] else {
            panic!("a query")
        };
        let sqlparser::ast::SetExpr::Select(s) = q.body.as_ref() else {
            panic!("a select")
        };
        let found = grouping_sets(&s.group_by).expect("valid").expect("sets");
        found
            .sets
            .iter()
            .map(|s| {
                let names: Vec<String> = s.iter().map(|e| e.to_string()).collect();
                format!("({})", names.join(","))
            })
            .collect()
    }

    #[test]
    fn expands_as_the_standard_says() {
        assert_eq!(sets("ROLLUP (a, b)"), ["()", "(a)", "(a,b)"]);
        assert_eq!(sets("CUBE (a, b)"), ["(a,b)", "(a)", "(b)", "()"]);
        assert_eq!(
            sets("GROUPING SETS ((a), (b, c), ())"),
            ["(a)", "(b,c)", "()"]
        );
        assert_eq!(sets("a, ROLLUP (b)"), ["(a)", "(a,b)"]);
    }
}
