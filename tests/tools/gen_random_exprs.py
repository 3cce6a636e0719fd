#!/usr/bin/env python3
"""Random-expression test generator (SQLancer-style): nested scalar expressions over typed
columns and NULL literals, with expected results computed by DuckDB, as sqllogictest records.

Writes tests/data/random/r.csv and
  tests/slt/random/expressions.slt  each expression per row, inside aggregates, grouped;
  tests/slt/random/predicates.slt   counts of the rows random WHERE predicates keep.
The runner (tests/sqllogictest.rs) runs the files under tests/slt/random both with and
without fused expression programs, so every record also checks fusion against the kernels.
Deterministic for a given seed:

    python3 tests/tools/gen_random_exprs.py --seed 7 --expressions 1500 --predicates 1000

A record DuckDB rejects becomes `statement error` (morsel must fail too), except for type
errors that come from the generator's own choices (DuckDB names them Binder errors), which
are dropped: the two engines' implicit casts differ a little (DuckDB reads '1' + 1 as 2, for
one), and that is not what this test is about.
"""
import argparse
import datetime
import os
import random
import sys

import duckdb

sys.path.insert(0, os.path.dirname(__file__))
from expect_duckdb import cell  # noqa: E402
from gen_differential import type_letter  # noqa: E402

DATA = "tests/data/random"
OUT = "tests/slt/random"
ROWS = 24
COLUMNS = [("id", "INTEGER"), ("i", "INTEGER"), ("j", "INTEGER"), ("b", "BIGINT"),
           ("d", "DOUBLE"), ("e", "DOUBLE"), ("s", "VARCHAR"), ("dt", "DATE"),
           ("bo", "BOOLEAN")]
WORDS = ["ant", "Bee", "cat", "", "dog", "a%b", "zebra", "ca"]
LIKE_PATTERNS = ["%a%", "c%", "_a_", "%", "a%b"]
SQL_TYPE = {"int": "INTEGER", "big": "BIGINT", "dbl": "DOUBLE", "str": "VARCHAR",
            "date": "DATE", "bool": "BOOLEAN"}


def value(r, ty, rid):
    if ty == "INTEGER" and rid is not None:
        return rid
    if r.random() < 0.2:
        return None
    if ty == "INTEGER":
        return r.randint(-9, 9)
    if ty == "BIGINT":
        return r.choice([r.randint(-1000, 1000), r.randint(-5, 5), 3000000000])
    if ty == "DOUBLE":
        return r.choice([round(r.uniform(-20, 20), 2), 0.0, -0.5, 2.5, 1e10])
    if ty == "VARCHAR":
        return r.choice(WORDS)
    if ty == "DATE":
        return datetime.date(2020, 1, 1) + datetime.timedelta(days=r.randint(-400, 900))
    if ty == "BOOLEAN":
        return r.choice([True, False])
    raise ValueError(ty)


def csv_text(v):
    if v is None:
        return ""
    if v == "":
        return '""'
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def write_table(r):
    os.makedirs(DATA, exist_ok=True)
    with open(f"{DATA}/r.csv", "w") as f:
        f.write(",".join(c for c, _ in COLUMNS) + "\n")
        for n in range(ROWS):
            row = [value(r, t, n if c == "id" else None) for c, t in COLUMNS]
            f.write(",".join(csv_text(v) for v in row) + "\n")


class Gen:
    """Typed expressions: `expr(ty, depth)` returns SQL text of type `ty`."""

    def __init__(self, r):
        self.r = r

    def pick(self, xs):
        return self.r.choice(xs)

    def null(self, ty):
        # An untyped NULL takes the type its context asks for; a cast one has its own.
        return self.pick(["NULL", f"CAST(NULL AS {SQL_TYPE[ty]})"])

    def leaf(self, ty):
        r = self.r
        if r.random() < 0.12:
            return self.null(ty)
        if ty == "int":
            return self.pick(["i", "j", "id", str(r.randint(-3, 7)), "i", "j"])
        if ty == "big":
            return self.pick(["b", f"CAST({r.randint(-4, 9)} AS BIGINT)", "b", "CAST(i AS BIGINT)"])
        if ty == "dbl":
            return self.pick(["d", "e", f"CAST({r.randint(-5, 5)}.5 AS DOUBLE)", "d", "e"])
        if ty == "str":
            return self.pick(["s", f"'{self.pick(WORDS)}'", "s"])
        if ty == "date":
            return self.pick(["dt", f"DATE '2021-0{r.randint(1, 9)}-1{r.randint(0, 9)}'", "dt"])
        return self.pick(["bo", "true", "false", "bo"])

    def expr(self, ty, depth):
        r = self.r
        if depth <= 0 or r.random() < 0.18:
            return self.leaf(ty)
        d = depth - 1
        common = [
            lambda: f"CASE WHEN {self.expr('bool', d)} THEN {self.expr(ty, d)} ELSE {self.expr(ty, d)} END",
            lambda: f"CASE WHEN {self.expr('bool', d)} THEN {self.expr(ty, d)} END",
            lambda: f"coalesce({self.expr(ty, d)}, {self.expr(ty, d)})",
            lambda: f"coalesce({self.null(ty)}, {self.expr(ty, d)}, {self.expr(ty, d)})",
            lambda: f"nullif({self.expr(ty, d)}, {self.expr(ty, d)})",
        ]
        if ty in ("int", "big", "dbl"):
            num = ty
            other = self.pick(["int", "big", "dbl"]) if ty == "dbl" else self.pick(["int", ty])
            if ty == "big":
                other = self.pick(["int", "big"])
            forms = [
                lambda: f"({self.expr(num, d)} {self.pick(['+', '-', '*'])} {self.expr(other, d)})",
                lambda: f"({self.expr(num, d)} + {self.expr(num, d)})",
                lambda: f"(- {self.expr(num, d)})",
                lambda: f"abs({self.expr(num, d)})",
                lambda: f"greatest({self.expr(num, d)}, {self.expr(other, d)})",
                lambda: f"least({self.expr(num, d)}, {self.null(num)})",
            ]
            if ty == "int":
                forms += [
                    lambda: f"({self.expr('int', d)} % {self.pick(['3', '-4', '7'])})",
                    lambda: f"({self.expr('int', d)} // {self.pick(['2', '-3'])})",
                    lambda: f"length({self.expr('str', d)})",
                    lambda: f"CAST({self.expr('dbl', d)} AS INTEGER)",
                    lambda: f"CAST({self.expr('bool', d)} AS INTEGER)",
                    lambda: f"CAST(extract(month FROM {self.expr('date', d)}) AS INTEGER)",
                ]
            if ty == "big":
                forms += [
                    lambda: f"CAST({self.expr('int', d)} AS BIGINT)",
                    lambda: f"({self.expr('date', d)} - {self.expr('date', d)})",
                ]
            if ty == "dbl":
                forms += [
                    lambda: f"({self.expr(self.pick(['int', 'dbl']), d)} / {self.expr(self.pick(['int', 'dbl']), d)})",
                    lambda: f"CAST({self.expr(self.pick(['int', 'big']), d)} AS DOUBLE)",
                    lambda: f"round({self.expr('dbl', d)}, {r.randint(0, 2)})",
                    lambda: f"floor({self.expr('dbl', d)})",
                    lambda: f"ceil({self.expr('dbl', d)})",
                    lambda: f"sqrt(abs({self.expr('dbl', d)}))",
                ]
            forms += common
        elif ty == "str":
            forms = common + [
                lambda: f"({self.expr('str', d)} || {self.expr('str', d)})",
                lambda: f"upper({self.expr('str', d)})",
                lambda: f"lower({self.expr('str', d)})",
                lambda: f"CAST({self.expr('int', d)} AS VARCHAR)",
                lambda: f"substring({self.expr('str', d)}, {r.randint(1, 3)}, {r.randint(0, 3)})",
                lambda: f"replace({self.expr('str', d)}, 'a', {self.expr('str', d)})",
            ]
        elif ty == "date":
            forms = common + [
                lambda: f"({self.expr('date', d)} + {r.randint(-40, 40)})",
                lambda: f"({self.expr('date', d)} - {self.expr('int', d)})",
            ]
        else:
            cmp_ty = self.pick(["int", "big", "dbl", "str", "date", "int", "dbl"])
            forms = common + [
                lambda: f"({self.expr(cmp_ty, d)} {self.pick(['=', '<>', '<', '<=', '>', '>='])} {self.expr(cmp_ty, d)})",
                lambda: f"({self.expr('int', d)} {self.pick(['<', '>='])} {self.expr(self.pick(['big', 'dbl']), d)})",
                lambda: f"({self.expr('bool', d)} AND {self.expr('bool', d)})",
                lambda: f"({self.expr('bool', d)} OR {self.expr('bool', d)})",
                lambda: f"(NOT {self.expr('bool', d)})",
                lambda: f"({self.expr(cmp_ty, d)} IS NULL)",
                lambda: f"({self.expr(cmp_ty, d)} IS NOT NULL)",
                lambda: f"({self.expr('int', d)} BETWEEN {self.expr('int', d)} AND {self.expr('int', d)})",
                lambda: f"({self.expr('int', d)} IN ({self.expr('int', d)}, {r.randint(-3, 5)}, {self.null('int')}))",
                lambda: f"({self.expr('int', d)} NOT IN ({r.randint(-3, 5)}, {r.randint(-3, 5)}))",
                lambda: f"({self.expr('str', d)} LIKE '{self.pick(LIKE_PATTERNS)}')",
                lambda: f"({self.expr('bool', d)} = {self.expr('bool', d)})",
            ]
        return self.pick(forms)()

    def any_type(self):
        return self.pick(["int", "big", "dbl", "str", "date", "bool", "int", "dbl", "bool"])

    def expression_query(self):
        """(sql, ordered) for one record of expressions.slt."""
        r = self.r
        ty = self.any_type()
        e = self.expr(ty, r.randint(2, 5))
        roll = r.random()
        if roll < 0.6:
            return f"SELECT id, {e} FROM r ORDER BY id", True
        if roll < 0.8:
            aggs = ["count(*)", f"count({e})", f"min({e})", f"max({e})"]
            if ty in ("int", "big"):
                aggs.append(f"sum({e})")
            return f"SELECT {', '.join(aggs)} FROM r", True
        key = self.pick(["bo", "i % 3", "s IS NULL", f"{self.expr('bool', 1)}"])
        return (f"SELECT {key} AS k, count({e}), max({e}) FROM r GROUP BY 1 "
                f"ORDER BY 1 NULLS FIRST"), True

    def predicate_query(self):
        p = self.expr("bool", self.r.randint(2, 6))
        roll = self.r.random()
        if roll < 0.7:
            return f"SELECT count(*) FROM r WHERE {p}", True
        if roll < 0.85:
            return f"SELECT id FROM r WHERE {p} ORDER BY id", True
        return f"SELECT count(*) FROM r WHERE NOT ({p})", True


def answer(con, q):
    """DuckDB's rows and column types for q, or the error's class name."""
    try:
        rel = con.sql(q)
        rows = rel.fetchall()
        return rows, "".join(type_letter(d) for d in rel.description)
    except duckdb.Error as e:
        return type(e).__name__, None


def records(con, plain, make, n, seen):
    """n records from make(). A query whose answer (or error) DuckDB's optimizer changes is
    left out: which failing operand a folded NULL hides is DuckDB's choice, not SQL's."""
    out = []
    kept = 0
    while kept < n:
        q, _ = make()
        if q in seen:
            continue
        seen.add(q)
        rows, types = answer(con, q)
        if rows == "BinderException" or (rows, types) != answer(plain, q):
            continue
        if types is None:
            # A failing cast or out-of-range value is left out too: whether a row reaches
            # it depends on which operands an engine skips (BETWEEN's bounds beside a NULL,
            # the branch of a folded CASE), which SQL leaves open.
            if rows in ("ConversionException", "OutOfRangeException"):
                continue
            out += ["statement error", q, ""]
            kept += 1
            continue
        text = [" ".join(cell(v) for v in row) for row in rows]
        out += [f"query {types}", q, "----"] + text + [""]
        kept += 1
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--expressions", type=int, default=1500)
    ap.add_argument("--predicates", type=int, default=1000)
    args = ap.parse_args()
    r = random.Random(args.seed)
    write_table(r)
    con = duckdb.connect()
    types = ", ".join(f"'{c}': '{t}'" for c, t in COLUMNS)
    setup = (f"CREATE VIEW r AS SELECT * FROM read_csv('{DATA}/r.csv', header = true, "
             f"types = {{{types}}})")
    # DuckDB answers over a table: over a view of read_csv it pushes casts into the reader,
    # which casts the text ('2.5' -> 3) where a DOUBLE cast rounds half to even (2).
    con.sql(setup.replace("CREATE VIEW r AS", "CREATE TABLE r AS"))
    plain = duckdb.connect()
    plain.sql(setup.replace("CREATE VIEW r AS", "CREATE TABLE r AS"))
    plain.sql("PRAGMA disable_optimizer")
    g = Gen(r)
    seen = set()
    cmd = (f"python3 tests/tools/gen_random_exprs.py --seed {args.seed} "
           f"--expressions {args.expressions} --predicates {args.predicates}")
    os.makedirs(OUT, exist_ok=True)
    for name, make, n, what in [
        ("expressions", g.expression_query, args.expressions,
         "random nested scalar expressions, per row, in aggregates and grouped"),
        ("predicates", g.predicate_query, args.predicates,
         "random WHERE predicates: the rows they keep"),
    ]:
        out = [
            f"# Random-expression test: {what},",
            "# over tests/data/random/r.csv (typed columns with NULLs) and NULL literals; expected",
            "# results from DuckDB. Run fused and unfused. Generated by:",
            f"#   {cmd}",
            "",
            "statement ok",
            setup,
            "",
        ]
        out += records(con, plain, make, n, seen)
        with open(f"{OUT}/{name}.slt", "w") as f:
            f.write("\n".join(out))
        print(f"wrote {n} records to {OUT}/{name}.slt")


if __name__ == "__main__":
    main()
