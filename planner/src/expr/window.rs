//! Window functions: `f(args) OVER (PARTITION BY ... ORDER BY ... frame)`.

use std::fmt;

use morsel_storage::DataType;

use super::{AggFunc, Expr, SortExpr};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WindowFunc {
    RowNumber,
    /// Position of the row's first peer (ties share a rank, gaps follow).
    Rank,
    /// Number of distinct peer groups up to the row (no gaps).
    DenseRank,
    /// `ntile(n)`: bucket 1..n, earlier buckets one row larger when rows do not divide evenly.
    Ntile,
    /// `lag(x [, offset [, default]])`: the value `offset` rows before, within the partition.
    Lag,
    Lead,
    FirstValue,
    LastValue,
    /// `nth_value(x, n)`: the value at the frame's n-th row (1-based), NULL past its end.
    NthValue,
    /// An aggregate over the frame.
    Aggregate(AggFunc),
}

impl WindowFunc {
    pub fn name(self) -> &'static str {
        match self {
            WindowFunc::RowNumber => "row_number",
            WindowFunc::Rank => "rank",
            WindowFunc::DenseRank => "dense_rank",
            WindowFunc::Ntile => "ntile",
            WindowFunc::Lag => "lag",
            WindowFunc::Lead => "lead",
            WindowFunc::FirstValue => "first_value",
            WindowFunc::LastValue => "last_value",
            WindowFunc::NthValue => "nth_value",
            WindowFunc::Aggregate(a) => a.name(),
        }
    }

    /// Whether the result depends on the frame (ranking and offset functions ignore it).
    pub fn uses_frame(self) -> bool {
        matches!(
            self,
            WindowFunc::FirstValue
                | WindowFunc::LastValue
                | WindowFunc::NthValue
                | WindowFunc::Aggregate(_)
        )
    }
}

/// Whether a frame counts rows or ORDER BY values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameUnits {
    Rows,
    /// Offsets are distances in the (single, numeric) ORDER BY value; CURRENT ROW includes
    /// the row's peers.
    Range,
    /// Offsets count peer groups (rows equal in the ORDER BY); CURRENT ROW is the row's
    /// peer group.
    Groups,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FrameBound {
    UnboundedPreceding,
    Preceding(f64),
    CurrentRow,
    Following(f64),
    UnboundedFollowing,
}

impl fmt::Display for FrameBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameBound::UnboundedPreceding => write!(f, "UNBOUNDED PRECEDING"),
            FrameBound::Preceding(n) => write!(f, "{n} PRECEDING"),
            FrameBound::CurrentRow => write!(f, "CURRENT ROW"),
            FrameBound::Following(n) => write!(f, "{n} FOLLOWING"),
            FrameBound::UnboundedFollowing => write!(f, "UNBOUNDED FOLLOWING"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowFrame {
    pub units: FrameUnits,
    pub start: FrameBound,
    pub end: FrameBound,
}

impl WindowFrame {
    /// The SQL default: with ORDER BY, from the partition start to the current row's last
    /// peer; without, the whole partition.
    pub fn default_for(ordered: bool) -> Self {
        WindowFrame {
            units: FrameUnits::Range,
            start: FrameBound::UnboundedPreceding,
            end: if ordered {
                FrameBound::CurrentRow
            } else {
                FrameBound::UnboundedFollowing
            },
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct WindowExpr {
    pub func: WindowFunc,
    pub args: Vec<Expr>,
    pub partition_by: Vec<Expr>,
    pub order_by: Vec<SortExpr>,
    pub frame: WindowFrame,
    /// `IGNORE NULLS` (first_value, last_value, nth_value): the frame's NULL values are
    /// skipped.
    pub ignore_nulls: bool,
}

impl WindowExpr {
    /// The result type given the (coerced) first argument's type.
    pub fn result_type(&self, arg: Option<DataType>) -> DataType {
        match self.func {
            WindowFunc::RowNumber
            | WindowFunc::Rank
            | WindowFunc::DenseRank
            | WindowFunc::Ntile => DataType::Int64,
            WindowFunc::Lag
            | WindowFunc::Lead
            | WindowFunc::FirstValue
            | WindowFunc::LastValue
            | WindowFunc::NthValue => arg.unwrap_or(DataType::Null),
            WindowFunc::Aggregate(a) => match a {
                AggFunc::Count | AggFunc::CountStar => DataType::Int64,
                AggFunc::Sum => match arg {
                    Some(DataType::Float64) => DataType::Float64,
                    _ => DataType::Int64,
                },
                AggFunc::Min | AggFunc::Max => arg.unwrap_or(DataType::Null),
                _ => DataType::Float64,
            },
        }
    }
}

impl fmt::Display for WindowExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let args: Vec<String> = self.args.iter().map(ToString::to_string).collect();
        let star = self.func == WindowFunc::Aggregate(AggFunc::CountStar);
        write!(
            f,
            "{}({}){} OVER (",
            self.func.name(),
            if star { "*".into() } else { args.join(", ") },
            if self.ignore_nulls {
                " IGNORE NULLS"
            } else {
                ""
            }
        )?;
        let mut sep = "";
        if !self.partition_by.is_empty() {
            let p: Vec<String> = self.partition_by.iter().map(ToString::to_string).collect();
            write!(f, "PARTITION BY {}", p.join(", "))?;
            sep = " ";
        }
        if !self.order_by.is_empty() {
            let o: Vec<String> = self.order_by.iter().map(ToString::to_string).collect();
            write!(f, "{sep}ORDER BY {}", o.join(", "))?;
            sep = " ";
        }
        if self.func.uses_frame()
            && self.frame != WindowFrame::default_for(!self.order_by.is_empty())
        {
            let units = match self.frame.units {
                FrameUnits::Rows => "ROWS",
                FrameUnits::Range => "RANGE",
                FrameUnits::Groups => "GROUPS",
            };
            write!(
                f,
                "{sep}{units} BETWEEN {} AND {}",
                self.frame.start, self.frame.end
            )?;
        }
        write!(f, ")")
    }
}
