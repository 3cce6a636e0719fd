//! CSV reader behaviour: every option, every malformed-input class, and the block-splitting
//! property (any block size reads the same rows as reading the input whole).

use std::sync::Arc;

use morsel_storage::csv::{CsvData, CsvError, CsvInput, CsvOptions, CsvReader};
use morsel_storage::{Batch, DataType, Field, ScalarValue, Schema};

fn read(text: &str, opts: CsvOptions) -> Result<CsvData, CsvError> {
    let r = CsvReader::open(CsvInput::bytes("data.csv", text.as_bytes().to_vec()), opts)?;
    r.read_all(None)
}

fn rows(data: &CsvData) -> Vec<Vec<ScalarValue>> {
    let mut out = Vec::new();
    for b in &data.batches {
        for r in 0..b.num_rows() {
            out.push(b.columns().iter().map(|c| c.scalar_at(r)).collect());
        }
    }
    out
}

fn types(data: &CsvData) -> Vec<DataType> {
    data.schema.fields.iter().map(|f| f.data_type).collect()
}

use ScalarValue::{Boolean as B, Float64 as F, Int64 as I, Null as N};
fn s(v: &str) -> ScalarValue {
    ScalarValue::Utf8(v.into())
}

#[test]
fn header_types_nulls_and_quotes() {
    let d = read(
        "id,price,name,ok,day\n1,2.5,\"a, b\",true,2024-02-28\n2,,\"\",false,\n",
        CsvOptions::default(),
    )
    .unwrap();
    assert_eq!(d.schema.names(), vec!["id", "price", "name", "ok", "day"]);
    assert_eq!(
        types(&d),
        vec![
            DataType::Int64,
            DataType::Float64,
            DataType::Utf8,
            DataType::Boolean,
            DataType::Date32
        ]
    );
    assert_eq!(
        rows(&d)[0],
        vec![I(1), F(2.5), s("a, b"), B(true), ScalarValue::Date32(19781)]
    );
    // Empty is NULL, quoted or not (DuckDB's allow_quoted_nulls).
    assert_eq!(rows(&d)[1], vec![I(2), N, N, B(false), N]);
    // Without quoted nulls, a quoted empty field is the empty string (PostgreSQL's rule).
    let d = read(
        "id,name\n1,\"\"\n2,\n",
        CsvOptions::default().with_allow_quoted_nulls(false),
    )
    .unwrap();
    assert_eq!(rows(&d), vec![vec![I(1), s("")], vec![I(2), N]]);
}

#[test]
fn no_header_delimiter_quote_and_custom_nulls() {
    let opts = CsvOptions::default()
        .with_header(false)
        .with_delimiter(b';')
        .with_quote(Some(b'\''))
        .with_null_values(vec!["NA".into(), "-".into()]);
    let d = read("1;'x;''y'''\nNA;-\n", opts).unwrap();
    assert_eq!(d.schema.names(), vec!["column0", "column1"]);
    assert_eq!(rows(&d), vec![vec![I(1), s("x;'y'")], vec![N, N]]);
}

#[test]
fn bom_crlf_comments_skip_rows_and_embedded_newlines() {
    let text = "\u{feff}junk line\r\na,b\r\n# comment, \"odd\r\n1,\"two\r\nlines\"\r\n\r\n3,x\r\n";
    let d = read(
        text,
        CsvOptions::default().with_skip_rows(1).with_comment("#"),
    )
    .unwrap();
    assert_eq!(d.schema.names(), vec!["a", "b"]);
    assert_eq!(
        rows(&d),
        vec![vec![I(1), s("two\r\nlines")], vec![I(3), s("x")]]
    );
}

#[test]
fn n_rows_stops_early_and_ignores_later_garbage() {
    let d = read(
        "a\n1\n2\n3\nnot a number\n",
        CsvOptions::default()
            .with_n_rows(2)
            .with_column_type("a", DataType::Int64),
    )
    .unwrap();
    assert_eq!(rows(&d), vec![vec![I(1)], vec![I(2)]]);
}

#[test]
fn explicit_schema_and_type_override() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Utf8, true),
        Field::new("y", DataType::Float64, true),
    ]));
    let d = read("a,b\n007,1\n", CsvOptions::default().with_schema(schema)).unwrap();
    assert_eq!(rows(&d), vec![vec![s("007"), F(1.0)]]);
    let d = read(
        "a,b\n007,1\n",
        CsvOptions::default().with_column_type("a", DataType::Utf8),
    )
    .unwrap();
    assert_eq!(rows(&d), vec![vec![s("007"), I(1)]]);
    let e = read(
        "a,b\n1,2\n",
        CsvOptions::default().with_column_type("zz", DataType::Utf8),
    )
    .unwrap_err();
    assert!(e.to_string().contains("\"zz\""), "{e}");
}

#[test]
fn projection_decodes_only_requested_columns() {
    // Column b holds values that are not Int64 by override; reading only a and c never parses b.
    let opts = CsvOptions::default().with_column_type("b", DataType::Int64);
    let r = CsvReader::open(
        CsvInput::bytes("p.csv", b"a,b,c\n1,x,3\n4,y,6\n".to_vec()),
        opts,
    )
    .unwrap();
    let d = r.read_all(Some(&[2, 0])).unwrap();
    assert_eq!(d.schema.names(), vec!["c", "a"]);
    assert_eq!(rows(&d), vec![vec![I(3), I(1)], vec![I(6), I(4)]]);
    assert!(r.read_all(None).is_err());
}

#[test]
fn parse_error_names_file_line_column_text_and_fix() {
    let opts = CsvOptions::default().with_column_type("price", DataType::Float64);
    let e = read("id,name,price\n1,a,2.5\n2,b,12,5x\n", opts.clone()).unwrap_err();
    // A ragged line is reported as such, at its line.
    assert_eq!(e.line, Some(3));
    assert!(
        e.to_string().contains("expected 3 fields but found 4"),
        "{e}"
    );
    let e = read("id,name,price\n1,a,2.5\n2,b,\"12,5x\"\n", opts).unwrap_err();
    assert_eq!(
        e.to_string(),
        "data.csv:3: column \"price\" (3): cannot parse \"12,5x\" as Float64; to fix: override the column's type (types = {'price': 'VARCHAR'}), add \"12,5x\" to the null strings (nullstr), or skip bad rows (ignore_errors = true)"
    );
}

#[test]
fn first_error_in_file_order_wins_across_columns() {
    let opts = CsvOptions::default()
        .with_column_type("a", DataType::Int64)
        .with_column_type("b", DataType::Int64);
    let e = read("a,b\n1,2\n3,x\ny,4\n", opts).unwrap_err();
    assert_eq!(
        (e.line, e.column.clone().map(|c| c.1)),
        (Some(3), Some("b".into()))
    );
}

#[test]
fn ragged_lines_error_unless_allowed() {
    let e = read("a,b,c\n1,2,3\n4,5\n6,7,8,9\n", CsvOptions::default()).unwrap_err();
    assert_eq!(e.line, Some(3));
    assert!(e.to_string().contains("null_padding"), "{e}");
    let d = read(
        "a,b,c\n1,2,3\n4,5\n",
        CsvOptions::default().with_null_padding(true),
    )
    .unwrap();
    assert_eq!(rows(&d)[1], vec![I(4), I(5), N]);
    let d = read(
        "a,b\n1,2\n4,5,6\n",
        CsvOptions::default().with_truncate_extra_fields(true),
    )
    .unwrap();
    assert_eq!(rows(&d)[1], vec![I(4), I(5)]);
    // DuckDB was seen returning 1 row of a 4-line ragged file; we never drop rows silently.
    let e = read("a,b\n1,2\n3\n4,5,6\n7,8\n", CsvOptions::default()).unwrap_err();
    assert_eq!(e.line, Some(3));
}

#[test]
fn quoting_errors_are_reported() {
    let e = read("a,b\n1,\"open\n2,3\n", CsvOptions::default()).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("data.csv:2: column \"b\" (2): quoted field is never closed"),
        "{e}"
    );
    let e = read("a,b\n1,\"x\"y\n", CsvOptions::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains("unexpected 'y' after a closing quote"),
        "{e}"
    );
    let e = read("a,b\n1,x\"y\n", CsvOptions::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains("quote character inside an unquoted field"),
        "{e}"
    );
    // With quoting disabled the same text is fine.
    let d = read("a,b\n1,x\"y\n", CsvOptions::default().with_quote(None)).unwrap();
    assert_eq!(rows(&d), vec![vec![I(1), s("x\"y")]]);
}

#[test]
fn invalid_utf8_is_an_error() {
    let r = CsvReader::open(
        CsvInput::bytes("u.csv", b"a\nok\n\xff\xfe\n".to_vec()),
        CsvOptions::default(),
    )
    .unwrap();
    let e = r.read_all(None).unwrap_err();
    assert_eq!(e.line, Some(3));
    assert!(e.to_string().contains("UTF-8"), "{e}");
}

#[test]
fn ignore_errors_skips_and_reports_rows() {
    let opts = CsvOptions::default()
        .with_ignore_errors(true)
        .with_column_type("n", DataType::Int64);
    let d = read("n,t\n1,a\nx,b\n3\n4,\"c\"d\n5,e\n", opts).unwrap();
    assert_eq!(rows(&d), vec![vec![I(1), s("a")], vec![I(5), s("e")]]);
    let lines: Vec<u64> = d.skipped.iter().map(|r| r.line).collect();
    assert_eq!(lines, vec![3, 4, 5]);
    assert!(d.skipped[0].reason.contains("cannot parse \"x\" as Int64"));
    assert!(d.skipped[1]
        .reason
        .contains("expected 2 fields but found 1"));
}

#[test]
fn empty_inputs() {
    assert!(read("", CsvOptions::default()).is_err());
    let d = read("a,b\n", CsvOptions::default()).unwrap();
    assert_eq!(d.schema.names(), vec!["a", "b"]);
    assert!(rows(&d).is_empty());
    let d = read("a,b", CsvOptions::default()).unwrap();
    assert!(rows(&d).is_empty());
}

#[test]
fn duplicate_and_blank_header_names_are_made_unique() {
    let d = read("a,a,,a\n1,2,3,4\n", CsvOptions::default()).unwrap();
    assert_eq!(d.schema.names(), vec!["a", "a_1", "column2", "a_2"]);
}

#[test]
fn inference_report_says_why() {
    let r = CsvReader::open(
        CsvInput::bytes("t.csv", b"a,b\n1,x\n2.5,y\n".to_vec()),
        CsvOptions::default(),
    )
    .unwrap();
    let text = r.inference().to_string();
    assert!(text.contains("a: Float64 (all 2 sampled values fit, e.g. \"1\" at line 2; not Int64 because of \"2.5\" at line 3)"), "{text}");
}

/// A tiny deterministic generator (xorshift) so the property test needs no extra crate.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_csv(rng: &mut Rng) -> String {
    let cols = 1 + rng.below(4) as usize;
    let mut out = (0..cols)
        .map(|i| format!("c{i}"))
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    for _ in 0..rng.below(40) {
        let fields: Vec<String> = (0..cols)
            .map(|_| match rng.below(6) {
                0 => String::new(),
                1 => format!("{}", rng.below(1000)),
                2 => "\"q,\"\"x\"\"\ny\"".to_string(),
                3 => "\"\"".to_string(),
                4 => format!("w{}", rng.below(50)),
                _ => "\"a\r\nb\"".to_string(),
            })
            .collect();
        out.push_str(&fields.join(","));
        out.push_str(if rng.below(3) == 0 { "\r\n" } else { "\n" });
    }
    if rng.below(2) == 0 {
        out.pop();
    }
    out
}

fn all_rows(batches: &[Batch]) -> Vec<Vec<ScalarValue>> {
    batches
        .iter()
        .flat_map(|b| {
            (0..b.num_rows()).map(move |r| b.columns().iter().map(|c| c.scalar_at(r)).collect())
        })
        .collect()
}

#[test]
fn any_block_size_reads_the_same_rows() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..300 {
        let text = random_csv(&mut rng);
        let utf8: Vec<(String, DataType)> =
            (0..4).map(|i| (format!("c{i}"), DataType::Utf8)).collect();
        let mut opts = CsvOptions::default();
        let ncols = text.lines().next().unwrap().split(',').count();
        opts.column_types = utf8.into_iter().take(ncols).collect();
        let whole = read(&text, opts.clone().with_block_size(1 << 30)).unwrap();
        let expect = all_rows(&whole.batches);
        // Default options cut blocks by quote parity; a comment prefix makes the splitter
        // tokenize instead. Both must agree with reading the input whole.
        for opts in [opts.clone(), opts.clone().with_comment("#")] {
            for bs in [1, 2, 3, 7, 16, 64, 1000] {
                let part = read(&text, opts.clone().with_block_size(bs)).unwrap();
                assert_eq!(
                    all_rows(&part.batches),
                    expect,
                    "block size {bs} on {text:?}"
                );
            }
        }
    }
}

#[test]
fn no_byte_sequence_panics() {
    let mut rng = Rng(12345);
    let alphabet = b"a1,\"\n\r;#\xff.-";
    for _ in 0..3000 {
        let len = rng.below(60) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
            .collect();
        for opts in [
            CsvOptions::default(),
            CsvOptions::default()
                .with_ignore_errors(true)
                .with_comment("#")
                .with_block_size(4),
        ] {
            if let Ok(r) = CsvReader::open(CsvInput::bytes("f.csv", bytes.clone()), opts) {
                let _ = r.read_all(None);
            }
        }
    }
}

/// The inference sample keeps the values of number and date columns, so the planner can
/// estimate how many rows a comparison keeps.
#[test]
fn the_sample_estimates_range_fractions() {
    let mut text = String::from("n,d,s\n");
    for i in 0..1000 {
        text.push_str(&format!("{i},2024-01-{:02},x{i}\n", 1 + i % 28));
    }
    let r = CsvReader::open(
        CsvInput::bytes("t.csv", text.into_bytes()),
        CsvOptions::default(),
    )
    .unwrap();
    let below_100 = r.sample_fraction(0, |x| x < 100.0).unwrap();
    assert!((below_100 - 0.1).abs() < 0.01, "{below_100}");
    // A predicate no sampled value meets is rare, not impossible.
    assert!(r.sample_fraction(0, |x| x < -5.0).unwrap() > 0.0);
    // Dates are held in days: 2024-01-01 .. 2024-01-14 is half of each 28-day cycle.
    let jan1 = 19723.0;
    let first_half = r.sample_fraction(1, |x| x < jan1 + 14.0).unwrap();
    assert!((first_half - 0.5).abs() < 0.02, "{first_half}");
    // Text has no sampled points.
    assert_eq!(r.sample_fraction(2, |_| true), None);
}

/// An error's line is the file's at any block size, also where the splitter numbers no lines
/// (blocks cut by quote parity: the line is then counted from the data's start on error), and
/// from a file as from bytes in memory. Quoted fields hold line feeds, so lines and records
/// differ, and skipped leading lines move the data's first line.
#[test]
fn an_errors_line_is_the_files_at_any_block_size() {
    let mut rng = Rng(0x11E5);
    let dir = std::env::temp_dir().join(format!("morsel-lines-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for case in 0..120 {
        let skip = rng.below(3) as usize;
        let mut text = "junk\n".repeat(skip) + "a,b\n";
        let mut line = 2 + skip as u64;
        let bad_at = rng.below(60);
        let mut want = None;
        for r in 0..60 {
            if r == bad_at {
                want = Some(line);
                text.push_str("oops,1\n");
                line += 1;
                continue;
            }
            if rng.below(5) == 0 {
                text.push_str(&format!("{r},\"two\nlines\"\n"));
                line += 2;
            } else {
                text.push_str(&format!("{r},x\n"));
                line += 1;
            }
        }
        let opts = CsvOptions::default()
            .with_skip_rows(skip)
            .with_column_type("a", DataType::Int64);
        let path = dir.join(format!("{case}.csv"));
        std::fs::write(&path, &text).unwrap();
        for bs in [1, 7, 64, 1000, 1 << 30] {
            for input in [
                CsvInput::bytes("data.csv", text.as_bytes().to_vec()),
                CsvInput::file(&path),
            ] {
                let e = CsvReader::open(input, opts.clone().with_block_size(bs))
                    .and_then(|r| r.read_all(None))
                    .unwrap_err();
                assert_eq!(e.line, want, "block size {bs}: {e} in {text:?}");
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
