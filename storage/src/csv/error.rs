//! CSV errors: where (file, line, column) and what, plus what the user can do about it.

use std::fmt;

use crate::datatype::DataType;

#[derive(Debug)]
pub struct CsvError {
    pub file: String,
    /// 1-based physical line where the offending record starts.
    pub line: Option<u64>,
    /// 0-based field index and column name.
    pub column: Option<(usize, String)>,
    pub kind: CsvErrorKind,
}

#[derive(Debug)]
pub enum CsvErrorKind {
    Parse {
        text: String,
        data_type: DataType,
    },
    TooFewFields {
        expected: usize,
        found: usize,
    },
    TooManyFields {
        expected: usize,
        found: usize,
    },
    UnterminatedQuote,
    CharAfterQuote {
        found: char,
    },
    StrayQuote {
        text: String,
    },
    InvalidUtf8,
    Empty,
    SchemaMismatch {
        expected: usize,
        found: usize,
    },
    UnknownColumn {
        name: String,
        available: Vec<String>,
    },
    Io(std::io::Error),
}

impl CsvError {
    pub fn new(file: impl Into<String>, kind: CsvErrorKind) -> Self {
        Self {
            file: file.into(),
            line: None,
            column: None,
            kind,
        }
    }

    pub fn at_line(mut self, line: u64) -> Self {
        self.line = Some(line);
        self
    }

    pub fn in_column(mut self, index: usize, name: impl Into<String>) -> Self {
        self.column = Some((index, name.into()));
        self
    }

    /// A short reason, without position (used for skipped-row reports).
    pub fn reason(&self) -> String {
        match &self.kind {
            CsvErrorKind::Parse { text, data_type } => {
                format!("cannot parse {text:?} as {data_type}")
            }
            CsvErrorKind::TooFewFields { expected, found } => {
                format!("expected {expected} fields but found {found}")
            }
            CsvErrorKind::TooManyFields { expected, found } => {
                format!("expected {expected} fields but found {found}")
            }
            CsvErrorKind::UnterminatedQuote => "quoted field is never closed".into(),
            CsvErrorKind::CharAfterQuote { found } => {
                format!("unexpected {found:?} after a closing quote")
            }
            CsvErrorKind::StrayQuote { text } => {
                format!("quote character inside an unquoted field {text:?}")
            }
            CsvErrorKind::InvalidUtf8 => "text is not valid UTF-8".into(),
            CsvErrorKind::Empty => "the file holds no records, so it has no columns to read".into(),
            CsvErrorKind::SchemaMismatch { expected, found } => {
                format!("the schema has {expected} columns but the file has {found}")
            }
            CsvErrorKind::UnknownColumn { name, available } => {
                format!(
                    "type override names column {name:?}, which is not in the file (columns: {})",
                    available.join(", ")
                )
            }
            CsvErrorKind::Io(e) => e.to_string(),
        }
    }

    fn hint(&self) -> Option<String> {
        let col = self
            .column
            .as_ref()
            .map(|(_, n)| n.as_str())
            .unwrap_or("column");
        match &self.kind {
            CsvErrorKind::Parse { text, .. } => Some(format!(
                "override the column's type (types = {{'{col}': 'VARCHAR'}}), add {text:?} to the null strings (nullstr), or skip bad rows (ignore_errors = true)"
            )),
            CsvErrorKind::TooFewFields { .. } => Some(
                "fill missing fields with NULL (null_padding = true) or skip bad rows (ignore_errors = true)".into(),
            ),
            CsvErrorKind::TooManyFields { .. } => Some(
                "drop the extra fields (truncate_extra_fields = true), check the delimiter, or skip bad rows (ignore_errors = true)".into(),
            ),
            CsvErrorKind::UnterminatedQuote
            | CsvErrorKind::CharAfterQuote { .. }
            | CsvErrorKind::StrayQuote { .. } => Some(
                "check the quote character (quote = '\"'), disable quoting (quote = ''), or skip bad rows (ignore_errors = true)".into(),
            ),
            CsvErrorKind::InvalidUtf8 => Some("re-encode the file as UTF-8".into()),
            _ => None,
        }
    }
}

impl fmt::Display for CsvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        f.write_str(": ")?;
        if let Some((i, name)) = &self.column {
            write!(f, "column {name:?} ({}): ", i + 1)?;
        }
        f.write_str(&self.reason())?;
        if let Some(h) = self.hint() {
            write!(f, "; to fix: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CsvError {}
