//! An order-sensitive checksum of a query result (FNV-1a over every cell; floats by their
//! bits), so two runs can be compared exactly without keeping their results.

use morsel::{QueryResult, ScalarValue};

pub fn checksum(r: &QueryResult) -> u64 {
    checksum_rows(r.rows())
}

/// The checksum of rows given as scalars (what an oracle computes).
pub fn checksum_rows(rows: impl IntoIterator<Item = Vec<ScalarValue>>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= *b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for row in rows {
        for v in row {
            match v {
                ScalarValue::Null => eat(&[0]),
                ScalarValue::Float64(v) => eat(&v.to_bits().to_le_bytes()),
                ScalarValue::Int64(v) | ScalarValue::Timestamp(v) => eat(&v.to_le_bytes()),
                ScalarValue::Int32(v) | ScalarValue::Date32(v) => eat(&v.to_le_bytes()),
                ScalarValue::Boolean(v) => eat(&[2 + v as u8]),
                ScalarValue::Utf8(s) => {
                    eat(&(s.len() as u64).to_le_bytes());
                    eat(s.as_bytes());
                }
            }
        }
    }
    h
}
