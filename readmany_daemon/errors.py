"""The exception tree and the per-file status codes.

Exceptions are for whole-request failures only; a problem with one file is data (a
``FileResult`` with a status and a code, PROTOCOL §4), never an exception::

    ReadManyError                     base of everything raised on purpose
    ├── InvalidParams                 bad request params   → JSON-RPC -32602, CLI exit 2
    ├── UsageError                    bad CLI usage         → CLI exit 2
    ├── RootNotFound                  no such workspace root → JSON-RPC -32602, CLI exit 2
    ├── DaemonError                   the shared daemon could not answer → CLI exit 1
    └── Cancelled                     the client cancelled the request → JSON-RPC -32800

``JSONRPC_CODES`` maps each class to its JSON-RPC error code in one place.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the CLI's warm path)
if TYPE_CHECKING:
    from typing import Final


class ReadManyError(Exception):
    """Base class of every exception readmany raises on purpose."""


class InvalidParams(ReadManyError):
    """Request parameters failed validation.

    ``field`` is the JSON path of the offending field (``$.paths[2]``) or ``""``; the
    message always names it so a client can fix the request (PROTOCOL §2).
    """

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


class UsageError(ReadManyError):
    """The command line could not be understood (CLI exit code 2)."""


class RootNotFound(InvalidParams):
    """``root`` names no workspace folder, or the folder does not exist."""


class DaemonError(ReadManyError):
    """The shared daemon failed to answer (CLI exit code 1)."""


class Cancelled(ReadManyError):
    """The request was cancelled by ``$/cancelRequest`` (LSP 3.17 §"Cancellation
    Support"); raised inside the engine thread at its next checkpoint
    (``runtime.requests.checkpoint``)."""


#: JSON-RPC error code for each exception class (JSON-RPC 2.0 §5.1).
JSONRPC_CODES: Final[dict[type[ReadManyError], int]] = {
    InvalidParams: -32602,
    RootNotFound: -32602,
    UsageError: -32602,
    DaemonError: -32603,
    Cancelled: -32800,  # LSP RequestCancelled
    ReadManyError: -32603,
}


def jsonrpc_code(exc: ReadManyError) -> int:
    """The JSON-RPC error code for ``exc`` (-32602 for bad params, -32603 otherwise)."""
    for cls in type(exc).__mro__:
        code = JSONRPC_CODES.get(cls)
        if code is not None:
            return code
    return -32603


class Status:
    """``FileResult.status`` values (PROTOCOL §4)."""

    OK: Final = "ok"
    PARTIAL: Final = "partial"
    OMITTED: Final = "omitted"
    SKIPPED: Final = "skipped"
    ERROR: Final = "error"
    #: The caller's receipt still holds: no content sent (``engine.receipts``).
    UNCHANGED: Final = "unchanged"


class Code:
    """``FileResult.code`` values (PROTOCOL §4), grouped by the status they go with."""

    # partial / omitted
    BUDGET: Final = "budget"
    STOPPED: Final = "stopped"
    # skipped
    BINARY: Final = "binary"
    IGNORED: Final = "ignored"
    TOO_LARGE: Final = "too-large"
    NO_MATCH: Final = "no-match"
    # error
    NOT_FOUND: Final = "not-found"
    OUT_OF_RANGE: Final = "out-of-range"
    NOT_A_FILE: Final = "not-a-file"
    OUTSIDE_WORKSPACE: Final = "outside-workspace"
    DENIED: Final = "denied"
    PERMISSION_DENIED: Final = "permission-denied"
    INVALID_PATTERN: Final = "invalid-pattern"
    FS_ERROR: Final = "fs-error"
    #: ``FileSpec.symbol`` names no symbol of the file's outline (issue 26).
    SYMBOL_NOT_FOUND: Final = "symbol-not-found"
    #: ``FileSpec.symbol`` on a file without an outline (no grammar, too large).
    NO_OUTLINE: Final = "no-outline"
