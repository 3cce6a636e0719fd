//! `product(x)`: the DOUBLE product of each group's non-NULL values, NULL where there are
//! none (DuckDB's answer). Products multiply in input order and partials in morsel order.

use morsel_storage::{Column, PrimitiveBuilder};

use super::{capacity_bytes, Args, GroupState};
use crate::error::{ExecError, ExecResult};

#[derive(Debug, Default)]
pub struct ProductState {
    products: Vec<f64>,
    seen: Vec<bool>,
}

impl GroupState for ProductState {
    fn resize(&mut self, n: usize) {
        // 1.0 is the identity: 1.0 * x is x, bit for bit.
        self.products.resize(n, 1.0);
        self.seen.resize(n, false);
    }

    fn update(&mut self, groups: &[u32], args: Args<'_>) -> ExecResult<()> {
        let Column::Float64(x) = args.required("product")? else {
            return Err(ExecError::Internal("product() over a non-DOUBLE".into()));
        };
        for (i, &g) in groups.iter().enumerate() {
            if x.is_valid(i) {
                self.products[g as usize] *= x.values()[i];
                self.seen[g as usize] = true;
            }
        }
        Ok(())
    }

    fn merge(&mut self, other: &mut Self, mapping: &[u32]) {
        for (g, (&p, &seen)) in other.products.iter().zip(&other.seen).enumerate() {
            if seen {
                let m = mapping[g] as usize;
                self.products[m] *= p;
                self.seen[m] = true;
            }
        }
    }

    fn move_groups(&mut self, ids: &[u32], into: &mut Self) {
        for &g in ids {
            into.products.push(self.products[g as usize]);
            into.seen.push(self.seen[g as usize]);
        }
    }

    fn finish(self) -> ExecResult<Column> {
        let mut b = PrimitiveBuilder::with_capacity(self.products.len());
        for (&p, &seen) in self.products.iter().zip(&self.seen) {
            b.push_option(seen.then_some(p));
        }
        Ok(Column::Float64(b.finish()))
    }

    fn heap_bytes(&self) -> usize {
        capacity_bytes(&self.products) + capacity_bytes(&self.seen)
    }
}
