"""Exceptions raised by quiver. Every native error becomes one of these,
carrying the library's message (which names the file, column, row group and
offset where it can) and the errno value the C library returned."""
import errno as _errno


class QuiverError(Exception):
    """Base class of every error the Quiver library reports.

    Attributes: ``code`` (the errno value, e.g. ``errno.EIO``),
    ``code_name`` (``"EIO"``) and ``message`` (the library's message)."""

    code = None
    code_name = None

    def __init__(self, message="", code=None, code_name=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if code_name is not None:
            self.code_name = code_name

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
    """EIO: the file is corrupt (bad magic, checksum mismatch, truncated) or
    could not be read or written."""


class QuiverIOError(QuiverError, OSError):
    """An operating-system error other than EIO and ENOENT while reading or
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
    """ENOENT: the file or its directory does not exist."""


class NotSupportedError(QuiverError, NotImplementedError):
    """ENOSYS: a valid Arrow type or feature that Quiver does not support."""


class CancelledError(QuiverError):
    """ECANCELED: the operation was cancelled."""


class QuiverOverflowError(QuiverError, OverflowError):
    """EOVERFLOW: a value or size does not fit (e.g. 32-bit offsets)."""


_BY_CODE = {
    _errno.EINVAL: InvalidArgumentError,
    _errno.ENOMEM: OutOfMemoryError,
    _errno.EIO: CorruptFileError,
    _errno.ENOENT: QuiverFileNotFoundError,
    _errno.ENOSYS: NotSupportedError,
    _errno.ECANCELED: CancelledError,
    _errno.EOVERFLOW: QuiverOverflowError,
    _errno.EACCES: QuiverPermissionError,
    _errno.EPERM: QuiverPermissionError,
    _errno.EISDIR: QuiverIsADirectoryError,
    _errno.ENOTDIR: QuiverNotADirectoryError,
}
# Other operating-system errors the library passes on from the system.
for _name in ("ENOSPC", "EDQUOT", "EFBIG", "EROFS", "EEXIST", "EMFILE", "ENFILE", "ENXIO",
              "ELOOP", "ENAMETOOLONG", "EBUSY", "ETXTBSY", "ESPIPE", "EAGAIN", "EINTR",
              "ENODEV", "EBADF", "EMLINK", "EXDEV", "ESTALE"):
    if hasattr(_errno, _name):
        _BY_CODE.setdefault(getattr(_errno, _name), QuiverIOError)


def _make_error(code, code_name, message):
    cls = _BY_CODE.get(code, QuiverError)
    exc = cls(message, code, code_name)
    if issubclass(cls, OSError):
        exc.errno = code
        exc.strerror = message
    return exc
