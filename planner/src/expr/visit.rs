//! Walking and rewriting expression trees.

use super::{ColumnRef, Expr};

impl Expr {
    /// The direct children of this node.
    pub fn children(&self) -> Vec<&Expr> {
        let mut v = Vec::new();
        self.for_each_child(|c| v.push(c));
        v
    }

    /// Whether this tree has at most `n` nodes (a walk of at most `n` nodes, however large
    /// the tree).
    pub fn has_at_most_nodes(&self, n: usize) -> bool {
        let mut budget = n;
        let mut stack = vec![self];
        while let Some(x) = stack.pop() {
            if budget == 0 {
                return false;
            }
            budget -= 1;
            x.for_each_child(|c| stack.push(c));
        }
        true
    }

    /// The number of nodes of this expression.
    pub fn node_count(&self) -> usize {
        let mut count = 0;
        let mut stack = vec![self];
        while let Some(x) = stack.pop() {
            count += 1;
            x.for_each_child(|c| stack.push(c));
        }
        count
    }

    /// Whether this node is an operation that can fail on a value at run time (arithmetic,
    /// a cast, a function), which a run-time error is reported at.
    pub fn can_fail_on_a_value(&self) -> bool {
        match self {
            Expr::Binary { op, .. } => op.is_arithmetic(),
            Expr::Negative(_) | Expr::Cast { .. } | Expr::Function { .. } => true,
            _ => false,
        }
    }

    /// The text a run-time error of this operation names it by: as displayed, without the
    /// casts below it (type coercion adds them between binding and running, so the SQL's
    /// `'x' || a` reads as the plan's `'x' || CAST(a AS VARCHAR)`: both read as the first).
    pub fn located_text(&self) -> String {
        fn strip(e: Expr) -> Expr {
            match e {
                Expr::Cast { expr, .. } => strip(*expr),
                other => other.map_children(strip),
            }
        }
        self.clone().map_children(strip).to_string()
    }

    /// [`Expr::located_text`] with every column written `?`: the same operation after the
    /// optimizer renamed its columns (a filter pushed below an alias reads the aliased
    /// input's names) has the same shape.
    pub fn located_shape(&self) -> String {
        let anonymous = self.clone().replace(&mut |x: &Expr| match x {
            Expr::Column(_) => Some(Expr::Column(ColumnRef::new("?"))),
            _ => None,
        });
        anonymous.located_text()
    }

    /// Calls `f` on each direct child, in the order [`Expr::children`] lists them (without
    /// collecting them: the planner visits expressions often).
    pub fn for_each_child<'a>(&'a self, mut f: impl FnMut(&'a Expr)) {
        match self {
            Expr::Column(_) | Expr::Literal(_) => {}
            Expr::Binary { left, right, .. } => {
                f(left);
                f(right);
            }
            Expr::Not(e) | Expr::Negative(e) | Expr::IsNull(e) | Expr::IsNotNull(e) => f(e),
            Expr::Cast { expr, .. } | Expr::Alias { expr, .. } => f(expr),
            Expr::Case {
                operand,
                branches,
                otherwise,
            } => {
                operand.iter().for_each(|o| f(o));
                for (w, t) in branches {
                    f(w);
                    f(t);
                }
                otherwise.iter().for_each(|o| f(o));
            }
            Expr::InList { expr, list, .. } => {
                f(expr);
                list.iter().for_each(f);
            }
            Expr::Between {
                expr, low, high, ..
            } => {
                f(expr);
                f(low);
                f(high);
            }
            Expr::Like { expr, pattern, .. } => {
                f(expr);
                f(pattern);
            }
            Expr::Function { args, .. } | Expr::Aggregate { args, .. } => args.iter().for_each(f),
            Expr::Window(w) => {
                w.args.iter().chain(&w.partition_by).for_each(&mut f);
                w.order_by.iter().for_each(|o| f(&o.expr));
            }
        }
    }

    /// Calls `f` on every node, parents before children.
    #[recursive::recursive]
    pub fn visit(&self, f: &mut impl FnMut(&Expr)) {
        f(self);
        self.for_each_child(|c| c.visit(f));
    }

    /// Every column this expression reads, in first-seen order, without duplicates.
    pub fn columns(&self) -> Vec<ColumnRef> {
        let mut out: Vec<ColumnRef> = Vec::new();
        self.visit(&mut |e| {
            if let Expr::Column(c) = e {
                if !out.contains(c) {
                    out.push(c.clone());
                }
            }
        });
        out
    }

    /// Calls `f` on every column reference this expression reads, in the order met
    /// (repeats included): [`Expr::columns`] without copying the names.
    pub fn for_each_column(&self, mut f: impl FnMut(&ColumnRef)) {
        self.visit(&mut |e| {
            if let Expr::Column(c) = e {
                f(c);
            }
        });
    }

    /// Whether `f` holds for every column this expression reads (true where it reads none).
    pub fn all_columns(&self, mut f: impl FnMut(&ColumnRef) -> bool) -> bool {
        let mut all = true;
        self.for_each_column(|c| all = all && f(c));
        all
    }

    /// Whether this expression reads a column.
    pub fn reads_columns(&self) -> bool {
        let mut any = false;
        self.for_each_column(|_| any = true);
        any
    }

    pub fn contains_window(&self) -> bool {
        let mut found = false;
        self.visit(&mut |e| found |= matches!(e, Expr::Window(_)));
        found
    }

    pub fn contains_aggregate(&self) -> bool {
        let mut found = false;
        self.visit(&mut |e| found |= e.is_aggregate());
        found
    }

    /// Rebuilds this node with `f` applied to each direct child.
    pub fn map_children(self, mut f: impl FnMut(Expr) -> Expr) -> Expr {
        let mut b = |e: Box<Expr>| Box::new(f(*e));
        match self {
            Expr::Binary { left, op, right } => {
                let left = b(left);
                Expr::Binary {
                    left,
                    op,
                    right: b(right),
                }
            }
            Expr::Not(e) => Expr::Not(b(e)),
            Expr::Negative(e) => Expr::Negative(b(e)),
            Expr::IsNull(e) => Expr::IsNull(b(e)),
            Expr::IsNotNull(e) => Expr::IsNotNull(b(e)),
            Expr::Cast { expr, to } => Expr::Cast { expr: b(expr), to },
            Expr::Alias { expr, name } => Expr::Alias {
                expr: b(expr),
                name,
            },
            Expr::Case {
                operand,
                branches,
                otherwise,
            } => {
                let operand = operand.map(&mut b);
                let branches = branches
                    .into_iter()
                    .map(|(w, t)| (*b(Box::new(w)), *b(Box::new(t))))
                    .collect();
                Expr::Case {
                    operand,
                    branches,
                    otherwise: otherwise.map(&mut b),
                }
            }
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                let expr = b(expr);
                Expr::InList {
                    expr,
                    list: list.into_iter().map(|e| *b(Box::new(e))).collect(),
                    negated,
                }
            }
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => {
                let (expr, low, high) = (b(expr), b(low), b(high));
                Expr::Between {
                    expr,
                    low,
                    high,
                    negated,
                }
            }
            Expr::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
                escape,
            } => {
                let expr = b(expr);
                Expr::Like {
                    expr,
                    pattern: b(pattern),
                    negated,
                    case_insensitive,
                    escape,
                }
            }
            Expr::Function { func, args } => Expr::Function {
                func,
                args: args.into_iter().map(|e| *b(Box::new(e))).collect(),
            },
            Expr::Aggregate {
                func,
                args,
                distinct,
            } => Expr::Aggregate {
                func,
                args: args.into_iter().map(|e| *b(Box::new(e))).collect(),
                distinct,
            },
            Expr::Window(w) => {
                let w = *w;
                Expr::Window(Box::new(super::WindowExpr {
                    args: w.args.into_iter().map(&mut f).collect(),
                    partition_by: w.partition_by.into_iter().map(&mut f).collect(),
                    order_by: w
                        .order_by
                        .into_iter()
                        .map(|o| super::SortExpr {
                            expr: f(o.expr),
                            ..o
                        })
                        .collect(),
                    ..w
                }))
            }
            leaf @ (Expr::Column(_) | Expr::Literal(_)) => leaf,
        }
    }

    /// Rebuilds the tree bottom-up, replacing each node by `f(node)`.
    #[recursive::recursive]
    pub fn transform_up<F: FnMut(Expr) -> Expr>(self, f: &mut F) -> Expr {
        let node = self.map_children(|c| c.transform_up(f));
        f(node)
    }

    /// Rebuilds the tree top-down: where `f` returns `Some`, that subtree is replaced whole.
    #[recursive::recursive]
    pub fn replace<F: FnMut(&Expr) -> Option<Expr>>(self, f: &mut F) -> Expr {
        match f(&self) {
            Some(r) => r,
            None => self.map_children(|c| c.replace(f)),
        }
    }

    /// Splits `a AND b AND c` into its conjuncts.
    pub fn split_conjunction(self) -> Vec<Expr> {
        match self {
            Expr::Binary {
                left,
                op: super::BinaryOp::And,
                right,
            } => {
                let mut v = left.split_conjunction();
                v.extend(right.split_conjunction());
                v
            }
            e => vec![e],
        }
    }

    /// Joins conjuncts back with AND (`None` for an empty list).
    pub fn conjunction(parts: Vec<Expr>) -> Option<Expr> {
        parts.into_iter().reduce(|a, b| a.and(b))
    }
}
