//! Where CSV bytes come from: a file on disk or bytes already in memory.

use std::fs::File;
use std::io::{Cursor, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::Arc;

use super::error::{CsvError, CsvErrorKind};

#[derive(Clone, Debug)]
pub enum CsvInput {
    File(PathBuf),
    Bytes { name: String, data: Arc<[u8]> },
}

impl CsvInput {
    pub fn file(path: impl Into<PathBuf>) -> Self {
        CsvInput::File(path.into())
    }

    pub fn bytes(name: impl Into<String>, data: impl Into<Arc<[u8]>>) -> Self {
        CsvInput::Bytes {
            name: name.into(),
            data: data.into(),
        }
    }

    /// The name used in error messages.
    pub fn name(&self) -> String {
        match self {
            CsvInput::File(p) => p.display().to_string(),
            CsvInput::Bytes { name, .. } => name.clone(),
        }
    }

    pub fn io_error(&self, e: std::io::Error) -> CsvError {
        CsvError::new(self.name(), CsvErrorKind::Io(e))
    }

    pub fn len(&self) -> Result<u64, CsvError> {
        match self {
            CsvInput::File(p) => std::fs::metadata(p)
                .map(|m| m.len())
                .map_err(|e| self.io_error(e)),
            CsvInput::Bytes { data, .. } => Ok(data.len() as u64),
        }
    }

    pub fn is_empty(&self) -> Result<bool, CsvError> {
        Ok(self.len()? == 0)
    }

    /// A reader positioned at byte `offset`.
    pub fn open_at(&self, offset: u64) -> Result<Box<dyn Read + Send>, CsvError> {
        match self {
            CsvInput::File(p) => {
                let mut f = File::open(p).map_err(|e| self.io_error(e))?;
                f.seek(SeekFrom::Start(offset))
                    .map_err(|e| self.io_error(e))?;
                Ok(Box::new(f))
            }
            CsvInput::Bytes { data, .. } => {
                let mut c = Cursor::new(Arc::clone(data));
                c.set_position(offset);
                Ok(Box::new(c))
            }
        }
    }

    /// Up to `len` bytes starting at `offset` (fewer at the end of the input).
    pub fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>, CsvError> {
        let mut out = Vec::with_capacity(len);
        self.open_at(offset)?
            .take(len as u64)
            .read_to_end(&mut out)
            .map_err(|e| self.io_error(e))?;
        Ok(out)
    }
}
