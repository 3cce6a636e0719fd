//! The aggregates that answer with one row's value: `first(x)` and `last(x)` (NULL included),
//! `any_value(x)` (the first non-NULL), and `arg_min(x, y)` / `arg_max(x, y)` (`x` of the
//! row with the least / greatest `y`, over rows where neither is NULL; of tied rows, the
//! first, as DuckDB answers).
//!
//! "First" means input order: rows in batch order within a morsel, partials merged in morsel
//! order, so the same row wins at any thread count.

use morsel_planner::AggFunc;
use morsel_storage::{Column, ColumnBuilder, DataType, ScalarValue};

use super::{capacity_bytes, Args, GroupState};
use crate::error::{ExecError, ExecResult};
use crate::operator::accumulator::better;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    First,
    Last,
    AnyValue,
    /// `min`: arg_min.
    Arg {
        min: bool,
    },
}

/// A group's chosen row: its value and, for arg_min / arg_max, its key.
#[derive(Debug)]
struct Picked {
    value: ScalarValue,
    key: ScalarValue,
}

#[derive(Debug)]
pub struct PickState {
    rule: Rule,
    ty: DataType,
    /// first / last: a FILTER mask comes as the second argument (rows where it is not true
    /// are skipped).
    masked: bool,
    picks: Vec<Option<Picked>>,
}

impl PickState {
    pub fn new(func: AggFunc, ty: DataType, second: bool) -> Self {
        let rule = match func {
            AggFunc::First => Rule::First,
            AggFunc::Last => Rule::Last,
            AggFunc::ArgMin => Rule::Arg { min: true },
            AggFunc::ArgMax => Rule::Arg { min: false },
            _ => Rule::AnyValue,
        };
        PickState {
            rule,
            ty,
            masked: second && matches!(rule, Rule::First | Rule::Last),
            picks: Vec::new(),
        }
    }

    pub fn inputs(&self) -> usize {
        if self.masked || matches!(self.rule, Rule::Arg { .. }) {
            2
        } else {
            1
        }
    }

    fn name(&self) -> &'static str {
        match self.rule {
            Rule::First => "first",
            Rule::Last => "last",
            Rule::AnyValue => "any_value",
            Rule::Arg { min: true } => "arg_min",
            Rule::Arg { min: false } => "arg_max",
        }
    }
}

impl GroupState for PickState {
    fn resize(&mut self, n: usize) {
        self.picks.resize_with(n, || None);
    }

    fn update(&mut self, groups: &[u32], args: Args<'_>) -> ExecResult<()> {
        let name = self.name();
        let x = args.required(name)?;
        let second = || {
            args.second
                .ok_or_else(|| ExecError::Internal(format!("{name}() without its key")))
        };
        let picks = &mut self.picks;
        match self.rule {
            Rule::First | Rule::Last => {
                let mask = if self.masked {
                    Some(second()?.as_boolean().ok_or_else(|| {
                        ExecError::Internal(format!("the FILTER of {name}() is not BOOLEAN"))
                    })?)
                } else {
                    None
                };
                let first = self.rule == Rule::First;
                for (i, &g) in groups.iter().enumerate() {
                    if mask.is_some_and(|m| m.get(i) != Some(true)) {
                        continue;
                    }
                    let slot = &mut picks[g as usize];
                    if !first || slot.is_none() {
                        *slot = Some(Picked {
                            value: x.scalar_at(i),
                            key: ScalarValue::Null,
                        });
                    }
                }
            }
            Rule::AnyValue => {
                for (i, &g) in groups.iter().enumerate() {
                    let slot = &mut picks[g as usize];
                    if slot.is_none() && x.is_valid(i) {
                        *slot = Some(Picked {
                            value: x.scalar_at(i),
                            key: ScalarValue::Null,
                        });
                    }
                }
            }
            Rule::Arg { min } => {
                let key = second()?;
                for (i, &g) in groups.iter().enumerate() {
                    if !x.is_valid(i) || !key.is_valid(i) {
                        continue;
                    }
                    let k = key.scalar_at(i);
                    let slot = &mut picks[g as usize];
                    if slot.as_ref().is_none_or(|cur| better(min, &k, &cur.key)) {
                        *slot = Some(Picked {
                            value: x.scalar_at(i),
                            key: k,
                        });
                    }
                }
            }
        }
        Ok(())
    }

    fn merge(&mut self, other: &mut Self, mapping: &[u32]) {
        for (g, theirs) in other.picks.iter_mut().enumerate() {
            let Some(theirs) = theirs.take() else {
                continue;
            };
            let mine = &mut self.picks[mapping[g] as usize];
            // `other` holds later rows: it wins for last, and for arg_min / arg_max only
            // with a strictly better key.
            let take = match (self.rule, &*mine) {
                (_, None) | (Rule::Last, _) => true,
                (Rule::Arg { min }, Some(cur)) => better(min, &theirs.key, &cur.key),
                _ => false,
            };
            if take {
                *mine = Some(theirs);
            }
        }
    }

    fn move_groups(&mut self, ids: &[u32], into: &mut Self) {
        into.picks
            .extend(ids.iter().map(|&g| self.picks[g as usize].take()));
    }

    fn finish(self) -> ExecResult<Column> {
        let mut b = ColumnBuilder::with_capacity(self.ty, self.picks.len());
        for p in &self.picks {
            b.push_scalar(p.as_ref().map_or(&ScalarValue::Null, |p| &p.value))?;
        }
        Ok(b.finish())
    }

    fn heap_bytes(&self) -> usize {
        let text = |v: &ScalarValue| match v {
            ScalarValue::Utf8(s) => s.capacity(),
            _ => 0,
        };
        capacity_bytes(&self.picks)
            + self
                .picks
                .iter()
                .flatten()
                .map(|p| text(&p.value) + text(&p.key))
                .sum::<usize>()
    }
}
