"""lancenb's exceptions.

Every error lancenb raises on purpose derives from :class:`LanceError`. Each subclass
also inherits the builtin a caller would naturally catch (``ValueError``, ``OSError``,
...), so ``except ValueError`` keeps working for code written against other libraries.
"""

from __future__ import annotations

__all__ = [
    "LanceError",
    "CorruptFileError",
    "NotSupportedError",
    "InvalidInputError",
    "InputTypeError",
    "BatchCommitError",
    "SchemaError",
    "LanceIOError",
    "LanceFileNotFoundError",
    "DatasetNotFoundError",
    "DatasetExistsError",
    "CommitConflictError",
    "RetryableCommitConflictError",
    "CommitLockError",
    "WriteJobAbortedError",
    "UnsafeCommitError",
    "CommitOutcomeUnknownError",
    "MergeInsertError",
    "IndexExistsError",
    "IndexNotFoundError",
    "IndexStatsNotFoundError",
]


class LanceError(Exception):
    """Root of every error raised by lancenb."""


class CorruptFileError(LanceError, ValueError):
    """Bytes read from storage do not form a valid Lance file (or manifest).

    The message names the file and, where known, the column, page and byte offset.
    """


class NotSupportedError(LanceError, NotImplementedError):
    """The input is valid Lance but uses a feature lancenb does not implement (yet)."""


class InvalidInputError(LanceError, ValueError):
    """An argument or option passed by the caller is invalid."""


class InputTypeError(InvalidInputError, TypeError):
    """Data of a kind no entry point reads (a string, a number ...): a ``TypeError``
    too, as pylance raises."""


class SchemaError(InvalidInputError, OSError):
    """A schema (or data that does not match it) cannot be written.

    Also an ``OSError``: pylance raises ``OSError`` for appends whose schema does not
    match the dataset's, so code written for it catches this too.
    """


class LanceIOError(LanceError, OSError):
    """Reading or writing bytes through the storage layer failed."""


class LanceFileNotFoundError(LanceIOError, FileNotFoundError):
    """A file or dataset that should exist does not."""


class DatasetNotFoundError(LanceFileNotFoundError, ValueError):
    """There is no dataset (no readable version) at the URI, or not that version/tag.

    Both a ``FileNotFoundError`` and, as pylance raises for these, a ``ValueError``.
    """


class DatasetExistsError(InvalidInputError, OSError):
    """``mode="create"`` on a URI that already holds a dataset (an ``OSError`` too,
    as pylance raises)."""


class BatchCommitError(InvalidInputError, OSError):
    """``LanceDataset.commit_batch`` got a transaction it cannot merge into one
    commit (only appends can be). An ``OSError`` too, as pylance raises."""


class MergeInsertError(InvalidInputError, OSError):
    """``merge_insert`` refused the source rows: duplicate keys (a target row would
    match two source rows) or a match under ``when_matched_fail()``. Nothing is
    committed. An ``OSError`` too, as pylance raises for these."""


class CommitConflictError(LanceError, OSError, RuntimeError):
    """A concurrent commit made this transaction impossible to apply.

    Nothing this transaction wrote is visible; the dataset is as the winner left it.
    An ``OSError``, as pylance's ``lance.commit.CommitConflictError``, with its
    ``retryable`` attribute (True when running the operation again on the new version
    may succeed); still a ``RuntimeError`` for code written against older lancenb.
    """

    retryable = False

    def __init__(self, message: str = "", retryable: bool | None = None):
        super().__init__(message)
        if retryable is not None:
            self.retryable = bool(retryable)


class RetryableCommitConflictError(CommitConflictError):
    """Like :class:`CommitConflictError`, but running the whole operation again (on
    the new version) may succeed: e.g. two deletes touching the same data files."""

    retryable = True


class CommitLockError(LanceError, OSError):
    """The caller's ``commit_lock`` raised (taking or releasing the lock); the
    message names its error, which is also the ``__cause__``.

    ``committed`` says whether the version was published before the lock failed:
    False (taking it failed: nothing of the commit stays), True (releasing it failed
    after the manifest was written: the version exists and nothing was removed).
    """

    def __init__(self, message: str = "", *, committed: bool | None = None):
        super().__init__(message)
        self.committed = committed


class CommitOutcomeUnknownError(LanceError, RuntimeError):
    """A commit failed at its commit point and the writer cannot tell whether it
    took effect (the store did not answer whether the manifest was published).

    Nothing the commit wrote was removed: if the version was made, its files are
    all there. Open the dataset to see whether :attr:`version` is this commit's
    (its transaction carries :attr:`transaction_uuid`) before retrying.
    """

    def __init__(self, message: str, *, version: int | None = None,
                 transaction_uuid: str | None = None):
        super().__init__(message)
        self.version = version
        self.transaction_uuid = transaction_uuid


class WriteJobAbortedError(LanceError, RuntimeError):
    """A task of a distributed write job (the Spark data source, ``write_lance``) found
    that its job was aborted or has already committed without it: it removed the files
    it wrote and stopped. Spark kills such straggler tasks; the error is what they
    report if they get that far."""


class UnsafeCommitError(InvalidInputError):
    """A commit was refused: the store has no conditional write and no ``commit_lock``
    or external manifest store was given, so concurrent writers could lose commits."""


class IndexExistsError(LanceError, RuntimeError):
    """An index of that name exists already and ``replace`` is False (pylance's
    ``RuntimeError``)."""


class IndexNotFoundError(LanceError, RuntimeError):
    """No index of that name (pylance's ``RuntimeError``)."""


class IndexStatsNotFoundError(IndexNotFoundError, KeyError):
    """``stats.index_stats`` of a name no index has (pylance's ``KeyError``)."""


def corrupt(path: str, what: str, *, column: int | None = None, page: int | None = None,
            offset: int | None = None) -> CorruptFileError:
    """Build a :class:`CorruptFileError` whose message says where the damage is."""
    where = [f"file {path!r}"]
    if column is not None:
        where.append(f"column {column}")
    if page is not None:
        where.append(f"page {page}")
    if offset is not None:
        where.append(f"offset {offset}")
    return CorruptFileError(f"{', '.join(where)}: {what}")
