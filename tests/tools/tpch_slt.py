#!/usr/bin/env python3
"""Writes tests/slt/tpch/qNN.slt: each TPC-H query at SF 0.01 with the result DuckDB gives over
the same CSV files (cells formatted like tests/sqllogictest.rs: floats with two decimals).
The files refer to the data folder as ${TPCH_DIR}; the sqllogictest runner generates the data
(tpchgen, in-process) and substitutes the folder.

usage: python3 tests/tools/tpch_slt.py target/tmp/tpch-sf0.01
(run `cargo test --test tpch` once first so the data exists)
"""
import os
import sys

import duckdb

sys.path.insert(0, os.path.dirname(__file__))
from expect_duckdb import cell  # noqa: E402

TABLES = ["nation", "region", "part", "supplier", "partsupp", "customer", "orders", "lineitem"]


def letter(desc):
    name = str(desc[1]).upper()
    if "INT" in name:
        return "I"
    if any(k in name for k in ["DOUBLE", "FLOAT", "DECIMAL"]):
        return "R"
    return "T"


data = sys.argv[1]
os.makedirs("tests/slt/tpch", exist_ok=True)
for q in range(1, 23):
    con = duckdb.connect()
    setup = []
    for t in TABLES:
        setup.append(f"CREATE VIEW {t} AS SELECT * FROM '${{TPCH_DIR}}/{t}.csv'")
        con.sql(setup[-1].replace("${TPCH_DIR}", data))
    sql = open(f"tests/tpch/queries/q{q:02}.sql").read().strip().rstrip(";")
    rel = con.sql(sql)
    rows = rel.fetchall()
    types = "".join(letter(d) for d in rel.description)
    out = [f"# TPC-H Q{q} at SF 0.01; expected result from DuckDB (tests/tools/tpch_slt.py).", ""]
    for s in setup:
        out += ["statement ok", s, ""]
    out += [f"query {types}", sql, "----"]
    out += [" ".join(cell(v) for v in r) for r in rows]
    with open(f"tests/slt/tpch/q{q:02}.slt", "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"q{q:02}: {len(rows)} rows")
