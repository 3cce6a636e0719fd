//! morsel: an embedded analytical query engine.
//!
//! ```no_run
//! use morsel::{col, lit_date, Session, CsvOptions};
//! let session = Session::new();
//! let result = session
//!     .read_csv("lineitem.csv", CsvOptions::default())?
//!     .filter(col("l_shipdate").lt_eq(lit_date("1998-09-02")))
//!     .group_by([col("l_returnflag")])
//!     .agg([col("l_quantity").sum().alias("sum_qty")])
//!     .sort([col("l_returnflag")])
//!     .limit(10)
//!     .collect()?;
//! println!("{result}");
//! # Ok::<(), morsel::Error>(())
//! ```
//!
//! The [`Session`] owns the catalog of tables and the configuration (worker threads); SQL
//! text and [`LazyFrame`]s both become logical plans, which the optimizer rewrites and the
//! executor runs morsel by morsel on the shared worker pool.

pub mod allocator;
mod error;
mod explain;
mod format;
mod guard;
mod lazy;
mod session;
mod statements;

pub use error::{Error, Result};
pub use explain::QueryProfile;
pub use format::{render_json, render_table};
pub use lazy::{GroupBy, LazyFrame, QueryResult};
pub use session::{Session, StatementDone};

pub use morsel_executor::{ExecContext, PipelineStats, ScanMetrics, StageStats};
pub use morsel_planner::optimizer::{Optimizer, EXECUTION_RULES};
pub use morsel_planner::{
    col, lit, lit_date, AggFunc, BinaryOp, Expr, JoinKind, LogicalPlan, ScalarFunc, SortExpr,
};
pub use morsel_storage::csv::{CsvOptions, InferenceReport};
pub use morsel_storage::{Batch, Column, DataType, Field, ScalarValue, Schema, SchemaRef};
