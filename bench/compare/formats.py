"""One adapter per file format. Every adapter reads and writes with its
library's defaults, uses its own engine's filter pushdown, and opens the
file inside each measured operation (so every format pays its own open),
except the warm take: `taker` opens the file once and returns a function
that takes rows from that same open file, the way an application that keeps
a file open serves point lookups.

threads: the number of threads the library may use, 1 (single-threaded) or
more; each adapter translates it into its library's own setting. Libraries
are imported lazily so that the peak-RSS child processes only load what
they use.

column_sizes(path), where a format can tell: the bytes each top-level
column takes in the file, {name: bytes}, without the footer or file
metadata (Quiver: the encoded chunks `qv inspect` sums; Parquet: the column
chunks' compressed size, page headers and dictionary pages included)."""
import inspect
import json
import os
import shutil
import subprocess

import numpy as np
import pyarrow as pa

IPC_BATCH_ROWS = 131072  # Arrow IPC batches are written with this many rows


def _op_text(col, op, v):
    import datetime as dt
    import decimal

    def lit(x):
        if isinstance(x, dt.date):
            return f"DATE '{x.isoformat()}'"
        if isinstance(x, decimal.Decimal):
            return str(x)
        return repr(x)
    if op == "between":
        return f"{col} BETWEEN {lit(v[0])} AND {lit(v[1])}"
    return f"{col} {op} {lit(v)}"


def quiver_filter(terms):
    return " AND ".join(_op_text(c, o, v) for c, o, v in terms)


def sql_filter(terms):
    return " AND ".join(_op_text(f'"{c}"', o, v) for c, o, v in terms)


def arrow_filter(terms, schema):
    import pyarrow.compute as pc
    expr = None
    for c, o, v in terms:
        t = schema.field(c).type
        f = pc.field(c)
        if o == "between":
            e = (f >= pa.scalar(v[0], t)) & (f <= pa.scalar(v[1], t))
        else:
            s = pa.scalar(v, t)
            e = {">=": f >= s, ">": f > s, "<": f < s, "<=": f <= s, "=": f == s}[o]
        expr = e if expr is None else expr & e
    return expr


def vortex_filter(terms, schema):
    import vortex as vx
    import vortex.expr as ve

    def lit(t, x):
        if pa.types.is_date32(t):
            return ve.literal(vx.date("days"), x)
        if pa.types.is_decimal(t):
            return ve.literal(vx.decimal(precision=t.precision, scale=t.scale), x)
        if pa.types.is_floating(t):
            return ve.literal(vx.float_(64), float(x))
        if pa.types.is_integer(t):
            width = t.bit_width
            return ve.literal(vx.int_(width), int(x))
        raise ValueError(t)
    expr = None
    for c, o, v in terms:
        t = schema.field(c).type
        col = ve.column(c)
        if o == "between":
            e = ve.and_(ve.gt_eq(col, lit(t, v[0])), ve.lt_eq(col, lit(t, v[1])))
        else:
            e = {">=": ve.gt_eq, ">": ve.gt, "<": ve.lt, "<=": ve.lt_eq, "=": ve.eq}[o](
                col, lit(t, v))
        expr = e if expr is None else ve.and_(expr, e)
    return expr


def _arrow_threads(threads):
    """pyarrow's CPU pool sized to the mode (it defaults to every core the
    machine has, which on a larger machine than the mode would measure more
    threads than asked for); returns use_threads."""
    if threads > 1:
        pa.set_cpu_count(threads)
    return threads > 1


def qv_cli():
    """The `qv` command to inspect Quiver files with: $QV_CLI, else this
    tree's release or debug build (bench/run compare builds the release
    one), else one on PATH; None when there is none."""
    root = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
    for cand in (os.environ.get("QV_CLI"), os.path.join(root, "build", "release", "cli", "qv"),
                 os.path.join(root, "build", "debug", "cli", "qv"), shutil.which("qv")):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def arrow_leaves(t):
    """How many leaf columns (Parquet column chunks) a value of Arrow type t
    stores: one per primitive, the sum over a struct's fields, a list's
    values', a map's keys' and items'."""
    if pa.types.is_struct(t):
        return sum(arrow_leaves(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return arrow_leaves(t.key_type) + arrow_leaves(t.item_type)
    if (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or pa.types.is_list_view(t) or pa.types.is_large_list_view(t)):
        return arrow_leaves(t.value_type)
    return 1


class Quiver:
    ext = "qvr"

    def __init__(self, compact=False, durable=True, random_access=False):
        import quiver
        self.q = quiver
        self.compact = compact
        self.durable = durable
        self.random_access = random_access
        self.name = (("quiver-compact" if compact else "quiver-random-access" if random_access
                      else "quiver") + ("" if durable else "-nosync"))
        # Durable (the default) fsyncs the file and its directory; compare it
        # with parquet-zstd-fsync. quiver-nosync (no fsync, still atomic)
        # compares with plain parquet-zstd, which never fsyncs.
        self.write_durable = "durable" in inspect.signature(quiver.write).parameters
        # The writer's threads option, where the package has one (issue 15's
        # parallel writer; without it the library writes on the calling
        # thread whatever the mode). Told like the scan: 1 thread is
        # SCAN_SYNC (encode on the calling thread, no worker), N is N
        # workers; never left to its default (the machine's cores).
        self.write_threads = "threads" in inspect.signature(quiver.write).parameters

    def _t(self, threads):
        return self.q.SCAN_SYNC if threads == 1 else threads

    def write(self, table, path, threads):
        kw = {"threads": self._t(threads)} if self.write_threads else {}
        if not self.durable:
            if not self.write_durable:
                raise RuntimeError("quiver-nosync: this quiver package has no durable option")
            kw["durable"] = False
        if self.random_access:
            if "random_access" not in inspect.signature(self.q.write).parameters:
                raise RuntimeError("quiver-random-access: this quiver package has no random_access option")
            kw["random_access"] = True
        self.q.write(table, path, compact=self.compact, **kw)

    def column_sizes(self, path):
        qv = qv_cli()
        if qv is None:
            raise RuntimeError("no qv command (build it: cmake --build build/release --target qv, "
                               "or set QV_CLI)")
        r = subprocess.run([qv, "inspect", path, "--json", "--summary", "--no-encodings"],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(f"qv inspect {path}: {r.stderr.strip()[-300:]}")
        return {c["name"]: c["encoded_bytes"] for c in json.loads(r.stdout)["summary"]["columns"]}

    def full(self, path, threads, ds):
        with self.q.open(path) as f:
            return f.to_arrow(threads=self._t(threads))

    def project(self, path, threads, cols, ds):
        with self.q.open(path) as f:
            return f.to_arrow(columns=cols, threads=self._t(threads))

    def filter(self, path, threads, terms, cols, ds):
        with self.q.open(path) as f:
            return f.to_arrow(columns=cols, filter=quiver_filter(terms), threads=self._t(threads))

    def take(self, path, threads, idx, ds, cols=None):
        with self.q.open(path) as f:
            return f.take(idx, columns=cols, threads=self._t(threads))

    def taker(self, path, threads, ds):
        f = self.q.open(path)
        t = self._t(threads)
        return (lambda idx, cols=None: f.take(idx, columns=cols, threads=t)), f.close

    def stream(self, path, threads):
        n = 0
        with self.q.open(path) as f:
            for b in f.scan(threads=self._t(threads)):
                n += b.num_rows
        return n


class Parquet:
    ext = "parquet"

    def __init__(self, codec, fsync=False):
        import pyarrow.dataset as pads
        import pyarrow.parquet as pq
        self.pq, self.ds = pq, pads
        self.codec = codec
        self.fsync = fsync
        self.name = f"parquet-{codec}" + ("-fsync" if fsync else "")

    def write(self, table, path, threads):
        _arrow_threads(threads)
        self.pq.write_table(table, path, compression=self.codec)
        if self.fsync:
            # What a durable Quiver write does at finish: the file, then its
            # directory (so the name survives a crash too).
            for p, flags in ((path, os.O_RDONLY), (os.path.dirname(os.path.abspath(path)),
                                                   os.O_RDONLY | os.O_DIRECTORY)):
                fd = os.open(p, flags)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)

    def full(self, path, threads, ds):
        return self.pq.read_table(path, use_threads=_arrow_threads(threads))

    def project(self, path, threads, cols, ds):
        return self.pq.read_table(path, columns=cols, use_threads=_arrow_threads(threads))

    def filter(self, path, threads, terms, cols, ds):
        d = self.ds.dataset(path, format="parquet")
        return d.to_table(columns=cols, filter=arrow_filter(terms, d.schema),
                          use_threads=_arrow_threads(threads))

    def take(self, path, threads, idx, ds, cols=None):
        return self._take(self.pq.ParquetFile(path), threads, idx, cols)

    def taker(self, path, threads, ds):
        pf = self.pq.ParquetFile(path)
        return (lambda idx, cols=None: self._take(pf, threads, idx, cols)), pf.close

    def _take(self, pf, threads, idx, cols):
        # pyarrow's best random access: read only the row groups that hold
        # the rows (the columns asked for), then take within them.
        md = pf.metadata
        starts = np.cumsum([0] + [md.row_group(i).num_rows for i in range(md.num_row_groups)])
        rgs = np.unique(np.searchsorted(starts, idx, side="right") - 1)
        t = pf.read_row_groups(list(rgs), columns=cols, use_threads=_arrow_threads(threads))
        base = np.concatenate([[0], np.cumsum([md.row_group(int(g)).num_rows for g in rgs])])
        rg_of = np.searchsorted(starts, idx, side="right") - 1
        local = base[np.searchsorted(rgs, rg_of)] + (idx - starts[rg_of])
        return t.take(pa.array(local))

    def stream(self, path, threads):
        n = 0
        for b in self.pq.ParquetFile(path).iter_batches(use_threads=_arrow_threads(threads)):
            n += b.num_rows
        return n

    def column_sizes(self, path):
        # Leaves are numbered depth-first in schema order, so the top-level
        # column of leaf i follows from the leaf counts of the fields
        # (names with dots would make path_in_schema ambiguous).
        pf = self.pq.ParquetFile(path)
        owner = []
        for f in pf.schema_arrow:
            owner += [f.name] * arrow_leaves(f.type)
        md = pf.metadata
        if len(owner) != md.num_columns:
            raise RuntimeError(f"{path}: {md.num_columns} column chunks per row group, "
                               f"but the schema has {len(owner)} leaves")
        sizes = dict.fromkeys(pf.schema_arrow.names, 0)
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            for c in range(md.num_columns):
                sizes[owner[c]] += rg.column(c).total_compressed_size
        return sizes


class ArrowIPC:
    ext = "arrow"
    name = "arrow-ipc-lz4"

    def write(self, table, path, threads):
        opts = pa.ipc.IpcWriteOptions(compression="lz4", use_threads=_arrow_threads(threads))
        # Batches of exactly IPC_BATCH_ROWS rows (the last one fewer), which
        # take() relies on: write_table would also cut at the table's chunk
        # boundaries. A slice that spans chunks is combined first (the takes
        # dataset's chunks are IPC_BATCH_ROWS long, so a full run copies
        # nothing).
        with pa.ipc.new_file(path, table.schema, options=opts) as w:
            for off in range(0, table.num_rows, IPC_BATCH_ROWS):
                part = table.slice(off, IPC_BATCH_ROWS)
                if any(c.num_chunks > 1 for c in part.columns):
                    part = part.combine_chunks()
                for b in part.to_batches():
                    w.write_batch(b)

    def _open(self, path, threads, fields=None):
        opts = pa.ipc.IpcReadOptions(use_threads=_arrow_threads(threads),
                                     included_fields=fields if fields is not None else None)
        return pa.ipc.open_file(pa.OSFile(path), options=opts)

    def _fields(self, ds, cols):
        if cols is None:
            return None
        names = ds.table.schema.names
        return [names.index(c) for c in cols]

    def full(self, path, threads, ds):
        return self._open(path, threads).read_all()

    def project(self, path, threads, cols, ds):
        return self._open(path, threads, self._fields(ds, cols)).read_all().select(cols)

    def filter(self, path, threads, terms, cols, ds):
        import pyarrow.dataset as pads
        d = pads.dataset(path, format="ipc")
        return d.to_table(columns=cols, filter=arrow_filter(terms, d.schema),
                          use_threads=_arrow_threads(threads))

    def take(self, path, threads, idx, ds, cols=None):
        return self._take(self._open(path, threads, self._fields(ds, cols)), idx)

    def taker(self, path, threads, ds):
        # included_fields is fixed when the reader is opened: one reader per
        # projection, opened on first use and kept.
        readers = {}

        def take(idx, cols=None):
            key = tuple(cols) if cols is not None else None
            if key not in readers:
                readers[key] = self._open(path, threads, self._fields(ds, cols))
            return self._take(readers[key], idx)
        return take, readers.clear

    def _take(self, r, idx):
        batches = np.unique(idx // IPC_BATCH_ROWS)
        pos = {int(b): i for i, b in enumerate(batches)}
        t = pa.Table.from_batches([r.get_batch(int(b)) for b in batches])
        local = np.array([pos[int(i // IPC_BATCH_ROWS)] * IPC_BATCH_ROWS + i % IPC_BATCH_ROWS
                          for i in idx])
        return t.take(pa.array(local))

    def stream(self, path, threads):
        r = self._open(path, threads)
        n = 0
        for i in range(r.num_record_batches):
            n += r.get_batch(i).num_rows
        return n


class DuckDB:
    ext = "duckdb"
    name = "duckdb"

    def __init__(self):
        import duckdb
        self.duckdb = duckdb

    def _con(self, path, threads, read_only=True):
        con = self.duckdb.connect(path, read_only=read_only)
        con.execute(f"SET threads={threads}")
        return con

    def write(self, table, path, threads):
        for p in (path, path + ".wal"):
            if os.path.exists(p):
                os.unlink(p)
        con = self._con(path, threads, read_only=False)
        con.register("src", table)
        con.execute("CREATE TABLE t AS SELECT * FROM src")
        con.close()  # checkpoints: the file is complete

    def _query(self, path, threads, sql):
        con = self._con(path, threads)
        try:
            # con.sql: the relation API exports Arrow without the extra copy
            # of DuckDB's DB-API result path (which warns about it).
            return con.sql(sql).to_arrow_table()
        finally:
            con.close()

    def full(self, path, threads, ds):
        return self._query(path, threads, "SELECT * FROM t")

    def project(self, path, threads, cols, ds):
        return self._query(path, threads, f"SELECT {', '.join(cols)} FROM t")

    def filter(self, path, threads, terms, cols, ds):
        return self._query(path, threads, f"SELECT {', '.join(cols)} FROM t "
                                          f"WHERE {sql_filter(terms)}")

    def _take_sql(self, idx, cols):
        ids = ", ".join(str(int(i)) for i in idx)
        sel = "*" if cols is None else ", ".join(f'"{c}"' for c in cols)
        return f"SELECT {sel} FROM t WHERE rowid IN ({ids}) ORDER BY rowid"

    def take(self, path, threads, idx, ds, cols=None):
        return self._query(path, threads, self._take_sql(idx, cols))

    def taker(self, path, threads, ds):
        con = self._con(path, threads)
        return (lambda idx, cols=None: con.sql(self._take_sql(idx, cols)).to_arrow_table()), \
            con.close

    def stream(self, path, threads):
        con = self._con(path, threads)
        n = 0
        for b in con.sql("SELECT * FROM t").to_arrow_reader():
            n += b.num_rows
        con.close()
        return n


class Vortex:
    ext = "vortex"
    name = "vortex"

    def __init__(self):
        import vortex
        self.vx = vortex

    def _threads(self, threads):
        # The calling thread drives the scan and the pool adds workers:
        # 1 thread = no workers, N threads = N - 1 workers + the caller (the
        # library's default is available parallelism - 1).
        self.vx.set_worker_threads(threads - 1)

    def write(self, table, path, threads):
        self._threads(threads)
        self.vx.io.write(table, path)

    def full(self, path, threads, ds):
        self._threads(threads)
        return self.vx.open(path).to_arrow().read_all()

    def project(self, path, threads, cols, ds):
        self._threads(threads)
        return self.vx.open(path).to_arrow(projection=cols).read_all()

    def filter(self, path, threads, terms, cols, ds):
        self._threads(threads)
        return self.vx.open(path).to_arrow(
            projection=cols, expr=vortex_filter(terms, ds.table.schema)).read_all()

    def _take(self, f, idx, cols):
        kw = {} if cols is None else {"projection": cols}
        return f.to_arrow(indices=self.vx.array(pa.array(idx, pa.uint64())), **kw).read_all()

    def take(self, path, threads, idx, ds, cols=None):
        self._threads(threads)
        return self._take(self.vx.open(path), idx, cols)

    def taker(self, path, threads, ds):
        self._threads(threads)
        f = self.vx.open(path)
        return (lambda idx, cols=None: self._take(f, idx, cols)), (lambda: None)

    def stream(self, path, threads):
        self._threads(threads)
        n = 0
        for b in self.vx.open(path).to_arrow():
            n += b.num_rows
        return n


def make(name):
    return {
        "quiver": lambda: Quiver(False),
        "quiver-compact": lambda: Quiver(True),
        "quiver-nosync": lambda: Quiver(False, durable=False),
        "quiver-random-access": lambda: Quiver(random_access=True),
        "parquet-snappy": lambda: Parquet("snappy"),
        "parquet-zstd": lambda: Parquet("zstd"),
        "parquet-zstd-fsync": lambda: Parquet("zstd", fsync=True),
        "arrow-ipc-lz4": ArrowIPC,
        "duckdb": DuckDB,
        "vortex": Vortex,
    }[name]()


ALL = ["quiver", "quiver-compact", "quiver-nosync", "quiver-random-access", "parquet-snappy", "parquet-zstd",
       "parquet-zstd-fsync", "arrow-ipc-lz4", "duckdb", "vortex"]
