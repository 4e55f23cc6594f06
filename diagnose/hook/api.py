"""The in-process API: `install()`, `@record`, `with watch()`, `step()` (standard library only).

On an uncaught exception the hook collects evidence within a bound, writes the per-rank
report, prints a few `[diagnose]` lines and hands the exception on unchanged (same type,
message, traceback text, chain and exit status). Nothing here raises on its own failure.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from diagnose.hook import capture
from diagnose.hook.capture import HookConfig
from diagnose.hook.watchdog import Watchdog, frame_position, thread_activity

__all__ = ["install", "uninstall", "record", "watch", "step", "HookConfig"]

F = TypeVar("F", bound=Callable[..., Any])
DEFAULT_DIR = "diagnose-reports"
_steps = 0


def step() -> None:
    """Mark one training step done: a counter increment, no system call."""
    global _steps
    _steps += 1


class _State:
    config: HookConfig | None = None
    enabled = False
    chained = False
    prev_sys: Callable[..., Any] | None = None
    prev_thread: Callable[..., Any] | None = None
    watchdog: Watchdog | None = None
    handled: list[BaseException] = []
    busy = threading.local()


def install(report_dir: str | os.PathLike[str] | None = None, watchdog_timeout: float | None = None, *,
            timeout: float = 5.0, print_diagnosis: bool = True, use_engine: bool = True,
            progress: str = "step", startup_timeout: float | None = None) -> HookConfig:
    """Chain the hook into sys.excepthook and threading.excepthook (idempotent); start the watchdog if asked.

    report_dir: folder of the per-rank reports (default $DIAGNOSE_REPORT_DIR or ./diagnose-reports).
    watchdog_timeout: seconds without `step()` (or, with progress="auto", without the main
    thread moving) before the watchdog reports a stall; None disables it. With progress="step"
    the watchdog arms at the first `step()`, or after `startup_timeout` seconds when given.
    timeout: bound in seconds on one capture (collection, diagnosis, report).
    """
    folder = Path(report_dir or os.environ.get("DIAGNOSE_REPORT_DIR") or DEFAULT_DIR).absolute()
    config = HookConfig(report_dir=folder, watchdog_timeout=watchdog_timeout, timeout=float(timeout),
                        print_diagnosis=print_diagnosis, use_engine=use_engine, progress=progress,
                        startup_timeout=startup_timeout)
    _State.config = config
    _State.enabled = True
    if not _State.chained:
        _State.prev_sys, sys.excepthook = sys.excepthook, _sys_hook
        _State.prev_thread, threading.excepthook = threading.excepthook, _thread_hook
        _State.chained = True
    _start_watchdog(config)
    return config


def _configure(report_dir: Any = None, watchdog_timeout: float | None = None, **kwargs: Any) -> HookConfig:
    """install(), keeping the settings of an earlier install() that the caller does not give."""
    old = _State.config
    if old is None:
        return install(report_dir, watchdog_timeout, **kwargs)
    keep = {k: getattr(old, k) for k in ("timeout", "print_diagnosis", "use_engine", "progress", "startup_timeout")}
    return install(report_dir or old.report_dir, watchdog_timeout or old.watchdog_timeout, **{**keep, **kwargs})


def uninstall() -> None:
    """Stop the watchdog and unhook; a hook that others wrapped since stays in their chain, disabled."""
    _stop_watchdog()
    _State.enabled = False
    if _State.chained and sys.excepthook is _sys_hook and threading.excepthook is _thread_hook:
        sys.excepthook = _State.prev_sys or sys.__excepthook__
        threading.excepthook = _State.prev_thread or threading.__excepthook__
        _State.chained = False


def _start_watchdog(config: HookConfig) -> None:
    _stop_watchdog()
    if not config.watchdog_timeout or config.watchdog_timeout <= 0:
        return
    main = threading.main_thread()
    ident, native = main.ident, getattr(main, "native_id", None)

    def progress() -> Any:
        if config.progress == "step":
            return _steps
        return _steps, frame_position(ident), thread_activity(native)  # a C call or sleep still moves the clocks

    def on_stall(idle: float, sample: int) -> None:
        if _State.enabled:
            if sample == 0:
                capture.forget_stalls()
            capture.run_bounded(config, capture.stall_collector(idle, _steps, ident, native))

    first = config.watchdog_timeout if config.progress == "auto" else config.startup_timeout
    _State.watchdog = Watchdog(config.watchdog_timeout, progress, on_stall, first_timeout=first)
    _State.watchdog.start()


def _stop_watchdog() -> None:
    if _State.watchdog is not None:
        _State.watchdog.stop()
        _State.watchdog = None


def _diagnose(exc: BaseException, thread: str, uncaught: bool) -> None:
    """Capture once per exception object; never raises, never recurses."""
    if not _State.enabled or not isinstance(exc, Exception) or getattr(_State.busy, "on", False):
        return
    if any(seen is exc for seen in _State.handled):
        return
    _State.handled = [*_State.handled[-7:], exc]
    _State.busy.on = True
    try:
        config = _State.config or install()
        capture.run_bounded(config, capture.exception_collector(exc, thread, uncaught))
    except BaseException:
        pass
    finally:
        _State.busy.on = False


def _sys_hook(etype: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    try:
        _diagnose(value, threading.current_thread().name, uncaught=True)
    finally:
        (_State.prev_sys or sys.__excepthook__)(etype, value, tb)


def _thread_hook(args: Any) -> None:
    try:
        if args.exc_value is not None and args.exc_type is not SystemExit:
            _diagnose(args.exc_value, getattr(args.thread, "name", "thread"), uncaught=False)
    finally:
        (_State.prev_thread or threading.__excepthook__)(args)


def record(fn: F | None = None, **install_kwargs: Any) -> Any:
    """Decorate the entry point: diagnose an exception leaving it, then re-raise it unchanged.

    The wrapper removes its own frame from the traceback, so the printed traceback (and
    torchelastic's error file, whichever `@record` is outside) reads as without it.
    """
    if fn is None:
        return functools.partial(record, **install_kwargs)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _State.config is None or install_kwargs:
            _configure(**install_kwargs)
        try:
            return fn(*args, **kwargs)
        except BaseException as exc:
            tb = exc.__traceback__
            if tb is not None and tb.tb_frame.f_code is wrapper.__code__:
                exc.__traceback__ = tb.tb_next
            _diagnose(exc, threading.current_thread().name, uncaught=True)
            raise

    return wrapper


class watch:
    """Context manager: install the hook (and a watchdog) for a block; diagnose an exception leaving it.

    ``with diagnose.watch(watchdog_timeout=300): train()``. A context manager adds no frame
    to the traceback; the exception propagates unchanged.
    """

    def __init__(self, report_dir: str | os.PathLike[str] | None = None,
                 watchdog_timeout: float | None = None, **install_kwargs: Any) -> None:
        self._args = (report_dir, watchdog_timeout)
        self._kwargs = install_kwargs

    def __enter__(self) -> HookConfig:
        return _configure(*self._args, **self._kwargs)

    def __exit__(self, etype: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if exc is not None:
            _diagnose(exc, threading.current_thread().name, uncaught=True)
        if self._args[1]:
            _stop_watchdog()
        return False


# Cache the public names on the package, so `diagnose.step()` in a training loop is a plain
# attribute lookup rather than a call of the package's lazy `__getattr__` on every step.
_package = sys.modules.get("diagnose")
if _package is not None:
    for _name in ("install", "record", "watch", "step"):
        setattr(_package, _name, globals()[_name])
