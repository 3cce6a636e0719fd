//! morsel-executor: turns a logical plan into pipelines and runs them morsel by morsel.
//!
//! Key decision: determinism by construction. A pipeline's source hands out morsels from a
//! shared cursor; morsel boundaries depend only on the data (CSV blocks of a fixed byte size
//! cut at record boundaries, fixed row counts for in-memory batches), never on the number of
//! workers. Every sink keeps one partial result per morsel, tagged with the morsel's sequence
//! number, and merges partials in sequence order. So a float SUM adds the same numbers in the
//! same order whether one worker ran or sixteen, and results are bit-identical.
//!
//! Operators are pull-based and vectorized: a worker pulls a morsel's batches from the source
//! and passes each through the pipeline's streaming operators (filter, projection, hash probe)
//! before its sink (aggregate, join build, sort, limit, collect) consumes them.

mod context;
mod error;
pub mod expr;
pub mod kernels;
pub mod operator;
mod physical;
mod scheduler;
mod selected;
mod shared;
mod source;
mod union;

pub use context::{ExecContext, ExecMetrics, PipelineStats, ScanMetrics, StageLabel, StageStats};
pub use error::{ExecError, ExecResult};
pub use physical::execute;
pub use scheduler::{run_pipeline, Morsel, Operator, Sink, Source};
pub use source::MORSEL_ROWS;
