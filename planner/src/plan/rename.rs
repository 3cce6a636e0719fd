//! Renaming a plan's output columns by position, which works where names cannot: a select
//! list may name two columns alike (`SELECT k, k`, `SELECT 1, 1`, `SELECT * FROM a, b` over
//! a shared name), and such a column cannot be read by name. A derived table, a CTE or a
//! set operation's input then renames the columns where they were produced: the
//! projection's own aliases (through the nodes above it that read no columns), or each
//! input of a union.

use std::collections::HashSet;

use super::{LogicalPlan, PlanBuilder};
use crate::error::{PlanError, PlanResult};
use crate::expr::Expr;
use crate::schema::PlanSchema;

impl PlanBuilder {
    /// This plan with its output columns named `names`, in order (one name per column).
    pub fn rename_by_position(self, names: &[String]) -> PlanResult<Self> {
        let schema = self.schema().clone();
        if names.len() != schema.len() {
            return Err(PlanError::Invalid(format!(
                "internal: {} names for {} columns",
                names.len(),
                schema.len()
            )));
        }
        if schema
            .fields()
            .iter()
            .zip(names)
            .all(|(f, n)| f.relation.is_none() && f.name == *n)
        {
            return Ok(self);
        }
        if readable_by_name(&schema) {
            let exprs = schema
                .fields()
                .iter()
                .zip(names)
                .map(|(f, n)| Expr::Column(f.column_ref()).alias(n.clone()))
                .collect();
            return self.project(exprs);
        }
        Ok(match self.build() {
            LogicalPlan::Projection { input, exprs, .. } => {
                let exprs = exprs
                    .into_iter()
                    .zip(names)
                    .map(|(e, n)| e.unalias().alias(n.clone()))
                    .collect();
                PlanBuilder::from_plan(*input).project(exprs)?
            }
            LogicalPlan::Distinct { input } => PlanBuilder::from_plan(*input)
                .rename_by_position(names)?
                .distinct(),
            LogicalPlan::Limit { input, skip, fetch } => PlanBuilder::from_plan(*input)
                .rename_by_position(names)?
                .limit(skip, fetch),
            LogicalPlan::Union { inputs, schema } => {
                let inputs = inputs
                    .into_iter()
                    .map(|p| Ok(PlanBuilder::from_plan(p).rename_by_position(names)?.build()))
                    .collect::<PlanResult<Vec<_>>>()?;
                let fields = schema
                    .fields()
                    .iter()
                    .zip(names)
                    .map(|(f, n)| {
                        let mut f = f.clone();
                        f.relation = None;
                        f.name = n.clone();
                        f
                    })
                    .collect();
                PlanBuilder::from_plan(LogicalPlan::Union {
                    inputs,
                    schema: PlanSchema::new(fields),
                })
            }
            _ => {
                let name = schema
                    .fields()
                    .iter()
                    .find(|f| !schema.has(&f.column_ref()))
                    .map_or_else(String::new, |f| f.name.clone());
                return Err(PlanError::Invalid(format!(
                    "two columns are named {name} here; alias one of them"
                )));
            }
        })
    }

    /// Output names made unique as DuckDB makes a derived table's: a repeated name `k`
    /// becomes `k_1` (`k_2`, ... where that is taken), compared without case.
    pub fn unique_output_names(&self) -> Vec<String> {
        let fields = self.schema().fields();
        let all: HashSet<String> = fields.iter().map(|f| f.name.to_ascii_lowercase()).collect();
        let mut taken: HashSet<String> = HashSet::with_capacity(fields.len());
        let mut out = Vec::with_capacity(fields.len());
        for f in fields {
            let mut name = f.name.clone();
            let mut k = 1;
            while taken.contains(&name.to_ascii_lowercase()) {
                name = format!("{}_{k}", f.name);
                if all.contains(&name.to_ascii_lowercase()) {
                    name = f.name.clone();
                }
                k += 1;
            }
            taken.insert(name.to_ascii_lowercase());
            out.push(name);
        }
        out
    }

    /// Whether no two output columns share a name (compared without case and without
    /// their relations, which an alias over this plan replaces).
    pub fn names_unique(&self) -> bool {
        let fields = self.schema().fields();
        let mut seen = HashSet::with_capacity(fields.len());
        fields
            .iter()
            .all(|f| seen.insert(f.name.to_ascii_lowercase()))
    }
}

/// Whether every column of `schema` can be read by its (qualified) name.
fn readable_by_name(schema: &PlanSchema) -> bool {
    schema.fields().iter().all(|f| schema.has(&f.column_ref()))
}
