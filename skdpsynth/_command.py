"""What every ``skdpsynth`` sub-command shares: exit statuses, the argument parser class, the one error handler.

Kept below :mod:`skdpsynth.cli` and :mod:`skdpsynth.audit._cli` so that both import it and neither imports
the other's module for it.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from skdpsynth._io import silence_stdout
from skdpsynth.exceptions import PrivacyLeakWarning, SkdpsynthError
from skdpsynth.utils._optional import _EXTRA_OF

__all__ = ["PROG", "EXIT_OK", "EXIT_REJECTED", "EXIT_INPUT", "EXIT_INTERNAL", "Parser", "run_command", "cli_warnings",
           "say"]

PROG = "skdpsynth"
#: 0 done; 1 a release rejected; 2 bad input or set-up (a missing extra included): the message says what to do;
#: 3 an internal error (a bug)
EXIT_OK, EXIT_REJECTED, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3


class Parser(argparse.ArgumentParser):
    """Argument errors as ``skdpsynth: error: ...`` (exit 2), like every other error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_INPUT, f"{PROG}: error: {message}\n")


def say(message: str) -> None:
    """One progress or advice line on stderr (stdout carries the result)."""
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


def _show_warning(message: Any, category: type, filename: str, lineno: int, file: Any = None,
                  line: Any = None) -> None:
    label = "privacy warning" if issubclass(category, PrivacyLeakWarning) else "warning"
    print(f"{PROG}: {label}: {message}", file=sys.stderr)


@contextmanager
def cli_warnings(debug: bool = False) -> Iterator[None]:
    """Warnings as one plain line each; libraries' deprecation notices only with ``--debug``."""
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        if not debug:
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
        warnings.showwarning = _show_warning
        yield


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (``timeout``, a scheduler) unwinds like Ctrl-C, so partial output files are removed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


def run_command(func: Callable[[argparse.Namespace], int | None], args: argparse.Namespace) -> int:
    """Run a sub-command: its exit status, or the status of the error it raised (reported on stderr)."""
    debug = bool(getattr(args, "debug", False))
    try:
        with cli_warnings(debug), _terminate_as_interrupt():
            return int(func(args) or 0)
    except BrokenPipeError:  # the reader went away (``... | head``): nothing to report
        silence_stdout()
        return EXIT_OK
    except KeyboardInterrupt:
        _error("interrupted.")
        return 130
    except (SkdpsynthError, ValueError, OSError) as exc:
        return _input_error(exc, debug)
    except ImportError as exc:  # an optional package (an extra to install: the message says which); else a bug
        if (exc.name or "").partition(".")[0] in _EXTRA_OF:
            return _input_error(exc, debug)
        return _internal_error(exc, debug)
    except MemoryError:
        if debug:
            traceback.print_exc()
        _error("out of memory; try a smaller table or --n-samples.")
        return EXIT_INTERNAL
    except Exception as exc:  # an internal failure: say so, no traceback unless asked
        return _internal_error(exc, debug)


def _input_error(exc: BaseException, debug: bool) -> int:
    """Bad input or set-up: the message says what to do (exit 2)."""
    if debug:
        traceback.print_exc()
    _error(str(exc) or type(exc).__name__)
    return EXIT_INPUT


def _internal_error(exc: BaseException, debug: bool) -> int:
    """A bug: say so, with the traceback only under --debug (exit 3)."""
    if debug:
        traceback.print_exc()
    _error(f"internal error ({type(exc).__name__}: {exc}). This is a bug in skdpsynth: please report it "
           "with the output of the same command run with --debug.")
    return EXIT_INTERNAL
