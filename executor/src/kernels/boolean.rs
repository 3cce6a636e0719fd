//! SQL three-valued logic, word-at-a-time: `NULL AND false` is false, `NULL OR true` is true.

use morsel_storage::{Bitmap, BooleanColumn, Column};

use crate::error::{ExecError, ExecResult};

/// (known true, known false) bitmaps of a boolean column.
fn truths(c: &BooleanColumn) -> (Bitmap, Bitmap) {
    let v = c.values();
    match c.validity() {
        None => (v.clone(), v.not()),
        Some(valid) => (
            v.and(valid),
            Bitmap::from_word_fn(v.len(), |i| !v.word(i) & valid.word(i)),
        ),
    }
}

fn from_truths(t: Bitmap, f: Bitmap) -> BooleanColumn {
    let valid = t.or(&f);
    BooleanColumn::new(t, Some(valid))
}

pub fn and(l: &BooleanColumn, r: &BooleanColumn) -> BooleanColumn {
    if l.validity().is_none() && r.validity().is_none() {
        return BooleanColumn::new(l.values().and(r.values()), None);
    }
    let ((lt, lf), (rt, rf)) = (truths(l), truths(r));
    from_truths(lt.and(&rt), lf.or(&rf))
}

pub fn or(l: &BooleanColumn, r: &BooleanColumn) -> BooleanColumn {
    if l.validity().is_none() && r.validity().is_none() {
        return BooleanColumn::new(l.values().or(r.values()), None);
    }
    let ((lt, lf), (rt, rf)) = (truths(l), truths(r));
    from_truths(lt.or(&rt), lf.and(&rf))
}

pub fn not(c: &BooleanColumn) -> BooleanColumn {
    BooleanColumn::new(c.values().not(), c.validity().cloned())
}

/// `IS NULL` (or `IS NOT NULL` when `negated`): never NULL itself.
pub fn is_null(c: &Column, negated: bool) -> BooleanColumn {
    let values = match c.validity() {
        Some(v) if negated => v.clone(),
        Some(v) => v.not(),
        None => Bitmap::new_filled(c.len(), negated),
    };
    BooleanColumn::new(values, None)
}

pub fn as_boolean(c: &Column) -> ExecResult<&BooleanColumn> {
    c.as_boolean()
        .ok_or_else(|| ExecError::Internal(format!("expected BOOLEAN, got {}", c.data_type())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kleene_logic() {
        let vals = [Some(true), Some(false), None];
        let mut l = Vec::new();
        let mut r = Vec::new();
        for a in vals {
            for b in vals {
                l.push(a);
                r.push(b);
            }
        }
        let (lc, rc) = (
            BooleanColumn::from_options(l.clone()),
            BooleanColumn::from_options(r.clone()),
        );
        let a = and(&lc, &rc);
        let o = or(&lc, &rc);
        for i in 0..9 {
            let want_and = match (l[i], r[i]) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            };
            let want_or = match (l[i], r[i]) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            };
            assert_eq!(a.get(i), want_and, "{:?} AND {:?}", l[i], r[i]);
            assert_eq!(o.get(i), want_or, "{:?} OR {:?}", l[i], r[i]);
        }
        assert_eq!(not(&lc).get(0), Some(false));
        assert_eq!(not(&lc).get(6), None);
    }
}
