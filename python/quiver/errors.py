"""Exceptions raised by quiver. Every native error becomes one of these,
carrying the library's message (which names the file, column, row group and
offset where it can), the errno value the C library returned and the error's
kind (enum qv_error_kind in quiver/base.h, by its qv_error_kind_name). The
class follows the kind, which is stable across releases; within a kind, the
errno value picks the closest Python exception (PermissionError for EACCES,
OverflowError for EOVERFLOW, ...)."""
import errno as _errno


class QuiverError(Exception):
    """Base class of every error the Quiver library reports.

    Attributes: ``code`` (the errno value, e.g. ``errno.EIO``),
    ``code_name`` (``"EIO"``), ``kind`` (``"corrupt"``, ``"io"``,
    ``"not_found"``, ``"invalid_argument"``, ``"out_of_memory"``,
    ``"not_supported"``, ``"cancelled"``, ``"changed"``; None for errors
    raised by the Python layer itself) and ``message`` (the library's
    message)."""

    code = None
    code_name = None
    kind = None

    def __init__(self, message="", code=None, code_name=None, kind=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if code_name is not None:
            self.code_name = code_name
        if kind is not None:
            self.kind = kind

    def __str__(self):
        return self.message


class InvalidArgumentError(QuiverError, ValueError):
    """EINVAL: a bad argument or bad input (a malformed filter, a batch that
    does not match the schema, a row index out of range)."""

    code = _errno.EINVAL
    code_name = "EINVAL"


class OutOfMemoryError(QuiverError, MemoryError):
    """ENOMEM: a memory limit (``memory_limit=``) or an allocation failed."""


class CorruptFileError(QuiverError, OSError):
    """Kind "corrupt": the file is corrupt (bad magic, checksum mismatch,
    truncated); also EIO of kind "io", a read or write the system failed."""


class QuiverIOError(QuiverError, OSError):
    """Kind "io": an operating-system error other than EIO while reading or
    writing a file: ENOSPC (disk full), EDQUOT, EFBIG, EROFS, ENOTDIR, ...
    It is an ``OSError`` with ``errno`` set, so ``except OSError`` and
    ``e.errno == errno.ENOSPC`` work as for Python's own I/O."""


class QuiverPermissionError(QuiverIOError, PermissionError):
    """EACCES / EPERM: not allowed to read or write the file."""


class QuiverIsADirectoryError(QuiverIOError, IsADirectoryError):
    """EISDIR: the path is a directory."""


class QuiverNotADirectoryError(QuiverIOError, NotADirectoryError):
    """ENOTDIR: a component of the path is not a directory."""


class QuiverFileNotFoundError(QuiverError, FileNotFoundError):
    """Kind "not_found" (ENOENT) when opening: the file or its directory does
    not exist."""


class FieldNotFoundError(QuiverError, KeyError):
    """Kind "not_found" (ENOENT) when choosing columns: no column or nested
    field has that name (the message names the closest one). A KeyError, as
    for a dict or a pyarrow schema."""


class FileChangedError(QuiverIOError):
    """Kind "changed" (ESTALE): the file is not the one that was planned (its
    size or footer checksum differs)."""


class NotSupportedError(QuiverError, NotImplementedError):
    """ENOSYS: a valid Arrow type or feature that Quiver does not support."""


class CancelledError(QuiverError):
    """ECANCELED: the operation was cancelled."""


class QuiverOverflowError(QuiverError, OverflowError):
    """EOVERFLOW: a value or size does not fit (e.g. 32-bit offsets)."""


# Within kind "io", the closest Python exception for the errno value.
_IO_BY_CODE = {
    _errno.EIO: CorruptFileError,
    _errno.EACCES: QuiverPermissionError,
    _errno.EPERM: QuiverPermissionError,
    _errno.EISDIR: QuiverIsADirectoryError,
    _errno.ENOTDIR: QuiverNotADirectoryError,
}

_BY_KIND = {
    "not_found": QuiverFileNotFoundError,
    "corrupt": CorruptFileError,
    "io": QuiverIOError,
    "out_of_memory": OutOfMemoryError,
    "invalid_argument": InvalidArgumentError,
    "not_supported": NotSupportedError,
    "cancelled": CancelledError,
    "changed": FileChangedError,
}


def _class_of(kind, code, field):
    if kind == "io":
        return _IO_BY_CODE.get(code, QuiverIOError)
    if kind == "invalid_argument" and code == _errno.EOVERFLOW:
        return QuiverOverflowError
    if kind == "not_found" and field:
        return FieldNotFoundError
    return _BY_KIND.get(kind, QuiverError)


def _make_error(code, code_name, message, kind=None, field=False):
    """The exception for a native error. `kind` is the library's
    (qv_error_kind_name); without one, the kind the library gives `code`.
    `field`: the error came from choosing columns, where "not_found" means a
    field, not a file."""
    from . import _quiver

    if kind is None:
        kind = _quiver.error_kind_of(code)
    cls = _class_of(kind, code, field)
    exc = cls(message, code, code_name, kind)
    if issubclass(cls, OSError):
        exc.errno = code
        exc.strerror = message
    return exc
