"""Ctrl-C while a command runs: exit 130 and one line (docs/errors.md), whatever a library
makes of the ``KeyboardInterrupt``.

Python raises ``KeyboardInterrupt`` wherever the main thread is when SIGINT is handled, and
that is not always where it can stop the command:

* in C code that checks for signals and then drops the error: numpy's array coercion checks
  (``PyErr_CheckSignals``), and matplotlib's pybind11 argument casting clears the failure and
  raises ``TypeError: ... incompatible function arguments`` instead (``TransformedBbox``'s
  points through ``Affine2D.transform`` while a figure is saved): the interrupt is gone and
  only the ``TypeError`` escapes. The handler here notes every SIGINT: an error that escapes
  the command after one is the interrupt's.
* in a finalizer or a weakref callback (matplotlib's transforms hold many), where Python
  prints it as "Exception ignored in ..." with a traceback and carries on: the hook here
  prints nothing and raises it again at the next call or return outside the hook, where it
  stops the command.
* during the interpreter's shutdown, after the command's exit code is settled: Python has
  put back the default action by then, which kills the process (exit -2). The process's own
  command line ignores SIGINT from the moment its exit code is settled.
"""

from __future__ import annotations

import signal
import sys
import threading

import click

#: The exit code of an interrupted command (128 + SIGINT), as a shell reports Ctrl-C.
INTERRUPTED = 130


class Watch:
    """A command's run (``with Watch(settle): ...``) under SIGINT: each one raised as
    ``KeyboardInterrupt`` (Python's own action) and noted, none once the run has ended. The
    run's exit code (``code``): its ``sys.exit``'s, or ``INTERRUPTED`` with its one line for
    an interrupt and for any other error that escapes it after a SIGINT.

    ``settle``: the process's own command line, which goes on ignoring SIGINT after the run,
    through the interpreter's shutdown; otherwise (a command run in a test or another program)
    Python's handler comes back. Only where that handler is in place, in the main thread: a
    SIGINT the process ignores (a background job), or a caller's own handler, is left alone.
    """

    def __init__(self, settle: bool) -> None:
        self.settle = settle
        self.noted = False
        self.ended = False
        self.code: int | str | None = None
        self.watching = False
        self._hook = sys.unraisablehook
        self._profile = sys.getprofile()

    def __enter__(self) -> Watch:
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        ):
            self.watching = True
            signal.signal(signal.SIGINT, self._handler)
            sys.unraisablehook = self._unraisable
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        self.ended = True  # from here a SIGINT cuts neither the line nor the exit short
        try:
            if kind is not None and issubclass(kind, SystemExit):
                self.code = exc.code
            elif kind is not None and (
                issubclass(kind, (KeyboardInterrupt, click.Abort))
                or (issubclass(kind, Exception) and self.noted)
            ):
                click.echo("error: interrupted", err=True)
                self.code = INTERRUPTED
            else:
                return False
            return True
        finally:
            if self.watching:
                signal.signal(
                    signal.SIGINT, signal.SIG_IGN if self.settle else signal.default_int_handler
                )
                sys.unraisablehook = self._hook

    def _handler(self, signum, frame) -> None:
        if self.ended:
            return
        self.noted = True
        raise KeyboardInterrupt

    def _unraisable(self, unraisable) -> None:
        """Raise a ``KeyboardInterrupt`` Python could not raise (in a finalizer or a
        callback) at the next call or return outside this hook, where it stops the command
        (a signal tripped again would be handled in this hook); the previous hook reports
        the rest."""
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            self._hook(unraisable)
        elif not self.ended and sys.getprofile() != self._raise_outside_hook:
            self._profile = sys.getprofile()
            sys.setprofile(self._raise_outside_hook)

    def _raise_outside_hook(self, frame, event, arg) -> None:
        if frame.f_code not in _NOT_THERE:
            sys.setprofile(self._profile)
            if not self.ended:
                raise KeyboardInterrupt


#: Where a ``KeyboardInterrupt`` from ``Watch._unraisable`` is not raised: in the hook itself
#: (Python would report it as unraisable again) and as the run ends (it would escape it).
_NOT_THERE = (Watch._unraisable.__code__, Watch.__exit__.__code__)
