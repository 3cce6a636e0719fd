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

    /// The input opened once for reads at any offset, from any thread.
    pub(crate) fn positional(&self) -> Result<PositionalInput, CsvError> {
        Ok(match self {
            CsvInput::File(p) => {
                PositionalInput::File(File::open(p).map_err(|e| self.io_error(e))?)
            }
            CsvInput::Bytes { data, .. } => PositionalInput::Bytes(Arc::clone(data)),
        })
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

/// An open input that many workers read at once, each at its own offset (no shared cursor).
#[derive(Debug)]
pub(crate) enum PositionalInput {
    File(File),
    Bytes(Arc<[u8]>),
}

impl PositionalInput {
    /// Fills `buf` from byte `offset` on; fewer bytes (the count returned) at the end.
    pub(crate) fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            PositionalInput::File(f) => {
                let mut filled = 0;
                while filled < buf.len() {
                    match read_file_at(f, &mut buf[filled..], offset + filled as u64) {
                        Ok(0) => break,
                        Ok(n) => filled += n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(filled)
            }
            PositionalInput::Bytes(data) => {
                let from = usize::try_from(offset).map_or(data.len(), |o| o.min(data.len()));
                let n = buf.len().min(data.len() - from);
                buf[..n].copy_from_slice(&data[from..from + n]);
                Ok(n)
            }
        }
    }
}

#[cfg(unix)]
fn read_file_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(f, buf, offset)
}

#[cfg(windows)]
fn read_file_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(f, buf, offset)
}
