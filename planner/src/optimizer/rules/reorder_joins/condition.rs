//! A region's conditions with the inputs they read, and which inputs they link.
//!
//! Each condition knows, as input sets, what it reads and, for an equality, what each of its
//! sides reads: where a candidate join puts a condition (a hash key, the residual filter, or
//! not yet) is then decided from the sets alone, with no schema lookup, so a search can ask
//! it of thousands of candidates.

use std::collections::HashMap;

use super::inputs::InputSet;
use crate::expr::{BinaryOp, Expr};
use crate::schema::PlanSchema;

/// A condition and the inputs it reads.
#[derive(Clone)]
pub(super) struct Condition {
    pub(super) expr: Expr,
    /// The inputs `expr` reads.
    pub(super) inputs: InputSet,
    /// For an equality whose two sides both read columns: the inputs each side reads.
    pub(super) sides: Option<(InputSet, InputSet)>,
    pub(super) placed: bool,
}

impl Condition {
    /// `expr` over the inputs `names` knows; `None` if one of its columns resolves in no
    /// input or in several.
    pub(super) fn new(expr: Expr, names: &InputNames) -> Option<Self> {
        let n = names.schemas.len();
        let inputs = InputSet::of(n, names.inputs_of(&expr)?);
        let sides = match operands(&expr) {
            Some((a, b)) => {
                let (a, b) = (names.inputs_of(a)?, names.inputs_of(b)?);
                (!a.is_empty() && !b.is_empty()).then(|| (InputSet::of(n, a), InputSet::of(n, b)))
            }
            None => None,
        };
        Some(Condition {
            expr,
            inputs,
            sides,
            placed: false,
        })
    }

    /// `a = b` with each side reading one input, a different one: the two inputs.
    pub(super) fn link(&self) -> Option<(usize, usize)> {
        let (a, b) = self.sides.as_ref()?;
        let (p, q) = (a.single()?, b.single()?);
        (p != q).then_some((p, q))
    }

    /// The two sides of the equality.
    pub(super) fn operands(&self) -> Option<(&Expr, &Expr)> {
        operands(&self.expr)
    }
}

/// The sides of `e` if it is an equality.
fn operands(e: &Expr) -> Option<(&Expr, &Expr)> {
    match e {
        Expr::Binary {
            left,
            op: BinaryOp::Eq,
            right,
        } => Some((left, right)),
        _ => None,
    }
}

/// A region's input schemas, with the inputs holding a field of each name: a column is
/// looked up only in the inputs that could hold it (a 64-table clique's 4,032 column
/// references would otherwise each be looked up in all 64).
pub(super) struct InputNames<'a> {
    schemas: &'a [&'a PlanSchema],
    /// Inputs by lower-case field name, ascending.
    by_name: HashMap<String, Vec<usize>>,
}

impl<'a> InputNames<'a> {
    pub(super) fn new(schemas: &'a [&'a PlanSchema]) -> Self {
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, s) in schemas.iter().enumerate() {
            for f in s.fields() {
                let inputs = by_name.entry(f.name.to_ascii_lowercase()).or_default();
                if inputs.last() != Some(&i) {
                    inputs.push(i);
                }
            }
        }
        InputNames { schemas, by_name }
    }

    /// Which inputs `e` reads, ascending; `None` if a column resolves in no input, in
    /// several, or names fields of some input ambiguously (a column must name one field of
    /// one input, so it resolves in any join of inputs holding that one).
    pub(super) fn inputs_of(&self, e: &Expr) -> Option<Vec<usize>> {
        let mut out = Vec::new();
        let resolved = e.all_columns(|c| {
            let named = self
                .by_name
                .get(&c.name.to_ascii_lowercase())
                .map_or(&[][..], Vec::as_slice);
            let mut hits = named.iter().filter(|&&i| self.schemas[i].names_any(c));
            let (Some(&i), None) = (hits.next(), hits.next()) else {
                return false;
            };
            if !out.contains(&i) {
                out.push(i);
            }
            self.schemas[i].has(c)
        });
        out.sort_unstable();
        resolved.then_some(out)
    }
}

/// Which inputs an equality links to which: asking whether two groups of inputs are linked
/// is then a few word operations per input.
pub(super) struct Links {
    adjacent: Vec<InputSet>,
}

impl Links {
    pub(super) fn new(n: usize, conds: &[Condition]) -> Self {
        let mut adjacent = vec![InputSet::empty(n); n];
        for (p, q) in conds.iter().filter_map(Condition::link) {
            adjacent[p].insert(q);
            adjacent[q].insert(p);
        }
        Links { adjacent }
    }

    /// The inputs an equality links input `i` to, as a bit set of the first 64.
    pub(super) fn adjacent_mask(&self, i: usize) -> usize {
        self.adjacent[i].low_word() as usize
    }

    /// Whether an equality links an input of `a` to one of `b`.
    pub(super) fn linked(&self, a: &InputSet, b: &InputSet) -> bool {
        a.iter().any(|i| self.adjacent[i].intersects(b))
    }
}
