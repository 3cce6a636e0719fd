//! Optimizer rules, one per file.

mod push_down_filter;
mod push_down_projection;
mod reorder_joins;
mod simplify_expressions;

pub use push_down_filter::PushDownFilter;
pub use push_down_projection::PushDownProjection;
pub use reorder_joins::ReorderJoins;
pub use simplify_expressions::SimplifyExpressions;
