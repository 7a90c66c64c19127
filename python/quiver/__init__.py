"""Quiver for Python: write Arrow data to .qvr files and scan them back.

    import quiver
    quiver.write(table, "t.qvr")                  # pyarrow.Table, RecordBatchReader,
                                                  # or anything with __arrow_c_stream__
    with quiver.open("t.qvr") as f:
        f.schema, f.num_rows, f.statistics
        reader = f.scan(columns=["a", "b"], filter="a > 5")   # pyarrow.RecordBatchReader
        f.take([5, 1, 5])                          # pyarrow.Table
"""
from . import _quiver
from ._file import SCAN_SYNC, File, open, read_table
from ._write import WriteResult, write
from .errors import (CancelledError, CorruptFileError, FieldNotFoundError, FileChangedError,
                     InvalidArgumentError, NotSupportedError, OutOfMemoryError, QuiverError,
                     QuiverFileNotFoundError, QuiverIOError, QuiverIsADirectoryError,
                     QuiverNotADirectoryError, QuiverOverflowError, QuiverPermissionError)
from .errors import _make_error

_quiver._set_error_factory(_make_error)

__version__ = "0.1.0"
library_version = _quiver.LIBRARY_VERSION


def memory_stats():
    """Statistics of the process-wide memory pool that reads and writes are
    charged to (unless opened with memory_limit=): reserved and
    peak_reserved bytes, live reservations, allocations, OOM count."""
    return _quiver.memory_stats()


__all__ = [
    "write", "open", "read_table", "File", "WriteResult", "memory_stats", "SCAN_SYNC",
    "QuiverError", "InvalidArgumentError", "OutOfMemoryError", "CorruptFileError",
    "QuiverFileNotFoundError", "NotSupportedError", "CancelledError", "QuiverOverflowError",
    "QuiverIOError", "QuiverPermissionError", "QuiverIsADirectoryError",
    "QuiverNotADirectoryError", "FieldNotFoundError", "FileChangedError",
]
