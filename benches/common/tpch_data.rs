//! TPC-H data as CSV files (with a header line), generated in-process with tpchgen.
//! Shared by the TPC-H tests and the TPC-H benchmark runner.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

pub const TABLES: [&str; 8] = [
    "nation", "region", "part", "supplier", "partsupp", "customer", "orders", "lineitem",
];

/// Writes the eight tables at `scale` into `dir` unless they are all there already. Each file
/// is written under a temporary name and renamed, so a reader never sees half a table.
pub fn ensure(dir: &Path, scale: f64) -> std::io::Result<()> {
    if TABLES.iter().all(|t| dir.join(format!("{t}.csv")).exists()) {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    use tpchgen::csv::*;
    use tpchgen::generators::*;
    macro_rules! table {
        ($name:literal, $gen:ident, $csv:ident) => {{
            let tmp = dir.join(concat!($name, ".csv.tmp"));
            let mut w = BufWriter::new(File::create(&tmp)?);
            writeln!(w, "{}", $csv::header())?;
            for row in $gen::new(scale, 1, 1).iter() {
                writeln!(w, "{}", $csv::new(row))?;
            }
            w.flush()?;
            std::fs::rename(&tmp, dir.join(concat!($name, ".csv")))?;
        }};
    }
    table!("nation", NationGenerator, NationCsv);
    table!("region", RegionGenerator, RegionCsv);
    table!("part", PartGenerator, PartCsv);
    table!("supplier", SupplierGenerator, SupplierCsv);
    table!("partsupp", PartSuppGenerator, PartSuppCsv);
    table!("customer", CustomerGenerator, CustomerCsv);
    table!("orders", OrderGenerator, OrderCsv);
    table!("lineitem", LineItemGenerator, LineItemCsv);
    Ok(())
}
