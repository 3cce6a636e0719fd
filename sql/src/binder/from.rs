//! FROM: tables, CSV files (quoted paths and `read_csv(...)`), derived tables and joins.

use morsel_planner::{ColumnRef, Expr, JoinKind, PlanBuilder};
use morsel_storage::csv::CsvOptions;
use sqlparser::ast::{self, Spanned};

use super::expr::literal;
use super::Binder;
use crate::error::{SqlError, SqlErrorKind};

/// A type named in a string (`'VARCHAR'`), parsed as SQL.
fn type_by_name(name: &str) -> Result<morsel_storage::DataType, SqlError> {
    let sql = format!("SELECT CAST(NULL AS {name})");
    let parsed =
        crate::parse(&sql).map_err(|_| SqlError::invalid(format!("unknown type '{name}'")))?;
    if let Some(ast::Statement::Query(q)) = parsed.first() {
        if let ast::SetExpr::Select(sel) = q.body.as_ref() {
            if let Some(ast::SelectItem::UnnamedExpr(ast::Expr::Cast { data_type, .. })) =
                sel.projection.first()
            {
                return super::types::sql_type(data_type);
            }
        }
    }
    Err(SqlError::invalid(format!("unknown type '{name}'")))
}

/// The relation name DuckDB gives a file: its name without directory and extension.
fn file_alias(path: &str) -> String {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    name.split('.')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or(name)
        .to_string()
}

/// `AS t(a, b, ...)`: names the first columns `a, b, ...` (the rest keep theirs) under `t`.
pub(crate) fn rename_columns(
    b: PlanBuilder,
    alias: &ast::TableAlias,
) -> Result<PlanBuilder, SqlError> {
    let schema = b.schema().clone();
    if alias.columns.len() > schema.len() {
        return Err(SqlError::invalid(format!(
            "{} has {} columns but {} names were given",
            alias.name.value,
            schema.len(),
            alias.columns.len()
        )));
    }
    if alias.columns.is_empty() {
        return aliased(b, alias.name.value.clone());
    }
    let mut names: Vec<String> = b.schema().fields().iter().map(|f| f.name.clone()).collect();
    for (name, c) in names.iter_mut().zip(&alias.columns) {
        *name = c.name.value.clone();
    }
    let b = b.rename_by_position(&names)?;
    aliased(b, alias.name.value.clone())
}

/// `b` under the relation name `alias`, its columns first named apart where two share a
/// name (`k, k` becomes `k, k_1`, as DuckDB names them), so that each can be read.
pub(crate) fn aliased(b: PlanBuilder, alias: String) -> Result<PlanBuilder, SqlError> {
    let b = match b.names_unique() {
        true => b,
        false => {
            let names = b.unique_output_names();
            b.rename_by_position(&names)?
        }
    };
    Ok(b.alias(alias))
}

/// The subquery and alias of a `LATERAL (subquery) alias` FROM item.
pub(crate) fn lateral(t: &ast::TableFactor) -> Option<(&ast::Query, Option<&ast::TableAlias>)> {
    match t {
        ast::TableFactor::Derived {
            lateral: true,
            subquery,
            alias,
            ..
        } => Some((subquery, alias.as_ref())),
        _ => None,
    }
}

fn looks_like_file(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".csv")
        || lower.ends_with(".tsv")
        || lower.ends_with(".txt")
        || name.contains('/')
}

impl Binder<'_> {
    /// The FROM list; several items are cross-joined (WHERE equalities later become keys).
    pub(crate) fn from(&self, from: &[ast::TableWithJoins]) -> Result<PlanBuilder, SqlError> {
        let mut out: Option<PlanBuilder> = None;
        for twj in from {
            let mut b = match (out.take(), lateral(&twj.relation)) {
                // `FROM t, LATERAL (...)`: it reads the items before it.
                (Some(prev), Some((q, alias))) => self
                    .lateral_join(prev, q, alias, JoinKind::Inner, None)
                    .map_err(|e| e.at(twj.relation.span()))?,
                (prev, _) => {
                    let b = self.table_factor(&twj.relation)?;
                    match prev {
                        None => b,
                        Some(prev) => prev.join(b, JoinKind::Inner, Vec::new(), None)?,
                    }
                }
            };
            for j in &twj.joins {
                b = self.join_one(b, j)?;
            }
            out = Some(b);
        }
        match out {
            Some(b) => Ok(b),
            None => Ok(PlanBuilder::values(vec![vec![]])?),
        }
    }

    /// `b` joined with one JOIN clause's item.
    pub(crate) fn join_one(&self, b: PlanBuilder, j: &ast::Join) -> Result<PlanBuilder, SqlError> {
        match lateral(&j.relation) {
            Some((q, alias)) => self.join_lateral(b, q, alias, &j.join_operator),
            None => {
                let right = self.table_factor(&j.relation)?;
                self.join(b, right, &j.join_operator)
            }
        }
        .map_err(|e| e.at(j.span()))
    }

    /// "table not found", with the known names closest to `name`.
    pub(crate) fn table_not_found(&self, name: &str) -> SqlError {
        let mut candidates: Vec<(usize, String)> = self
            .catalog
            .table_names()
            .into_iter()
            .map(|n| {
                (
                    morsel_planner::schema::edit_distance(
                        &name.to_ascii_lowercase(),
                        &n.to_ascii_lowercase(),
                    ),
                    n,
                )
            })
            .filter(|(d, _)| *d <= 2)
            .collect();
        candidates.sort();
        SqlError::new(SqlErrorKind::TableNotFound {
            name: name.to_string(),
            candidates: candidates.into_iter().map(|(_, n)| n).collect(),
        })
    }

    /// A CTE, view or catalog table by name (CTEs shadow views, views shadow tables).
    pub(crate) fn relation_by_name(
        &self,
        text: &str,
        alias: Option<String>,
    ) -> Result<Option<PlanBuilder>, SqlError> {
        let alias = alias.unwrap_or_else(|| text.to_string());
        let cte = self
            .ctes
            .borrow()
            .iter()
            .rev()
            .find(|c| c.name.eq_ignore_ascii_case(text))
            .map(|c| (c.query.clone(), c.alias.clone(), c.visible));
        if let Some((query, names, visible)) = cte {
            // Bound with only the CTEs before it in scope.
            let later = self.ctes.borrow_mut().split_off(visible);
            let bound = self.query(&query);
            self.ctes.borrow_mut().extend(later);
            let bound = match names.columns.is_empty() {
                true => bound?,
                false => rename_columns(bound?, &names).map_err(|e| e.at(names.name.span))?,
            };
            return Ok(Some(aliased(bound, alias)?));
        }
        if self.checking_view.get() {
            if let Some(schema) = self.catalog.view_schema(text) {
                let empty = morsel_planner::LogicalPlan::Values {
                    rows: Vec::new(),
                    schema,
                };
                return Ok(Some(PlanBuilder::from_plan(empty).alias(alias)));
            }
        }
        if let Some(query) = self.catalog.view(text) {
            let key = text.to_ascii_lowercase();
            if self.views.borrow().contains(&key) {
                return Err(SqlError::invalid(format!("view {text} refers to itself")));
            }
            self.views.borrow_mut().push(key);
            // A view sees only the catalog, not the CTEs around its use.
            let ctes = self.ctes.take();
            let bound = self.query(&query);
            *self.ctes.borrow_mut() = ctes;
            self.views.borrow_mut().pop();
            return Ok(Some(aliased(bound?, alias)?));
        }
        Ok(self
            .catalog
            .table(text)
            .map(|source| PlanBuilder::scan(text, alias, source)))
    }

    pub(crate) fn table_factor(&self, t: &ast::TableFactor) -> Result<PlanBuilder, SqlError> {
        self.table_factor_inner(t).map_err(|e| e.at(t.span()))
    }

    fn table_factor_inner(&self, t: &ast::TableFactor) -> Result<PlanBuilder, SqlError> {
        match t {
            ast::TableFactor::Table {
                name, alias, args, ..
            } => {
                if alias.as_ref().is_some_and(|a| !a.columns.is_empty()) {
                    // `t AS x(a, b)`: bind the table, then rename its columns.
                    let mut plain = t.clone();
                    if let ast::TableFactor::Table { alias: Some(a), .. } = &mut plain {
                        a.columns.clear();
                    }
                    let b = self.table_factor_inner(&plain)?;
                    return rename_columns(b, alias.as_ref().expect("checked"));
                }
                let alias = alias.as_ref().map(|a| a.name.value.clone());
                let parts: Vec<&ast::Ident> = name.0.iter().filter_map(|p| p.as_ident()).collect();
                let text = parts
                    .iter()
                    .map(|i| i.value.as_str())
                    .collect::<Vec<_>>()
                    .join(".");
                if let Some(args) = args {
                    return self.table_function(&text, &args.args, alias);
                }
                let quoted_path = parts.len() == 1 && parts[0].quote_style == Some('\'');
                if !quoted_path {
                    if let Some(b) = self.relation_by_name(&text, alias.clone())? {
                        return Ok(b);
                    }
                }
                if quoted_path || looks_like_file(&text) {
                    let source = self.csv_file(&text, CsvOptions::default())?;
                    let alias = alias.unwrap_or_else(|| file_alias(&text));
                    return Ok(PlanBuilder::scan(text, alias, source));
                }
                Err(self.table_not_found(&text))
            }
            // A derived table (LATERAL with nothing before it to read is one too).
            ast::TableFactor::Derived {
                subquery, alias, ..
            } => {
                let b = self.query(subquery)?;
                match alias {
                    Some(a) => rename_columns(b, a),
                    None => aliased(b, "unnamed_subquery".into()),
                }
            }
            ast::TableFactor::NestedJoin {
                table_with_joins,
                alias: None,
            } => self.from(std::slice::from_ref(table_with_joins)),
            other => Err(SqlError::unsupported(format!("the FROM item {other}"))),
        }
    }

    /// `left <op> LATERAL (q) alias`.
    fn join_lateral(
        &self,
        left: PlanBuilder,
        q: &ast::Query,
        alias: Option<&ast::TableAlias>,
        op: &ast::JoinOperator,
    ) -> Result<PlanBuilder, SqlError> {
        use ast::JoinOperator as J;
        let (kind, constraint) = match op {
            J::Join(c) | J::Inner(c) => (JoinKind::Inner, Some(c)),
            J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, Some(c)),
            J::CrossJoin(_) => (JoinKind::Inner, None),
            other => {
                let name = format!("{other:?}");
                return Err(SqlError::invalid(format!(
                    "a LATERAL subquery can only be the right side of an inner or LEFT join, \
                     not of a {} join",
                    name.split('(').next().unwrap_or("different")
                ))
                .at(q.span()));
            }
        };
        let on = match constraint {
            None | Some(ast::JoinConstraint::None) => None,
            Some(ast::JoinConstraint::On(e)) => Some(e),
            Some(_) => {
                return Err(SqlError::unsupported(
                    "a LATERAL join with USING or NATURAL (write its condition in ON)",
                ))
            }
        };
        self.lateral_join(left, q, alias, kind, on)
    }

    fn join(
        &self,
        left: PlanBuilder,
        right: PlanBuilder,
        op: &ast::JoinOperator,
    ) -> Result<PlanBuilder, SqlError> {
        use ast::JoinOperator as J;
        let (kind, constraint) = match op {
            J::Join(c) | J::Inner(c) => (JoinKind::Inner, c),
            J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, c),
            J::Right(c) | J::RightOuter(c) => (JoinKind::Right, c),
            J::FullOuter(c) => (JoinKind::Full, c),
            J::Semi(c) | J::LeftSemi(c) => (JoinKind::Semi, c),
            J::Anti(c) | J::LeftAnti(c) => (JoinKind::Anti { null_aware: false }, c),
            J::CrossJoin(_) => return Ok(left.join(right, JoinKind::Inner, Vec::new(), None)?),
            other => {
                return Err(SqlError::unsupported(
                    format!("{other:?} joins")
                        .split('(')
                        .next()
                        .unwrap_or("this join")
                        .to_string(),
                ))
            }
        };
        match constraint {
            ast::JoinConstraint::On(e) => {
                let both = left.schema().join(right.schema(), false);
                let mark = self.pending_mark();
                let cond = self.expr(e, &both)?;
                if self.pending_mark() > mark {
                    return self.join_on_subqueries(left, right, kind, cond, mark);
                }
                Ok(left.join_on(right, kind, Some(cond))?)
            }
            ast::JoinConstraint::Using(names) => {
                let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
                self.join_using(left, right, kind, names)
            }
            ast::JoinConstraint::Natural => {
                // USING every column name the two sides share (compared without case), in
                // the left side's order; the columns a USING join hid are not candidates.
                let visible = |f: &&morsel_planner::PlanField| !f.name.starts_with("__");
                let mut names: Vec<String> = Vec::new();
                for f in left.schema().fields().iter().filter(visible) {
                    let shared = right
                        .schema()
                        .fields()
                        .iter()
                        .filter(visible)
                        .any(|g| g.name.eq_ignore_ascii_case(&f.name));
                    if shared && !names.iter().any(|n| n.eq_ignore_ascii_case(&f.name)) {
                        names.push(f.name.clone());
                    }
                }
                if names.is_empty() {
                    return Err(SqlError::invalid(
                        "a NATURAL join's sides share no column name; use CROSS JOIN for a \
                         cross product",
                    ));
                }
                self.join_using(left, right, kind, names)
            }
            ast::JoinConstraint::None => Ok(left.join(right, kind, Vec::new(), None)?),
            ast::JoinConstraint::UsingAlias(..) => {
                Err(SqlError::unsupported("USING (...) AS alias"))
            }
        }
    }

    /// `left JOIN right USING (names)` of `kind`: one copy of each join column in the
    /// output.
    fn join_using(
        &self,
        left: PlanBuilder,
        right: PlanBuilder,
        kind: JoinKind,
        names: Vec<String>,
    ) -> Result<PlanBuilder, SqlError> {
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let right_schema = right.schema().clone();
        let joined = left.join_using(right, kind, &refs)?;
        if !kind.outputs_right() {
            return Ok(joined);
        }
        // USING keeps one copy of each join column: the left one, or for right and
        // full joins the first non-NULL of the two.
        let out = joined.schema().clone();
        let first_right = out.len() - right_schema.len();
        let is_key = |name: &str| names.iter().any(|n| n.eq_ignore_ascii_case(name));
        let mut keep = Vec::with_capacity(first_right);
        for (i, f) in out.fields().iter().enumerate() {
            let c = Expr::Column(f.column_ref());
            if i >= first_right {
                // The right copy stays for `t2.a`, under an internal name (so `a`
                // alone means the join's copy), out of `*`.
                if is_key(&f.name) {
                    keep.push(self.hidden_using_copy(f));
                } else {
                    keep.push(c);
                }
            } else if is_key(&f.name) && matches!(kind, JoinKind::Right | JoinKind::Full) {
                let r = (first_right..out.len())
                    .find(|&j| out.field(j).name.eq_ignore_ascii_case(&f.name))
                    .map(|j| Expr::Column(out.field(j).column_ref()));
                keep.push(match r {
                    Some(r) => Expr::Function {
                        func: morsel_planner::ScalarFunc::Coalesce,
                        args: vec![c.clone(), r],
                    }
                    .alias(f.name.clone()),
                    None => c.clone(),
                });
                // The left copy stays too, for `t1.a` (NULL where only the right matched).
                keep.push(self.hidden_using_copy(f));
            } else {
                keep.push(c);
            }
        }
        Ok(joined.project(keep)?)
    }

    /// A USING join's key column `f` kept under an internal name, so that its qualified
    /// name (`t2.a`) still reads it while `a` alone means the join's copy.
    fn hidden_using_copy(&self, f: &morsel_planner::PlanField) -> Expr {
        let mut using = self.using_columns.borrow_mut();
        let hidden = ColumnRef::new(format!("__using{}_{}", using.len(), f.name));
        using.push((f.column_ref(), hidden.clone()));
        Expr::Column(f.column_ref()).alias(hidden.name)
    }

    /// `read_csv('path', header = true, delim = ';', ...)` and `read_csv_auto(...)`.
    /// `explain_analyze('SELECT ...')`: the query's profile, one row per pipeline stage.
    fn profile_function(
        &self,
        args: &[ast::FunctionArg],
        alias: Option<String>,
    ) -> Result<PlanBuilder, SqlError> {
        let sql = match args {
            [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Value(v)))] => {
                match &v.value {
                    ast::Value::SingleQuotedString(s) => s.clone(),
                    _ => {
                        return Err(SqlError::invalid(
                            "explain_analyze() takes the query as one string literal".to_string(),
                        )
                        .at(v.span))
                    }
                }
            }
            _ => {
                return Err(SqlError::invalid(
                    "explain_analyze() takes the query as one string literal".to_string(),
                ))
            }
        };
        let source = self.catalog.query_profile(&sql)?;
        let alias = alias.unwrap_or_else(|| "explain_analyze".to_string());
        Ok(PlanBuilder::scan("explain_analyze", alias, source))
    }

    fn table_function(
        &self,
        name: &str,
        args: &[ast::FunctionArg],
        alias: Option<String>,
    ) -> Result<PlanBuilder, SqlError> {
        let fname = name.to_ascii_lowercase();
        if fname == "explain_analyze" {
            return self.profile_function(args, alias);
        }
        if fname == "range" || fname == "generate_series" {
            return self.range_function(&fname, args, alias);
        }
        if fname != "read_csv" && fname != "read_csv_auto" {
            let known = ["read_csv", "explain_analyze", "range", "generate_series"];
            let mut candidates: Vec<(usize, &str)> = known
                .iter()
                .map(|k| (morsel_planner::schema::edit_distance(&fname, k), *k))
                .filter(|(d, _)| *d <= 3)
                .collect();
            candidates.sort();
            return Err(SqlError::new(SqlErrorKind::UnknownFunction {
                name: fname,
                candidates: candidates.into_iter().map(|(_, k)| k.to_string()).collect(),
            }));
        }
        let mut path = None;
        let mut opts = CsvOptions::default();
        for a in args {
            let (key, value) = match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => (None, e),
                ast::FunctionArg::Named {
                    name,
                    arg: ast::FunctionArgExpr::Expr(e),
                    ..
                } => (Some(name.value.to_ascii_lowercase()), e),
                ast::FunctionArg::ExprNamed {
                    name: ast::Expr::Identifier(i),
                    arg: ast::FunctionArgExpr::Expr(e),
                    ..
                } => (Some(i.value.to_ascii_lowercase()), e),
                other => {
                    return Err(
                        SqlError::unsupported(format!("the argument {other}")).at(other.span())
                    )
                }
            };
            // `types = {'price': 'VARCHAR', ...}` overrides inferred column types.
            if let (Some("types" | "dtypes"), ast::Expr::Dictionary(fields)) =
                (key.as_deref(), value)
            {
                for f in fields {
                    let ty = match f.value.as_ref() {
                        ast::Expr::Value(v) => match &v.value {
                            ast::Value::SingleQuotedString(t) => {
                                type_by_name(t).map_err(|e| e.at(f.value.span()))?
                            }
                            other => {
                                return Err(SqlError::invalid(format!(
                                    "expected a type name, got {other}"
                                ))
                                .at(f.value.span()))
                            }
                        },
                        other => {
                            return Err(SqlError::invalid(format!(
                                "expected a type name, got {other}"
                            ))
                            .at(other.span()))
                        }
                    };
                    opts.column_types.push((f.key.value.clone(), ty));
                }
                continue;
            }
            let v = match value {
                ast::Expr::Value(v) => literal(&v.value).map_err(|e| e.at(value.span()))?,
                other => {
                    return Err(SqlError::invalid(format!(
                        "{name} options must be constants, got {other}"
                    ))
                    .at(other.span()))
                }
            };
            let text = || v.to_string();
            let truth = || match &v {
                morsel_storage::ScalarValue::Boolean(b) => Ok(*b),
                other => Err(
                    SqlError::invalid(format!("expected true or false, got {other}"))
                        .at(value.span()),
                ),
            };
            let byte = |what: &str| -> Result<Option<u8>, SqlError> {
                let t = text();
                match t.len() {
                    0 => Ok(None),
                    1 => Ok(Some(t.as_bytes()[0])),
                    _ => Err(
                        SqlError::invalid(format!("{what} must be one character, got '{t}'"))
                            .at(value.span()),
                    ),
                }
            };
            let count = || -> Result<usize, SqlError> {
                text().parse().map_err(|_| {
                    SqlError::invalid(format!("expected a count, got {v}")).at(value.span())
                })
            };
            match key.as_deref() {
                None if path.is_none() => path = Some(text()),
                None => {
                    return Err(SqlError::invalid(format!("{name} takes one path")).at(value.span()))
                }
                Some("header") => opts.has_header = truth()?,
                Some("delim" | "sep" | "delimiter") => {
                    opts.delimiter = byte("delim")?.ok_or_else(|| {
                        SqlError::invalid("delim cannot be empty").at(value.span())
                    })?
                }
                Some("quote") => opts.quote = byte("quote")?,
                Some("nullstr" | "null") => opts.null_values = vec![text()],
                Some("comment") => opts.comment = Some(text()).filter(|c| !c.is_empty()),
                Some("skip") => opts.skip_rows = count()?,
                Some("n_rows" | "max_rows") => opts.n_rows = Some(count()?),
                Some("ignore_errors") => opts.ignore_errors = truth()?,
                Some("null_padding") => opts.null_padding = truth()?,
                Some("allow_quoted_nulls") => opts.allow_quoted_nulls = truth()?,
                Some("truncate_extra_fields") => opts.truncate_extra_fields = truth()?,
                Some("sample_size") => opts.infer_rows = count()?,
                Some(other) => {
                    return Err(
                        SqlError::unsupported(format!("the read_csv option {other}"))
                            .at(value.span()),
                    )
                }
            }
        }
        let path = path.ok_or_else(|| SqlError::invalid("read_csv needs a file path"))?;
        let source = self.csv_file(&path, opts)?;
        let alias = alias.unwrap_or_else(|| file_alias(&path));
        Ok(PlanBuilder::scan(path, alias, source))
    }
}
