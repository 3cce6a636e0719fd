//! Elementwise fusion: a tree of arithmetic, comparison, boolean, IS NULL, widening-cast and
//! CASE nodes over numeric, date and boolean values compiles into one straight-line program.
//!
//! The program runs over a batch in chunks of [`CHUNK`] rows: every instruction fills its
//! own chunk-sized register (a plain `&[T]` loop the compiler vectorizes), so intermediates
//! stay in L1 cache and only the final result is written out at batch size. Instruction `i`
//! writes register `i` (single assignment). Subtrees the program cannot express (strings,
//! LIKE, functions) are evaluated first by the ordinary kernels and read as inputs, so one
//! unfusable leaf does not stop the tree around it from fusing.
//!
//! Semantics are exactly the kernels' (the result is bit-identical, tested in
//! `tests::fused_matches_kernels`): checked integer arithmetic (an overflow or a zero divisor
//! on a valid row is an error), IEEE floats, the float order of `compare::cmp_f64`, SQL
//! three-valued AND/OR, and CASE taking the first WHEN that is true.

// The loops walk several equal-length chunk slices in lockstep; `for j in 0..n` over all of
// them is the plain shape LLVM vectorizes, clearer here than zipped iterators.
#![allow(clippy::needless_range_loop)]

use std::cmp::Ordering;
use std::fmt;

use morsel_planner::BinaryOp;
use morsel_storage::{Batch, Bitmap, BooleanColumn, Buffer, Column, DataType, PrimitiveColumn};
use morsel_storage::{ScalarValue, Schema};

use super::PhysExpr;
use crate::error::{ExecError, ExecResult};
use crate::kernels::arith::float_zip;
use crate::kernels::compare::with_f64_order;

/// Rows per chunk: 8 KiB per 64-bit register, so a dozen registers fit in L1.
pub const CHUNK: usize = 1024;

/// What a register holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    F64,
    I64,
    /// INTEGER and DATE values.
    I32,
    Bool,
}

impl Kind {
    fn of(ty: DataType) -> Option<Kind> {
        Some(match ty {
            DataType::Float64 => Kind::F64,
            DataType::Int64 | DataType::Timestamp => Kind::I64,
            DataType::Int32 | DataType::Date32 => Kind::I32,
            DataType::Boolean => Kind::Bool,
            DataType::Utf8 | DataType::Null => return None,
        })
    }
}

#[derive(Clone, Debug)]
enum Instr {
    /// A column of the batch.
    Load(usize),
    /// An input evaluated by the kernels before the chunk loop.
    Input(usize),
    Const(ScalarValue),
    Arith(BinaryOp, usize, usize),
    Cmp(BinaryOp, usize, usize),
    And(usize, usize),
    Or(usize, usize),
    Not(usize),
    Neg(usize),
    IsNull(usize, bool),
    /// A widening cast to the instruction's kind.
    Cast(usize),
    Case(Vec<(usize, usize)>, Option<usize>),
}

impl Instr {
    /// Instructions that compute (not loads or constants).
    fn computes(&self) -> bool {
        !matches!(self, Instr::Load(_) | Instr::Input(_) | Instr::Const(_))
    }

    /// Whether the instruction reads register `r`.
    fn reads(&self, r: usize) -> bool {
        match self {
            Instr::Load(_) | Instr::Input(_) | Instr::Const(_) => false,
            Instr::Arith(_, a, b) | Instr::Cmp(_, a, b) | Instr::And(a, b) | Instr::Or(a, b) => {
                *a == r || *b == r
            }
            Instr::Not(a) | Instr::Neg(a) | Instr::IsNull(a, _) | Instr::Cast(a) => *a == r,
            Instr::Case(branches, otherwise) => {
                branches.iter().any(|&(w, t)| w == r || t == r) || *otherwise == Some(r)
            }
        }
    }
}

/// A compiled elementwise program.
#[derive(Clone, Debug)]
pub struct FusedProgram {
    instrs: Vec<Instr>,
    kinds: Vec<Kind>,
    /// By register: whether it loads a DOUBLE column that only arithmetic reads, which
    /// then reads each chunk where the column holds it, not from a copy in the register
    /// (the copies were most of suite `arithmetic_chain`'s samples, as `memmove`).
    in_place: Vec<bool>,
    inputs: Vec<PhysExpr>,
    out_type: DataType,
    /// Column names for display.
    names: Vec<String>,
    /// The tree this program computes, for the precise evaluation (a CASE branch only at
    /// the rows that reach it), which a program cannot do.
    plain: PhysExpr,
}

/// Builds a program from a [`PhysExpr`] tree.
struct Compiler<'a> {
    schema: &'a Schema,
    prog: FusedProgram,
    /// The registers that load a column or a constant (the ones a later load may reuse).
    leaves: Vec<usize>,
}

impl Compiler<'_> {
    fn push(&mut self, instr: Instr, kind: Kind) -> usize {
        // A column or constant used twice is loaded once: the same column, or the same
        // value of the same kind (a NULL is a constant of every kind).
        let reusable = |(i, k): (&Instr, &Kind)| {
            *k == kind
                && match (i, &instr) {
                    (Instr::Load(a), Instr::Load(b)) => a == b,
                    (Instr::Const(a), Instr::Const(b)) => a == b,
                    _ => false,
                }
        };
        let leaf = matches!(instr, Instr::Load(_) | Instr::Const(_));
        if leaf {
            let registers = &self.prog.instrs;
            let found = self
                .leaves
                .iter()
                .copied()
                .find(|&r| reusable((&registers[r], &self.prog.kinds[r])));
            if let Some(r) = found {
                return r;
            }
        }
        self.prog.instrs.push(instr);
        self.prog.kinds.push(kind);
        let r = self.prog.instrs.len() - 1;
        if leaf {
            self.leaves.push(r);
        }
        r
    }

    /// Compiles `e`, or returns `None` when its value has no register kind (strings).
    #[recursive::recursive]
    fn compile(&mut self, e: &PhysExpr) -> ExecResult<Option<(usize, Kind)>> {
        if let PhysExpr::Located { expr, .. } = e {
            // Its error is found on the plain tree (see `PhysExpr::evaluate`).
            return self.compile(expr);
        }
        let ty = e.data_type(self.schema)?;
        let Some(kind) = Kind::of(ty) else {
            return Ok(None);
        };
        let instr = match e {
            PhysExpr::Column(i) => Instr::Load(*i),
            PhysExpr::Literal { value, .. } => Instr::Const(value.clone()),
            PhysExpr::Binary { left, op, right } => {
                let operand_kind = Kind::of(left.data_type(self.schema)?);
                let fusable = match op {
                    BinaryOp::And | BinaryOp::Or => true,
                    op if op.is_comparison() => operand_kind.is_some(),
                    BinaryOp::Concat => false,
                    // Arithmetic on numbers only (dates and timestamps go through functions).
                    _ => matches!(ty, DataType::Int32 | DataType::Int64 | DataType::Float64),
                };
                if !fusable {
                    return self.input(e, kind).map(Some);
                }
                let (Some((a, _)), Some((b, _))) = (self.compile(left)?, self.compile(right)?)
                else {
                    return self.input(e, kind).map(Some);
                };
                match op {
                    BinaryOp::And => Instr::And(a, b),
                    BinaryOp::Or => Instr::Or(a, b),
                    op if op.is_comparison() => Instr::Cmp(*op, a, b),
                    op => Instr::Arith(*op, a, b),
                }
            }
            PhysExpr::Not(x) => match self.compile(x)? {
                Some((a, _)) => Instr::Not(a),
                None => return self.input(e, kind).map(Some),
            },
            PhysExpr::Negative(x) if kind != Kind::Bool && ty != DataType::Date32 => {
                match self.compile(x)? {
                    Some((a, _)) => Instr::Neg(a),
                    None => return self.input(e, kind).map(Some),
                }
            }
            PhysExpr::IsNull { expr, negated } => match self.compile(expr)? {
                Some((a, _)) => Instr::IsNull(a, *negated),
                None => return self.input(e, kind).map(Some),
            },
            PhysExpr::Cast { expr, to } => {
                let from = expr.data_type(self.schema)?;
                let widening = matches!(
                    (from, to),
                    (DataType::Int32, DataType::Int64 | DataType::Float64)
                        | (DataType::Int64, DataType::Float64)
                );
                match self.compile(expr)? {
                    Some((a, _)) if widening => Instr::Cast(a),
                    _ => return self.input(e, kind).map(Some),
                }
            }
            PhysExpr::Case {
                branches,
                otherwise,
                ..
            } => {
                let mut compiled = Vec::with_capacity(branches.len());
                for (w, t) in branches {
                    match (self.compile(w)?, self.compile(t)?) {
                        (Some((w, _)), Some((t, _))) => compiled.push((w, t)),
                        _ => return self.input(e, kind).map(Some),
                    }
                }
                let otherwise = match otherwise {
                    Some(o) => match self.compile(o)? {
                        Some((o, _)) => Some(o),
                        None => return self.input(e, kind).map(Some),
                    },
                    None => None,
                };
                Instr::Case(compiled, otherwise)
            }
            _ => return self.input(e, kind).map(Some),
        };
        if !self.operands_fit(&instr, kind) {
            // A tree whose operand types the planner left unequal (a bug there) runs on
            // the kernels, which check types, rather than reaching a register of another
            // kind.
            return self.input(e, kind).map(Some);
        }
        Ok(Some((self.push(instr, kind), kind)))
    }

    /// Whether `instr`'s operand registers have the kinds its loops read, for a result of
    /// kind `kind`.
    fn operands_fit(&self, instr: &Instr, kind: Kind) -> bool {
        let k = |r: &usize| self.prog.kinds[*r];
        match instr {
            Instr::Load(_) | Instr::Input(_) | Instr::Const(_) => true,
            Instr::Arith(_, a, b) => kind != Kind::Bool && k(a) == kind && k(b) == kind,
            Instr::Cmp(_, a, b) => kind == Kind::Bool && k(a) == k(b),
            Instr::And(a, b) | Instr::Or(a, b) => {
                kind == Kind::Bool && k(a) == Kind::Bool && k(b) == Kind::Bool
            }
            Instr::Not(a) => kind == Kind::Bool && k(a) == Kind::Bool,
            Instr::Neg(a) => kind != Kind::Bool && k(a) == kind,
            Instr::IsNull(..) => kind == Kind::Bool,
            Instr::Cast(a) => matches!(
                (k(a), kind),
                (Kind::I32, Kind::I64 | Kind::F64) | (Kind::I64, Kind::F64)
            ),
            Instr::Case(branches, otherwise) => {
                branches
                    .iter()
                    .all(|(w, t)| k(w) == Kind::Bool && k(t) == kind)
                    && otherwise.iter().all(|o| k(o) == kind)
            }
        }
    }

    /// An unfusable subtree becomes an input (its own subtrees may still fuse).
    fn input(&mut self, e: &PhysExpr, kind: Kind) -> ExecResult<(usize, Kind)> {
        let fused = e
            .clone()
            .map_children(&mut |c| super::fuse(c, self.schema))?;
        self.prog.inputs.push(fused);
        let k = self.prog.inputs.len() - 1;
        Ok((self.push(Instr::Input(k), kind), kind))
    }
}

impl FusedProgram {
    /// Compiles `e` when it yields a number, date or boolean and at least `min_ops`
    /// computing instructions would run fused.
    pub fn try_new(e: &PhysExpr, schema: &Schema, min_ops: usize) -> ExecResult<Option<Self>> {
        let out_type = e.data_type(schema)?;
        let mut c = Compiler {
            schema,
            prog: FusedProgram {
                instrs: Vec::new(),
                kinds: Vec::new(),
                in_place: Vec::new(),
                inputs: Vec::new(),
                out_type,
                names: schema.fields.iter().map(|f| f.name.clone()).collect(),
                plain: e.clone(),
            },
            leaves: Vec::new(),
        };
        if c.compile(e)?.is_none() {
            return Ok(None);
        }
        let ops = c.prog.instrs.iter().filter(|i| i.computes()).count();
        let mut prog = c.prog;
        prog.in_place = (0..prog.instrs.len())
            .map(|r| prog.read_in_place(r))
            .collect();
        Ok((ops >= min_ops).then_some(prog))
    }

    /// Whether register `r` loads a DOUBLE column that only arithmetic reads (not the
    /// output, which is copied out of its register).
    fn read_in_place(&self, r: usize) -> bool {
        matches!(self.instrs[r], Instr::Load(_))
            && self.kinds[r] == Kind::F64
            && r + 1 != self.instrs.len()
            && self.instrs.iter().all(|i| match i {
                Instr::Arith(..) => true,
                other => !other.reads(r),
            })
    }

    pub fn data_type(&self) -> DataType {
        self.out_type
    }

    /// The expression tree the program computes.
    pub fn plain(&self) -> &PhysExpr {
        &self.plain
    }

    pub fn evaluate(&self, batch: &Batch) -> ExecResult<Column> {
        let rows = batch.num_rows();
        let inputs = self
            .inputs
            .iter()
            .map(|e| e.evaluate(batch))
            .collect::<ExecResult<Vec<_>>>()?;
        // Every column a register loads has that register's kind (checked once a batch,
        // so the chunk loops below can read them as it).
        for (instr, &kind) in self.instrs.iter().zip(&self.kinds) {
            let col = match instr {
                Instr::Load(c) => batch.column(*c),
                Instr::Input(k) => &inputs[*k],
                _ => continue,
            };
            if Kind::of(col.data_type()) != Some(kind) {
                return Err(ExecError::Internal(format!(
                    "a fused program expected a {kind:?} column, got {}",
                    col.data_type()
                )));
            }
        }
        let mut regs: Vec<Reg> = self.kinds.iter().map(|&k| Reg::new(k)).collect();
        // Constants fill their registers once.
        for (i, instr) in self.instrs.iter().enumerate() {
            if let Instr::Const(v) = instr {
                regs[i].fill(v);
            }
        }
        let out_reg = self.instrs.len() - 1;
        let mut out = Output::new(self.kinds[out_reg], rows);
        // The current chunk of each register read in place.
        let mut windows: Vec<Option<&[f64]>> = vec![None; self.instrs.len()];
        let mut start = 0;
        while start < rows {
            let n = CHUNK.min(rows - start);
            for (i, instr) in self.instrs.iter().enumerate() {
                let (done, rest) = regs.split_at_mut(i);
                let dst = &mut rest[0];
                match instr {
                    Instr::Const(_) => {}
                    Instr::Load(c) if self.in_place[i] => {
                        let col = batch.column(*c);
                        dst.load_validity(col, start, n);
                        windows[i] = match col {
                            Column::Float64(x) => Some(&x.values()[start..][..n]),
                            _ => unreachable!("the compiler typed every load"),
                        };
                    }
                    Instr::Load(c) => dst.load(batch.column(*c), start, n),
                    Instr::Input(k) => dst.load(&inputs[*k], start, n),
                    Instr::Arith(op, a, b) => {
                        let operands = [(&done[*a], windows[*a]), (&done[*b], windows[*b])];
                        arith(*op, operands, dst, n)?
                    }
                    Instr::Cmp(op, a, b) => compare(*op, &done[*a], &done[*b], dst, n),
                    Instr::And(a, b) => logic(true, &done[*a], &done[*b], dst, n),
                    Instr::Or(a, b) => logic(false, &done[*a], &done[*b], dst, n),
                    Instr::Not(a) => {
                        let (x, d) = (done[*a].vals.bools(), dst.vals.bools_mut());
                        for j in 0..n {
                            d[j] = !x[j];
                        }
                        dst.copy_validity(&done[*a], n);
                    }
                    Instr::Neg(a) => negate(&done[*a], dst, n)?,
                    Instr::IsNull(a, negated) => {
                        let src = &done[*a];
                        let d = dst.vals.bools_mut();
                        for j in 0..n {
                            d[j] = (src.all_valid || src.valid[j]) == *negated;
                        }
                        dst.all_valid = true;
                    }
                    Instr::Cast(a) => cast(&done[*a], dst, n),
                    Instr::Case(branches, otherwise) => case(branches, *otherwise, done, dst, n),
                }
            }
            out.append(&regs[out_reg], start, n);
            start += n;
        }
        out.finish(self.out_type)
    }
}

impl FusedProgram {
    /// Register `r` as an operand: loads and constants by name, others as `$r`.
    fn operand(&self, r: usize) -> String {
        match &self.instrs[r] {
            Instr::Load(c) => self.names[*c].clone(),
            Instr::Const(ScalarValue::Float64(v)) => format!("{v:?}"),
            Instr::Const(v) => v.to_string(),
            _ => format!("${r}"),
        }
    }
}

impl fmt::Display for FusedProgram {
    /// `fused[$3 = 1.0 - l_discount; $4 = l_extendedprice * $3]`: the computing instructions.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = |r: &usize| self.operand(*r);
        let mut steps = Vec::new();
        for (i, instr) in self.instrs.iter().enumerate() {
            let step = match instr {
                Instr::Load(_) | Instr::Const(_) => continue,
                Instr::Input(k) => format!("input({})", self.inputs[*k].describe(&self.names)),
                Instr::Arith(op, a, b) | Instr::Cmp(op, a, b) => {
                    format!("{} {} {}", o(a), op.symbol(), o(b))
                }
                Instr::And(a, b) => format!("{} AND {}", o(a), o(b)),
                Instr::Or(a, b) => format!("{} OR {}", o(a), o(b)),
                Instr::Not(a) => format!("NOT {}", o(a)),
                Instr::Neg(a) => format!("-{}", o(a)),
                Instr::IsNull(a, false) => format!("{} IS NULL", o(a)),
                Instr::IsNull(a, true) => format!("{} IS NOT NULL", o(a)),
                Instr::Cast(a) => format!("{}::{:?}", o(a), self.kinds[i]),
                Instr::Case(branches, otherwise) => {
                    let mut c = String::from("CASE");
                    for (w, t) in branches {
                        c.push_str(&format!(" WHEN {} THEN {}", o(w), o(t)));
                    }
                    if let Some(e) = otherwise {
                        c.push_str(&format!(" ELSE {}", o(e)));
                    }
                    c + " END"
                }
            };
            steps.push(format!("${i} = {step}"));
        }
        write!(f, "fused[{}]", steps.join("; "))
    }
}

/// A register's values.
enum Vals {
    F64(Vec<f64>),
    I64(Vec<i64>),
    I32(Vec<i32>),
    Bool(Vec<bool>),
}

macro_rules! accessor {
    ($get:ident, $get_mut:ident, $variant:ident, $t:ty) => {
        fn $get(&self) -> &[$t] {
            match self {
                Vals::$variant(v) => v,
                _ => unreachable!("the compiler typed every register"),
            }
        }
        fn $get_mut(&mut self) -> &mut [$t] {
            match self {
                Vals::$variant(v) => v,
                _ => unreachable!("the compiler typed every register"),
            }
        }
    };
}

impl Vals {
    accessor!(bools, bools_mut, Bool, bool);
}

/// One chunk of values plus validity (`valid` is meaningful only when `all_valid` is false).
struct Reg {
    vals: Vals,
    valid: Vec<bool>,
    all_valid: bool,
}

impl Reg {
    fn new(kind: Kind) -> Self {
        Self {
            vals: match kind {
                Kind::F64 => Vals::F64(vec![0.0; CHUNK]),
                Kind::I64 => Vals::I64(vec![0; CHUNK]),
                Kind::I32 => Vals::I32(vec![0; CHUNK]),
                Kind::Bool => Vals::Bool(vec![false; CHUNK]),
            },
            valid: vec![true; CHUNK],
            all_valid: true,
        }
    }

    fn fill(&mut self, v: &ScalarValue) {
        match (&mut self.vals, v) {
            (Vals::F64(d), ScalarValue::Float64(x)) => d.fill(*x),
            (Vals::I64(d), ScalarValue::Int64(x) | ScalarValue::Timestamp(x)) => d.fill(*x),
            (Vals::I32(d), ScalarValue::Int32(x) | ScalarValue::Date32(x)) => d.fill(*x),
            (Vals::Bool(d), ScalarValue::Boolean(x)) => d.fill(*x),
            // A typed NULL: every row invalid.
            _ => {
                self.all_valid = false;
                self.valid.fill(false);
            }
        }
    }

    /// Rows `start..start + n` of `col`.
    fn load(&mut self, col: &Column, start: usize, n: usize) {
        match (&mut self.vals, col) {
            (Vals::F64(d), Column::Float64(c)) => d[..n].copy_from_slice(&c.values()[start..][..n]),
            (Vals::I64(d), Column::Int64(c) | Column::Timestamp(c)) => {
                d[..n].copy_from_slice(&c.values()[start..][..n])
            }
            (Vals::I32(d), Column::Int32(c) | Column::Date32(c)) => {
                d[..n].copy_from_slice(&c.values()[start..][..n])
            }
            (Vals::Bool(d), Column::Boolean(c)) => unpack(c.values(), start, &mut d[..n]),
            _ => unreachable!("the compiler typed every load"),
        }
        self.load_validity(col, start, n);
    }

    /// The validity of rows `start..start + n` of `col`.
    fn load_validity(&mut self, col: &Column, start: usize, n: usize) {
        match col.validity() {
            None => self.all_valid = true,
            Some(v) => {
                self.all_valid = false;
                unpack(v, start, &mut self.valid[..n]);
            }
        }
    }

    fn copy_validity(&mut self, src: &Reg, n: usize) {
        self.all_valid = src.all_valid;
        if !src.all_valid {
            self.valid[..n].copy_from_slice(&src.valid[..n]);
        }
    }

    /// Valid where both `a` and `b` are.
    fn both_valid(&mut self, a: &Reg, b: &Reg, n: usize) {
        match (a.all_valid, b.all_valid) {
            (true, true) => self.all_valid = true,
            (false, true) => self.copy_validity(a, n),
            (true, false) => self.copy_validity(b, n),
            (false, false) => {
                self.all_valid = false;
                for j in 0..n {
                    self.valid[j] = a.valid[j] & b.valid[j];
                }
            }
        }
    }

    fn is_valid(&self, j: usize) -> bool {
        self.all_valid || self.valid[j]
    }
}

/// Bits `start..start + out.len()` of `bits` as bools (`start` is a multiple of 64).
fn unpack(bits: &Bitmap, start: usize, out: &mut [bool]) {
    debug_assert_eq!(start % 64, 0);
    for (w, chunk) in out.chunks_mut(64).enumerate() {
        let word = bits.word(start / 64 + w);
        for (j, b) in chunk.iter_mut().enumerate() {
            *b = (word >> j) & 1 == 1;
        }
    }
}

/// Packs bools into words, 64 per word.
fn pack(bits: &[bool], words: &mut Vec<u64>) {
    for chunk in bits.chunks(64) {
        let mut word = 0u64;
        for (j, &b) in chunk.iter().enumerate() {
            word |= (b as u64) << j;
        }
        words.push(word);
    }
}

/// Runs `$body` with `$x` and `$d` bound to the values of two registers of the same kind.
macro_rules! same_kind {
    ($src:expr, $dst:expr, |$x:ident, $d:ident| $body:expr) => {
        match ($src, $dst) {
            (Vals::F64($x), Vals::F64($d)) => $body,
            (Vals::I64($x), Vals::I64($d)) => $body,
            (Vals::I32($x), Vals::I32($d)) => $body,
            (Vals::Bool($x), Vals::Bool($d)) => $body,
            _ => unreachable!("the compiler typed every register"),
        }
    };
}

/// Checked integer arithmetic over one chunk; `Err` names the first failure kind.
fn int_arith<T>(
    op: BinaryOp,
    x: &[T],
    y: &[T],
    d: &mut [T],
    valid: &dyn Fn(usize) -> bool,
) -> Result<(), &'static str>
where
    T: Copy + Default + PartialEq + CheckedOps,
{
    let n = d.len();
    let divides = matches!(
        op,
        BinaryOp::IntDivide | BinaryOp::Divide | BinaryOp::Modulo
    );
    if divides && (0..n).any(|j| y[j] == T::default() && valid(j)) {
        return Err("division by zero");
    }
    // One loop per operator (a function item, not a pointer, so that it inlines).
    let overflow = match op {
        BinaryOp::Plus => checked_zip_map(x, y, d, valid, T::add),
        BinaryOp::Minus => checked_zip_map(x, y, d, valid, T::sub),
        BinaryOp::Multiply => checked_zip_map(x, y, d, valid, T::mul),
        BinaryOp::Modulo => checked_zip_map(x, y, d, valid, T::rem),
        _ => checked_zip_map(x, y, d, valid, T::div),
    };
    if overflow {
        Err("overflow")
    } else {
        Ok(())
    }
}

/// `d[j] = f(x[j], y[j])`, 0 where `f` fails; whether it failed on a valid row.
#[inline(always)]
fn checked_zip_map<T: Copy + Default>(
    x: &[T],
    y: &[T],
    d: &mut [T],
    valid: &dyn Fn(usize) -> bool,
    f: impl Fn(T, T) -> Option<T>,
) -> bool {
    let mut failed = false;
    for (j, ((d, &a), &b)) in d.iter_mut().zip(x).zip(y).enumerate() {
        let r = f(a, b);
        failed |= r.is_none() && valid(j);
        *d = r.unwrap_or_default();
    }
    failed
}

/// The checked operations of the integer kernels.
trait CheckedOps: Sized {
    fn add(a: Self, b: Self) -> Option<Self>;
    fn sub(a: Self, b: Self) -> Option<Self>;
    fn mul(a: Self, b: Self) -> Option<Self>;
    fn div(a: Self, b: Self) -> Option<Self>;
    fn rem(a: Self, b: Self) -> Option<Self>;
}

macro_rules! checked_ops {
    ($t:ty) => {
        impl CheckedOps for $t {
            fn add(a: Self, b: Self) -> Option<Self> {
                a.checked_add(b)
            }
            fn sub(a: Self, b: Self) -> Option<Self> {
                a.checked_sub(b)
            }
            fn mul(a: Self, b: Self) -> Option<Self> {
                a.checked_mul(b)
            }
            fn div(a: Self, b: Self) -> Option<Self> {
                a.checked_div(b)
            }
            fn rem(a: Self, b: Self) -> Option<Self> {
                a.checked_rem(b)
            }
        }
    };
}
checked_ops!(i32);
checked_ops!(i64);

/// `dst = a op b` over `n` rows; each operand a register, with its chunk when read in place.
fn arith(
    op: BinaryOp,
    [(a, a_window), (b, b_window)]: [(&Reg, Option<&[f64]>); 2],
    dst: &mut Reg,
    n: usize,
) -> ExecResult<()> {
    dst.both_valid(a, b, n);
    let valid = |j: usize| dst.all_valid || dst.valid[j];
    let failed = match (&a.vals, &b.vals, &mut dst.vals) {
        (Vals::F64(x), Vals::F64(y), Vals::F64(d)) => {
            let x = a_window.unwrap_or(&x[..n]);
            let y = b_window.unwrap_or(&y[..n]);
            float_zip(op, x, y, &mut d[..n]);
            None
        }
        (Vals::I64(x), Vals::I64(y), Vals::I64(d)) => {
            int_arith(op, &x[..n], &y[..n], &mut d[..n], &valid).err()
        }
        (Vals::I32(x), Vals::I32(y), Vals::I32(d)) => {
            int_arith(op, &x[..n], &y[..n], &mut d[..n], &valid).err()
        }
        _ => unreachable!("the compiler typed every register"),
    };
    match failed {
        None => Ok(()),
        Some("division by zero") => Err(ExecError::DivisionByZero { op: op.symbol() }),
        Some(_) => Err(ExecError::Overflow {
            op: match op {
                BinaryOp::Plus => "addition",
                BinaryOp::Minus => "subtraction",
                BinaryOp::Multiply => "multiplication",
                BinaryOp::Modulo => "modulo",
                _ => "division",
            },
            ty: match &a.vals {
                Vals::I32(_) => DataType::Int32,
                _ => DataType::Int64,
            },
        }),
    }
}

fn negate(a: &Reg, dst: &mut Reg, n: usize) -> ExecResult<()> {
    dst.copy_validity(a, n);
    let mut overflow = false;
    match (&a.vals, &mut dst.vals) {
        (Vals::F64(x), Vals::F64(d)) => {
            for j in 0..n {
                d[j] = -x[j];
            }
        }
        (Vals::I64(x), Vals::I64(d)) => {
            for j in 0..n {
                let r = 0i64.checked_sub(x[j]);
                overflow |= r.is_none() && a.is_valid(j);
                d[j] = r.unwrap_or(0);
            }
        }
        (Vals::I32(x), Vals::I32(d)) => {
            for j in 0..n {
                let r = 0i32.checked_sub(x[j]);
                overflow |= r.is_none() && a.is_valid(j);
                d[j] = r.unwrap_or(0);
            }
        }
        _ => unreachable!("the compiler typed every register"),
    }
    if overflow {
        return Err(ExecError::Overflow {
            op: "negation",
            ty: match &a.vals {
                Vals::I32(_) => DataType::Int32,
                _ => DataType::Int64,
            },
        });
    }
    Ok(())
}

fn compare(op: BinaryOp, a: &Reg, b: &Reg, dst: &mut Reg, n: usize) {
    dst.both_valid(a, b, n);
    let d = match &mut dst.vals {
        Vals::Bool(d) => d,
        _ => unreachable!("comparisons yield booleans"),
    };
    macro_rules! cmp_loop {
        ($x:expr, $y:expr, $cmp:expr) => {{
            let (x, y) = ($x, $y);
            match op {
                BinaryOp::Eq => (0..n).for_each(|j| d[j] = $cmp(x[j], y[j]) == Ordering::Equal),
                BinaryOp::Lt => (0..n).for_each(|j| d[j] = $cmp(x[j], y[j]) == Ordering::Less),
                BinaryOp::LtEq => (0..n).for_each(|j| d[j] = $cmp(x[j], y[j]) != Ordering::Greater),
                _ => (0..n).for_each(|j| d[j] = op.holds($cmp(x[j], y[j]))),
            }
        }};
    }
    match (&a.vals, &b.vals) {
        (Vals::F64(x), Vals::F64(y)) => {
            with_f64_order!(op, |holds| (0..n).for_each(|j| d[j] = holds(x[j], y[j])))
        }
        (Vals::I64(x), Vals::I64(y)) => cmp_loop!(x, y, |p: i64, q: i64| p.cmp(&q)),
        (Vals::I32(x), Vals::I32(y)) => cmp_loop!(x, y, |p: i32, q: i32| p.cmp(&q)),
        (Vals::Bool(x), Vals::Bool(y)) => cmp_loop!(x, y, |p: bool, q: bool| p.cmp(&q)),
        _ => unreachable!("the compiler typed every register"),
    }
}

/// Three-valued AND (`and` true) or OR.
fn logic(and: bool, a: &Reg, b: &Reg, dst: &mut Reg, n: usize) {
    let (x, y) = (a.vals.bools(), b.vals.bools());
    if a.all_valid && b.all_valid {
        let d = dst.vals.bools_mut();
        for j in 0..n {
            d[j] = if and { x[j] & y[j] } else { x[j] | y[j] };
        }
        dst.all_valid = true;
        return;
    }
    dst.all_valid = false;
    let d = match &mut dst.vals {
        Vals::Bool(d) => d,
        _ => unreachable!("logic yields booleans"),
    };
    for j in 0..n {
        let (va, vb) = (a.is_valid(j), b.is_valid(j));
        let (at, af) = (x[j] & va, !x[j] & va);
        let (bt, bf) = (y[j] & vb, !y[j] & vb);
        let (t, f) = if and {
            (at & bt, af | bf)
        } else {
            (at | bt, af & bf)
        };
        d[j] = t;
        dst.valid[j] = t | f;
    }
}

fn cast(a: &Reg, dst: &mut Reg, n: usize) {
    dst.copy_validity(a, n);
    match (&a.vals, &mut dst.vals) {
        (Vals::I32(x), Vals::I64(d)) => (0..n).for_each(|j| d[j] = x[j] as i64),
        (Vals::I32(x), Vals::F64(d)) => (0..n).for_each(|j| d[j] = x[j] as f64),
        (Vals::I64(x), Vals::F64(d)) => (0..n).for_each(|j| d[j] = x[j] as f64),
        _ => unreachable!("the compiler only fuses widening casts"),
    }
}

/// Row `j` takes the THEN of the first WHEN that is true, else the ELSE, else NULL.
fn case(
    branches: &[(usize, usize)],
    otherwise: Option<usize>,
    regs: &[Reg],
    dst: &mut Reg,
    n: usize,
) {
    // Start from the ELSE (or NULL) and let branches overwrite, the first one last.
    dst.all_valid = false;
    match otherwise {
        Some(o) => {
            let o = &regs[o];
            same_kind!(&o.vals, &mut dst.vals, |x, d| d[..n]
                .copy_from_slice(&x[..n]));
            for j in 0..n {
                dst.valid[j] = o.is_valid(j);
            }
        }
        None => dst.valid[..n].fill(false),
    }
    for &(w, t) in branches.iter().rev() {
        let (when, then) = (&regs[w], &regs[t]);
        let cond = when.vals.bools();
        let take = |j: usize| cond[j] & when.is_valid(j);
        same_kind!(&then.vals, &mut dst.vals, |x, d| blend(
            &mut d[..n],
            x,
            take
        ));
        for j in 0..n {
            if take(j) {
                dst.valid[j] = then.is_valid(j);
            }
        }
    }
    // NULL rows hold zero, as the kernels' builders write.
    let valid = &dst.valid[..n];
    match &mut dst.vals {
        Vals::F64(d) => blend(&mut d[..n], &[0.0; CHUNK], |j| !valid[j]),
        Vals::I64(d) => blend(&mut d[..n], &[0; CHUNK], |j| !valid[j]),
        Vals::I32(d) => blend(&mut d[..n], &[0; CHUNK], |j| !valid[j]),
        Vals::Bool(d) => blend(&mut d[..n], &[false; CHUNK], |j| !valid[j]),
    }
}

/// `d[j] = x[j]` wherever `take(j)`.
fn blend<T: Copy>(d: &mut [T], x: &[T], take: impl Fn(usize) -> bool) {
    for j in 0..d.len() {
        if take(j) {
            d[j] = x[j];
        }
    }
}

/// The result column, appended chunk by chunk.
struct Output {
    vals: Vals,
    rows: usize,
    bool_words: Vec<u64>,
    valid_words: Vec<u64>,
    any_null: bool,
}

impl Output {
    fn new(kind: Kind, rows: usize) -> Self {
        Self {
            vals: match kind {
                Kind::F64 => Vals::F64(Vec::with_capacity(rows)),
                Kind::I64 => Vals::I64(Vec::with_capacity(rows)),
                Kind::I32 => Vals::I32(Vec::with_capacity(rows)),
                Kind::Bool => Vals::Bool(Vec::new()),
            },
            rows: 0,
            bool_words: Vec::new(),
            valid_words: Vec::with_capacity(rows.div_ceil(64)),
            any_null: false,
        }
    }

    fn append(&mut self, reg: &Reg, start: usize, n: usize) {
        self.rows += n;
        match (&mut self.vals, &reg.vals) {
            (Vals::F64(o), Vals::F64(x)) => o.extend_from_slice(&x[..n]),
            (Vals::I64(o), Vals::I64(x)) => o.extend_from_slice(&x[..n]),
            (Vals::I32(o), Vals::I32(x)) => o.extend_from_slice(&x[..n]),
            (Vals::Bool(_), Vals::Bool(x)) => pack(&x[..n], &mut self.bool_words),
            _ => unreachable!("the output register has the output kind"),
        }
        if !reg.all_valid && !self.any_null && reg.valid[..n].iter().any(|v| !v) {
            // Rows before this chunk were all valid.
            self.any_null = true;
            self.valid_words.resize(start / 64, u64::MAX);
        }
        if self.any_null {
            if reg.all_valid {
                pack(&[true; CHUNK][..n], &mut self.valid_words);
            } else {
                pack(&reg.valid[..n], &mut self.valid_words);
            }
        }
    }

    fn finish(self, ty: DataType) -> ExecResult<Column> {
        let bits = |words: &[u64]| Bitmap::from_word_fn(self.rows, |w| words[w]);
        let validity = self.any_null.then(|| bits(&self.valid_words));
        Ok(match self.vals {
            Vals::F64(v) => Column::Float64(PrimitiveColumn::new(Buffer::from_vec(v), validity)),
            Vals::I64(v) => {
                let c = PrimitiveColumn::new(Buffer::from_vec(v), validity);
                if ty == DataType::Timestamp {
                    Column::Timestamp(c)
                } else {
                    Column::Int64(c)
                }
            }
            Vals::I32(v) => {
                let c = PrimitiveColumn::new(Buffer::from_vec(v), validity);
                if ty == DataType::Date32 {
                    Column::Date32(c)
                } else {
                    Column::Int32(c)
                }
            }
            Vals::Bool(_) => Column::Boolean(BooleanColumn::new(bits(&self.bool_words), validity)),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use morsel_storage::{Field, Schema};

    use crate::expr::fuse;
    use morsel_storage::test_rng::Rng;

    use super::*;

    const ROWS: usize = 3 * CHUNK + 77;

    fn batch(rng: &mut Rng) -> Batch {
        let valid = |rng: &mut Rng| (0..ROWS).map(|_| rng.below(7) != 0).collect::<Vec<_>>();
        let floats = [0.0, -0.0, 1.5, -2.25, f64::NAN, 1e300, 3.0];
        let f = |rng: &mut Rng, nulls: bool, valid: Vec<bool>| {
            let v: Vec<f64> = (0..ROWS).map(|_| floats[rng.below(7) as usize]).collect();
            Column::Float64(PrimitiveColumn::new(
                Buffer::from_vec(v),
                nulls.then(|| Bitmap::from_bools(valid)),
            ))
        };
        let i = |rng: &mut Rng, valid: Vec<bool>| {
            let v: Vec<i64> = (0..ROWS).map(|_| rng.below(9) as i64 - 4).collect();
            Column::Int64(PrimitiveColumn::new(
                Buffer::from_vec(v),
                Some(Bitmap::from_bools(valid)),
            ))
        };
        let (va, vc, vd, vf) = (valid(rng), valid(rng), valid(rng), valid(rng));
        let cols = vec![
            f(rng, true, va),
            f(rng, false, Vec::new()),
            i(rng, vc),
            i(rng, vd),
            Column::Date32(PrimitiveColumn::from_vec(
                (0..ROWS).map(|_| rng.below(5) as i32).collect(),
            )),
            Column::Boolean(BooleanColumn::new(
                Bitmap::from_bools((0..ROWS).map(|_| rng.below(2) == 0)),
                Some(Bitmap::from_bools(vf)),
            )),
        ];
        let schema = Schema::new(vec![
            Field::new("a", DataType::Float64, true),
            Field::new("b", DataType::Float64, false),
            Field::new("c", DataType::Int64, true),
            Field::new("d", DataType::Int64, true),
            Field::new("e", DataType::Date32, false),
            Field::new("f", DataType::Boolean, true),
        ]);
        Batch::try_new(Arc::new(schema), cols, ROWS).unwrap()
    }

    fn lit(value: ScalarValue, ty: DataType) -> PhysExpr {
        PhysExpr::Literal { value, ty }
    }

    fn bin(l: PhysExpr, op: BinaryOp, r: PhysExpr) -> PhysExpr {
        PhysExpr::Binary {
            left: Box::new(l),
            op,
            right: Box::new(r),
        }
    }

    /// A random expression of type `ty` (Float64, Int64 or Boolean).
    fn gen(rng: &mut Rng, ty: DataType, depth: u32) -> PhysExpr {
        let leaf = depth == 0 || rng.below(4) == 0;
        match ty {
            DataType::Float64 => match if leaf { rng.below(3) } else { 3 + rng.below(4) } {
                0 => PhysExpr::Column(0),
                1 => PhysExpr::Column(1),
                2 => lit(ScalarValue::Float64(0.5), ty),
                3 => PhysExpr::Cast {
                    expr: Box::new(gen(rng, DataType::Int64, depth - 1)),
                    to: ty,
                },
                4 => PhysExpr::Negative(Box::new(gen(rng, ty, depth - 1))),
                5 => PhysExpr::Case {
                    branches: vec![(
                        gen(rng, DataType::Boolean, depth - 1),
                        gen(rng, ty, depth - 1),
                    )],
                    otherwise: (rng.below(2) == 0).then(|| Box::new(gen(rng, ty, depth - 1))),
                    ty,
                },
                _ => {
                    let ops = [BinaryOp::Plus, BinaryOp::Minus, BinaryOp::Multiply];
                    let op = ops[rng.below(3) as usize];
                    let op = if rng.below(5) == 0 {
                        BinaryOp::Divide
                    } else {
                        op
                    };
                    bin(gen(rng, ty, depth - 1), op, gen(rng, ty, depth - 1))
                }
            },
            DataType::Int64 => match if leaf { rng.below(3) } else { 3 } {
                0 => PhysExpr::Column(2),
                1 => PhysExpr::Column(3),
                2 => lit(ScalarValue::Int64(3), ty),
                _ => {
                    let ops = [BinaryOp::Plus, BinaryOp::Minus, BinaryOp::Multiply];
                    bin(
                        gen(rng, ty, depth - 1),
                        ops[rng.below(3) as usize],
                        gen(rng, ty, depth - 1),
                    )
                }
            },
            _ => match if leaf { rng.below(2) } else { 2 + rng.below(5) } {
                0 => PhysExpr::Column(5),
                1 => bin(
                    PhysExpr::Column(4),
                    BinaryOp::LtEq,
                    lit(ScalarValue::Date32(2), DataType::Date32),
                ),
                2 => PhysExpr::Not(Box::new(gen(rng, ty, depth - 1))),
                3 => PhysExpr::IsNull {
                    expr: Box::new(gen(rng, DataType::Float64, depth - 1)),
                    negated: rng.below(2) == 0,
                },
                4 => {
                    let ops = [BinaryOp::And, BinaryOp::Or];
                    bin(
                        gen(rng, ty, depth - 1),
                        ops[rng.below(2) as usize],
                        gen(rng, ty, depth - 1),
                    )
                }
                _ => {
                    let ops = BinaryOp::COMPARISONS;
                    let operand = [DataType::Float64, DataType::Int64][rng.below(2) as usize];
                    bin(
                        gen(rng, operand, depth - 1),
                        ops[rng.below(6) as usize],
                        gen(rng, operand, depth - 1),
                    )
                }
            },
        }
    }

    /// Valid values equal bit for bit (floats by their bits), and validity equal.
    fn same(a: &Column, b: &Column) -> bool {
        a.data_type() == b.data_type()
            && a.len() == b.len()
            && (0..a.len()).all(|i| match (a.scalar_at(i), b.scalar_at(i)) {
                (ScalarValue::Float64(x), ScalarValue::Float64(y)) => x.to_bits() == y.to_bits(),
                (x, y) => x == y,
            })
    }

    #[test]
    fn fused_matches_kernels() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut fused_count = 0;
        // Programs that read a DOUBLE column in place (only arithmetic reads it).
        let mut in_place = 0;
        for round in 0..400 {
            let b = batch(&mut rng);
            let ty = [DataType::Float64, DataType::Int64, DataType::Boolean][round % 3];
            let e = gen(&mut rng, ty, 4);
            let fused = fuse(e.clone(), b.schema()).unwrap();
            fused_count += usize::from(matches!(fused, PhysExpr::Fused(_)));
            if let PhysExpr::Fused(p) = &fused {
                in_place += usize::from(p.in_place.contains(&true));
            }
            match (e.evaluate(&b), fused.evaluate(&b)) {
                (Ok(x), Ok(y)) => assert!(same(&x, &y), "{}", fused.describe(&[])),
                (Err(x), Err(y)) => assert_eq!(x.to_string(), y.to_string()),
                (x, y) => panic!("kernels {x:?}, fused {y:?}"),
            }
        }
        assert!(fused_count > 200, "only {fused_count} of 400 fused");
        assert!(
            in_place > 20,
            "only {in_place} programs read a column in place"
        );
    }

    #[test]
    fn overflow_and_zero_divisor_are_errors_only_on_valid_rows() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", DataType::Int64, true),
            Field::new("y", DataType::Int64, true),
        ]));
        let x = Column::Int64(PrimitiveColumn::from_options([Some(i64::MAX), Some(4)]));
        let y = Column::Int64(PrimitiveColumn::from_options([None, Some(0)]));
        let b = Batch::try_new(schema.clone(), vec![x, y], 2).unwrap();
        // (x + 1) * 2 overflows only in row 0, whose y is NULL: (x + 1) * 2 + y is fine...
        let plus = bin(
            bin(
                bin(PhysExpr::Column(0), BinaryOp::Plus, PhysExpr::Column(1)),
                BinaryOp::Multiply,
                lit(ScalarValue::Int64(2), DataType::Int64),
            ),
            BinaryOp::Plus,
            lit(ScalarValue::Int64(1), DataType::Int64),
        );
        let fused = fuse(plus, &schema).unwrap();
        assert!(matches!(fused, PhysExpr::Fused(_)));
        let c = fused.evaluate(&b).unwrap();
        assert_eq!(c.scalar_at(0), ScalarValue::Null);
        // ...but x // y divides 4 by 0 on a valid row.
        let div = bin(
            bin(
                PhysExpr::Column(0),
                BinaryOp::IntDivide,
                PhysExpr::Column(1),
            ),
            BinaryOp::Plus,
            lit(ScalarValue::Int64(1), DataType::Int64),
        );
        let err = fuse(div, &schema).unwrap().evaluate(&b).unwrap_err();
        assert!(matches!(err, ExecError::DivisionByZero { .. }), "{err}");
    }
}
