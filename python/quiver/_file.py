"""quiver.open / quiver.File: reading .qvr files into Arrow."""
import operator
import os

import numpy as np
import pyarrow as pa

from . import _quiver
from .errors import InvalidArgumentError

SCAN_SYNC = _quiver.SCAN_SYNC
# The prefetch of reads that keep their whole result (to_arrow, read_table).
_READ_ALL_PREFETCH = 4

_INT64_MAX = 2**63 - 1


def _count(name, value, *, minimum, default=None):
    """`value` as an int >= minimum, or `default` when it is None. Floats,
    bools and strings are TypeError and values out of range ValueError, both
    naming the argument: a count must never silently mean "default"."""
    if value is None:
        return default
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}")
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None
    if v < minimum:
        raise InvalidArgumentError(f"{name} must be at least {minimum}, got {v}")
    if v > _INT64_MAX:
        raise InvalidArgumentError(f"{name} is too large: {v}")
    return v


def _memory_limit(value):
    """memory_limit: None (no limit of its own) or a positive byte count."""
    return _count("memory_limit", value, minimum=1, default=0)


def _threads(value):
    if value is None:
        return 0
    v = _count("threads", value, minimum=SCAN_SYNC)
    if v > 2**31 - 1:
        raise InvalidArgumentError(f"threads is too large: {v}")
    return v


_CASTS = {None: 0, "spark": _quiver.CAST_SPARK}


def _cast(value):
    """cast=: None (types as stored) or "spark" (qv_scan_options.cast
    QV_CAST_SPARK: timestamps to microseconds, unsigned integers widened,
    float16 to float32, large lists to lists)."""
    try:
        return _CASTS[value]
    except (KeyError, TypeError):
        raise InvalidArgumentError(f"cast must be None or 'spark', not {value!r}") from None


def _name_bytes(name):
    """A column name as the bytes the library reads: str as UTF-8 (lone
    surrogates from os.fsdecode-style names back to their bytes)."""
    try:
        return name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as e:
        raise InvalidArgumentError(
            f"columns: character {e.object[e.start]!r} of {name!r} cannot be encoded as "
            "UTF-8 (a lone surrogate)") from None


def _make_importer(capsule):
    """(schema, importer) for a scan whose batches have the schema in
    `capsule`: the extension calls importer(address) for each batch."""
    schema = pa.Schema._import_from_c_capsule(capsule)
    imp = pa.RecordBatch._import_from_c

    def importer(addr):
        return imp(addr, schema)

    return schema, importer


_NAN_ORDERS = {"ieee": 0, "largest": 1}


def _nan_order(value):
    """The qv_nan_order code of a nan_order argument ("ieee" or "largest")."""
    if value is None:
        return 0
    if not isinstance(value, str) or value.lower() not in _NAN_ORDERS:
        raise ValueError(f"nan_order must be 'ieee' or 'largest', not {value!r}")
    return _NAN_ORDERS[value.lower()]


def _filter_bytes(text):
    """A filter as the bytes the C parser reads: str as UTF-8 (lone
    surrogates from os.fsdecode-style names back to their original bytes),
    bytes as they are. The parser takes the text with its length, so a NUL
    inside a string literal is data (elsewhere it is a syntax error)."""
    if text is None:
        return None
    if isinstance(text, str):
        try:
            b = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError as e:
            # A lone surrogate that is not an escaped byte (U+D800..U+DC7F).
            raise InvalidArgumentError(
                f"filter: character {e.object[e.start]!r} at position {e.start + 1} cannot be "
                f"encoded as UTF-8 (a lone surrogate)") from None
    elif isinstance(text, (bytes, bytearray, memoryview)):
        b = bytes(text)
    else:
        raise TypeError(f"filter must be a str, not {type(text).__name__}")
    return b


class File:
    """An open .qvr file. Use as a context manager or call close().

    Scans and batches it produced stay valid after close(): the native
    reader is released when the last of them is."""

    def __init__(self, path, *, memory_limit=None, verify_checksums=True, validate=True,
                 mmap=False):
        self._rd = None
        self._validate = bool(validate)
        self._path = os.fspath(path)  # str or bytes, as given
        if not self._path:
            raise InvalidArgumentError("quiver.open: the path is empty")
        # The prefix of a refusal about this file, as the library words it
        # ("file '<path>': "; a bytes path's undecodable bytes as \xNN).
        shown = (self._path if isinstance(self._path, str)
                 else self._path.decode("utf-8", "backslashreplace"))
        self._where = f"file '{shown}': "
        self._rd = _quiver.open_file(self._path, memory_limit=_memory_limit(memory_limit),
                                     mmap=bool(mmap), verify_checksums=bool(verify_checksums))
        info = self._rd.info()
        self._num_rows = info["num_rows"]
        self._num_row_groups = info["num_row_groups"]
        self._file_size = info["file_size"]
        self._writer_version = info["writer_version"]
        self._schema = pa.Schema._import_from_c_capsule(self._rd.schema_capsule())

    # -- lifetime --
    def close(self):
        if self._rd is not None:
            self._rd.close()
            self._rd = None

    @property
    def closed(self):
        return self._rd is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _reader(self):
        if self._rd is None:
            raise ValueError("I/O operation on a closed quiver file")
        return self._rd

    def __repr__(self):
        state = "closed" if self.closed else f"{self._num_rows} rows"
        return f"<quiver.File {self._path!r} {state}>"

    # -- what the footer says --
    @property
    def path(self):
        return self._path

    @property
    def schema(self):
        """The file's schema as a pyarrow.Schema."""
        return self._schema

    @property
    def num_rows(self):
        return self._num_rows

    @property
    def num_columns(self):
        return len(self._schema)

    @property
    def num_row_groups(self):
        return self._num_row_groups

    @property
    def file_size(self):
        return self._file_size

    @property
    def writer_version(self):
        return self._writer_version

    @property
    def metadata(self):
        """File key-value metadata (written with write(metadata=...)) as a dict;
        keys and values are str when they are valid UTF-8, bytes otherwise."""
        def dec(b):
            try:
                return b.decode("utf-8")
            except UnicodeDecodeError:
                return b
        return {dec(k): dec(v) for k, v in self._reader().metadata()}

    @property
    def row_groups(self):
        """One dict per row group: row_group, num_rows, first_row, bytes."""
        return [{"row_group": i, "num_rows": n, "first_row": first, "bytes": size}
                for i, (n, first, size) in enumerate(self._reader().row_groups())]

    def _row_group(self, i):
        i = operator.index(i)
        if not 0 <= i < self._num_row_groups:
            raise IndexError(f"{self._where}row group {i} out of range "
                             f"({self._num_row_groups} row groups)")
        return i

    def _arrow_statistics(self, row_group):
        schema, array = self._reader().statistics(row_group)
        return pa.Array._import_from_c_capsule(schema, array)

    @property
    def statistics(self):
        """Statistics of the whole file as Arrow data: a pyarrow.StructArray
        in the Arrow statistics schema (the "Statistics schema" of the Arrow
        columnar format: one row per column and nested field, numbered
        depth-first, plus one with a null column for the whole file; keys
        ARROW:row_count, ARROW:null_count, ARROW:min_value, ARROW:max_value,
        ":exact" or ":approximate" where a string bound was truncated).
        Bounds are aggregated over the row groups."""
        return self._arrow_statistics(-1)

    def row_group_statistics(self, i):
        """Statistics of row group `i`, as `statistics` (a
        pyarrow.StructArray in the Arrow statistics schema)."""
        return self._arrow_statistics(self._row_group(i))

    def memory_stats(self):
        """Statistics of the memory pool this file's reads are charged to."""
        return self._reader().pool_stats()

    # -- reading --
    def _column_names(self, columns):
        """`columns` as the names the library resolves (qv_file_select):
        str or bytes names, "a.b" for a nested field (a name with a dot or a
        quote written in double quotes), or top-level column indexes."""
        if columns is None:
            return None
        if isinstance(columns, (str, bytes, int, np.integer)):
            columns = [columns]
        out = []
        names = self._schema.names
        for c in columns:
            if isinstance(c, (bool, np.bool_)):
                raise TypeError(f"columns: {c!r} is not a column name or index")
            if isinstance(c, (int, np.integer)):
                c = int(c)
                if not -len(names) <= c < len(names):
                    raise IndexError(f"{self._where}column {c} out of range ({len(names)} columns)")
                # By index: the column's name, quoted, so that dots and
                # quotes in it are not read as a path.
                c = '"' + names[c].replace('"', '""') + '"'
            if isinstance(c, str):
                out.append(_name_bytes(c))
            elif isinstance(c, (bytes, bytearray)):
                out.append(bytes(c))
            else:
                raise TypeError(f"columns: {c!r} is not a column name or index")
        return out

    def _open_scan(self, columns=None, filter=None, take=None, batch_rows=None, threads=None,
                   prefetch=1, limit=None, row_groups=None, cast=None, rows=False,
                   nan_order=None):
        rd = self._reader()
        batch_rows = _count("batch_rows", batch_rows, minimum=1, default=0)
        threads = _threads(threads)
        prefetch = _count("prefetch", prefetch, minimum=1, default=1)
        if prefetch > 2**31 - 1:
            raise InvalidArgumentError(f"prefetch is too large: {prefetch}")
        limit = _count("limit", limit, minimum=0)
        filter = _filter_bytes(filter)
        nan_order = _nan_order(nan_order)
        cast = _cast(cast)
        if limit == 0:
            # No rows, as in pyarrow and DuckDB (the C option's 0 means "no
            # limit"): an empty take reads nothing, while the filter and
            # columns are still checked.
            take, limit = np.empty(0, np.int64), None
        rg_begin = rg_end = 0
        if row_groups is not None:
            rg_begin, rg_end = row_groups
        return rd.scan(_make_importer, columns=self._column_names(columns), filter=filter,
                       take=take, rows=rows, batch_rows=batch_rows, threads=threads,
                       prefetch=prefetch, max_rows=limit or 0, row_group_begin=rg_begin,
                       row_group_end=rg_end, validate=self._validate, cast=cast,
                       nan_order=nan_order)

    def scan(self, columns=None, filter=None, batch_rows=None, threads=None, prefetch=1,
             limit=None, cast=None, nan_order=None):
        """Scans the file as a pyarrow.RecordBatchReader (which also exposes
        __arrow_c_stream__, so DuckDB, Polars and pyarrow consume it without
        copies).

        columns:    names or top-level indexes (None: all), in that order. A
                    name is a path: "a.b" is field b of struct column a (of
                    the elements of a list, the values of a map: "m.value");
                    a struct keeps only the fields asked for. A name that
                    holds a dot or a quote is written in double quotes
                    ('"a.b".c'). The rule of qv_file_select (quiver/file.h).
        filter:     a predicate in Quiver's language, e.g.
                    "l_shipdate >= DATE '1994-01-01' AND l_discount BETWEEN 0.05
                    AND 0.07"; row groups are pruned with statistics and only
                    rows where it is TRUE are returned.
        nan_order:  how the filter orders float NaN: "ieee" (None, the
                    default: NaN equals nothing and is unordered) or
                    "largest" (Spark SQL: NaN above +Infinity, NaN = NaN,
                    -0.0 = 0.0); row-group pruning follows the same order.
        batch_rows: rows per batch before filtering (None: 65536).
        threads:    decode workers; None or 0: min(cores, 4);
                    quiver.SCAN_SYNC (-1): decode on the consuming thread.
        prefetch:   completed batches that may wait for the consumer.
        limit:      stop after this many output rows.
        cast:       None (types as stored) or "spark": the types Spark's Arrow
                    reader accepts (timestamps in microseconds, unsigned
                    integers widened, uint64 to decimal128(20, 0), float16 to
                    float32, large_list to list); a value that does not fit
                    raises QuiverOverflowError, never wraps.

        Errors surface as quiver.QuiverError subclasses from the reader's
        methods; Ctrl-C cancels the scan at the next batch."""
        scan = self._open_scan(columns, filter, None, batch_rows, threads, prefetch, limit,
                               cast=cast, nan_order=nan_order)
        return pa.RecordBatchReader.from_batches(scan.schema, scan)

    def scan_batches(self, columns=None, filter=None, batch_rows=None, threads=None,
                     prefetch=1, limit=None, cast=None, nan_order=None):
        """Like scan(), but returns the native scan object: an iterator of
        pyarrow.RecordBatch with schema, close(), stats() (row groups pruned,
        rows decoded, ...) and __arrow_c_stream__ (moves the native stream
        out, so a consumer reads it with no Python in the loop)."""
        return self._open_scan(columns, filter, None, batch_rows, threads, prefetch, limit,
                               cast=cast, nan_order=nan_order)

    def to_arrow(self, columns=None, filter=None, threads=None, batch_rows=None, cast=None,
                 nan_order=None):
        """Reads the file (projected, filtered) into a pyarrow.Table."""
        # The whole result is kept anyway, so a deeper queue costs little
        # (a few batches) and lets the workers build the next batches while
        # one is filtered: with prefetch 1 only one batch is built at a time
        # and a filter runs on one thread (docs/python.md).
        return self.scan(columns=columns, filter=filter, threads=threads,
                         batch_rows=batch_rows, prefetch=_READ_ALL_PREFETCH, cast=cast,
                         nan_order=nan_order).read_all()

    read = to_arrow

    def read_row_group(self, i, columns=None, threads=None, cast=None):
        """Row group `i` as a pyarrow.Table."""
        i = self._row_group(i)
        scan = self._open_scan(columns, threads=threads, row_groups=(i, i + 1), cast=cast)
        return pa.RecordBatchReader.from_batches(scan.schema, scan).read_all()

    def take(self, indices, columns=None, threads=None, cast=None):
        """The rows at `indices` (any order, duplicates allowed, negative
        indexes count from the end) as a pyarrow.Table in that order. Only
        the 1024-value vectors holding those rows are decoded."""
        idx = np.ascontiguousarray(_take_indices(indices, self._num_rows, self._where), np.int64)
        scan = self._open_scan(columns, take=idx, threads=threads, cast=cast, rows=True)
        return pa.RecordBatchReader.from_batches(scan.schema, scan).read_all()

    def __len__(self):
        return self._num_rows


def _take_indices(indices, n, where=""):
    """`indices` (one-dimensional, no nulls) as an int64 array of rows in
    [0, n), negative ones counted from the end. Every integer dtype is
    checked in its own width before the conversion (a uint64 2**64-1 must
    not wrap to -1, a Python int beyond int64 must not overflow); bools and
    floats are TypeError. Nulls (a pyarrow array's, a numpy masked array's)
    and more than one dimension are ValueError: there is no row to take
    for a null, and no table of that shape. A row out of range is
    IndexError, its message starting with `where` (the file's name)."""
    nulls = (int(np.ma.getmaskarray(indices).sum()) if np.ma.isMaskedArray(indices)
             else getattr(indices, "null_count", 0))
    if nulls:
        raise ValueError(f"take: indices must not be null ({nulls} are)")
    idx = np.asarray(indices)
    if idx.ndim > 1:
        raise ValueError(f"take: indices must be one-dimensional, not of shape {idx.shape}")
    if idx.size == 0:
        return np.empty(0, np.int64)
    if idx.dtype == object:  # Python ints beyond 64 bits, mixed objects
        flat = []
        for v in idx.ravel():
            if isinstance(v, (bool, np.bool_)) or not hasattr(v, "__index__"):
                raise TypeError(f"take: indices must be integers, got {v!r}")
            v = operator.index(v)
            if not -n <= v < n:
                raise IndexError(f"{where}take: row {v} out of range ({n} rows)")
            flat.append(v)
        idx = np.array(flat, np.int64)
    elif idx.dtype.kind in "iu":
        idx = idx.ravel()
        lo, hi = int(idx.min()), int(idx.max())  # exact Python ints in any width
        if lo < -n or hi >= n:
            bad = lo if lo < -n else hi
            raise IndexError(f"{where}take: row {bad} out of range ({n} rows)")
        idx = idx.astype(np.int64)
    else:
        raise TypeError(f"take: indices must be integers, not {idx.dtype}")
    return np.where(idx < 0, idx + n, idx)


def open(path, *, memory_limit=None, verify_checksums=True, validate=True,  # noqa: A001
         mmap=False):
    """Opens a .qvr file (path: str, bytes or os.PathLike). memory_limit
    (bytes) gives the file's reads a pool of their own with that limit
    (OutOfMemoryError beyond it); by default they share the process-wide
    pool reported by quiver.memory_stats().

    verify_checksums: check every segment's checksum before decoding it.
    validate: check every batch handed out is valid Arrow (offsets, UTF-8,
    decimal precision, ...), as `qv scan` does; a file whose checksums are
    right but whose contents are not (crafted, or written by a buggy
    writer) then raises CorruptFileError instead of handing pyarrow, Polars
    or DuckDB arrays they would misread. The scan's workers check each
    column as they decode it; it costs about 10-20% of a full scan's time
    (bench/py_validate.py, docs/python.md); validate=False is for files you
    trust.

    mmap: map the file instead of reading it with pread into buffers that
    are verified and then decoded. Faster random takes on a warm file, but
    with the caveats of a mapping: a file truncated while it is mapped
    kills the process with SIGBUS (no exception can be raised), and bytes
    changed in place after a segment was verified are decoded as they now
    are. Only for files nobody changes while they are read."""
    return File(path, memory_limit=memory_limit, verify_checksums=verify_checksums,
                validate=validate, mmap=mmap)


def read_table(path, columns=None, filter=None, threads=None, cast=None, nan_order=None):
    """Reads a .qvr file into a pyarrow.Table (nan_order: as in File.scan)."""
    with open(path) as f:
        return f.to_arrow(columns=columns, filter=filter, threads=threads, cast=cast,
                          nan_order=nan_order)
