//! morsel-planner: expressions, logical plans, the plan builder, optimizer rules and EXPLAIN.
//!
//! Key decision: expressions refer to columns by (optional relation, name), never by position.
//! A rule that prunes scan columns or moves a filter therefore never has to renumber the
//! expressions above it; positions are resolved once, when the executor compiles the plan.
//! Types are checked and casts inserted when a node is built ([`expr::coerce`]), so every
//! kernel downstream sees operands of one type. The planner knows nothing of the executor:
//! a plan holds only storage types and can be rendered, rewritten or serialized on its own.

#![forbid(unsafe_code)]

pub mod error;
pub mod expr;
pub mod optimizer;
pub mod plan;
pub mod schema;

pub use error::{PlanError, PlanResult};
pub use expr::{
    col, lit, lit_date, AggFunc, BinaryOp, ColumnRef, Expr, FrameBound, FrameUnits, MathFunc,
    ScalarFunc, SortExpr, WindowExpr, WindowFrame, WindowFunc,
};
pub use optimizer::{memory_scan_filter_order, Optimizer, OptimizerRule, RuleTrace};
pub use plan::{CsvFiles, JoinKind, LogicalPlan, MemTable, PlanBuilder, Scan, TableSource};
pub use schema::{PlanField, PlanSchema};

/// The most nodes an operation a run-time error is reported at may have (with its operands):
/// inside a longer expression an error names no text and no position (writing the text out
/// at every level of a 10,000-term chain would be quadratic, and it would help nobody).
pub const LOCATED_NODES: usize = 64;
