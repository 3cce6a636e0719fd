//! [`Batch`]: a schema, one column per field, and a row count (the unit operators exchange).

use crate::column::Column;
use crate::datatype::SchemaRef;
use crate::error::{StorageError, StorageResult};

#[derive(Clone, Debug)]
pub struct Batch {
    schema: SchemaRef,
    columns: Vec<Column>,
    rows: usize,
}

impl Batch {
    /// Checks that every column matches its field's type and the row count.
    pub fn try_new(schema: SchemaRef, columns: Vec<Column>, rows: usize) -> StorageResult<Self> {
        if columns.len() != schema.len() {
            return Err(StorageError::ColumnCount {
                expected: schema.len(),
                actual: columns.len(),
            });
        }
        for (index, (c, f)) in columns.iter().zip(&schema.fields).enumerate() {
            if c.len() != rows {
                return Err(StorageError::LengthMismatch {
                    index,
                    expected: rows,
                    actual: c.len(),
                });
            }
            if c.data_type() != f.data_type {
                return Err(StorageError::TypeMismatch {
                    index,
                    name: f.name.clone(),
                    expected: f.data_type,
                    actual: c.data_type(),
                });
            }
        }
        Ok(Self {
            schema,
            columns,
            rows,
        })
    }

    pub fn empty(schema: SchemaRef) -> Self {
        let columns = schema
            .fields
            .iter()
            .map(|f| Column::new_null(f.data_type, 0))
            .collect();
        Self {
            schema,
            columns,
            rows: 0,
        }
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    pub fn column(&self, i: usize) -> &Column {
        &self.columns[i]
    }

    pub fn into_columns(self) -> Vec<Column> {
        self.columns
    }

    pub fn num_rows(&self) -> usize {
        self.rows
    }

    pub fn num_columns(&self) -> usize {
        self.columns.len()
    }

    /// A zero-copy window of rows.
    pub fn slice(&self, offset: usize, len: usize) -> Batch {
        assert!(offset + len <= self.rows, "batch slice out of bounds");
        Batch {
            schema: self.schema.clone(),
            columns: self.columns.iter().map(|c| c.slice(offset, len)).collect(),
            rows: len,
        }
    }

    /// Concatenates batches of the same schema (empty input gives an empty batch).
    pub fn concat(schema: SchemaRef, batches: &[Batch]) -> StorageResult<Batch> {
        let rows: usize = batches.iter().map(|b| b.rows).sum();
        if batches.len() == 1 {
            return Ok(batches[0].clone());
        }
        if batches.is_empty() {
            return Ok(Batch::empty(schema));
        }
        let columns = (0..schema.len())
            .map(|i| {
                let parts: Vec<Column> = batches.iter().map(|b| b.columns[i].clone()).collect();
                Column::concat(&parts)
            })
            .collect::<StorageResult<Vec<_>>>()?;
        Batch::try_new(schema, columns, rows)
    }

    pub fn allocated_bytes(&self) -> usize {
        self.columns.iter().map(Column::allocated_bytes).sum()
    }

    /// Bytes of the values this batch shows (see [`Column::window_bytes`]).
    pub fn window_bytes(&self) -> usize {
        self.columns.iter().map(Column::window_bytes).sum()
    }
}
