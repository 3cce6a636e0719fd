//! The two-column statistics `func(y, x)` over the rows where neither is NULL: `covar_pop`,
//! `covar_samp`, `corr`, and `regr_count`, `regr_avgx`, `regr_avgy`, `regr_slope`,
//! `regr_intercept`, `regr_r2`, `regr_sxx`, `regr_syy`, `regr_sxy`.
//!
//! Every one is a function of one state per group: the pair count, the means of x and y, their
//! co-moment and each one's sum of squared deviations (updated a row at a time with
//! Welford's recurrence, partials combined with the pairwise formulas of Schubert and Gertz,
//! SSDBM 2018), and the plain sums of x and y. The updates and the final formulas are the
//! ones DuckDB uses, fused multiply-adds where its build fuses them, so that inputs added in
//! the same order give the same bits; the
//! degenerate answers follow DuckDB's too (`corr` over a constant column is NaN,
//! `regr_intercept` there NULL, `regr_r2` NULL for a constant x and 1 for a constant y).

use morsel_planner::AggFunc;
use morsel_storage::{Column, PrimitiveBuilder, PrimitiveColumn};

use super::{capacity_bytes, Args, GroupState};
use crate::error::{ExecError, ExecResult};

/// One group's moments.
#[derive(Clone, Copy, Debug, Default)]
struct Moments {
    n: u64,
    mean_x: f64,
    mean_y: f64,
    /// Sum of (x - mean_x)(y - mean_y).
    co: f64,
    /// Sums of squared deviations.
    m2_x: f64,
    m2_y: f64,
    sum_x: f64,
    sum_y: f64,
}

impl Moments {
    fn add(&mut self, y: f64, x: f64) {
        self.n += 1;
        let n = self.n as f64;
        let dx = x - self.mean_x;
        let mean_x = self.mean_x + dx / n;
        let dy = y - self.mean_y;
        let mean_y = self.mean_y + dy / n;
        // A fused multiply-add, as DuckDB's build compiles its `co + dx * (y - mean_y)`:
        // the same inputs give the same bits.
        self.co = dx.mul_add(y - mean_y, self.co);
        self.m2_x += (x - mean_x) * dx;
        self.m2_y += (y - mean_y) * dy;
        self.mean_x = mean_x;
        self.mean_y = mean_y;
        self.sum_x += x;
        self.sum_y += y;
    }

    /// Folds in the moments of the rows after this group's.
    fn combine(&mut self, other: &Moments) {
        if other.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *other;
            return;
        }
        let (na, nb) = (self.n as f64, other.n as f64);
        let n = na + nb;
        let dx = self.mean_x - other.mean_x;
        let dy = self.mean_y - other.mean_y;
        self.co = other.co + self.co + dx * dy * nb * na / n;
        self.m2_x = other.m2_x + self.m2_x + dx * dx * nb * na / n;
        self.m2_y = other.m2_y + self.m2_y + dy * dy * nb * na / n;
        self.mean_x = (nb * other.mean_x + na * self.mean_x) / n;
        self.mean_y = (nb * other.mean_y + na * self.mean_y) / n;
        self.n += other.n;
        self.sum_x += other.sum_x;
        self.sum_y += other.sum_y;
    }

    fn covar_pop(&self) -> f64 {
        self.co / self.n as f64
    }

    /// Population variances (0 for one row).
    fn var_x(&self) -> f64 {
        if self.n > 1 {
            self.m2_x / self.n as f64
        } else {
            0.0
        }
    }

    fn var_y(&self) -> f64 {
        if self.n > 1 {
            self.m2_y / self.n as f64
        } else {
            0.0
        }
    }

    fn corr(&self) -> f64 {
        self.covar_pop() / (self.var_x().sqrt() * self.var_y().sqrt())
    }

    fn slope(&self) -> f64 {
        self.covar_pop() / self.var_x()
    }

    /// `func`'s value (never called for `regr_count`, which is a count).
    fn value(&self, func: AggFunc) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let n = self.n as f64;
        Some(match func {
            AggFunc::CovarPop => self.covar_pop(),
            AggFunc::CovarSamp if self.n < 2 => return None,
            AggFunc::CovarSamp => self.co / (n - 1.0),
            AggFunc::Corr => self.corr(),
            AggFunc::RegrAvgX => self.sum_x / n,
            AggFunc::RegrAvgY => self.sum_y / n,
            AggFunc::RegrSlope => self.slope(),
            AggFunc::RegrIntercept => {
                let slope = self.slope();
                if !slope.is_finite() {
                    return None;
                }
                // avg(y) - slope * avg(x), fused as DuckDB's build computes it.
                (-slope).mul_add(self.sum_x / n, self.sum_y / n)
            }
            AggFunc::RegrR2 if self.var_x() == 0.0 => return None,
            AggFunc::RegrR2 if self.var_y() == 0.0 => 1.0,
            AggFunc::RegrR2 => self.corr().powi(2),
            AggFunc::RegrSxx => self.var_x() * n,
            AggFunc::RegrSyy => self.var_y() * n,
            _ => self.covar_pop() * n,
        })
    }
}

#[derive(Debug)]
pub struct CoMoments {
    func: AggFunc,
    groups: Vec<Moments>,
}

impl CoMoments {
    pub fn new(func: AggFunc) -> Self {
        CoMoments {
            func,
            groups: Vec::new(),
        }
    }
}

impl GroupState for CoMoments {
    fn resize(&mut self, n: usize) {
        self.groups.resize(n, Moments::default());
    }

    fn update(&mut self, groups: &[u32], args: Args<'_>) -> ExecResult<()> {
        let name = self.func.name();
        let (Some(Column::Float64(y)), Some(Column::Float64(x))) = (args.first, args.second) else {
            return Err(ExecError::Internal(format!(
                "{name}() without two DOUBLE arguments"
            )));
        };
        for (i, &g) in groups.iter().enumerate() {
            if y.is_valid(i) && x.is_valid(i) {
                self.groups[g as usize].add(y.values()[i], x.values()[i]);
            }
        }
        Ok(())
    }

    fn merge(&mut self, other: &mut Self, mapping: &[u32]) {
        for (g, theirs) in other.groups.iter().enumerate() {
            self.groups[mapping[g] as usize].combine(theirs);
        }
    }

    fn move_groups(&mut self, ids: &[u32], into: &mut Self) {
        into.groups
            .extend(ids.iter().map(|&g| self.groups[g as usize]));
    }

    fn finish(self) -> ExecResult<Column> {
        if self.func == AggFunc::RegrCount {
            let counts = self.groups.iter().map(|m| m.n as i64).collect();
            return Ok(Column::Int64(PrimitiveColumn::from_vec(counts)));
        }
        let mut b = PrimitiveBuilder::with_capacity(self.groups.len());
        for m in &self.groups {
            b.push_option(m.value(self.func));
        }
        Ok(Column::Float64(b.finish()))
    }

    fn heap_bytes(&self) -> usize {
        capacity_bytes(&self.groups)
    }
}
