//! UNION ALL as one source: each input's morsels in turn, each run through the input's own
//! operators as a worker reads it, numbered on after the inputs before. Nothing is collected:
//! the union's pipeline streams its inputs as a scan streams its file, and a limit above it
//! stops them the same way.

use std::sync::Mutex;

use morsel_storage::{Batch, SchemaRef};

use crate::context::{ExecContext, ScanMetrics};
use crate::error::ExecResult;
use crate::scheduler::{run_operators, Morsel, MorselData, Operator, Source};

/// One input of a union: its source and the streaming operators over it.
pub struct UnionInput {
    pub source: Box<dyn Source>,
    pub operators: Vec<Box<dyn Operator>>,
}

pub struct UnionSource {
    inputs: Vec<UnionInput>,
    /// The union's schema (its first input's names), given to every input's batches.
    schema: SchemaRef,
    at: Mutex<At>,
}

/// The input morsels are taken from, and how many the inputs before it numbered.
#[derive(Clone, Copy)]
struct At {
    input: usize,
    base: u64,
}

impl UnionSource {
    pub fn new(inputs: Vec<UnionInput>, schema: SchemaRef) -> Self {
        Self {
            inputs,
            schema,
            at: Mutex::new(At { input: 0, base: 0 }),
        }
    }

    fn at(&self) -> std::sync::MutexGuard<'_, At> {
        self.at.lock().expect("union cursor")
    }
}

impl Source for UnionSource {
    fn name(&self) -> String {
        let names: Vec<String> = self.inputs.iter().map(|i| i.source.name()).collect();
        format!("union of {}", names.join(", "))
    }

    fn morsel_bytes(&self, morsel: &Morsel) -> u64 {
        match &morsel.data {
            MorselData::Union { input, morsel } => self.inputs[*input].source.morsel_bytes(morsel),
            _ => 0,
        }
    }

    fn scan_metrics(&self) -> Option<ScanMetrics> {
        let mut all = self.inputs.iter().filter_map(|i| i.source.scan_metrics());
        let first = all.next()?;
        Some(all.fold(first, |mut sum, m| {
            sum.read_in_parallel &= m.read_in_parallel;
            sum.rows_read += m.rows_read;
            sum.io_ns += m.io_ns;
            sum.split_ns += m.split_ns;
            sum.tokenize_ns += m.tokenize_ns;
            sum.decode_ns += m.decode_ns;
            sum.record_by_record_blocks += m.record_by_record_blocks;
            sum.filter_ns = match (sum.filter_ns, m.filter_ns) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
            };
            sum
        }))
    }

    fn morsel_count(&self) -> Option<usize> {
        self.inputs.iter().map(|i| i.source.morsel_count()).sum()
    }

    fn next_morsel(&self) -> ExecResult<Option<Morsel>> {
        loop {
            let At { input, base } = *self.at();
            let Some(from) = self.inputs.get(input) else {
                return Ok(None);
            };
            // Taken without the union's lock, so that inputs that read in parallel (CSV
            // stretches) still do.
            match from.source.next_morsel()? {
                Some(morsel) => {
                    return Ok(Some(Morsel {
                        seq: base + morsel.seq,
                        data: MorselData::Union {
                            input,
                            morsel: Box::new(morsel),
                        },
                    }));
                }
                None => {
                    // This input is done: every morsel it will hand out has its number.
                    let mut at = self.at();
                    if at.input == input {
                        at.base += from.source.handed_out();
                        at.input += 1;
                    }
                }
            }
        }
    }

    fn handed_out(&self) -> u64 {
        let at = *self.at();
        at.base
            + self
                .inputs
                .get(at.input)
                .map_or(0, |i| i.source.handed_out())
    }

    fn read(&self, morsel: Morsel, ctx: &ExecContext) -> ExecResult<Vec<Batch>> {
        let MorselData::Union { input, morsel } = morsel.data else {
            unreachable!("a union hands out its inputs' morsels only");
        };
        let from = &self.inputs[input];
        let mut out = Vec::new();
        for batch in from.source.read(*morsel, ctx)? {
            let batch = run_operators(&from.operators, batch, false, |_, _, _| {})?.gather()?;
            if batch.num_rows() > 0 {
                let rows = batch.num_rows();
                out.push(Batch::try_new(
                    self.schema.clone(),
                    batch.into_columns(),
                    rows,
                )?);
            }
        }
        Ok(out)
    }
}
