#!/usr/bin/env python3
"""Writes tests/tpch/answers/qNN.txt by running tests/tpch/queries/qNN.sql on DuckDB over the
CSV files the TPC-H test generates (tpchgen, SF 0.01): one line per row, cells joined by `|`,
floats in shortest round-trip form (the test compares them with a relative tolerance, since
DuckDB adds doubles in a different order), everything else as the sqllogictest cells.

usage: python3 tests/tools/tpch_answers.py target/tmp/tpch-sf0.01 1 3 5 6 10
(run `cargo test --test tpch` once first so the data exists)
"""
import os
import sys

import duckdb

sys.path.insert(0, os.path.dirname(__file__))
from expect_duckdb import cell  # noqa: E402

data, queries = sys.argv[1], [int(q) for q in sys.argv[2:]]
con = duckdb.connect()
for t in ["nation", "region", "part", "supplier", "partsupp", "customer", "orders", "lineitem"]:
    con.sql(f"CREATE VIEW {t} AS SELECT * FROM read_csv('{data}/{t}.csv')")
for q in queries:
    sql = open(f"tests/tpch/queries/q{q:02}.sql").read()
    rows = con.sql(sql).fetchall()
    with open(f"tests/tpch/answers/q{q:02}.txt", "w") as f:
        f.write("\n".join("|".join(repr(v) if isinstance(v, float) else cell(v) for v in r) for r in rows) + "\n")
    print(f"q{q:02}: {len(rows)} rows")
