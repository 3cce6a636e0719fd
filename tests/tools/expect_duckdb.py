#!/usr/bin/env python3
"""Fills the expected results of `query` records in .slt files by running them on DuckDB.

This is how the expectations in tests/slt were produced: independently of morsel, by DuckDB
(pip install duckdb), with cells formatted by the rules in tests/sqllogictest.rs. Records
preceded by a comment line starting `# by hand:` are left alone: DuckDB gets them wrong, and
the comment says why and what the right answer is.

usage: python3 tests/tools/expect_duckdb.py tests/slt/select/expressions.slt [...]
Run from the repository root (queries use paths relative to it).
"""
import datetime
import decimal
import math
import sys

import duckdb


def cell(v):
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (float, decimal.Decimal)):
        f = float(v)
        if math.isnan(f):
            return "NaN"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        s = f"{f:.2f}"
        return "0.00" if s == "-0.00" else s
    if isinstance(v, datetime.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, datetime.date):
        return v.isoformat()
    s = str(v)
    return "(empty)" if s == "" else s


def fill(path):
    lines = open(path).read().split("\n")
    out, i = [], 0
    con = duckdb.connect()
    while i < len(lines):
        line = lines[i]
        j = i - 1
        while j >= 0 and lines[j].startswith("#") and not lines[j].startswith("# by hand:"):
            j -= 1
        by_hand = j >= 0 and lines[j].startswith("# by hand:")
        if line.startswith("statement ok") and not by_hand:
            # Run it on DuckDB too, so later queries see the tables it creates.
            out.append(line)
            i += 1
            sql = []
            while i < len(lines) and lines[i] != "":
                sql.append(lines[i])
                out.append(lines[i])
                i += 1
            con.sql("\n".join(sql))
            continue
        if line.startswith("query ") and "error" not in line.split()[1:2] and not by_hand:
            header = line.split()
            out.append(line)
            i += 1
            sql = []
            while lines[i] != "----":
                sql.append(lines[i])
                out.append(lines[i])
                i += 1
            out.append("----")
            i += 1
            while i < len(lines) and lines[i] != "":
                i += 1
            rows = [[cell(v) for v in r] for r in con.sql("\n".join(sql)).fetchall()]
            text = [" ".join(r) for r in rows]
            if "rowsort" in header:
                text.sort()
            out.extend(text)
            continue
        out.append(line)
        i += 1
    open(path, "w").write("\n".join(out))


if __name__ == "__main__":
    for p in sys.argv[1:]:
        fill(p)
        print("filled", p)
