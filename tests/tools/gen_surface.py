#!/usr/bin/env python3
"""Differential test of DuckDB's SQL surface: random queries that use GROUP BY ALL, ROLLUP /
CUBE / GROUPING SETS, QUALIFY, DISTINCT ON, ordered string_agg, nth_value and IGNORE NULLS,
named windows, NATURAL joins, * EXCLUDE / REPLACE, ORDER BY ALL and the function library,
over the tables of the differential test (tests/data/diff), with the expected results
computed by DuckDB, written as sqllogictest records. Deterministic for a given seed:

    python3 tests/tools/gen_surface.py --seed 7 --queries 300

Queries DuckDB rejects are dropped; results are compared as sorted rows unless the query
fixes the order of every row.
"""
import argparse
import os
import random
import sys

import duckdb

sys.path.insert(0, os.path.dirname(__file__))
from gen_differential import Gen, create_views, records  # noqa: E402

OUT = "tests/slt/differential/surface.slt"

# Every column of t1, as a total order for window and aggregate ORDER BYs (rows equal in
# all of them are interchangeable).
ALL_T1 = "a, b, c, d, e"


class Surface(Gen):
    def agg(self):
        return self.pick(["sum(b)", "count(*)", "count(c)", "max(d)", "min(e)", "avg(c)",
                          "count_if(a > 2)", "approx_count_distinct(d)", "sum(a) FILTER (WHERE b > 0)"])

    def where(self):
        return f" WHERE {self.predicate('t1')}" if self.r.random() < 0.5 else ""

    def group_by_all(self):
        key = self.pick(["d", "a % 3", "e IS NULL", "d, a % 2", "length(d)"])
        return f"SELECT {key}, {self.agg()}, {self.agg()} FROM t1{self.where()} GROUP BY ALL", False

    def grouping_sets(self):
        k1, k2 = self.pick([("d", "a % 3"), ("a % 2", "b > 3"), ("d", "e IS NULL")])
        form = self.pick([f"ROLLUP ({k1}, {k2})", f"CUBE ({k1}, {k2})",
                          f"GROUPING SETS (({k1}), ({k2}), ())", f"{k1}, ROLLUP ({k2})",
                          f"GROUPING SETS (({k1}, {k2}), ({k1}))"])
        having = f" HAVING count(*) > {self.r.randint(0, 3)}" if self.r.random() < 0.3 else ""
        return (f"SELECT {k1}, {k2}, {self.agg()}, grouping({k1}, {k2}) FROM t1{self.where()} "
                f"GROUP BY {form}{having}"), False

    def qualify(self):
        fn = self.pick([f"row_number() OVER (PARTITION BY d ORDER BY {ALL_T1}) = 1",
                        f"rank() OVER (PARTITION BY a % 3 ORDER BY c DESC NULLS LAST) <= 2",
                        "count(*) OVER (PARTITION BY d) > 2",
                        "b > avg(b) OVER (PARTITION BY d)"])
        return f"SELECT a, b, d FROM t1{self.where()} QUALIFY {fn}", False

    def distinct_on(self):
        key = self.pick(["d", "a % 3", "e IS NULL"])
        d = self.pick(["", " DESC"])
        return (f"SELECT DISTINCT ON ({key}) {key}, a, b, c FROM t1{self.where()} "
                f"ORDER BY {key}, a{d}, b, c, d, e"), True

    def ordered_agg(self):
        key = self.pick(["d", "a % 3"])
        sep = self.pick(["','", "'|'", "''"])
        d = self.pick(["", " DESC", " NULLS FIRST"])
        return (f"SELECT {key}, string_agg(CAST(b AS VARCHAR), {sep} ORDER BY a{d}, b, c, d, e), "
                f"count(*) FROM t1{self.where()} GROUP BY {key}"), False

    def window_values(self):
        frame = self.pick(["", " ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING",
                           " ROWS BETWEEN 1 PRECEDING AND 2 FOLLOWING"])
        n = self.r.randint(1, 4)
        fn = self.pick([f"nth_value(b, {n}) OVER w", f"nth_value(b, {n} IGNORE NULLS) OVER w",
                        "first_value(c IGNORE NULLS) OVER w", "last_value(c IGNORE NULLS) OVER w",
                        "last_value(d) OVER w", "sum(b) OVER w"])
        return (f"SELECT a, b, c, d, {fn} FROM t1{self.where()} "
                f"WINDOW w AS (PARTITION BY e IS NULL ORDER BY {ALL_T1}{frame})"), False

    def functions(self):
        k = self.r.randint(0, 6)
        fns = [f"lpad(d, {k}, 'xy')", f"rpad(d, {k}, '-')", f"repeat(d, {k % 3})", "reverse(d)",
               "concat_ws('-', d, a, c)", "regexp_replace(d, '[aeiou]', '*', 'g')",
               "regexp_replace(d, '(.)(.)', '\\2\\1')", "regexp_extract(d, '([a-z])([a-z])', 2)",
               "prefix(d, 'c')", "suffix(d, 'e')", "contains(d, 'a')", "ascii(d)", "strlen(d)",
               "trim(d, 'ae')", "sign(c)", "trunc(c)", "mod(a, 4)", "gcd(a, b)", "lcm(a, 3)",
               "round(cbrt(c), 4)", "round(atan2(a, b), 4)", "isnan(c)",
               "strftime(e, '%Y/%m/%d %a %j')", "dayname(e)", "monthname(e)", "last_day(e)",
               f"e + INTERVAL {k} DAY", f"e - INTERVAL {k} MONTH", f"e + INTERVAL {k} HOUR",
               "epoch(e)", "make_date(2020, 1 + abs(a) % 12, 1 + abs(b) % 28)",
               "a IS NOT DISTINCT FROM b", "c > 0 IS NOT TRUE", "typeof(a + c)"]
        picked = [self.pick(fns) for _ in range(3)]
        return f"SELECT {', '.join(picked)} FROM t1{self.where()}", False

    def star(self):
        form = self.pick(["* EXCLUDE (c)", "* EXCLUDE (c, e) REPLACE (a * 2 AS a)",
                          "* REPLACE (upper(d) AS d)", "* RENAME (a AS first)"])
        return f"SELECT {form} FROM t1{self.where()}", False

    def natural(self):
        kind = self.pick(["", "LEFT ", "RIGHT ", "FULL "])
        return f"SELECT * FROM t1 NATURAL {kind}JOIN t2", False

    def order_all(self):
        d = self.pick(["", " DESC", " NULLS FIRST", " DESC NULLS LAST"])
        return f"SELECT d, a, b, c, e FROM t1{self.where()} ORDER BY ALL{d}", True

    def query(self):
        return self.pick([self.group_by_all, self.grouping_sets, self.qualify, self.distinct_on,
                          self.ordered_agg, self.window_values, self.functions, self.star,
                          self.natural, self.order_all])()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--queries", type=int, default=300)
    args = ap.parse_args()
    r = random.Random(args.seed)
    con = duckdb.connect()
    setup = create_views(con)
    g = Surface(r)
    out = [
        "# Differential test of the SQL surface DuckDB users reach for: random queries over the",
        "# differential test's tables (tests/data/diff), expected results from DuckDB.",
        "# Generated by:",
        f"#   python3 tests/tools/gen_surface.py --seed {args.seed} --queries {args.queries}",
        "",
    ]
    for sql in setup:
        out += ["statement ok", sql, ""]
    body, kept = records(con, g, args.queries, 50 * args.queries)
    out += body
    with open(OUT, "w") as f:
        f.write("\n".join(out))
    print(f"wrote {kept} queries to {OUT}")


if __name__ == "__main__":
    main()
