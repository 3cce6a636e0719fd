//! Containing engine bugs: a panic inside binding, planning or execution becomes
//! [`Error::Internal`] for that query, and the session stays usable.
//!
//! Every public entry point that runs engine code (`Session::sql`, `execute*`,
//! `LazyFrame::collect` / `explain*`) goes through [`contain`]. The executor's workers are
//! scoped tasks of the shared pool, so a panic on a worker reaches the caller's scope and
//! is caught here too. Catalog and configuration locks are taken through [`read`] and
//! [`write`], which ignore poisoning: no lock is held across engine code, so a panic
//! cannot leave the catalog half-changed.
//!
//! A stack overflow is not a panic and cannot be caught, so a statement runs on a stack of its
//! own, large enough for any nesting the parser accepts (see [`STATEMENT_STACK`]); the
//! executor's workers evaluate deep expressions on stacks that grow as they need.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::error::{Error, Result};

/// The stack a statement is bound, planned and driven on, allocated per statement (only
/// the pages it touches are backed by memory). Binding, coercion and the optimizer's rules
/// recurse once per level of nesting: 256 MiB takes expression chains and nestings of tens of
/// thousands of levels in a debug build, past the parser's nesting limit.
const STATEMENT_STACK: usize = 256 << 20;

/// The longest query text an internal error quotes.
const QUOTED_QUERY_CHARS: usize = 200;

/// Runs `f`; a panic inside it becomes `Error::Internal` naming the query `describe`
/// gives (called only then: rendering a plan as text costs time a query need not spend).
pub(crate) fn contain<T>(
    describe: impl FnOnce() -> String,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(|| stacker::grow(STATEMENT_STACK, f))) {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            Err(Error::Internal {
                query: quoted(&describe()),
                message,
            })
        }
    }
}

/// `query` on one line, shortened to [`QUOTED_QUERY_CHARS`].
fn quoted(query: &str) -> String {
    let one_line = query.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(QUOTED_QUERY_CHARS) {
        Some((cut, _)) => format!("{}...", &one_line[..cut]),
        None => one_line,
    }
}

pub(crate) fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_internal_error_naming_the_query() {
        let err = contain::<()>(|| "SELECT\n  1".into(), || panic!("boom {}", 1)).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("boom 1"), "{text}");
        assert!(text.contains("SELECT 1"), "{text}");
        assert!(text.contains("internal error"), "{text}");
        assert_eq!(contain(String::new, || Ok(7)).unwrap(), 7);
    }

    #[test]
    fn long_queries_are_shortened() {
        let q = "x".repeat(1000);
        assert_eq!(quoted(&q).chars().count(), QUOTED_QUERY_CHARS + 3);
    }
}
