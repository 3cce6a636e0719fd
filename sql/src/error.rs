//! SQL errors with the position they are about, rendered with a caret under the query.

use std::fmt;

use morsel_planner::PlanError;
use morsel_storage::csv::CsvError;
use sqlparser::parser::ParserError;
use sqlparser::tokenizer::Span;

#[derive(Debug)]
pub enum SqlErrorKind {
    Parse(String),
    Plan(PlanError),
    TableNotFound {
        name: String,
        candidates: Vec<String>,
    },
    UnknownFunction {
        name: String,
        candidates: Vec<String>,
    },
    Unsupported(String),
    Invalid(String),
    Csv(Box<CsvError>),
}

#[derive(Debug)]
pub struct SqlError {
    pub kind: SqlErrorKind,
    /// 1-based (line, column) of what the error is about.
    pub location: Option<(u64, u64)>,
}

impl SqlError {
    pub fn new(kind: SqlErrorKind) -> Self {
        Self {
            kind,
            location: None,
        }
    }

    pub fn unsupported(what: impl Into<String>) -> Self {
        Self::new(SqlErrorKind::Unsupported(what.into()))
    }

    pub fn invalid(what: impl Into<String>) -> Self {
        Self::new(SqlErrorKind::Invalid(what.into()))
    }

    /// Attaches `span` unless a more precise position is already known.
    pub fn at(mut self, span: Span) -> Self {
        if self.location.is_none() && span.start.line > 0 {
            self.location = Some((span.start.line, span.start.column));
        }
        self
    }

    pub(crate) fn from_parser(e: ParserError, sql: &str) -> Self {
        let msg = match e {
            ParserError::TokenizerError(m) | ParserError::ParserError(m) => m,
            ParserError::RecursionLimitExceeded => "the query nests too deeply".to_string(),
        };
        // sqlparser appends " at Line: L, Column: C"; keep the message and the position apart.
        let (text, location) = match msg.rfind(" at Line: ") {
            Some(i) => {
                let pos = &msg[i + " at Line: ".len()..];
                let mut parts = pos.split(", Column: ");
                let line = parts.next().and_then(|l| l.trim().parse().ok());
                let col = parts.next().and_then(|c| c.trim().parse().ok());
                (msg[..i].to_string(), line.zip(col))
            }
            None => (msg.clone(), end_of(sql)),
        };
        Self {
            kind: SqlErrorKind::Parse(text),
            location,
        }
    }

    /// The message, then the offending line of `sql` with a caret under the position.
    pub fn render(&self, sql: &str) -> String {
        let mut out = self.to_string();
        if let Some((line, col)) = self.location {
            if let Some(text) = sql.lines().nth(line.saturating_sub(1) as usize) {
                let width = text.chars().take(col.saturating_sub(1) as usize).count();
                out.push_str(&format!("\n  {text}\n  {}^", " ".repeat(width)));
            }
        }
        out
    }
}

/// The position just past the end of `sql` (where an unexpected end of input is).
fn end_of(sql: &str) -> Option<(u64, u64)> {
    let trimmed = sql.trim_end();
    let line = trimmed.lines().count().max(1) as u64;
    let col = trimmed.lines().last().map_or(0, |l| l.chars().count()) as u64 + 1;
    Some((line, col))
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            SqlErrorKind::Parse(m) => write!(f, "syntax error: {m}")?,
            SqlErrorKind::Plan(e) => write!(f, "{e}")?,
            SqlErrorKind::TableNotFound { name, candidates } => {
                write!(f, "table {name} not found")?;
                if !candidates.is_empty() {
                    write!(f, " (did you mean {}?)", candidates.join(" or "))?;
                }
            }
            SqlErrorKind::UnknownFunction { name, candidates } => {
                write!(f, "unknown function {name}()")?;
                if !candidates.is_empty() {
                    write!(f, " (did you mean {}?)", candidates.join(" or "))?;
                }
            }
            SqlErrorKind::Unsupported(m) => write!(f, "{m} is not supported yet")?,
            SqlErrorKind::Invalid(m) => write!(f, "{m}")?,
            SqlErrorKind::Csv(e) => write!(f, "{e}")?,
        }
        if let Some((l, c)) = self.location {
            write!(f, " (line {l}, column {c})")?;
        }
        Ok(())
    }
}

impl std::error::Error for SqlError {}

impl From<PlanError> for SqlError {
    fn from(e: PlanError) -> Self {
        match e {
            PlanError::Storage(morsel_storage::StorageError::Csv(c)) => {
                SqlError::new(SqlErrorKind::Csv(c))
            }
            e => SqlError::new(SqlErrorKind::Plan(e)),
        }
    }
}

impl From<CsvError> for SqlError {
    fn from(e: CsvError) -> Self {
        SqlError::new(SqlErrorKind::Csv(Box::new(e)))
    }
}
