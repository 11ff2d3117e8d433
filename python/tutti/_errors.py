"""The exceptions tutti raises: one class per status code of the library, all under
tutti.Error. Each carries the library's full message (naming ranks and calls) and, where
the library blames one, the rank at fault."""

import builtins

__all__ = [
    "Error", "InvalidArgumentError", "InvalidUsageError", "MismatchError", "TimeoutError",
    "PeerFailureError", "ProtocolError", "SystemError", "NotSupportedError", "AbortedError",
    "InternalError",
]


class Error(Exception):
    """A tutti call failed. `code` names the status ("peer failure", ...), `peer_rank` is
    the rank the library blames or None, `message` the library's message."""

    code = "error"

    def __init__(self, message):
        super().__init__(message)
        self.message = message
        self.peer_rank = None


class InvalidArgumentError(Error, ValueError):
    """Bad input on this rank (a count, a rank out of range, ...)."""
    code = "invalid argument"


class InvalidUsageError(Error):
    """A call in the wrong state (after destroy, ...)."""
    code = "invalid usage"


class MismatchError(Error):
    """Ranks called different collectives or with different shapes; names both calls."""
    code = "mismatch"


class TimeoutError(Error, builtins.TimeoutError):  # noqa: A001 - named after the code
    """A deadline passed; the message ends with the hang report."""
    code = "timeout"


class PeerFailureError(Error):
    """A peer died or its connection broke; peer_rank names it."""
    code = "peer failure"


class ProtocolError(Error):
    """Bytes that do not parse or are not authenticated."""
    code = "protocol error"


class SystemError(Error):  # noqa: A001 - named after the code
    """A system call failed; the message names it and errno."""
    code = "system error"


class NotSupportedError(Error, NotImplementedError):
    """A valid request this build or algorithm cannot serve."""
    code = "not supported"


class AbortedError(Error):
    """The communicator was aborted, here or by another rank (named)."""
    code = "aborted"


class InternalError(Error):
    """A bug in tutti."""
    code = "internal error"


# In the order of tutti::ErrorCode (kOk = 0 first).
_BY_CODE = [None, InvalidArgumentError, InvalidUsageError, MismatchError, TimeoutError,
            PeerFailureError, ProtocolError, SystemError, NotSupportedError, AbortedError,
            InternalError]


def _from_status(code, message, peer_rank):
    cls = _BY_CODE[code] if 0 < code < len(_BY_CODE) else Error
    err = cls(message)
    err.peer_rank = peer_rank
    return err
