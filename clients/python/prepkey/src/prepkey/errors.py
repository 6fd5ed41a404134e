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

import asyncio
import socket

from redis.exceptions import AuthenticationError, AuthorizationError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

__all__ = ["PrepkeyError", "UnavailableError", "MismatchError", "from_response_error", "outcome_unknown"]


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


def outcome_unknown(exc: BaseException) -> bool:
    """Whether a command that raised ``exc`` may or may not have taken effect:
    the "did it maybe happen?" question, the same in the Go and Node helpers.

    True for:

    - ``-UNAVAILABLE`` (``UnavailableError``, or a plain ``redis.ResponseError``
      whose text starts with ``UNAVAILABLE`` from a raw ``execute_command``):
      the sidecar's backend failed or did not answer in time;
    - a connection error (``redis.ConnectionError``; an ``OSError`` such as a
      reset that redis-py did not wrap): the connection broke, possibly after
      the command was sent and before its reply arrived;
    - a timeout (``redis.TimeoutError``, ``asyncio.TimeoutError``,
      ``socket.timeout``): the reply did not come in time;
    - a cancellation (``asyncio.CancelledError``) or ``KeyboardInterrupt``:
      the caller stopped waiting, possibly after the command was sent.
      prepkey's own methods resolve what they may have reserved before such
      an error leaves them (see README, "Cancellation"); this says True all
      the same, because the error alone cannot tell.

    A connection *refused* is True as well (decision): redis-py raises the
    error of its last attempt, and with retries on (redis-py 6's default) a
    refused reconnect can follow a first attempt that was sent and executed.
    The error cannot tell the two apart, and a wrong "nothing happened" strands
    a reservation while a wrong "maybe" costs one ``get_value``.

    False for everything else: ``False``/``MismatchError``/other reply errors
    (the sidecar answered: the outcome is known), ``redis.AuthenticationError``
    and ``redis.AuthorizationError`` (credentials or permissions refused: a
    configuration error, and nothing ran), and argument errors
    (TypeError, ValueError) raised before anything was sent.
    """
    if isinstance(exc, (AuthenticationError, AuthorizationError)):
        return False
    if isinstance(exc, ResponseError):
        return isinstance(exc, UnavailableError) or _prefix(str(exc)) == "UNAVAILABLE"
    return isinstance(
        exc,
        (
            RedisConnectionError,
            RedisTimeoutError,
            asyncio.TimeoutError,
            socket.timeout,
            asyncio.CancelledError,
            KeyboardInterrupt,
            OSError,
        ),
    )
