//! Optimizer rules, one per file.

mod common_subexpressions;
mod distinct_aggregates_to_group_by;
mod filter_aggregates_by_join_keys;
mod push_down_filter;
mod push_down_limit;
mod push_down_projection;
mod push_down_semi_joins;
mod reorder_joins;
mod simplify_expressions;

pub use common_subexpressions::CommonSubexpressions;
pub use distinct_aggregates_to_group_by::DistinctAggregatesToGroupBy;
pub use filter_aggregates_by_join_keys::FilterAggregatesByJoinKeys;
pub use push_down_filter::PushDownFilter;
pub use push_down_limit::PushDownLimit;
pub use push_down_projection::PushDownProjection;
pub use push_down_semi_joins::PushDownSemiJoins;
pub use reorder_joins::ReorderJoins;
pub use simplify_expressions::SimplifyExpressions;
