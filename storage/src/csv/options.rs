//! Options of the CSV reader. Every field has the default a DuckDB or Polars user expects.

use crate::datatype::{DataType, SchemaRef};

#[derive(Clone, Debug, PartialEq)]
pub struct CsvOptions {
    /// The first record (after `skip_rows`) holds the column names.
    pub has_header: bool,
    pub delimiter: u8,
    /// Quote character; inside quotes a doubled quote stands for one. `None` disables quoting.
    pub quote: Option<u8>,
    /// Unquoted field texts read as NULL (quoted fields are never NULL).
    pub null_values: Vec<String>,
    /// Lines starting with this prefix are skipped.
    pub comment: Option<String>,
    /// Physical lines skipped at the top of the file, before the header.
    pub skip_rows: usize,
    /// Read at most this many records.
    pub n_rows: Option<usize>,
    /// The full schema (names and types); disables inference.
    pub schema: Option<SchemaRef>,
    /// Per-column type overrides applied on top of inference.
    pub column_types: Vec<(String, DataType)>,
    /// Records sampled from the head for type inference (more are sampled further in).
    pub infer_rows: usize,
    /// A record with too few fields gets NULLs for the missing ones instead of an error.
    pub null_padding: bool,
    /// A record with too many fields is cut to the schema instead of an error.
    pub truncate_extra_fields: bool,
    /// Records that fail to parse are skipped (and counted, with line and reason).
    pub ignore_errors: bool,
    /// A quoted field that matches a null string (`""` with the default) is NULL too, as in
    /// DuckDB; off, it is the text (PostgreSQL's rule), so empty strings survive.
    pub allow_quoted_nulls: bool,
    /// Target bytes per block (morsel). Boundaries depend only on this and the data.
    pub block_size: usize,
}

impl Default for CsvOptions {
    fn default() -> Self {
        Self {
            has_header: true,
            delimiter: b',',
            quote: Some(b'"'),
            null_values: vec![String::new()],
            comment: None,
            skip_rows: 0,
            n_rows: None,
            schema: None,
            column_types: Vec::new(),
            infer_rows: 2048,
            null_padding: false,
            truncate_extra_fields: false,
            ignore_errors: false,
            allow_quoted_nulls: true,
            block_size: 1 << 20,
        }
    }
}

impl CsvOptions {
    pub fn with_header(mut self, v: bool) -> Self {
        self.has_header = v;
        self
    }

    pub fn with_delimiter(mut self, d: u8) -> Self {
        self.delimiter = d;
        self
    }

    pub fn with_quote(mut self, q: Option<u8>) -> Self {
        self.quote = q;
        self
    }

    pub fn with_null_values(mut self, v: Vec<String>) -> Self {
        self.null_values = v;
        self
    }

    pub fn with_comment(mut self, prefix: impl Into<String>) -> Self {
        self.comment = Some(prefix.into());
        self
    }

    pub fn with_skip_rows(mut self, n: usize) -> Self {
        self.skip_rows = n;
        self
    }

    pub fn with_n_rows(mut self, n: usize) -> Self {
        self.n_rows = Some(n);
        self
    }

    pub fn with_schema(mut self, schema: SchemaRef) -> Self {
        self.schema = Some(schema);
        self
    }

    pub fn with_column_type(mut self, name: impl Into<String>, ty: DataType) -> Self {
        self.column_types.push((name.into(), ty));
        self
    }

    pub fn with_null_padding(mut self, v: bool) -> Self {
        self.null_padding = v;
        self
    }

    pub fn with_truncate_extra_fields(mut self, v: bool) -> Self {
        self.truncate_extra_fields = v;
        self
    }

    pub fn with_ignore_errors(mut self, v: bool) -> Self {
        self.ignore_errors = v;
        self
    }

    pub fn with_allow_quoted_nulls(mut self, v: bool) -> Self {
        self.allow_quoted_nulls = v;
        self
    }

    pub fn with_block_size(mut self, n: usize) -> Self {
        self.block_size = n.max(1);
        self
    }
}
