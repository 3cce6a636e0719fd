#!/usr/bin/env python3
"""Side-by-side over views of CSV files: morsel's CLI vs DuckDB (and Polars where the query
has a plain lazy form), same files, same thread count, rounds interleaved.

    python3 benches/peers/views.py [--threads 2] [--rounds 5] [--sf 1]
                                   [--before BINARY [--before-whole]]

Needs what benches/peers/run.py sets up first: its .venv and the TPC-H CSV files in
target/tpch-data/sf<N>, and a release build of the CLI (`cargo build --release`). Each
engine runs each query in its own process and is timed inside it around the query up to a
columnar result: morsel by its `--timer` (binding, planning and running the last
statement), DuckDB and Polars by the clock around the call (start-up, imports and view
creation excluded for all three). Results are checked equal (row counts, and cells as text
or numbers within a relative 1e-6).

`--before BINARY` adds a column for another build of the CLI (an earlier commit's), run in
the same rounds; `--before-whole` times it as a whole process, for builds older than
`--timer` (then its column includes start-up and view creation).

The workloads read through views, the way users name files once and query them many
times: `count(*)` over a view, TPC-H Q9 over views of its six tables, and a view of a
UNION ALL of orders.csv with itself, summed on one column and read with LIMIT 5, and the
first five rows of a view that sorts lineitem by price.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PY = os.path.join(HERE, ".venv", "bin", "python")
TABLES = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"]


def views(data):
    return "".join(
        f"CREATE VIEW {t} AS SELECT * FROM '{data}/{t}.csv';\n" for t in TABLES
    ) + (
        f"CREATE VIEW orders2 AS SELECT * FROM '{data}/orders.csv' "
        f"UNION ALL SELECT * FROM '{data}/orders.csv';\n"
        f"CREATE VIEW by_price AS SELECT l_orderkey, l_extendedprice FROM '{data}/lineitem.csv' "
        f"ORDER BY l_extendedprice DESC, l_orderkey;\n"
    )


def workloads():
    """(name, SQL, Polars expression or None, whether any rows of the right count answer)."""
    q9 = open(os.path.join(ROOT, "tests", "tpch", "queries", "q09.sql")).read().strip().rstrip(";")
    return [
        ("count(*) over a view of lineitem", "SELECT count(*) AS n FROM lineitem",
         "pl.scan_csv(f'{data}/lineitem.csv').select(pl.len().alias('n'))", False),
        ("TPC-H Q9 over views", q9, None, False),
        ("sum of one column over a UNION ALL view", "SELECT sum(o_totalprice) AS s FROM orders2",
         "pl.concat([pl.scan_csv(f'{data}/orders.csv')] * 2).select(pl.col('o_totalprice').sum().alias('s'))",
         False),
        # LIMIT without ORDER BY: any five rows answer.
        ("SELECT * FROM a UNION ALL view LIMIT 5", "SELECT * FROM orders2 LIMIT 5",
         "pl.concat([pl.scan_csv(f'{data}/orders.csv')] * 2).head(5)", True),
        ("LIMIT 5 over a view that sorts lineitem", "SELECT * FROM by_price LIMIT 5",
         "pl.scan_csv(f'{data}/lineitem.csv').select('l_orderkey', 'l_extendedprice')"
         ".sort(['l_extendedprice', 'l_orderkey'], descending=[True, False]).head(5)", False),
    ]


DUCK = """
import duckdb, json, sys, time
con = duckdb.connect()
con.execute("SET threads={threads}")
con.execute("SET enable_progress_bar = false")
for s in {views!r}.split(";\\n"):
    if s.strip():
        con.execute(s)
t = time.perf_counter()
res = con.sql({sql!r}).fetch_arrow_table()
ms = (time.perf_counter() - t) * 1e3
rows = [list(r.values()) for r in res.to_pylist()]
print(json.dumps({{"ms": ms, "rows": rows}}, default=str))
"""

POLARS = """
import os, json, time
import polars as pl
data = {data!r}
t = time.perf_counter()
df = ({expr}).collect()
ms = (time.perf_counter() - t) * 1e3
print(json.dumps({{"ms": ms, "rows": [list(r) for r in df.rows()]}}, default=str))
"""


def run_morsel(binary, threads, statements, timer=True):
    """The last statement's time as `--timer` reports it (binding, planning and running it),
    or, for a build without the timer, the process's whole wall time."""
    args = [binary, "-t", str(threads), "--format", "json"] + (["--timer"] if timer else [])
    t = time.perf_counter()
    done = subprocess.run(args, input=statements, capture_output=True, text=True, cwd=ROOT,
                          check=True)
    ms = (time.perf_counter() - t) * 1e3
    if timer:
        ms = float(done.stderr.strip().splitlines()[-1].split(": ")[-1].removesuffix(" ms"))
    parsed = json.loads(done.stdout)
    rows = [list(r.values()) if isinstance(r, dict) else r for r in parsed]
    return ms, rows


def run_py(code, threads):
    env = dict(os.environ, POLARS_MAX_THREADS=str(threads))
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, env=env, check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return r["ms"], r["rows"]


def same(a, b):
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if len(x) != len(y):
            return False
        for u, v in zip(x, y):
            try:
                fu, fv = float(u), float(v)
                if not math.isclose(fu, fv, rel_tol=1e-6, abs_tol=1e-9):
                    return False
            except (TypeError, ValueError):
                if str(u) != str(v):
                    return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sf", default="1")
    ap.add_argument("--before")
    ap.add_argument("--before-whole", action="store_true",
                    help="time the --before build as a whole process (it has no --timer)")
    args = ap.parse_args()
    binary = os.path.join(ROOT, "target", "release", "morsel")
    data = os.path.join(ROOT, "target", "tpch-data", f"sf{args.sf}")
    v = views(data)
    print(f"views over CSV, {args.threads} threads, {args.rounds} interleaved rounds (medians)\n")
    before = " morsel before ms |" if args.before else ""
    print(f"| workload |{before} morsel ms | DuckDB ms | Polars ms | morsel / best peer |")
    print("|---|" + ("---:|" if args.before else "") + "---:|---:|---:|---:|")
    for name, sql, polars, any_rows in workloads():
        times = {"b": [], "m": [], "d": [], "p": []}
        ok = True
        for _ in range(args.rounds):
            if args.before:
                ms, brows = run_morsel(args.before, args.threads, v + sql + ";\n",
                                       timer=not args.before_whole)
                times["b"].append(ms)
            ms, mrows = run_morsel(binary, args.threads, v + sql + ";\n")
            times["m"].append(ms)
            if args.before:
                ok &= len(mrows) == len(brows) if any_rows else same(mrows, brows)
            ms, drows = run_py(DUCK.format(threads=args.threads, views=v, sql=sql), args.threads)
            times["d"].append(ms)
            ok &= len(mrows) == len(drows) if any_rows else same(mrows, drows)
            if polars:
                ms, prows = run_py(POLARS.format(data=data, expr=polars), args.threads)
                times["p"].append(ms)
                ok &= len(mrows) == len(prows) if any_rows else same(mrows, prows)
        med = {k: statistics.median(x) if x else None for k, x in times.items()}
        best = min(x for x in (med["d"], med["p"]) if x is not None)
        fmt = lambda x: "-" if x is None else f"{x:.1f}"
        mark = "" if ok else " (results differ)"
        before = f" {fmt(med['b'])} |" if args.before else ""
        print(f"| {name}{mark} |{before} {fmt(med['m'])} | {fmt(med['d'])} | {fmt(med['p'])} | "
              f"{med['m'] / best:.2f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
