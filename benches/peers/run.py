#!/usr/bin/env python3
"""Side-by-side: morsel vs DuckDB vs Polars, same data, same thread count, results checked.

    python3 benches/peers/run.py [--threads 1,2] [--sf 1] [--runs 3] [--tpch-only|--suite-only]
                                 [--tpch-memory] [--suite-rows 1000000] [--suite-workloads a,b]
                                 [--suite-warmup 1]

Creates benches/peers/.venv with the pinned versions in requirements.txt on first use, builds
morsel's benchmark binaries, generates the data (TPC-H with tpchgen at --sf; the suite's tables
exported by the suite itself) and prints one markdown table per thread count:
workload | morsel ms | DuckDB ms | Polars ms | morsel / best peer, plus CPU seconds (user+sys)
and, for TPC-H over CSV, peak memory (max RSS from /usr/bin/time -v), per engine.
`--tpch-memory` runs TPC-H on tables loaded into memory first (each engine loads the tables
the query names, untimed) instead of over the CSV files. `--suite-rows 10000000` runs the
suite's in-memory workloads on its 10M-row tables (the CSV workloads exist at 1M rows only);
`--suite-workloads` keeps the workloads named (first word, as the suite names them);
`--suite-warmup N` runs each suite query N times untimed before the timed runs, in every
engine alike (default 1, morsel's suite always ran one): on this VM, reading memory speeds
up over the first ~10 passes after it was written (docs/benchmarks.md), which sways the
few-millisecond workloads by how their tables were built.

Every engine runs each query in its own process, `--runs` times; the time is the median of
those runs, measured inside the process (start-up and table registration excluded) up to a
columnar result (morsel's batches, DuckDB's Arrow table, Polars' DataFrame); converting it
to rows for the comparison is not timed. Threads
are pinned equal: DuckDB `SET threads`, POLARS_MAX_THREADS, MORSEL_THREADS. Results are
compared with morsel's: same row count and, cell by cell, equal text or numbers within a
relative 1e-6 (engines add doubles in different orders). A mismatch is marked in the table.
"""
import argparse
import csv
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VENV = os.path.join(HERE, ".venv")
OUT = os.path.join(HERE, "out")
TABLES = ["nation", "region", "part", "supplier", "partsupp", "customer", "orders", "lineitem"]


def venv_python():
    """The venv's Python, created and brought in line with requirements.txt when needed."""
    py = os.path.join(VENV, "bin", "python")
    wanted = open(os.path.join(HERE, "requirements.txt")).read()
    stamp = os.path.join(VENV, "installed-requirements.txt")
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", VENV])
    if not os.path.exists(stamp) or open(stamp).read() != wanted:
        subprocess.check_call([py, "-m", "pip", "install", "-q", "-r", os.path.join(HERE, "requirements.txt")])
        open(stamp, "w").write(wanted)
    return py


# ---------------------------------------------------------------- workers (run in the venv)

def worker(args):
    """Runs one query `runs` times on one engine; prints JSON {ms, rows} and writes the result."""
    engine, sql, runs, threads, out = args.engine, args.sql, args.runs, args.threads, args.out
    setup = json.loads(args.setup)
    if engine == "duckdb":
        import duckdb

        con = duckdb.connect()
        con.execute(f"SET threads={threads}")
        for name, path in setup["views"].items():
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_csv('{path}')")
        for name, path in setup["tables"].items():
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM read_csv('{path}')")

        # Timed: the query to a columnar (Arrow) result, like morsel's batches; turning it
        # into Python rows for the comparison happens after timing.
        def run():
            return con.sql(sql).fetch_arrow_table()

        def rows_of(t):
            return t.column_names, [tuple(r.values()) for r in t.to_pylist()]
    else:
        os.environ["POLARS_MAX_THREADS"] = str(threads)
        import polars as pl

        ctx = pl.SQLContext()
        for name, path in setup["views"].items():
            ctx.register(name, pl.scan_csv(path, try_parse_dates=True))
        for name, path in setup["tables"].items():
            ctx.register(name, pl.read_csv(path, try_parse_dates=True).lazy())

        def run():
            return ctx.execute(sql).collect()

        def rows_of(df):
            return df.columns, df.rows()

    result = None
    for _ in range(args.warmup):
        result = run()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        result = run()
        times.append((time.perf_counter() - t) * 1e3)
    cols, rows = rows_of(result)
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow(["" if v is None else (repr(v) if isinstance(v, float) else v) for v in r])
    print(json.dumps({"ms": statistics.median(times), "rows": len(rows)}))


# ---------------------------------------------------------------- orchestration

def timed(cmd, env=None):
    """Runs cmd under /usr/bin/time -v; returns (stdout, cpu seconds, max RSS MiB, ok, stderr)."""
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True, env=env)
    cpu = sum(float(m) for m in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", p.stderr))
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    return p.stdout, cpu, (int(rss.group(1)) / 1024 if rss else float("nan")), p.returncode == 0, p.stderr


def cells_equal(a, b):
    if a == b or a.lower() == b.lower():  # True / true
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return a.strip() == b.strip()
    return math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-9)


def same_result(path_a, path_b, ordered):
    with open(path_a) as fa, open(path_b) as fb:
        a, b = list(csv.reader(fa))[1:], list(csv.reader(fb))[1:]
    if len(a) != len(b):
        return False
    if not ordered:
        # Sort by value, not text: engines print the same float differently (1e-05, 0.00001).
        def key(row):
            out = []
            for c in row:
                try:
                    out.append((0, float(c), ""))
                except ValueError:
                    out.append((1, 0.0, c.lower()))
            return out
        a, b = sorted(a, key=key), sorted(b, key=key)
    for ra, rb in zip(a, b):
        if len(ra) != len(rb) or not all(cells_equal(x, y) for x, y in zip(ra, rb)):
            return False
    return True


def peer(py, engine, sql, setup, runs, threads, out, warmup=0):
    cmd = [py, os.path.abspath(__file__), "_worker", "--engine", engine, "--sql", sql, "--setup", json.dumps(setup),
           "--runs", str(runs), "--threads", str(threads), "--out", out, "--warmup", str(warmup)]
    stdout, cpu, rss, ok, err = timed(cmd)
    if not ok:
        last = [l for l in err.splitlines() if l.strip() and not l.startswith("\t")]
        return {"error": (last[-1] if last else "failed")[:120]}
    r = json.loads(stdout.strip().splitlines()[-1])
    r.update(cpu=cpu / runs, rss=rss)
    return r


def fmt(x, digits=1):
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def tpch(py, args, threads):
    data = os.path.join(ROOT, "target", "tpch-data", f"sf{args.sf:g}")
    runner = os.path.join(ROOT, "target", "release", "morsel-tpch")
    # Generate the data (once) before anything is timed.
    subprocess.run([runner, "--sf", f"{args.sf:g}", "--data", data, "--runs", "1", "--query", "6"], capture_output=True, check=True)
    mode = "memory" if args.tpch_memory else "csv"
    rows = []
    for q in range(1, 23):
        sql = open(os.path.join(ROOT, "tests", "tpch", "queries", f"q{q:02}.sql")).read()
        outdir = os.path.join(OUT, f"tpch-{mode}-t{threads}")
        os.makedirs(outdir, exist_ok=True)
        env = dict(os.environ, MORSEL_THREADS=str(threads))
        cmd = [runner, "--sf", f"{args.sf:g}", "--data", data, "--threads", str(threads), "--runs", str(args.runs),
               "--query", str(q), "--out", outdir, "--mode", mode]
        stdout, cpu, rss, ok, _ = timed(cmd, env)
        line = [l for l in stdout.splitlines() if l.startswith(f"q{q:02},")]
        m = {"error": "failed"}
        if ok and line:
            f = next(csv.reader([line[0]]))
            m = {"ms": float(f[3]), "cpu": cpu / args.runs, "rss": rss} if f[1] == "ok" else {"error": "unsupported"}
        files = {t: os.path.join(data, f"{t}.csv") for t in TABLES}
        if args.tpch_memory:
            # Load only the tables the query names: loading all of them per query would
            # take most of the run.
            setup = {"views": {}, "tables": {t: f for t, f in files.items() if re.search(rf"\b{t}\b", sql)}}
        else:
            setup = {"views": files, "tables": {}}
        res = {"morsel": m}
        for engine in ("duckdb", "polars"):
            out = os.path.join(outdir, f"q{q:02}.{engine}.csv")
            res[engine] = peer(py, engine, sql, setup, args.runs, threads, out)
            if "ms" in m and "ms" in res[engine]:
                res[engine]["agrees"] = same_result(os.path.join(outdir, f"q{q:02}.csv"), out, ordered=True)
        rows.append((f"TPC-H Q{q} ({mode})", res))
        print(f"  q{q:02}: " + ", ".join(f"{e} {fmt(r.get('ms'))}" for e, r in res.items()), file=sys.stderr)
    return rows


# (workload as the suite names it, SQL, whether row order is part of the answer). Tables
# t, l, r are the suite's 1M-row in-memory tables; f is the suite's 1M-row CSV file.
SUITE = [
    ("arithmetic_chain", "SELECT ((a + b) * c - d) / e + a FROM t", True),
    ("nullable_compare", "SELECT a < b FROM t", True),
    ("filter", "SELECT a, k16 FROM t WHERE a < 0.5", True),
    ("global_sum", "SELECT sum(a) FROM t", True),
    ("global_count", "SELECT count(a) FROM t", True),
    ("grouped_sum_count low16", "SELECT k16, sum(a), count(*) FROM t GROUP BY k16", False),
    ("grouped_sum_count high100k", "SELECT k100k, sum(a), count(*) FROM t GROUP BY k100k", False),
    ("grouped_sum_count skewed", "SELECT kskew, sum(a), count(*) FROM t GROUP BY kskew", False),
    ("group_by_string", "SELECT s, sum(a) FROM t GROUP BY s", False),
    ("sort_two_keys", "SELECT k16, a FROM t ORDER BY k16, a", True),
    ("top_k", "SELECT a FROM t ORDER BY a DESC LIMIT 10", True),
    ("concat", "SELECT a FROM t UNION ALL SELECT b FROM t", False),
    ("inner_join", "SELECT count(*), sum(l.v + r.w) FROM l JOIN r ON l.k = r.k", True),
    ("csv_read", "SELECT * FROM f", True),
    ("csv_filter_aggregate", "SELECT k, sum(y), count(*) FROM f WHERE x > 0.5 GROUP BY k", False),
]


def suite(py, args, threads):
    """The suite at 1M rows, or --suite-rows (no NULLs). morsel's times come from the suite's
    own output (tables in memory, as for the peers), run again for each workload just before the
    peers run it, so that the three are measured together (this machine's speed drifts within
    minutes); its answers, for the comparison, from the morsel CLI over the same data exported
    as CSV."""
    n = args.suite_rows
    if n not in (1_000_000, 10_000_000):
        sys.exit("--suite-rows is 1000000 or 10000000 (the sizes the suite generates)")
    export = os.path.join(ROOT, "target", "bench-data", "export")
    env = dict(os.environ, MORSEL_THREADS=str(threads), BENCH_REPS=str(args.runs),
               BENCH_WARMUP=str(max(args.suite_warmup, 1)))
    if n > 1_000_000:
        env["BENCH_LARGE"] = "1"
    os.makedirs(OUT, exist_ok=True)
    chosen = [w for w in SUITE if not args.suite_workloads or w[0].split(" ")[0] in args.suite_workloads.split(",")]
    if n > 1_000_000:
        chosen = [w for w in chosen if not w[0].startswith("csv_")]

    def morsel_suite(only=None, export_tables=False):
        """morsel's medians at n rows without NULLs, by workload (all, or those named like
        `only`); the suite also validates every answer against its oracle and, when asked,
        exports the tables."""
        run_env = dict(env, BENCH_FILTER=only) if only else dict(env)
        if export_tables:
            run_env["BENCH_EXPORT"] = export
        out = subprocess.run([os.path.join(ROOT, "target", "release", "morsel-suite")], capture_output=True, text=True,
                             env=run_env)
        if out.returncode != 0:
            sys.exit("the morsel suite failed its validation:\n" + out.stderr)
        medians = {}
        for r in csv.DictReader(l for l in out.stdout.splitlines() if not l.startswith("#")):
            if r["rows"] == str(n) and r["null_density"] == "0":
                key = r["workload"] + (" " + r["group_shape"] if r["workload"] == "grouped_sum_count" else "")
                medians[key] = float(r["median_ns"]) / 1e6
        return medians

    # Every chosen workload validated once, the tables exported by the first run.
    for k, name in enumerate(sorted({w[0].split(" ")[0] for w in chosen})):
        morsel_suite(name, export_tables=k == 0)
    files = {"t": os.path.join(export, f"t_{n}_0.csv"), "l": os.path.join(export, f"l_{n}.csv"), "r": os.path.join(export, f"r_{n}.csv")}
    csv_file = os.path.join(ROOT, "target", "bench-data", f"suite_{n}.csv")
    rows = []
    for name, sql, ordered in chosen:
        on_csv = name.startswith("csv_")
        setup = {"views": {"f": csv_file}, "tables": {}} if on_csv else {"views": {}, "tables": files}
        stem = os.path.join(OUT, f"suite-t{threads}-{name.replace(' ', '_')}")
        # morsel's answer: the same SQL with each table name replaced by its file.
        cli_sql = re.sub(r"\b(FROM|JOIN) (t|l|r|f)\b", lambda m: f"{m.group(1)} '{(setup['views'] or setup['tables'])[m.group(2)]}' {m.group(2)}", sql)
        with open(stem + ".morsel.csv", "w") as f:
            subprocess.run([os.path.join(ROOT, "target", "release", "morsel"), "--format", "csv", cli_sql], stdout=f, check=True,
                           env=dict(os.environ, MORSEL_THREADS=str(threads)))
        res = {"morsel": {"ms": morsel_suite(name.split(" ")[0]).get(name)}}
        for engine in ("duckdb", "polars"):
            res[engine] = peer(py, engine, sql, setup, args.runs, threads, f"{stem}.{engine}.csv",
                               max(args.suite_warmup, 1))
            if "ms" in res[engine]:
                res[engine]["agrees"] = same_result(stem + ".morsel.csv", f"{stem}.{engine}.csv", ordered)
        where = "from CSV" if on_csv else "in memory"
        rows.append((f"{name} ({n // 1_000_000}M rows, {where})", res))
        print(f"  {name}: " + ", ".join(f"{e} {fmt(r.get('ms'))}" for e, r in res.items()), file=sys.stderr)
    return rows


def table(rows, threads):
    lines = [f"### {threads} thread{'s' if threads > 1 else ''}", "",
             "| workload | morsel ms | DuckDB ms | Polars ms | morsel / best peer | CPU s (m / D / P) | peak MiB (m / D / P) |",
             "|---|---:|---:|---:|---:|---|---|"]
    ratios = []
    for name, res in rows:
        def cell(e):
            r = res[e]
            if "ms" not in r or r["ms"] is None:
                return r.get("error", "—")
            mark = "" if r.get("agrees", True) else " ≠"
            return fmt(r["ms"]) + mark
        peers = [res[e]["ms"] for e in ("duckdb", "polars") if res[e].get("ms")]
        m = res["morsel"].get("ms")
        ratio = m / min(peers) if m and peers else None
        if ratio:
            ratios.append(ratio)
        cpu = " / ".join(fmt(res[e].get("cpu"), 2) for e in ("morsel", "duckdb", "polars"))
        rss = " / ".join(fmt(res[e].get("rss"), 0) for e in ("morsel", "duckdb", "polars"))
        lines.append(f"| {name} | {cell('morsel')} | {cell('duckdb')} | {cell('polars')} | {fmt(ratio, 2)} | {cpu} | {rss} |")
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        lines.append(f"| geometric mean of ratios ({len(ratios)} workloads) | | | | {geo:.2f} | | |")
    return "\n".join(lines)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "_worker":
        p = argparse.ArgumentParser()
        for a in ("--engine", "--sql", "--setup", "--out"):
            p.add_argument(a, required=True)
        p.add_argument("--runs", type=int, default=3)
        p.add_argument("--warmup", type=int, default=0)
        p.add_argument("--threads", type=int, default=1)
        return worker(p.parse_args(sys.argv[2:]))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", default="1,2")
    p.add_argument("--sf", type=float, default=1.0)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--tpch-only", action="store_true")
    p.add_argument("--suite-only", action="store_true")
    p.add_argument("--tpch-memory", action="store_true")
    p.add_argument("--suite-rows", type=int, default=1_000_000)
    p.add_argument("--suite-warmup", type=int, default=1)
    p.add_argument("--suite-workloads", default="")
    args = p.parse_args()
    py = venv_python()
    subprocess.check_call(["cargo", "bench", "--no-run", "--bench", "tpch", "--bench", "suite"], cwd=ROOT)
    subprocess.check_call(["cargo", "build", "--release", "--bin", "morsel"], cwd=ROOT)
    # Stable names for the freshly built benchmark binaries.
    for name in ("tpch", "suite"):
        built = subprocess.run(["cargo", "bench", "--no-run", "--bench", name, "--message-format", "json"], cwd=ROOT,
                               capture_output=True, text=True).stdout
        exe = [json.loads(l)["executable"] for l in built.splitlines() if '"executable":"' in l and f'"name":"{name}"' in l]
        if exe:
            shutil.copy2(exe[-1], os.path.join(ROOT, "target", "release", f"morsel-{name}"))
    versions = subprocess.run([py, "-c", "import duckdb, polars; print(duckdb.__version__, polars.__version__)"],
                              capture_output=True, text=True).stdout.split()
    print(f"# morsel vs DuckDB {versions[0]} vs Polars {versions[1]}; {os.cpu_count()} cores; "
          f"{time.strftime('%Y-%m-%d')}; runs={args.runs}; TPC-H SF {args.sf:g}\n")
    for t in [int(x) for x in args.threads.split(",")]:
        print(f"threads={t}", file=sys.stderr)
        rows = []
        if not args.tpch_only:
            rows += suite(py, args, t)
        if not args.suite_only:
            rows += tpch(py, args, t)
        print(table(rows, t) + "\n", flush=True)


if __name__ == "__main__":
    main()
