"""quiver.write: Arrow data (streamed batch by batch) into a .qvr file."""
import collections
import os

import pyarrow as pa

from . import _quiver
from ._file import _count, _memory_limit, _threads
from ._types import storable_schema
from .errors import InvalidArgumentError

WriteResult = collections.namedtuple("WriteResult", ["num_rows", "file_size"])


def _as_reader(data):
    if isinstance(data, pa.RecordBatchReader):
        return data
    if isinstance(data, pa.Table):
        return data.to_reader()
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data]).to_reader()
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data)
    mod = type(data).__module__ or ""
    if mod.startswith("pandas"):
        return pa.Table.from_pandas(data).to_reader()
    if hasattr(data, "fetch_record_batch"):  # older DuckDB relations
        return data.fetch_record_batch()
    raise TypeError(f"quiver.write: cannot read Arrow data from {type(data).__name__}; give a "
                    "pyarrow.Table, a RecordBatchReader or an object with __arrow_c_stream__")


def _check_batch(b, schema, n, path):
    """A batch must have its stream's schema: pyarrow's
    RecordBatchReader.from_batches does not check what a generator yields,
    and a batch with other columns or types would reach the cast (pyarrow's
    casting reader then crashes) or the native writer as a struct whose
    children disagree with the schema."""
    if not b.schema.equals(schema, check_metadata=False):
        raise InvalidArgumentError(
            f"quiver.write to {path!r}: batch {n} of the data does not have the stream's "
            f"schema:\n{b.schema.to_string(show_schema_metadata=False)}\n"
            f"expected:\n{schema.to_string(show_schema_metadata=False)}")


def _cast(reader, target, path):
    """A reader of `target`: each batch checked against the source's schema,
    then cast (run-end decoding, which cast does not do, for top-level
    run-end encoded columns). Not pyarrow's RecordBatchReader.cast: it
    trusts every batch to match and crashes on one that does not."""
    ree = [i for i, f in enumerate(reader.schema) if pa.types.is_run_end_encoded(f.type)]
    source = reader.schema
    if ree:
        import pyarrow.compute as pc

    def batches():
        for n, b in enumerate(reader):
            _check_batch(b, source, n, path)
            if ree:
                cols = [pc.run_end_decode(c) if i in ree else c for i, c in enumerate(b.columns)]
                b = pa.RecordBatch.from_arrays(cols, names=b.schema.names)
            yield b.cast(target)

    return pa.RecordBatchReader.from_batches(target, batches())


def _kv(metadata):
    if not metadata:
        return None
    def as_bytes(x, what):
        # surrogateescape: str read back from bytes that were not UTF-8
        # (os.fsdecode style) is written as those bytes again.
        if isinstance(x, str):
            return x.encode("utf-8", "surrogateescape")
        if isinstance(x, (bytes, bytearray, memoryview)):
            return bytes(x)
        # Not bytes(x): bytes(3) is three NUL bytes, silently.
        raise TypeError(f"quiver.write: metadata {what} must be str or bytes, not "
                        f"{type(x).__name__} ({x!r})")

    if not hasattr(metadata, "items"):
        raise TypeError(f"quiver.write: metadata must be a dict, not {type(metadata).__name__}")
    return [(as_bytes(k, "key"), as_bytes(v, "value")) for k, v in metadata.items()]


class _Failure:
    exc = None


def _captured_batches(reader, box, path):
    """The batches of `reader`, remembering in box.exc any exception raised
    while this generator runs: its source's (a user's generator), a batch
    that fails _check_batch, or a KeyboardInterrupt, which Ctrl-C raises at
    whatever line the main thread is on, `yield` included (the whole body is
    covered: with only the read inside the try, a Ctrl-C landing on the
    yield reached write() as an InvalidArgumentError carrying the traceback
    as text). GeneratorExit, the generator being closed, is not a failure."""
    schema = reader.schema
    n = 0
    try:
        while True:
            try:
                b = reader.read_next_batch()
            except StopIteration:
                return
            _check_batch(b, schema, n, path)
            n += 1
            yield b
    except GeneratorExit:
        raise
    except BaseException as e:
        box.exc = e
        raise


def _capturing(reader, box, path):
    """`reader` through _captured_batches. The native writer only sees the
    Arrow stream's errno and message; write() then re-raises the original
    exception object instead."""
    return pa.RecordBatchReader.from_batches(reader.schema, _captured_batches(reader, box, path))


def write(data, path, *, row_group_rows=None, row_group_bytes=None, compact=False,
          random_access=False, metadata=None, memory_limit=None, threads=None, durable=True):
    """Writes `data` to `path` as a .qvr file and returns WriteResult(num_rows,
    file_size).

    data: a pyarrow.Table, RecordBatch or RecordBatchReader, or any object
        with __arrow_c_stream__ (Polars and DuckDB results, ...). It is
        streamed batch by batch, never materialized. Types Quiver does not
        store are cast first where a lossless equivalent exists
        (string_view -> string, dictionary -> its values, ...; see
        quiver._types).
    row_group_rows: rows per row group, exactly (default 131072; the last
        row group holds the rest).
    row_group_bytes: flush a row group early when this many bytes are buffered.
    compact: the smallest files (decode costs weigh a tenth; text may take zstd frames
        at level 15 with a trained dictionary, written at about 5 MB/s a thread).
    random_access: files for point lookups: no frame encodings (zstd, lz4, ans),
        so a take decodes the 1,024-value vector of each row (and a chunk's small
        tables once) instead of a frame of up to 16,384 values. Cold takes are 1.3-3x cheaper, files
        larger where entropy coding paid (lineitem +1.7%, nycflights13 +8%;
        docs/benchmarks.md). Not with compact (InvalidArgumentError, a
        ValueError, naming the path); anything but a bool is a TypeError.
    metadata: a dict of file key-value metadata (str or bytes).
    memory_limit: a byte budget for the writer's buffers (OutOfMemoryError
        beyond it).
    threads: encoding threads (None: the cores, at most 4; at most 64);
        quiver.SCAN_SYNC (-1): encode on the calling thread, no thread at
        all. The file is the same bytes whatever the number.
    durable: True (default): the file and its directory are fsynced before
        write returns, so the file survives a power loss or an OS crash.
        False: no fsync (like pyarrow's Parquet writer), much faster for
        small files; the file still appears under `path` only when complete,
        but after a crash of the machine it may be missing or partial.
        Anything but a bool is a TypeError.

    path: str, bytes or os.PathLike (bytes for names that are not UTF-8).

    The file appears under `path` only when complete (it is written as a
    temporary file, then named); on any error or Ctrl-C nothing is left. An
    exception raised by the data's source (a generator behind a
    RecordBatchReader, KeyboardInterrupt included) is re-raised as itself."""
    path = os.fspath(path)
    if not path:
        raise InvalidArgumentError("quiver.write: the path is empty")
    row_group_rows = _count("row_group_rows", row_group_rows, minimum=1, default=0)
    row_group_bytes = _count("row_group_bytes", row_group_bytes, minimum=1, default=0)
    memory_limit = _memory_limit(memory_limit)
    threads = _threads(threads)
    for name, flag in (("durable", durable), ("random_access", random_access)):
        if not isinstance(flag, bool):
            raise TypeError(f"quiver.write: {name} must be True or False, not {flag!r}")
    reader = _as_reader(data)
    # One wrapper: pyarrow hands out a new schema object at each access, so
    # comparing storable_schema's answer with a second access would always
    # see a cast (and cast, through a Python generator, every batch).
    schema = reader.schema
    target = storable_schema(schema)
    if target is not schema:
        reader = _cast(reader, target, path)
    failure = _Failure()
    capsule = _capturing(reader, failure, path).__arrow_c_stream__()
    original = None
    try:
        rows, size = _quiver.write_stream(
            path, capsule, row_group_rows=row_group_rows, row_group_bytes=row_group_bytes,
            compact=bool(compact), random_access=random_access, metadata=_kv(metadata),
            memory_limit=memory_limit, threads=threads, durable=durable)
    except BaseException as e:
        if failure.exc is None or failure.exc is e:
            raise
        original = failure.exc
    if original is not None:
        # Raised outside the except block, so the user's exception keeps its
        # own __context__ / __cause__ and traceback (the writer's message
        # would only repeat it as text).
        failure.exc = None
        if hasattr(original, "add_note"):
            original.add_note(f"(raised by the data source of quiver.write to {path!r}; "
                              "no file was written)")
        raise original
    return WriteResult(rows, size)
