//! Where the operations that can fail at run time are in the SQL text: the binder records
//! each cast, arithmetic operation and function call it binds under its text as the plan
//! shows it (`Expr::located_text`: without the casts coercion adds below it), and a
//! run-time error naming an operation by that text
//! (`ExecError::InExpression`) is given the position of the first one recorded.
//!
//! The text is the link because the plan is optimized between binding and running: an
//! operation the optimizer leaves as it is keeps its text; one it rewrites (a column of a
//! derived table replaced by its definition) is still named by its new text, without a
//! position. Operations in a view's query are not recorded (their positions are in the
//! view's own text).

use morsel_planner::Expr;

/// The positions of a statement's operations, by their text.
#[derive(Clone, Debug, Default)]
pub struct ExprPositions {
    /// Each operation's text, its shape (`Expr::located_shape`) and position.
    entries: Vec<(String, String, (u64, u64))>,
}

impl ExprPositions {
    /// The operation `e` names, when it is one that can fail on a value and is short enough
    /// to be named (an alias aside).
    pub(crate) fn operation(e: &Expr) -> Option<&Expr> {
        let e = match e {
            Expr::Alias { expr, .. } => expr.as_ref(),
            other => other,
        };
        (e.can_fail_on_a_value() && e.has_at_most_nodes(morsel_planner::LOCATED_NODES)).then_some(e)
    }

    /// Records operation `e` (see [`ExprPositions::operation`]) as bound at 1-based `(line,
    /// column)`.
    pub(crate) fn record(&mut self, e: &Expr, at: (u64, u64)) {
        if at.0 > 0 {
            self.entries.push((e.located_text(), e.located_shape(), at));
        }
    }

    /// Where the operation whose text is `text` is, if it was recorded; else where the one
    /// operation of its `shape` is (the optimizer renamed its columns), if only one
    /// position has that shape.
    pub fn find(&self, text: &str, shape: &str) -> Option<(u64, u64)> {
        if let Some((.., at)) = self.entries.iter().find(|(t, ..)| t == text) {
            return Some(*at);
        }
        let mut same = self
            .entries
            .iter()
            .filter(|(_, s, _)| s == shape)
            .map(|(.., at)| *at);
        let first = same.next()?;
        same.all(|at| at == first).then_some(first)
    }
}
