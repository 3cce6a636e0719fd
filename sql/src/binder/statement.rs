//! Statements other than queries: DDL (CREATE TABLE / VIEW, DROP), DML (INSERT, COPY) and
//! catalog inspection (DESCRIBE, SHOW TABLES). The binder checks names and types and plans
//! any query involved; the host (the Session) applies the change to its catalog.

use std::sync::Arc;

use morsel_planner::{ColumnRef, Expr, LogicalPlan, PlanBuilder, PlanSchema};
use morsel_storage::csv::{CsvOptions, CsvWriteOptions};
use morsel_storage::{DataType, Field, Schema, SchemaRef};
use sqlparser::ast::{self, Spanned};

use super::types::sql_type;
use super::Binder;
use crate::error::SqlError;

/// The output form of EXPLAIN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExplainFormat {
    Text,
    Json,
    Graphviz,
}

/// What DROP removes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropKind {
    Table,
    View,
}

/// A bound statement, ready for the host to run.
#[derive(Debug)]
pub enum Statement {
    Query(LogicalPlan),
    /// `EXPLAIN [ANALYZE] [VERBOSE] [FORMAT ...] query`: the plan, or (ANALYZE) a run of the
    /// query with what each stage did.
    Explain {
        plan: LogicalPlan,
        verbose: bool,
        analyze: bool,
        format: ExplainFormat,
    },
    /// `DESCRIBE table` / `DESCRIBE query`: the columns and their types.
    Describe(PlanSchema),
    /// `SHOW TABLES`: the names of tables and views.
    ShowTables,
    /// `CREATE TABLE name (columns)`, empty, or `CREATE TABLE name AS query`.
    CreateTable {
        name: String,
        schema: SchemaRef,
        /// The rows of `CREATE TABLE ... AS`, already in the table's column types.
        rows: Option<LogicalPlan>,
        or_replace: bool,
        if_not_exists: bool,
    },
    /// `CREATE [OR REPLACE] VIEW name AS query`: stored as its text, bound when used.
    CreateView {
        name: String,
        query: Box<ast::Query>,
        /// Its columns as bound at creation: a view created over it is checked against
        /// them, not by expanding this one again (a chain of n views would bind n^2 levels).
        schema: PlanSchema,
        or_replace: bool,
    },
    /// `INSERT INTO` / `COPY table FROM`: rows (in the table's column order and types) to
    /// append to an in-memory table.
    Insert {
        table: String,
        rows: LogicalPlan,
    },
    /// `UPDATE` / `DELETE`: an in-memory table's new contents (in its column order and
    /// types), and the rows the statement changed (one column; the result counts them).
    Rewrite {
        table: String,
        rows: LogicalPlan,
        changed: LogicalPlan,
    },
    Drop {
        kind: DropKind,
        names: Vec<String>,
        if_exists: bool,
    },
    /// `SET disabled_optimizers = 'rule, rule'`: optimizer rules to switch off.
    SetDisabledRules(Vec<String>),
    /// `SET name = value` (`value` the constant's text) or `RESET name` (`None`) for a
    /// setting other than `disabled_optimizers`; the host checks the name and value.
    Set {
        name: String,
        value: Option<String>,
    },
    /// `COPY (query) TO 'file'` / `COPY table TO 'file'`.
    CopyTo {
        plan: LogicalPlan,
        path: String,
        options: CsvWriteOptions,
    },
}

pub(crate) fn object_name(n: &ast::ObjectName) -> Result<String, SqlError> {
    match n.0.as_slice() {
        [part] => part
            .as_ident()
            .map(|i| i.value.clone())
            .ok_or_else(|| SqlError::unsupported(format!("the name {n}"))),
        _ => Err(SqlError::unsupported(format!(
            "qualified names ({n}); schemas and databases"
        ))),
    }
}

impl Binder<'_> {
    /// Binds a statement that is not a query or EXPLAIN.
    pub(crate) fn statement(&self, stmt: &ast::Statement) -> Result<Statement, SqlError> {
        match stmt {
            ast::Statement::CreateTable(ct) => self.create_table(ct),
            ast::Statement::CreateView(cv) => {
                if cv.materialized || !cv.columns.is_empty() {
                    return Err(SqlError::unsupported(
                        "MATERIALIZED views and column lists on views",
                    ));
                }
                // Bind once now, so a view that cannot run is refused when created; the views
                // it reads stand in by their columns.
                let checking = self.checking_view.replace(true);
                let bound = self.query(&cv.query);
                self.checking_view.set(checking);
                Ok(Statement::CreateView {
                    name: object_name(&cv.name)?,
                    query: cv.query.clone(),
                    schema: bound?.schema().clone(),
                    or_replace: cv.or_replace,
                })
            }
            ast::Statement::Insert(ins) => self.insert(ins),
            ast::Statement::Update(u) => self.update(u),
            ast::Statement::Delete(d) => self.delete(d),
            ast::Statement::Drop {
                object_type,
                if_exists,
                names,
                ..
            } => Ok(Statement::Drop {
                kind: match object_type {
                    ast::ObjectType::Table => DropKind::Table,
                    ast::ObjectType::View => DropKind::View,
                    other => return Err(SqlError::unsupported(format!("DROP {other}"))),
                },
                names: names.iter().map(object_name).collect::<Result<_, _>>()?,
                if_exists: *if_exists,
            }),
            ast::Statement::Copy {
                source,
                to,
                target,
                options,
                legacy_options,
                ..
            } => {
                if !legacy_options.is_empty() {
                    return Err(SqlError::unsupported(
                        "COPY options outside parentheses; write (FORMAT csv, HEADER true)",
                    ));
                }
                let ast::CopyTarget::File { filename } = target else {
                    return Err(SqlError::unsupported(format!("COPY {target}")));
                };
                self.copy(source, *to, filename, options)
            }
            ast::Statement::ExplainTable { table_name, .. } => {
                let name = object_name(table_name)?;
                let plan = self.named_relation(&name)?;
                Ok(Statement::Describe(plan.schema().clone()))
            }
            ast::Statement::ShowTables { .. } => Ok(Statement::ShowTables),
            ast::Statement::Set(ast::Set::SingleAssignment {
                variable, values, ..
            }) if variable
                .to_string()
                .eq_ignore_ascii_case("disabled_optimizers") =>
            {
                let text = match values.as_slice() {
                    [ast::Expr::Value(v)] => match &v.value {
                        ast::Value::SingleQuotedString(s) => s.clone(),
                        other => other.to_string(),
                    },
                    _ => {
                        return Err(SqlError::invalid(
                            "SET disabled_optimizers takes one string: 'rule, rule'",
                        ))
                    }
                };
                Ok(Statement::SetDisabledRules(
                    text.split(',')
                        .map(|r| r.trim().to_string())
                        .filter(|r| !r.is_empty())
                        .collect(),
                ))
            }
            ast::Statement::Set(ast::Set::SingleAssignment {
                variable, values, ..
            }) => {
                let value = match values.as_slice() {
                    [ast::Expr::Value(v)] => match &v.value {
                        ast::Value::SingleQuotedString(s) => s.clone(),
                        other => other.to_string(),
                    },
                    [ast::Expr::Identifier(i)] => i.value.clone(),
                    _ => {
                        return Err(
                            SqlError::invalid(format!("SET {variable} takes one constant"))
                                .at(stmt.span()),
                        )
                    }
                };
                Ok(Statement::Set {
                    name: variable.to_string().to_ascii_lowercase(),
                    value: Some(value),
                })
            }
            ast::Statement::Reset(r) => match &r.reset {
                ast::Reset::ConfigurationParameter(name)
                    if name.to_string().eq_ignore_ascii_case("disabled_optimizers") =>
                {
                    Ok(Statement::SetDisabledRules(Vec::new()))
                }
                ast::Reset::ConfigurationParameter(name) => Ok(Statement::Set {
                    name: name.to_string().to_ascii_lowercase(),
                    value: None,
                }),
                _ => {
                    Err(SqlError::unsupported("RESET ALL or SESSION AUTHORIZATION").at(stmt.span()))
                }
            },
            other => Err(SqlError::unsupported(format!(
                "the {} statement",
                super::statement_kind(other)
            ))
            .at(other.span())),
        }
    }

    /// A table or view by name, as a plan.
    fn named_relation(&self, name: &str) -> Result<PlanBuilder, SqlError> {
        self.relation_by_name(name, None)?
            .ok_or_else(|| self.table_not_found(name))
    }

    fn create_table(&self, ct: &ast::CreateTable) -> Result<Statement, SqlError> {
        let name = object_name(&ct.name)?;
        if !ct.constraints.is_empty() {
            return Err(SqlError::unsupported(
                "table constraints (PRIMARY KEY, UNIQUE, FOREIGN KEY, CHECK)",
            )
            .at(ct.name.span()));
        }
        let mut fields = Vec::with_capacity(ct.columns.len());
        for c in &ct.columns {
            let mut nullable = true;
            for o in &c.options {
                match &o.option {
                    ast::ColumnOption::NotNull => nullable = false,
                    ast::ColumnOption::Null => nullable = true,
                    other => {
                        return Err(SqlError::unsupported(format!(
                            "the column option {other} (only NULL / NOT NULL)"
                        ))
                        .at(c.name.span))
                    }
                }
            }
            let ty = sql_type(&c.data_type).map_err(|e| e.at(c.name.span))?;
            if fields
                .iter()
                .any(|f: &Field| f.name.eq_ignore_ascii_case(&c.name.value))
            {
                return Err(
                    SqlError::invalid(format!("column {} is defined twice", c.name.value))
                        .at(c.name.span),
                );
            }
            fields.push(Field::new(c.name.value.clone(), ty, nullable));
        }
        let (schema, rows) = match &ct.query {
            None if fields.is_empty() => {
                return Err(SqlError::invalid("CREATE TABLE needs columns or AS query"))
            }
            None => (Arc::new(Schema::new(fields)), None),
            Some(q) => {
                let plan = self.query(q)?;
                let schema = if fields.is_empty() {
                    // The query's columns; NULL-typed ones (SELECT NULL) become INTEGER.
                    let out = plan.schema();
                    let mut seen: Vec<String> = Vec::new();
                    let mut fs = Vec::with_capacity(out.len());
                    for f in out.fields() {
                        if seen.iter().any(|s| s.eq_ignore_ascii_case(&f.name)) {
                            return Err(SqlError::invalid(format!(
                                "the query gives two columns named {}; alias one",
                                f.name
                            )));
                        }
                        seen.push(f.name.clone());
                        let ty = match f.data_type {
                            DataType::Null => DataType::Int32,
                            t => t,
                        };
                        fs.push(Field::new(f.name.clone(), ty, true));
                    }
                    Arc::new(Schema::new(fs))
                } else {
                    Arc::new(Schema::new(fields))
                };
                let rows = conform(plan, &schema, None)?;
                (schema, Some(rows))
            }
        };
        Ok(Statement::CreateTable {
            name,
            schema,
            rows,
            or_replace: ct.or_replace,
            if_not_exists: ct.if_not_exists,
        })
    }

    fn insert(&self, ins: &ast::Insert) -> Result<Statement, SqlError> {
        let ast::TableObject::TableName(table) = &ins.table else {
            return Err(SqlError::unsupported("INSERT INTO a table function"));
        };
        if ins.on.is_some() || ins.returning.is_some() || ins.or.is_some() || ins.overwrite {
            return Err(SqlError::unsupported(
                "INSERT with ON CONFLICT, RETURNING, OR REPLACE or OVERWRITE",
            ));
        }
        let name = object_name(table)?;
        let schema = self.table_schema(&name)?;
        let Some(source) = &ins.source else {
            return Err(SqlError::unsupported("INSERT without VALUES or a query"));
        };
        let plan = self.query(source)?;
        let columns = if ins.columns.is_empty() {
            None
        } else {
            Some(
                ins.columns
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<String>>(),
            )
        };
        let rows = conform(plan, &schema, columns.as_deref())?;
        Ok(Statement::Insert { table: name, rows })
    }

    /// The schema of an in-memory table INSERT or COPY FROM can append to.
    pub(crate) fn table_schema(&self, name: &str) -> Result<SchemaRef, SqlError> {
        match self.catalog.table(name) {
            Some(morsel_planner::TableSource::Memory(m)) => Ok(m.schema.clone()),
            Some(morsel_planner::TableSource::Csv(_)) => Err(SqlError::invalid(format!(
                "table {name} is a CSV file; INSERT and COPY FROM need a table made by CREATE TABLE"
            ))),
            None => Err(SqlError::invalid(format!("table {name} does not exist"))),
        }
    }

    fn copy(
        &self,
        source: &ast::CopySource,
        to: bool,
        path: &str,
        options: &[ast::CopyOption],
    ) -> Result<Statement, SqlError> {
        let mut header = None;
        let mut delimiter = b',';
        let mut quote = Some(b'"');
        let mut null = None;
        for o in options {
            match o {
                ast::CopyOption::Format(f) if f.value.eq_ignore_ascii_case("csv") => {}
                ast::CopyOption::Format(f) => {
                    return Err(SqlError::unsupported(format!("COPY FORMAT {f} (only csv)")))
                }
                ast::CopyOption::Header(h) => header = Some(*h),
                ast::CopyOption::Delimiter(d) if d.is_ascii() => delimiter = *d as u8,
                ast::CopyOption::Quote(q) if q.is_ascii() => quote = Some(*q as u8),
                ast::CopyOption::Null(s) => null = Some(s.clone()),
                other => return Err(SqlError::unsupported(format!("the COPY option {other}"))),
            }
        }
        if to {
            if quote != Some(b'"') || null.is_some() {
                return Err(SqlError::unsupported(
                    "QUOTE and NULL options of COPY ... TO",
                ));
            }
            let plan = match source {
                ast::CopySource::Query(q) => self.query(q)?,
                ast::CopySource::Table {
                    table_name,
                    columns,
                } => {
                    let b = self.named_relation(&object_name(table_name)?)?;
                    if columns.is_empty() {
                        b
                    } else {
                        let cols = columns
                            .iter()
                            .map(|c| Expr::Column(ColumnRef::new(c.value.clone())))
                            .collect();
                        b.project(cols)?
                    }
                }
            };
            return Ok(Statement::CopyTo {
                plan: plan.build(),
                path: path.to_string(),
                options: CsvWriteOptions {
                    delimiter,
                    // DuckDB writes a header unless told not to.
                    header: header.unwrap_or(true),
                },
            });
        }
        let ast::CopySource::Table {
            table_name,
            columns,
        } = source
        else {
            return Err(SqlError::invalid("COPY (query) FROM is not a statement"));
        };
        if !columns.is_empty() {
            return Err(SqlError::unsupported("a column list in COPY ... FROM"));
        }
        let name = object_name(table_name)?;
        let schema = self.table_schema(&name)?;
        let mut opts = CsvOptions::default()
            .with_header(header.unwrap_or(false))
            .with_delimiter(delimiter)
            .with_quote(quote)
            .with_schema(schema.clone());
        if let Some(n) = null {
            opts = opts.with_null_values(vec![n]);
        }
        let file = self.csv_file(path, opts)?;
        let rows = conform(PlanBuilder::scan(path, "copy", file), &schema, None)?;
        Ok(Statement::Insert { table: name, rows })
    }
}

/// Projects `plan`'s rows onto `schema`: by position, or by the named `columns` (others
/// NULL), each cast to the table's type.
pub(crate) fn conform(
    plan: PlanBuilder,
    schema: &Schema,
    columns: Option<&[String]>,
) -> Result<LogicalPlan, SqlError> {
    let out = plan.schema().clone();
    let targets: Vec<usize> = match columns {
        None => (0..schema.len()).collect(),
        Some(cols) => cols
            .iter()
            .map(|c| {
                schema
                    .fields
                    .iter()
                    .position(|f| f.name.eq_ignore_ascii_case(c))
                    .ok_or_else(|| SqlError::invalid(format!("the table has no column {c}")))
            })
            .collect::<Result<_, _>>()?,
    };
    for (k, t) in targets.iter().enumerate() {
        if targets[..k].contains(t) {
            return Err(SqlError::invalid(format!(
                "the column {} is named twice in the INSERT column list",
                schema.fields[*t].name
            )));
        }
    }
    if out.len() != targets.len() {
        return Err(SqlError::invalid(format!(
            "the table has {} column{} to fill but the rows have {}",
            targets.len(),
            if targets.len() == 1 { "" } else { "s" },
            out.len()
        )));
    }
    let exprs = schema
        .fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let value = match targets.iter().position(|&t| t == i) {
                Some(k) => Expr::Column(out.field(k).column_ref()),
                None => Expr::Literal(morsel_storage::ScalarValue::Null),
            };
            value.cast(f.data_type).alias(f.name.clone())
        })
        .collect();
    Ok(plan.project(exprs)?.build())
}
