//! Optimizer rules, one per file.

mod common_subexpressions;
mod count_matches_before_join;
mod distinct_aggregates_to_group_by;
mod filter_aggregates_by_join_keys;
mod push_down_filter;
mod push_down_limit;
mod push_down_projection;
mod push_down_semi_joins;
mod reorder_joins;
mod simplify_expressions;

use crate::expr::Expr;
use crate::plan::LogicalPlan;
use crate::schema::PlanSchema;

pub use common_subexpressions::CommonSubexpressions;
pub use count_matches_before_join::CountMatchesBeforeJoin;
pub use distinct_aggregates_to_group_by::DistinctAggregatesToGroupBy;
pub use filter_aggregates_by_join_keys::FilterAggregatesByJoinKeys;
pub use push_down_filter::PushDownFilter;
pub use push_down_limit::PushDownLimit;
pub use push_down_projection::PushDownProjection;
pub use push_down_semi_joins::PushDownSemiJoins;
pub use reorder_joins::ReorderJoins;
pub(crate) use simplify_expressions::fold_binary;
pub use simplify_expressions::SimplifyExpressions;

/// `plan` under the output `schema` of the node it replaces (its columns in order, renamed
/// to the original names and qualifiers), so that nothing above that node changes.
pub(crate) fn renamed(plan: LogicalPlan, schema: PlanSchema) -> LogicalPlan {
    let exprs = plan
        .schema()
        .fields()
        .iter()
        .map(|f| Expr::Column(f.column_ref()))
        .collect();
    LogicalPlan::Projection {
        input: Box::new(plan),
        exprs,
        schema,
    }
}

/// A named in-memory table of BIGINT columns, for the rules' tests.
#[cfg(test)]
pub(crate) fn test_table(name: &str, cols: &[&str]) -> crate::plan::PlanBuilder {
    use std::sync::Arc;

    use morsel_storage::{DataType, Field, Schema};

    use crate::plan::{MemTable, PlanBuilder, TableSource};

    let schema = Schema::new(
        cols.iter()
            .map(|c| Field::new(*c, DataType::Int64, true))
            .collect(),
    );
    let source = TableSource::Memory(Arc::new(MemTable::new(Arc::new(schema), Vec::new())));
    PlanBuilder::scan(name, name, source)
}

/// A named in-memory table of BIGINT columns holding these values (all of one length), for
/// the rules' tests that need row and distinct-value estimates.
#[cfg(test)]
pub(crate) fn test_data_table(name: &str, cols: &[(&str, Vec<i64>)]) -> crate::plan::PlanBuilder {
    use std::sync::Arc;

    use morsel_storage::{Batch, Column, DataType, Field, PrimitiveColumn, Schema};

    use crate::plan::{MemTable, PlanBuilder, TableSource};

    let schema = Arc::new(Schema::new(
        cols.iter()
            .map(|(c, _)| Field::new(*c, DataType::Int64, false))
            .collect(),
    ));
    let rows = cols.first().map_or(0, |(_, v)| v.len());
    let columns = cols
        .iter()
        .map(|(_, v)| Column::Int64(PrimitiveColumn::from_vec(v.clone())))
        .collect();
    let batch = Batch::try_new(schema.clone(), columns, rows).expect("batch");
    let source = TableSource::Memory(Arc::new(MemTable::new(schema, vec![batch])));
    PlanBuilder::scan(name, name, source)
}
