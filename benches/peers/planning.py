#!/usr/bin/env python3
"""Planning at scale and inequality-correlated subqueries, morsel vs DuckDB, interleaved.

    python3 benches/peers/planning.py [--threads 2] [--runs 5] [--morsel target/release/morsel]
                                      [--correlated-rows 2000,10000]

Joins: 8 to 64 ten-row tables joined as a chain (t_i.b = t_{i+1}.a), a star (t_0.a = t_i.a)
and a clique (every pair equal), written `FROM t0, t1, ... WHERE ...` as generated SQL is.
The time is the whole query (planning dominates: every table has ten rows). Correlated: a
count of the outer rows whose inequality-correlated count passes a threshold, over two tables
of n rows (`SELECT count(*) FROM a WHERE (SELECT count(*) FROM b WHERE b.x < a.x) > n/2`).

morsel runs in the CLI (`--timer` prints each statement's time), each shape in its own
process, the query `--runs` times after the tables are created; DuckDB in this process
(python duckdb, `SET threads`). Medians in milliseconds; answers are compared.
Uses the DuckDB of benches/peers/.venv if present, else the one importable here.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import duckdb

VALUES = ", ".join(f"({k}, {k})" for k in range(10))


def join_query(shape, n):
    tables = [f"CREATE TABLE t{i} AS SELECT * FROM (VALUES {VALUES}) v(a{i}, b{i})" for i in range(n)]
    if shape == "chain":
        conds = [f"b{i} = a{i + 1}" for i in range(n - 1)]
    elif shape == "star":
        conds = [f"a0 = a{i}" for i in range(1, n)]
    else:
        conds = [f"a{i} = a{j}" for i in range(n) for j in range(i + 1, n)]
    frm = ", ".join(f"t{i}" for i in range(n))
    return tables, f"SELECT count(*) FROM {frm} WHERE {' AND '.join(conds)}"


def correlated_query(n):
    tables = [
        f"CREATE TABLE a AS SELECT * FROM (VALUES {', '.join(f'({(k * 7919) % n})' for k in range(n))}) v(x)",
        f"CREATE TABLE b AS SELECT * FROM (VALUES {', '.join(f'({(k * 104729) % n})' for k in range(n))}) v(x)",
    ]
    return tables, f"SELECT count(*) FROM a WHERE (SELECT count(*) FROM b WHERE b.x < a.x) > {n // 2}"


def morsel(binary, threads, tables, query, runs):
    script = ";\n".join(tables + [query] * runs) + ";\n"
    env = dict(os.environ, MORSEL_THREADS=str(threads))
    p = subprocess.run([binary, "--timer", "--format", "csv"], input=script, text=True,
                       capture_output=True, env=env, check=True)
    times = [float(m) for m in re.findall(r"([0-9.]+) ?ms", p.stderr)][-runs:]
    answer = p.stdout.strip().splitlines()[-1]
    return statistics.median(times), answer


def duck(threads, tables, query, runs):
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    for t in tables:
        con.execute(t)
    times, answer = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        answer = con.execute(query).fetchall()[0][0]
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), str(answer)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--morsel", default="target/release/morsel")
    ap.add_argument("--correlated-rows", default="2000,10000")
    args = ap.parse_args()
    print(f"threads {args.threads}, median of {args.runs}, DuckDB {duckdb.__version__}")
    print("| query | morsel ms | DuckDB ms | morsel / DuckDB | answers |")
    print("|---|---|---|---|---|")
    cases = [(f"{shape} of {n} tables", join_query(shape, n))
             for shape in ("chain", "star", "clique") for n in (8, 16, 32, 64)]
    cases += [(f"correlated b.x < a.x, {n} x {n} rows", correlated_query(n))
              for n in map(int, args.correlated_rows.split(","))]
    for name, (tables, query) in cases:
        m, ma = morsel(args.morsel, args.threads, tables, query, args.runs)
        d, da = duck(args.threads, tables, query, args.runs)
        same = "equal" if ma == da else f"{ma} vs {da}"
        print(f"| {name} | {m:.1f} | {d:.1f} | {m / d:.2f} | {same} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
