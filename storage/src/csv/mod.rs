//! CSV reading and writing.
//!
//! Reading happens in three steps, each in its own module:
//! 1. [`reader`] reads the head of the input (BOM, `skip_rows`, header) and fixes the schema,
//!    inferring types from samples taken at several places in the file ([`infer`]).
//! 2. [`stretch`] cuts the rest of the input into byte-range blocks that begin at record
//!    boundaries, read by all workers at once; [`split`] does, one block after another,
//!    where records must be counted in order (comment lines, `ignore_errors`, `n_rows`).
//!    Boundaries depend only on the bytes and the block size, never on how many workers
//!    decode, so a block is a morsel: it can be decoded anywhere, in any order.
//! 3. [`decode`] tokenizes a block and parses only the projected columns, straight into
//!    column builders, reporting malformed input with file, line and column. A block of the
//!    usual shape is tokenized at once ([`separators`]); any other, record by record
//!    ([`tokenize`]).
//!
//! Memory stays bounded by the block size (plus the longest record), not the file size.

mod decode;
mod error;
pub mod glob;
mod infer;
mod input;
mod options;
mod reader;
mod separators;
mod split;
mod stretch;
mod tokenize;
mod writer;

pub use decode::{BlockDecoder, DecodeFilter, DecodedBlock, FilteredDecodeError, SkippedRow};
pub use error::{CsvError, CsvErrorKind};
pub use infer::{ColumnInference, InferenceReport};
pub use input::CsvInput;
pub use options::CsvOptions;
pub use reader::{CsvData, CsvReader, DataSplitter};
pub use split::{Block, BlockSplitter};
pub use stretch::StretchSplitter;
pub use writer::{format_float, write_csv, CsvWriteOptions};
