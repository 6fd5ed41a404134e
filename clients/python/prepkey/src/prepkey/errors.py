"""The errors the sidecar answers, as typed exceptions.

Every error reply of a PK command becomes a PrepkeyError (or one of its
subclasses), never ``False``: ``False`` is only the command's own "not done".
PrepkeyError derives from redis-py's ResponseError, so code that already
catches ``redis.ResponseError`` or ``redis.RedisError`` keeps catching it.

What is NOT turned into a PrepkeyError: argument errors found before anything
is sent (TypeError, ValueError) and transport errors (``redis.ConnectionError``,
``redis.TimeoutError``), which pass through as redis-py raised them. After a
transport error the command may or may not have taken effect, as after
UnavailableError.
"""

from __future__ import annotations

from redis.exceptions import ResponseError

__all__ = ["PrepkeyError", "UnavailableError", "MismatchError", "from_response_error"]


class PrepkeyError(ResponseError):
    """An error reply of the sidecar; ``str(err)`` is its text.

    redis-py strips the ``ERR`` prefix of ``-ERR ...`` replies (``syntax
    error``, ``invalid expire time in 'pk.prepare' command``) and keeps any
    other prefix (``UNAVAILABLE ...``, ``MISMATCH ...``).
    """

    def __repr__(self) -> str:
        # redis-py 8's RedisError.__repr__ drops the text; keep it.
        return f"{type(self).__name__}({str(self)!r})"


class UnavailableError(PrepkeyError):
    """The sidecar's backend failed or did not answer in time (``-UNAVAILABLE``).

    The command may or may not have taken effect: it is neither a ``True`` nor
    a ``False``. Before retrying a prepare, look with ``get_value(name, key)``:
    a record holding your value means it was reserved for you.
    """


class MismatchError(PrepkeyError):
    """``-MISMATCH``: a key change's old key has no record with the old value.

    Nothing changed: the new key was not left reserved.
    """


def _prefix(text: str) -> str:
    return text.split(" ", 1)[0]


def from_response_error(err: ResponseError) -> PrepkeyError:
    """The typed error for a reply error redis-py raised."""
    if isinstance(err, PrepkeyError):
        return err
    text = str(err)
    prefix = _prefix(text)
    if prefix == "UNAVAILABLE":
        return UnavailableError(text)
    if prefix == "MISMATCH":
        return MismatchError(text)
    return PrepkeyError(text)
