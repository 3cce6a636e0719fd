//! [`Session`]: the catalog of tables, configuration, and the entry points for SQL and lazy
//! queries. Cloning a session shares its catalog.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use morsel_executor::ExecContext;
use morsel_planner::{CsvFiles, MemTable, PlanBuilder, TableSource};
use morsel_sql::{Catalog, SqlError, Statement};
use morsel_storage::csv::{glob, CsvInput, CsvOptions, CsvReader};
use morsel_storage::{Batch, SchemaRef};

use crate::error::{Error, Result};
use crate::guard;
use crate::lazy::{LazyFrame, QueryResult};

/// A catalog entry: a table (a CSV file or in-memory batches) or a view.
pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) object: Object,
}

#[derive(Clone)]
pub(crate) enum Object {
    Table(TableSource),
    /// A view's query, bound each time it is used (so it sees tables as they are then).
    View(Box<morsel_sql::ast::Query>, morsel_planner::PlanSchema),
}

struct State {
    /// Tables and views by lower-cased name.
    tables: RwLock<BTreeMap<String, Entry>>,
    /// Worker threads per query (`SET threads = n`).
    threads: AtomicUsize,
    /// Optimizer rules switched off (by name).
    disabled_rules: RwLock<Vec<String>>,
}

#[derive(Clone)]
pub struct Session {
    state: Arc<State>,
}

impl Default for Session {
    fn default() -> Self {
        Self::new()
    }
}

impl Session {
    /// A session running queries on `MORSEL_THREADS` workers (default: all cores).
    pub fn new() -> Self {
        Self::with_threads(morsel_executor::ExecContext::default().threads)
    }

    /// A session running each query on `threads` workers of the shared pool.
    pub fn with_threads(threads: usize) -> Self {
        Self {
            state: Arc::new(State {
                tables: RwLock::default(),
                threads: AtomicUsize::new(threads.max(1)),
                disabled_rules: RwLock::default(),
            }),
        }
    }

    pub fn threads(&self) -> usize {
        self.state.threads.load(Ordering::Relaxed)
    }

    /// Runs this session's later queries on `threads` workers (`SET threads = n`); results
    /// are the same for any count.
    pub fn set_threads(&self, threads: usize) -> Result<()> {
        if threads == 0 {
            return Err(Error::Invalid("threads must be at least 1".into()));
        }
        self.state.threads.store(threads, Ordering::Relaxed);
        Ok(())
    }

    /// `SET name = value`, or `RESET name` (`value` None): `threads` (also
    /// `worker_threads`; RESET: `MORSEL_THREADS` or all cores).
    pub(crate) fn apply_setting(&self, name: &str, value: Option<&str>) -> Result<()> {
        match name {
            "threads" | "worker_threads" => {
                let n = match value {
                    None => ExecContext::default().threads,
                    Some(v) => v.trim().parse::<usize>().map_err(|_| {
                        Error::Invalid(format!("SET threads takes a positive integer, got {v}"))
                    })?,
                };
                self.set_threads(n)
            }
            other => Err(Error::Invalid(format!(
                "unknown setting {other}; settings: threads, disabled_optimizers"
            ))),
        }
    }

    /// Switches optimizer rules off by name (`simplify_expressions`, `push_down_filter`,
    /// `reorder_joins`, `push_down_projection`, and the executor's `fuse_expressions`) for
    /// this session's queries; an empty list turns all back on.
    /// Results never change; plans (and speed) do. Also `SET disabled_optimizers = '...'`.
    pub fn set_disabled_rules(&self, names: &[&str]) -> Result<()> {
        let names: Vec<String> = names
            .iter()
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .collect();
        morsel_planner::Optimizer::without(&names)?;
        *guard::write(&self.state.disabled_rules) = names;
        Ok(())
    }

    /// The optimizer with this session's rules.
    pub(crate) fn optimizer(&self) -> Result<morsel_planner::Optimizer> {
        let disabled = guard::read(&self.state.disabled_rules).clone();
        Ok(morsel_planner::Optimizer::without(&disabled)?)
    }

    pub(crate) fn exec_context(&self) -> ExecContext {
        let mut ctx = ExecContext::new(self.threads());
        ctx.fusion = !guard::read(&self.state.disabled_rules)
            .iter()
            .any(|r| r.eq_ignore_ascii_case("fuse_expressions"));
        ctx
    }

    /// Opens a CSV file, or every file matching a glob pattern (`data/*.csv`) as one table,
    /// for querying. Every file a query reads is opened here.
    pub fn open_csv(&self, path: &str, options: CsvOptions) -> Result<TableSource> {
        if !glob::is_pattern(path) {
            let reader = CsvReader::open(CsvInput::file(path), options)?;
            return Ok(TableSource::Csv(Arc::new(CsvFiles::new(vec![reader])?)));
        }
        let files = glob::expand(path)
            .map_err(|e| Error::Invalid(format!("cannot list files for {path}: {e}")))?;
        let Some((first, rest)) = files.split_first() else {
            return Err(Error::Invalid(format!("no files match {path}")));
        };
        let name = |p: &std::path::Path| p.to_string_lossy().into_owned();
        let head = CsvReader::open(CsvInput::file(name(first)), options.clone())?;
        // The first file decides the schema; the others are read with it.
        let same = options.with_schema(head.schema().clone());
        let mut readers = vec![head];
        for f in rest {
            readers.push(CsvReader::open(CsvInput::file(name(f)), same.clone())?);
        }
        Ok(TableSource::Csv(Arc::new(CsvFiles::new(readers)?)))
    }

    /// Registers a CSV file under `name`.
    pub fn register_csv(&self, name: &str, path: &str, options: CsvOptions) -> Result<()> {
        let source = self.open_csv(path, options)?;
        self.register(name, source);
        Ok(())
    }

    /// Registers in-memory batches under `name`.
    pub fn register_batches(
        &self,
        name: &str,
        schema: SchemaRef,
        batches: Vec<Batch>,
    ) -> Result<()> {
        for b in &batches {
            let types: Vec<_> = b.schema().fields.iter().map(|f| f.data_type).collect();
            let want: Vec<_> = schema.fields.iter().map(|f| f.data_type).collect();
            if types != want {
                return Err(Error::Invalid(format!(
                    "a batch for table {name} does not match its schema ({schema})"
                )));
            }
        }
        self.register(
            name,
            TableSource::Memory(Arc::new(MemTable::new(schema, batches))),
        );
        Ok(())
    }

    fn register(&self, name: &str, source: TableSource) {
        self.put(name, Object::Table(source));
    }

    /// Adds or replaces the catalog entry `name`.
    pub(crate) fn put(&self, name: &str, object: Object) {
        let mut tables = guard::write(&self.state.tables);
        tables.insert(
            name.to_ascii_lowercase(),
            Entry {
                name: name.to_string(),
                object,
            },
        );
    }

    /// The catalog entry `name`, if any.
    pub(crate) fn entry(&self, name: &str) -> Option<Object> {
        let tables = guard::read(&self.state.tables);
        tables
            .get(&name.to_ascii_lowercase())
            .map(|e| e.object.clone())
    }

    /// Removes the catalog entry `name`.
    pub(crate) fn remove(&self, name: &str) {
        let mut tables = guard::write(&self.state.tables);
        tables.remove(&name.to_ascii_lowercase());
    }

    /// The names of every table and view, sorted.
    pub fn table_names(&self) -> Vec<String> {
        let tables = guard::read(&self.state.tables);
        let mut names: Vec<String> = tables.values().map(|e| e.name.clone()).collect();
        names.sort();
        names
    }

    /// A lazy query over a CSV file.
    pub fn read_csv(&self, path: &str, options: CsvOptions) -> Result<LazyFrame> {
        let source = self.open_csv(path, options)?;
        let alias = path
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or(path)
            .split('.')
            .next()
            .unwrap_or(path)
            .to_string();
        Ok(LazyFrame::new(
            self.clone(),
            PlanBuilder::scan(path, alias, source),
        ))
    }

    /// A lazy query over a registered table.
    pub fn table(&self, name: &str) -> Result<LazyFrame> {
        let source = self
            .lookup(name)
            .ok_or_else(|| Error::Invalid(format!("table {name} not found")))?;
        Ok(LazyFrame::new(
            self.clone(),
            PlanBuilder::scan(name, name, source),
        ))
    }

    fn lookup(&self, name: &str) -> Option<TableSource> {
        match self.entry(name)? {
            Object::Table(source) => Some(source),
            Object::View(..) => None,
        }
    }

    /// One SQL query as a lazy frame (to refine further, explain, or collect).
    pub fn sql(&self, query: &str) -> Result<LazyFrame> {
        guard::contain(|| query.to_string(), || self.sql_unguarded(query))
    }

    fn sql_unguarded(&self, query: &str) -> Result<LazyFrame> {
        let stmts = morsel_sql::parse(query)?;
        let [stmt] = stmts.as_slice() else {
            return Err(Error::Invalid(format!(
                "sql() takes one statement, got {}; use execute() for scripts",
                stmts.len()
            )));
        };
        match morsel_sql::plan_statement_with_positions(stmt, self)? {
            (Statement::Query(plan), positions) => {
                Ok(LazyFrame::new(self.clone(), PlanBuilder::from_plan(plan))
                    .with_positions(positions))
            }
            _ => Err(Error::Invalid(
                "sql() takes a query; use execute() for other statements".into(),
            )),
        }
    }

    /// Runs a bound plan to completion.
    pub(crate) fn run_plan(&self, plan: morsel_planner::LogicalPlan) -> Result<QueryResult> {
        LazyFrame::new(self.clone(), PlanBuilder::from_plan(plan)).collect()
    }

    /// Runs `;`-separated statements in order and returns the last one's result.
    pub fn execute(&self, script: &str) -> Result<QueryResult> {
        self.execute_all(script)?
            .pop()
            .ok_or_else(|| Error::Invalid("no statement to run".into()))
    }

    /// Runs `;`-separated statements in order and returns every result (DDL statements give
    /// an empty one). Stops at the first error: the statements before it have taken effect.
    pub fn execute_all(&self, script: &str) -> Result<Vec<QueryResult>> {
        let mut results = Vec::new();
        self.execute_each(script, |done| {
            results.push(done.result);
            ControlFlow::Continue(())
        })?;
        Ok(results)
    }

    /// Runs `;`-separated statements in order, handing each one's result to `each` as soon
    /// as it is done (the CLI prints it then). Stops at the first error, after handing on
    /// the statements before it, or where `each` breaks.
    pub fn execute_each(
        &self,
        script: &str,
        mut each: impl FnMut(StatementDone) -> ControlFlow<()>,
    ) -> Result<()> {
        let stmts = guard::contain(|| script.to_string(), || Ok(morsel_sql::parse(script)?))?;
        for (index, stmt) in stmts.iter().enumerate() {
            let started = Instant::now();
            let result = guard::contain(|| stmt.to_string(), || self.run_parsed(stmt))?;
            let done = StatementDone {
                index,
                of: stmts.len(),
                result,
                took: started.elapsed(),
            };
            if each(done).is_break() {
                break;
            }
        }
        Ok(())
    }
}

impl Session {
    /// Binds, plans and runs one parsed statement.
    fn run_parsed(&self, stmt: &morsel_sql::ast::Statement) -> Result<QueryResult> {
        let (bound, positions) = morsel_sql::plan_statement_with_positions(stmt, self)?;
        self.run_bound(bound).map_err(|e| e.located(&positions))
    }

    /// Plans and runs one bound statement.
    fn run_bound(&self, bound: Statement) -> Result<QueryResult> {
        Ok(match bound {
            Statement::Query(plan) => self.run_plan(plan)?,
            Statement::Explain {
                plan,
                verbose,
                analyze,
                format,
            } => crate::explain::explain(self, &plan, verbose, analyze, format)?,
            other => self.run_statement(other)?,
        })
    }
}

/// A statement of a script, done ([`Session::execute_each`]).
pub struct StatementDone {
    /// Its place in the script, from 0, and how many statements the script has.
    pub index: usize,
    pub of: usize,
    pub result: QueryResult,
    /// Its wall time: binding, planning and running it to its result (the CLI's `--timer`).
    pub took: Duration,
}

impl Catalog for Session {
    fn table(&self, name: &str) -> Option<TableSource> {
        self.lookup(name)
    }

    fn setting(&self, name: &str) -> Option<morsel_storage::ScalarValue> {
        use morsel_storage::ScalarValue;
        match name.to_ascii_lowercase().as_str() {
            "threads" | "worker_threads" => Some(ScalarValue::Int64(self.threads() as i64)),
            "disabled_optimizers" => Some(ScalarValue::Utf8(
                guard::read(&self.state.disabled_rules).join(","),
            )),
            _ => None,
        }
    }

    fn view(&self, name: &str) -> Option<morsel_sql::ast::Query> {
        match self.entry(name)? {
            Object::View(q, _) => Some(*q),
            Object::Table(_) => None,
        }
    }

    fn view_schema(&self, name: &str) -> Option<morsel_planner::PlanSchema> {
        match self.entry(name)? {
            Object::View(_, schema) => Some(schema),
            Object::Table(_) => None,
        }
    }

    fn table_names(&self) -> Vec<String> {
        Session::table_names(self)
    }

    fn csv_file(
        &self,
        path: &str,
        options: CsvOptions,
    ) -> std::result::Result<TableSource, SqlError> {
        match self.open_csv(path, options) {
            Ok(s) => Ok(s),
            Err(Error::Csv(e)) => Err(SqlError::new(morsel_sql::SqlErrorKind::Csv(e))),
            Err(other) => Err(SqlError::invalid(other.to_string())),
        }
    }

    fn query_profile(&self, sql: &str) -> std::result::Result<TableSource, SqlError> {
        let profile = self
            .sql(sql)
            .and_then(|frame| frame.explain_analyze())
            .map_err(|e| {
                SqlError::invalid(format!("in the query passed to explain_analyze(): {e}"))
            })?;
        let table = crate::explain::profile_table(&profile).map_err(|e| {
            SqlError::invalid(format!("in the query passed to explain_analyze(): {e}"))
        })?;
        Ok(TableSource::Memory(Arc::new(table)))
    }
}
