#!/usr/bin/env python3
"""Differential test generator: small random tables and random queries over them, with the
expected results computed by DuckDB, written as sqllogictest records.

Writes tests/data/diff/{t1,t2,t3}.csv and tests/slt/differential/random.slt. Deterministic for
a given seed, so the committed files can be regenerated and reviewed:

    python3 tests/tools/gen_differential.py --seed 42 --queries 600

Queries DuckDB rejects are dropped (the generator may produce, e.g., a type mismatch); every
record that remains is one DuckDB answered. Results are compared as sorted rows unless the
query orders by every output column.
"""
import argparse
import datetime
import os
import random
import sys

import duckdb

sys.path.insert(0, os.path.dirname(__file__))
from expect_duckdb import cell  # noqa: E402

DATA = "tests/data/diff"
OUT = "tests/slt/differential/random.slt"

T1 = [("a", "INTEGER"), ("b", "INTEGER"), ("c", "DOUBLE"), ("d", "VARCHAR"), ("e", "DATE")]
T2 = [("a", "INTEGER"), ("x", "INTEGER"), ("s", "VARCHAR")]
T3 = [("k", "INTEGER"), ("v", "DOUBLE"), ("g", "VARCHAR")]
WORDS = ["ant", "bee", "cat", "dog", "eel", "fox", "gnu", "Owl", "yak", "zebra", "ca", ""]


def value(r, ty, null_rate=0.15):
    if r.random() < null_rate:
        return None
    if ty == "INTEGER":
        return r.randint(-5, 12)
    if ty == "DOUBLE":
        return round(r.uniform(-50, 50), 2)
    if ty == "VARCHAR":
        return r.choice(WORDS)
    if ty == "DATE":
        return datetime.date(2020, 1, 1) + datetime.timedelta(days=r.randint(0, 900))
    raise ValueError(ty)


def csv_text(v):
    if v is None:
        return ""
    if v == "":
        return '""'
    return str(v)


def write_table(r, name, cols, rows):
    os.makedirs(DATA, exist_ok=True)
    with open(f"{DATA}/{name}.csv", "w") as f:
        f.write(",".join(c for c, _ in cols) + "\n")
        for _ in range(rows):
            f.write(",".join(csv_text(value(r, t)) for _, t in cols) + "\n")


class Gen:
    def __init__(self, r):
        self.r = r

    def pick(self, xs):
        return self.r.choice(xs)

    def int_expr(self, t):
        r = self.r
        cols = {"t1": ["t1.a", "t1.b"], "t2": ["t2.a", "t2.x"], "t3": ["t3.k"]}[t]
        c = self.pick(cols)
        k = r.randint(-3, 5)
        return self.pick([c, f"{c} + {k}", f"{c} * {k}", f"{c} - {self.pick(cols)}", f"abs({c})",
                          f"coalesce({c}, {k})", f"CASE WHEN {c} > {k} THEN {c} ELSE {k} END",
                          f"{c} % 3", f"greatest({c}, {k})"])

    def predicate(self, t):
        r = self.r
        if t == "t1":
            choices = [
                lambda: f"t1.a {self.pick(['<', '<=', '=', '<>', '>', '>='])} {r.randint(-5, 12)}",
                lambda: f"t1.b {self.pick(['<', '>', '='])} t1.a",
                lambda: f"t1.c {self.pick(['<', '>'])} {r.randint(-30, 30)}",
                lambda: f"t1.d {self.pick(['=', '<>', '<'])} '{self.pick(WORDS)}'",
                lambda: f"t1.d LIKE '{self.pick(['%a%', 'c%', '%e', '_a_', '%'])}'",
                lambda: f"t1.e {self.pick(['<', '>='])} DATE '2021-0{r.randint(1, 9)}-1{r.randint(0, 9)}'",
                lambda: f"t1.a IS {self.pick(['', 'NOT '])}NULL",
                lambda: f"t1.b BETWEEN {r.randint(-5, 3)} AND {r.randint(3, 12)}",
                lambda: f"t1.a IN ({', '.join(str(r.randint(-5, 12)) for _ in range(3))})",
                lambda: f"t1.d NOT IN ('cat', 'dog')",
                lambda: f"extract(year FROM t1.e) = {self.pick([2020, 2021, 2022])}",
                lambda: f"length(t1.d) > {r.randint(0, 4)}",
            ]
        elif t == "t2":
            choices = [
                lambda: f"t2.x {self.pick(['<', '>', '='])} {r.randint(-5, 12)}",
                lambda: f"t2.s {self.pick(['=', '<>'])} '{self.pick(WORDS)}'",
                lambda: f"t2.a IS NOT NULL",
                lambda: f"t2.x > t2.a",
            ]
        else:
            choices = [
                lambda: f"t3.v {self.pick(['<', '>'])} {r.randint(-30, 30)}",
                lambda: f"t3.g = '{self.pick(WORDS)}'",
                lambda: f"t3.k {self.pick(['<', '>', '='])} {r.randint(-5, 12)}",
            ]
        p = self.pick(choices)()
        roll = r.random()
        if roll < 0.25:
            p = f"({p} {self.pick(['AND', 'OR'])} {self.pick(choices)()})"
        elif roll < 0.32:
            p = f"NOT ({p})"
        return p

    def query(self):
        kind = self.r.random()
        if kind < 0.22:
            return self.filter_project()
        if kind < 0.42:
            return self.aggregate()
        if kind < 0.58:
            return self.join()
        if kind < 0.72:
            return self.subquery()
        if kind < 0.82:
            return self.window()
        if kind < 0.90:
            return self.set_op()
        return self.order_limit()

    def filter_project(self):
        exprs = [self.int_expr("t1") for _ in range(self.r.randint(1, 3))]
        exprs += self.r.sample(["t1.d", "t1.c", "t1.e", "upper(t1.d)", "t1.c * 2", "t1.d || '!'",
                                "round(t1.c, 1)", "t1.e + INTERVAL 3 DAY", "nullif(t1.a, 0)"],
                               self.r.randint(0, 2))
        where = f" WHERE {self.predicate('t1')}" if self.r.random() < 0.8 else ""
        distinct = "DISTINCT " if self.r.random() < 0.15 else ""
        return f"SELECT {distinct}{', '.join(exprs)} FROM t1{where}", False

    def aggregate(self):
        r = self.r
        key = self.pick(["t1.d", "t1.a % 3", "t1.b", "extract(month FROM t1.e)", "t1.a IS NULL"])
        aggs = r.sample(["count(*)", "count(t1.a)", "sum(t1.b)", "min(t1.c)", "max(t1.d)",
                         "avg(t1.a)", "count(DISTINCT t1.b)", "sum(t1.c)", "max(t1.e)",
                         "min(t1.a + t1.b)", "bool_or(t1.a > 3)",
                         "sum(t1.a) FILTER (WHERE t1.b > 0)"], r.randint(1, 3))
        where = f" WHERE {self.predicate('t1')}" if r.random() < 0.5 else ""
        if r.random() < 0.2:
            return f"SELECT {', '.join(aggs)} FROM t1{where}", False
        having = f" HAVING count(*) > {r.randint(0, 3)}" if r.random() < 0.3 else ""
        return f"SELECT {key} AS key, {', '.join(aggs)} FROM t1{where} GROUP BY 1{having}", False

    def join(self):
        r = self.r
        kind = self.pick(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "JOIN", "LEFT JOIN"])
        on = "t1.a = t2.a"
        if r.random() < 0.3:
            on += f" AND t2.x {self.pick(['<', '>'])} t1.b"
        cols = r.sample(["t1.a", "t1.b", "t1.d", "t2.x", "t2.s", "t2.a"], r.randint(2, 4))
        where = f" WHERE {self.predicate('t1')}" if r.random() < 0.4 else ""
        if r.random() < 0.25:
            return (f"SELECT t1.d, count(*), sum(t2.x) FROM t1 {kind} t2 ON {on}{where} "
                    f"GROUP BY t1.d"), False
        if r.random() < 0.2:
            return (f"SELECT {', '.join(cols)}, t3.g FROM t1 JOIN t2 ON {on} "
                    f"JOIN t3 ON t3.k = t2.x{where}"), False
        return f"SELECT {', '.join(cols)} FROM t1 {kind} t2 ON {on}{where}", False

    def subquery(self):
        r = self.r
        shapes = [
            lambda: f"SELECT t1.a, t1.d FROM t1 WHERE t1.a IN (SELECT t2.a FROM t2 WHERE {self.predicate('t2')})",
            lambda: f"SELECT t1.a, t1.d FROM t1 WHERE t1.b NOT IN (SELECT t2.x FROM t2 WHERE t2.x IS NOT NULL AND {self.predicate('t2')})",
            lambda: f"SELECT t1.a, t1.b FROM t1 WHERE EXISTS (SELECT 1 FROM t2 WHERE t2.a = t1.a AND {self.predicate('t2')})",
            lambda: f"SELECT t1.a, t1.b FROM t1 WHERE NOT EXISTS (SELECT 1 FROM t2 WHERE t2.a = t1.a)",
            lambda: f"SELECT t1.a, (SELECT max(t2.x) FROM t2 WHERE t2.a = t1.a) FROM t1",
            lambda: f"SELECT t1.a, (SELECT count(*) FROM t2 WHERE t2.a = t1.a) FROM t1",
            lambda: f"SELECT t1.d, t1.c FROM t1 WHERE t1.c > (SELECT avg(t3.v) FROM t3)",
            lambda: f"SELECT t1.a, t1.b FROM t1 WHERE t1.b > (SELECT min(t2.x) FROM t2 WHERE t2.a = t1.a)",
            lambda: f"SELECT t1.a, t1.a IN (SELECT t2.a FROM t2) FROM t1",
            lambda: f"SELECT t1.a, EXISTS (SELECT 1 FROM t3 WHERE t3.k = t1.b) FROM t1",
            lambda: f"SELECT t1.d, t1.a FROM t1 WHERE t1.a IN (SELECT t2.a FROM t2) OR t1.b < {r.randint(-2, 5)}",
            lambda: f"WITH w AS (SELECT t2.a, sum(t2.x) AS total FROM t2 GROUP BY t2.a) SELECT t1.a, w.total FROM t1 JOIN w ON t1.a = w.a",
            lambda: f"SELECT q.d, q.n FROM (SELECT t1.d, count(*) AS n FROM t1 GROUP BY t1.d) q WHERE q.n > {r.randint(0, 2)}",
        ]
        return self.pick(shapes)(), False

    def window(self):
        r = self.r
        fn = self.pick([
            "row_number() OVER (PARTITION BY t1.d ORDER BY t1.id)",
            "rank() OVER (ORDER BY t1.a)",
            "dense_rank() OVER (PARTITION BY t1.d ORDER BY t1.b)",
            "sum(t1.b) OVER (PARTITION BY t1.d)",
            "sum(t1.a) OVER (ORDER BY t1.id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)",
            "count(*) OVER (PARTITION BY t1.a)",
            "lag(t1.b) OVER (ORDER BY t1.id)",
            "lead(t1.d, 2) OVER (ORDER BY t1.id)",
            "max(t1.c) OVER (ORDER BY t1.id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)",
            "first_value(t1.d) OVER (PARTITION BY t1.a ORDER BY t1.id)",
            "avg(t1.c) OVER (PARTITION BY t1.d)",
            "ntile(4) OVER (ORDER BY t1.id)",
            "min(t1.b) OVER (ORDER BY t1.id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)",
        ])
        base = "(SELECT row_number() OVER () AS id, * FROM t1)"
        return f"SELECT t1.id, t1.a, {fn} FROM {base} t1", False

    def set_op(self):
        op = self.pick(["UNION", "UNION ALL", "INTERSECT", "EXCEPT", "INTERSECT ALL", "EXCEPT ALL"])
        return (f"SELECT t1.a FROM t1 WHERE {self.predicate('t1')} {op} "
                f"SELECT t2.a FROM t2 WHERE {self.predicate('t2')}"), False

    def order_limit(self):
        r = self.r
        n = r.randint(1, 8)
        d = self.pick(["ASC", "DESC"])
        nulls = self.pick(["", " NULLS FIRST", " NULLS LAST"])
        return (f"SELECT t1.a, t1.b, t1.d FROM t1 ORDER BY t1.a {d}{nulls}, t1.b, t1.d, t1.c, t1.e "
                f"LIMIT {n}"), True


def type_letter(desc):
    name = str(desc[1]).upper()
    if any(k in name for k in ["INT", "HUGEINT"]):
        return "I"
    if any(k in name for k in ["DOUBLE", "FLOAT", "DECIMAL", "REAL"]):
        return "R"
    return "T"


def create_views(con):
    """Creates the tables t1, t2, t3 as views over their CSV files on DuckDB connection
    `con`; returns the statements, for the .slt file to run on morsel too."""
    setup = []
    for name, cols in {"t1": T1, "t2": T2, "t3": T3}.items():
        types = ", ".join(f"'{c}': '{t}'" for c, t in cols)
        sql = f"CREATE VIEW {name} AS SELECT * FROM read_csv('{DATA}/{name}.csv', header = true, types = {{{types}}})"
        con.sql(sql)
        setup.append(sql)
    return setup


def records(con, g, count, max_tries):
    """Up to `count` distinct queries from `g.query()` that DuckDB answers, as .slt record
    lines with DuckDB's results (sorted unless the query orders every row), and how many."""
    out, kept, seen, tries = [], 0, set(), 0
    while kept < count and tries < max_tries:
        tries += 1
        q, ordered = g.query()
        if q in seen:
            continue
        seen.add(q)
        try:
            rel = con.sql(q)
            rows = rel.fetchall()
            types = "".join(type_letter(d) for d in rel.description)
        except duckdb.Error:
            continue
        text = [" ".join(cell(v) for v in row) for row in rows]
        sort = "" if ordered else " rowsort"
        if not ordered:
            text.sort()
        out += [f"query {types}{sort}", q, "----"] + text + [""]
        kept += 1
    return out, kept


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--queries", type=int, default=600)
    args = ap.parse_args()
    r = random.Random(args.seed)
    write_table(r, "t1", T1, 40)
    write_table(r, "t2", T2, 25)
    write_table(r, "t3", T3, 15)
    con = duckdb.connect()
    setup = create_views(con)
    g = Gen(r)
    out = [
        "# Differential test: random queries over random tables (tests/data/diff), expected",
        "# results from DuckDB. Generated by:",
        f"#   python3 tests/tools/gen_differential.py --seed {args.seed} --queries {args.queries}",
        "",
    ]
    for sql in setup:
        out += ["statement ok", sql, ""]
    body, kept = records(con, g, args.queries, float("inf"))
    out += body
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write("\n".join(out))
    print(f"wrote {kept} queries to {OUT}")


if __name__ == "__main__":
    main()
