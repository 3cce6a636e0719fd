//! The accumulators beyond sum/count/avg/min/max: variances, quantiles, string_agg,
//! bool_and/or, a scalar subquery's single value, and DISTINCT aggregates. Each keeps its
//! state per group; partials merge in morsel order, so results (including the order of
//! string_agg's values) are the same at any thread count.

use morsel_planner::AggFunc;
use morsel_storage::{Column, ColumnBuilder, PrimitiveBuilder, ScalarValue};

use super::accumulator::Accumulator;
use super::keys::RowKeys;
use super::states::Args;
use crate::error::{ExecError, ExecResult};
use crate::kernels::compare::cmp_f64;

fn float_at(arg: &Column, i: usize) -> Option<f64> {
    match arg {
        Column::Float64(x) if x.is_valid(i) => Some(x.values()[i]),
        _ => None,
    }
}

/// Folds the moments of a second sample `(nb, mb, qb)` into `(na, ma, qa)`.
fn combine(na: &mut f64, ma: &mut f64, qa: &mut f64, nb: f64, mb: f64, qb: f64) {
    if nb == 0.0 {
        return;
    }
    if *na == 0.0 {
        (*na, *ma, *qa) = (nb, mb, qb);
        return;
    }
    let n = *na + nb;
    let delta = mb - *ma;
    *qa += qb + delta * delta * *na * nb / n;
    *ma += delta * nb / n;
    *na = n;
}

/// `quantile_cont`: linear interpolation at position `q * (n - 1)` of the sorted values.
fn quantile(values: &mut [f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(|a, b| cmp_f64(*a, *b));
    let pos = q * (values.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    let (a, b) = (values[lo], values[hi]);
    Some(if lo == hi {
        a
    } else {
        a + (b - a) * (pos - lo as f64)
    })
}

impl Accumulator {
    /// Updates the states this module owns; false for the others.
    pub(super) fn update_more(&mut self, groups: &[u32], arg: &Column) -> ExecResult<bool> {
        match self {
            Accumulator::Moments { n, mean, m2, .. } => {
                for (i, &g) in groups.iter().enumerate() {
                    if let Some(x) = float_at(arg, i) {
                        let g = g as usize;
                        n[g] += 1.0;
                        let delta = x - mean[g];
                        mean[g] += delta / n[g];
                        m2[g] += delta * (x - mean[g]);
                    }
                }
            }
            Accumulator::Quantile { values, .. } => {
                for (i, &g) in groups.iter().enumerate() {
                    if let Some(x) = float_at(arg, i) {
                        values[g as usize].push(x);
                    }
                }
            }
            Accumulator::StringAgg { sep, values } => {
                let s = arg.as_utf8().ok_or_else(|| {
                    ExecError::Internal(format!("string_agg() over {}", arg.data_type()))
                })?;
                for (i, &g) in groups.iter().enumerate() {
                    if s.is_valid(i) {
                        let v = s.value(i);
                        match &mut values[g as usize] {
                            Some(acc) => {
                                acc.push_str(sep);
                                acc.push_str(v);
                            }
                            slot => *slot = Some(v.to_string()),
                        }
                    }
                }
            }
            Accumulator::Bool { and, values } => {
                let b = arg.as_boolean().ok_or_else(|| {
                    ExecError::Internal(format!("bool_and/or over {}", arg.data_type()))
                })?;
                for (i, &g) in groups.iter().enumerate() {
                    if let Some(v) = b.get(i) {
                        let slot = &mut values[g as usize];
                        *slot = Some(match *slot {
                            None => v,
                            Some(cur) if *and => cur && v,
                            Some(cur) => cur || v,
                        });
                    }
                }
            }
            Accumulator::Single { values, rows, .. } => {
                for (i, &g) in groups.iter().enumerate() {
                    let g = g as usize;
                    rows[g] += 1;
                    if rows[g] > 1 {
                        return Err(ExecError::SubqueryRows);
                    }
                    values[g] = arg.is_valid(i).then(|| arg.scalar_at(i));
                }
            }
            Accumulator::Distinct { seen, values, .. } => {
                let keys = RowKeys::encode(std::slice::from_ref(arg), groups.len());
                for (i, &g) in groups.iter().enumerate() {
                    if keys.has_null[i] {
                        continue;
                    }
                    let g = g as usize;
                    let k = keys.key(i);
                    if !seen[g].contains(k) {
                        let k: Box<[u8]> = k.into();
                        seen[g].insert(k.clone());
                        values[g].push((k, arg.scalar_at(i)));
                    }
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Merges the states this module owns; false for the others.
    pub(super) fn merge_more(&mut self, other: &Accumulator, mapping: &[u32]) -> ExecResult<bool> {
        match (self, other) {
            (
                Accumulator::Moments { n, mean, m2, .. },
                Accumulator::Moments {
                    n: n2,
                    mean: mean2,
                    m2: q2,
                    ..
                },
            ) => {
                for g in 0..n2.len() {
                    let m = mapping[g] as usize;
                    let (mut a, mut b, mut c) = (n[m], mean[m], m2[m]);
                    combine(&mut a, &mut b, &mut c, n2[g], mean2[g], q2[g]);
                    (n[m], mean[m], m2[m]) = (a, b, c);
                }
            }
            (Accumulator::Quantile { values, .. }, Accumulator::Quantile { values: v2, .. }) => {
                for (g, v) in v2.iter().enumerate() {
                    values[mapping[g] as usize].extend_from_slice(v);
                }
            }
            (Accumulator::StringAgg { sep, values }, Accumulator::StringAgg { values: v2, .. }) => {
                for (g, v) in v2.iter().enumerate() {
                    let Some(v) = v else { continue };
                    match &mut values[mapping[g] as usize] {
                        Some(acc) => {
                            acc.push_str(sep);
                            acc.push_str(v);
                        }
                        slot => *slot = Some(v.clone()),
                    }
                }
            }
            (Accumulator::Bool { and, values }, Accumulator::Bool { values: v2, .. }) => {
                for (g, v) in v2.iter().enumerate() {
                    let Some(v) = *v else { continue };
                    let slot = &mut values[mapping[g] as usize];
                    *slot = Some(match *slot {
                        None => v,
                        Some(cur) if *and => cur && v,
                        Some(cur) => cur || v,
                    });
                }
            }
            (
                Accumulator::Single { values, rows, .. },
                Accumulator::Single {
                    values: v2,
                    rows: r2,
                    ..
                },
            ) => {
                for g in 0..v2.len() {
                    let m = mapping[g] as usize;
                    rows[m] += r2[g];
                    if rows[m] > 1 {
                        return Err(ExecError::SubqueryRows);
                    }
                    if r2[g] > 0 {
                        values[m] = v2[g].clone();
                    }
                }
            }
            (
                Accumulator::Distinct { seen, values, .. },
                Accumulator::Distinct { values: v2, .. },
            ) => {
                for (g, list) in v2.iter().enumerate() {
                    let m = mapping[g] as usize;
                    for (k, v) in list {
                        if seen[m].insert(k.clone()) {
                            values[m].push((k.clone(), v.clone()));
                        }
                    }
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Final values of the states this module owns.
    pub(super) fn finish_more(self) -> ExecResult<Column> {
        Ok(match self {
            Accumulator::Moments { func, n, m2, .. } => {
                let mut b = PrimitiveBuilder::with_capacity(n.len());
                for (n, q) in n.iter().zip(&m2) {
                    let v = match func {
                        AggFunc::VarPop | AggFunc::StddevPop if *n > 0.0 => Some(q / n),
                        AggFunc::VarSamp | AggFunc::StddevSamp if *n > 1.0 => Some(q / (n - 1.0)),
                        _ => None,
                    };
                    let v = match func {
                        AggFunc::StddevPop | AggFunc::StddevSamp => v.map(f64::sqrt),
                        _ => v,
                    };
                    b.push_option(v);
                }
                Column::Float64(b.finish())
            }
            Accumulator::Quantile { q, mut values } => {
                let mut b = PrimitiveBuilder::with_capacity(values.len());
                for v in values.iter_mut() {
                    b.push_option(quantile(v, q));
                }
                Column::Float64(b.finish())
            }
            Accumulator::StringAgg { values, .. } => {
                let mut b = ColumnBuilder::with_capacity(morsel_storage::DataType::Utf8, 0);
                for v in values {
                    b.push_scalar(&v.map_or(ScalarValue::Null, ScalarValue::Utf8))?;
                }
                b.finish()
            }
            Accumulator::Bool { values, .. } => {
                let mut b =
                    ColumnBuilder::with_capacity(morsel_storage::DataType::Boolean, values.len());
                for v in values {
                    b.push_scalar(&v.map_or(ScalarValue::Null, ScalarValue::Boolean))?;
                }
                b.finish()
            }
            Accumulator::Distinct {
                func, ty, values, ..
            } => {
                // Feed each group's distinct values to a plain state for `func`.
                let total = values.iter().map(Vec::len).sum();
                let mut col = ColumnBuilder::with_capacity(ty, total);
                let mut groups = Vec::with_capacity(total);
                for (g, list) in values.iter().enumerate() {
                    for (_, v) in list {
                        col.push_scalar(v)?;
                        groups.push(g as u32);
                    }
                }
                let mut acc = Accumulator::new(func, ty, false, None, false)?;
                acc.resize(values.len());
                acc.update(&groups, Args::one(Some(&col.finish())))?;
                acc.finish()?
            }
            other => return Err(ExecError::Internal(format!("no final value for {other:?}"))),
        })
    }
}
