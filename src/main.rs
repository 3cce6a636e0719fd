//! The `morsel` command line: run SQL over CSV files and print the result.

use std::io::{IsTerminal, Read, Write};
use std::ops::ControlFlow;
use std::process::ExitCode;

use morsel::{QueryResult, Session};
use morsel_storage::csv::{write_csv, CsvWriteOptions};

const USAGE: &str = "\
usage: morsel [OPTIONS] [QUERY]

Runs SQL over CSV files, e.g.  morsel \"SELECT count(*) FROM 'data.csv'\"
Several ;-separated statements run in order; the last result is printed.
Without QUERY or --file, the query is read from standard input.

options:
  -f, --file FILE        run the statements in FILE
      --format FORMAT    table (default), csv or json
      --timer            print each statement's run time to standard error
  -t, --threads N        worker threads (default: MORSEL_THREADS or all cores)
  -h, --help             show this help
  -V, --version          show the version";

#[derive(Clone, Copy, PartialEq)]
enum Format {
    Table,
    Csv,
    Json,
}

struct Args {
    query: Option<String>,
    file: Option<String>,
    format: Format,
    threads: Option<usize>,
    timer: bool,
}

fn parse_args() -> Result<Option<Args>, String> {
    let mut args = Args {
        query: None,
        file: None,
        format: Format::Table,
        threads: None,
        timer: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(None);
            }
            "-V" | "--version" => {
                println!("morsel {}", env!("CARGO_PKG_VERSION"));
                return Ok(None);
            }
            "-f" | "--file" => args.file = Some(value("--file")?),
            "--timer" => args.timer = true,
            "--format" => {
                args.format = match value("--format")?.as_str() {
                    "table" => Format::Table,
                    "csv" => Format::Csv,
                    "json" => Format::Json,
                    other => {
                        return Err(format!("unknown format {other:?}; use table, csv or json"))
                    }
                }
            }
            "-t" | "--threads" => {
                let v = value("--threads")?;
                args.threads = Some(
                    v.parse()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| format!("--threads needs a positive number, got {v:?}"))?,
                );
            }
            s if s.starts_with('-') && s.len() > 1 => {
                return Err(format!("unknown option {s}; see --help"))
            }
            _ if args.query.is_some() => {
                return Err("give one query (quote it), or use --file".into())
            }
            _ => args.query = Some(a),
        }
    }
    Ok(Some(args))
}

fn run() -> Result<(), String> {
    let Some(args) = parse_args()? else {
        return Ok(());
    };
    let sql = match (&args.query, &args.file) {
        (Some(_), Some(_)) => return Err("give a query or --file, not both".into()),
        (Some(q), None) => q.clone(),
        (None, Some(f)) => std::fs::read_to_string(f).map_err(|e| format!("{f}: {e}"))?,
        (None, None) => {
            if std::io::stdin().is_terminal() {
                eprintln!("reading SQL from standard input (end with Ctrl-D); see --help");
            }
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| format!("reading standard input: {e}"))?;
            s
        }
    };
    let session = match args.threads {
        Some(n) => Session::with_threads(n),
        None => Session::new(),
    };
    // Each result is printed as its statement finishes, so a failing statement leaves the
    // ones before it printed (and timed) before its error.
    let mut printed = Ok(());
    session
        .execute_each(&sql, |done| {
            if args.timer {
                // Bind, plan and run; printing is not included.
                eprintln!(
                    "Run Time: statement {} of {}: {:.3} ms",
                    done.index + 1,
                    done.of,
                    done.took.as_secs_f64() * 1e3
                );
            }
            // Statements without output (CREATE, DROP) print nothing, unless last.
            if !done.result.schema().is_empty() || done.index + 1 == done.of {
                printed = print_result(&done.result, args.format);
            }
            match printed {
                Ok(()) => ControlFlow::Continue(()),
                Err(_) => ControlFlow::Break(()),
            }
        })
        .map_err(|e| e.to_string())?;
    printed
}

fn print_result(result: &QueryResult, format: Format) -> Result<(), String> {
    let skipped = result.skipped_rows();
    if !skipped.is_empty() {
        eprintln!(
            "note: skipped {} malformed CSV record(s) (ignore_errors):",
            skipped.len()
        );
        for s in skipped.iter().take(5) {
            eprintln!("  {}:{}: {}", s.file, s.line, s.reason);
        }
        if skipped.len() > 5 {
            eprintln!("  ... and {} more", skipped.len() - 5);
        }
    }
    if result.schema().is_empty() {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    let written = match format {
        Format::Table => {
            let mut text = result.to_string();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            out.write_all(text.as_bytes())
        }
        Format::Json => {
            out.write_all(morsel::render_json(result.schema(), result.batches()).as_bytes())
        }
        Format::Csv => write_csv(
            &mut out,
            result.schema(),
            result.batches(),
            &CsvWriteOptions::default(),
        ),
    };
    match written.and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        // A closed pipe (`| head`) is not an error worth reporting.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(format!("writing the result: {e}")),
    }
}

fn main() -> ExitCode {
    morsel::allocator::retain_freed_memory();
    // A panic inside the engine comes back as that statement's internal error (printed
    // below); the default hook's second report is kept for RUST_BACKTRACE runs.
    if std::env::var_os("RUST_BACKTRACE").is_none() {
        std::panic::set_hook(Box::new(|_| {}));
    }
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", e.replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}
