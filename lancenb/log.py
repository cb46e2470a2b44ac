"""Logging, as pylance's ``lance.log``: the package logger and the ``LANCE_LOG`` switch.

lancenb logs through Python's :mod:`logging` under the ``lancenb`` logger (commits,
retries, conflicts: ``lancenb.commit``, ``lancenb.spark``). pylance has two loggers, a
Python one (``LOGGER``) and its Rust core's, which ``LANCE_LOG`` turns on; lancenb has
one, so the same variables drive it:

* ``LANCE_LOG``: a level (``debug``, ``info``, ``warning``, ``error``, ``trace`` is
  ``debug``), optionally with per-module directives (``lance-core=debug,warn``) whose
  module parts lancenb ignores. It sets ``LOGGER``'s level (``INFO`` when unset) and,
  when set at import, sends lancenb's records to stderr as the Rust core does.
* ``LANCE_LOG_FILE``: a file to write them to instead (parent folders are created; a
  path that cannot be written falls back to stderr, with the error said there).
* ``LANCE_LOG_TS_PRECISION``: ``s``, ``ms`` (default), ``us`` or ``ns`` digits of the
  timestamp, as in ``[2025-01-02T03:04:05.678Z DEBUG lancenb.commit] ...``.

Examples
--------
>>> from lancenb.log import LOGGER, get_log_level
>>> LOGGER.name
'lancenb'
"""

from __future__ import annotations

import logging
import os
import sys
import time

__all__ = ["ENV_NAME_PYLANCE_LOGGING_LEVEL", "LOGGER", "get_log_level", "set_logger",
           "get_python_log_level", "configure_from_env"]

ENV_NAME_PYLANCE_LOGGING_LEVEL = "LANCE_LOG"
ENV_LOG_FILE = "LANCE_LOG_FILE"
ENV_TS_PRECISION = "LANCE_LOG_TS_PRECISION"
_DEFAULT_FORMAT = ("%(asctime)s %(name)s [%(levelname)s] %(filename)s:%(lineno)d "
                   "%(funcName)s : %(message)s")
_TS_DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def get_python_log_level(rust_log_level: str) -> str:
    """The Python level name for a Rust one: ``trace`` (which Python lacks) is ``DEBUG``.

    Examples
    --------
    >>> get_python_log_level("trace")
    'DEBUG'
    """
    if rust_log_level.lower() == "trace":
        return "DEBUG"
    return rust_log_level.upper()


def get_log_level() -> str:
    """The level ``LANCE_LOG`` asks for: its first directive without a module part
    (``"lance-core=debug,WARNING"`` is ``WARNING``), ``INFO`` when there is none.

    Examples
    --------
    >>> import os
    >>> os.environ.get("LANCE_LOG") is None and get_log_level() == "INFO"
    True
    """
    return get_python_log_level(_first_level(os.environ.get(ENV_NAME_PYLANCE_LOGGING_LEVEL,
                                                            "")))


def _first_level(value: str) -> str:
    # "lance-core=debug,warn": directives with a module part name Rust modules
    levels = [e for e in value.split(",") if e and "=" not in e]
    return levels[0] if levels else "INFO"


def _level_number(name: str) -> int:
    # an unknown name (LANCE_LOG=verbose) is INFO rather than an error at import
    level = logging.getLevelName(name.strip().upper())
    return level if isinstance(level, int) else logging.INFO


LOGGER = logging.getLogger("lancenb")
LOGGER.setLevel(_level_number(get_log_level()))


def set_logger(file_path: str | None = "lancenb.log", name: str = "lancenb",
               level: int = logging.INFO, format_string: str | None = None,
               log_handler: logging.Handler | None = None) -> logging.Logger:
    """Send the records of logger ``name`` (lancenb's by default) to ``file_path``, or
    to ``log_handler`` when given, at ``level``; that logger becomes ``LOGGER``
    (``lancenb.set_logger`` is this function).

    Examples
    --------
    >>> import logging
    >>> logger = set_logger(log_handler=logging.NullHandler())
    >>> logger is LOGGER
    True
    >>> logger.removeHandler(logger.handlers[-1])
    """
    global LOGGER
    logger = logging.getLogger(name)
    logger.setLevel(level)
    handler = log_handler if log_handler is not None else logging.FileHandler(file_path)
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter(format_string or _DEFAULT_FORMAT))
    logger.addHandler(handler)
    LOGGER = logger
    return logger


class _CoreFormatter(logging.Formatter):
    """``[<UTC time>Z LEVEL logger] message``, the Rust core's line, with ``digits``
    fractional digits of the second."""

    def __init__(self, digits: int):
        super().__init__()
        self.digits = digits

    def formatTime(self, record, datefmt=None):  # noqa: N802 (logging's name)
        ns = getattr(record, "created_ns", None) or int(record.created * 1e9)
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 1_000_000_000))
        if self.digits:
            frac = f"{ns % 1_000_000_000:09d}"[:self.digits]
            text += "." + frac
        return text + "Z"

    def format(self, record):
        line = f"[{self.formatTime(record)} {record.levelname} {record.name}] " \
               f"{record.getMessage()}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def _file_handler(path: str) -> logging.Handler:
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    return logging.FileHandler(path)


def configure_from_env(environ=None) -> logging.Handler | None:
    """Send lancenb's records to stderr or ``LANCE_LOG_FILE`` when ``LANCE_LOG`` is
    set, at its level; returns the handler added (None when ``LANCE_LOG`` is unset).
    ``import lancenb`` calls it when the variable is set.

    Examples
    --------
    >>> configure_from_env({}) is None
    True
    """
    env = os.environ if environ is None else environ
    if ENV_NAME_PYLANCE_LOGGING_LEVEL not in env:
        return None
    digits = _TS_DIGITS.get(env.get(ENV_TS_PRECISION, "ms").strip().lower(), 3)
    handler: logging.Handler
    path = env.get(ENV_LOG_FILE)
    try:
        handler = _file_handler(path) if path else logging.StreamHandler(sys.stderr)
    except OSError as e:
        print(f"lancenb: cannot write the log file {path!r} ({e}); logging to stderr",
              file=sys.stderr)
        handler = logging.StreamHandler(sys.stderr)
    level = _level_number(get_python_log_level(_first_level(env[ENV_NAME_PYLANCE_LOGGING_LEVEL])))
    handler.setFormatter(_CoreFormatter(digits))
    handler.setLevel(level)
    LOGGER.setLevel(level)
    LOGGER.addHandler(handler)
    return handler


