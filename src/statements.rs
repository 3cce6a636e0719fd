//! Running statements that change or describe the catalog: CREATE TABLE / VIEW, INSERT,
//! COPY, DROP, DESCRIBE and SHOW TABLES. In-memory tables are replaced copy-on-write, so a
//! query already running keeps the table it started with.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::Arc;

use morsel_planner::{MemTable, PlanSchema, TableSource};
use morsel_sql::{DropKind, Statement};
use morsel_storage::csv::write_csv;
use morsel_storage::{
    Batch, Column, ColumnBuilder, DataType, Field, ScalarValue, Schema, SchemaRef,
};

use crate::error::{Error, Result};
use crate::lazy::QueryResult;
use crate::session::{Object, Session};

/// A result of one BIGINT column `Count` (rows inserted or written), as DuckDB reports.
fn count_result(n: usize) -> Result<QueryResult> {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "Count",
        DataType::Int64,
        false,
    )]));
    let col = Column::from_scalar(&ScalarValue::Int64(n as i64), DataType::Int64, 1)?;
    Ok(QueryResult::new(
        schema.clone(),
        vec![Batch::try_new(schema, vec![col], 1)?],
    ))
}

/// A result with no columns and no rows (DDL).
fn empty_result() -> QueryResult {
    QueryResult::new(Arc::new(Schema::default()), Vec::new())
}

/// A result of string columns, one row per inner vector.
fn text_table(names: &[&str], rows: Vec<Vec<Option<String>>>) -> Result<QueryResult> {
    let schema = Arc::new(Schema::new(
        names
            .iter()
            .map(|n| Field::new(*n, DataType::Utf8, true))
            .collect(),
    ));
    let mut builders: Vec<ColumnBuilder> = names
        .iter()
        .map(|_| ColumnBuilder::with_capacity(DataType::Utf8, rows.len()))
        .collect();
    for row in &rows {
        for (b, v) in builders.iter_mut().zip(row) {
            b.push_scalar(&v.clone().map_or(ScalarValue::Null, ScalarValue::Utf8))?;
        }
    }
    let cols: Vec<Column> = builders.into_iter().map(ColumnBuilder::finish).collect();
    Ok(QueryResult::new(
        schema.clone(),
        vec![Batch::try_new(schema, cols, rows.len())?],
    ))
}

fn describe(schema: &PlanSchema) -> Result<QueryResult> {
    let rows = schema
        .fields()
        .iter()
        .map(|f| {
            vec![
                Some(f.name.clone()),
                Some(f.data_type.sql_name().to_string()),
                Some(if f.nullable { "YES" } else { "NO" }.to_string()),
                None,
                None,
                None,
            ]
        })
        .collect();
    text_table(
        &[
            "column_name",
            "column_type",
            "null",
            "key",
            "default",
            "extra",
        ],
        rows,
    )
}

impl Session {
    /// Runs a bound statement other than a query or EXPLAIN.
    pub(crate) fn run_statement(&self, stmt: Statement) -> Result<QueryResult> {
        match stmt {
            Statement::Describe(schema) => describe(&schema),
            Statement::ShowTables => text_table(
                &["name"],
                self.table_names()
                    .into_iter()
                    .map(|n| vec![Some(n)])
                    .collect(),
            ),
            Statement::CreateTable {
                name,
                schema,
                rows,
                or_replace,
                if_not_exists,
            } => {
                if self.entry(&name).is_some() {
                    if if_not_exists {
                        return Ok(empty_result());
                    }
                    if !or_replace {
                        return Err(Error::Invalid(format!(
                            "table or view {name} already exists (use CREATE OR REPLACE)"
                        )));
                    }
                }
                let batches = match rows {
                    Some(plan) => self.rows_for(&name, &schema, plan)?,
                    None => Vec::new(),
                };
                self.put(
                    &name,
                    Object::Table(TableSource::Memory(Arc::new(MemTable::new(
                        schema, batches,
                    )))),
                );
                Ok(empty_result())
            }
            Statement::CreateView {
                name,
                query,
                schema,
                or_replace,
            } => {
                match self.entry(&name) {
                    Some(Object::Table(_)) => {
                        return Err(Error::Invalid(format!(
                            "{name} is a table; drop it before creating a view of that name"
                        )))
                    }
                    Some(Object::View(..)) if !or_replace => {
                        return Err(Error::Invalid(format!(
                            "view {name} already exists (use CREATE OR REPLACE VIEW)"
                        )))
                    }
                    _ => {}
                }
                self.put(&name, Object::View(query, schema));
                Ok(empty_result())
            }
            Statement::Insert { table, rows } => {
                let Some(Object::Table(TableSource::Memory(current))) = self.entry(&table) else {
                    return Err(Error::Invalid(format!(
                        "table {table} is not an in-memory table"
                    )));
                };
                let added = self.rows_for(&table, &current.schema, rows)?;
                let n = added.iter().map(Batch::num_rows).sum();
                let mut batches = current.batches.clone();
                batches.extend(added);
                self.replace_rows(&table, &current, batches);
                count_result(n)
            }
            Statement::Rewrite {
                table,
                rows,
                changed,
            } => {
                let Some(Object::Table(TableSource::Memory(current))) = self.entry(&table) else {
                    return Err(Error::Invalid(format!(
                        "table {table} is not an in-memory table"
                    )));
                };
                // Both read the table as it was bound; the new contents replace it whole.
                let n = self.run_plan(changed)?.num_rows();
                let batches = self.rows_for(&table, &current.schema, rows)?;
                self.replace_rows(&table, &current, batches);
                count_result(n)
            }
            Statement::Drop {
                kind,
                names,
                if_exists,
            } => {
                for name in names {
                    match (self.entry(&name), kind) {
                        (Some(Object::Table(_)), DropKind::Table)
                        | (Some(Object::View(..)), DropKind::View) => self.remove(&name),
                        (None, _) if if_exists => {}
                        (None, _) => {
                            return Err(Error::Invalid(format!(
                                "{} {name} does not exist",
                                if kind == DropKind::Table {
                                    "table"
                                } else {
                                    "view"
                                }
                            )))
                        }
                        (Some(_), DropKind::Table) => {
                            return Err(Error::Invalid(format!("{name} is a view; use DROP VIEW")))
                        }
                        (Some(_), DropKind::View) => {
                            return Err(Error::Invalid(format!(
                                "{name} is a table; use DROP TABLE"
                            )))
                        }
                    }
                }
                Ok(empty_result())
            }
            Statement::CopyTo {
                plan,
                path,
                options,
            } => {
                let result = self.run_plan(plan)?;
                let file = File::create(&path)
                    .map_err(|e| Error::Invalid(format!("cannot write {path}: {e}")))?;
                let mut w = BufWriter::new(file);
                write_csv(&mut w, result.schema(), result.batches(), &options)
                    .and_then(|()| w.flush())
                    .map_err(|e| Error::Invalid(format!("cannot write {path}: {e}")))?;
                count_result(result.num_rows())
            }
            Statement::Set { name, value } => {
                self.apply_setting(&name, value.as_deref())?;
                Ok(empty_result())
            }
            Statement::SetDisabledRules(names) => {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                self.set_disabled_rules(&names)?;
                Ok(empty_result())
            }
            Statement::Query(plan) => self.run_plan(plan),
            Statement::Explain { .. } => {
                Err(Error::Invalid("EXPLAIN runs through execute()".into()))
            }
        }
    }

    /// Makes `batches` the rows of the in-memory table `name` (whose contents were
    /// `current`): a new table value, so queries running over the old one keep it.
    fn replace_rows(&self, name: &str, current: &MemTable, batches: Vec<Batch>) {
        let table = MemTable::new(current.schema.clone(), batches);
        self.put(name, Object::Table(TableSource::Memory(Arc::new(table))));
    }

    /// Runs `plan` (rows already cast to the table's types) and checks NOT NULL columns.
    fn rows_for(
        &self,
        table: &str,
        schema: &SchemaRef,
        plan: morsel_planner::LogicalPlan,
    ) -> Result<Vec<Batch>> {
        let result = self.run_plan(plan)?;
        let mut out = Vec::with_capacity(result.batches().len());
        for b in result.batches() {
            for (f, c) in schema.fields.iter().zip(b.columns()) {
                if !f.nullable && c.null_count() > 0 {
                    return Err(Error::Invalid(format!(
                        "NOT NULL constraint failed: {table}.{}",
                        f.name
                    )));
                }
            }
            out.push(Batch::try_new(
                schema.clone(),
                b.columns().to_vec(),
                b.num_rows(),
            )?);
        }
        Ok(out)
    }
}
