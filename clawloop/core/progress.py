"""Progress of long commands, and consoles that never wrap lines outside a terminal.

Why: an eval that prints nothing for minutes looks hung, and a log full of bar redraws is
unreadable. So one reporter serves every long command (eval, probe, validate, synth, train,
pretraining, bootstrap) in two modes, picked by where stderr goes:

- a terminal: a live rich bar (done/total, the counts so far, tokens/s, rate, elapsed, ETA);
  reporters opened while another is live (pretraining inside bootstrap) add a row to it;
- anything else (a pipe, a file, a DVC stage log): one plain line at start, then one every few
  seconds, slowing down as the run goes on (5 s for the first minute, then a tenth of the
  elapsed time, at most a minute), and a last line at the end: tens of lines per hour, not
  thousands. A background ticker prints them, so the log shows signs of life even while no
  unit of work finishes (a batch still generating).

`CLAWLOOP_PROGRESS` = auto (default) | bar | lines | off overrides the choice;
`CLAWLOOP_PROGRESS_INTERVAL` sets the first-minute interval in seconds.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TextIO, TypeVar

MODES = ("auto", "bar", "lines", "off")
BASE_INTERVAL_S = 5.0
MAX_INTERVAL_S = 60.0
WIDE = 100_000
"""Console width outside a terminal: wide enough that rich never wraps a path or an error."""

_OUTCOME_ORDER = ("passed", "failed", "error", "skipped")
T = TypeVar("T")


def console(stderr: bool = False, file: TextIO | None = None) -> Any:
    """A rich Console for stdout (or stderr) that wraps only on a terminal: outside one, error
    lines and table cells stay whole, so grep and copy-paste see full paths."""
    from rich.console import Console

    c = Console(stderr=stderr, file=file)
    if c.is_terminal:
        return c
    return Console(stderr=stderr, file=file, width=WIDE, soft_wrap=True)


def next_interval(elapsed: float, base: float = BASE_INTERVAL_S) -> float:
    """Seconds until the next plain line: `base` early on, then a tenth of the elapsed time,
    capped at MAX_INTERVAL_S (never below `base`)."""
    return max(base, min(MAX_INTERVAL_S, elapsed / 10))


def clock_text(seconds: float | None) -> str:
    """`1:02:03`, `4:05` or `?` (unknown)."""
    if seconds is None:
        return "?"
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _mode() -> str:
    mode = os.environ.get("CLAWLOOP_PROGRESS", "auto").strip().lower() or "auto"
    return mode if mode in MODES else "auto"


def _base_interval() -> float:
    try:
        return max(0.1, float(os.environ.get("CLAWLOOP_PROGRESS_INTERVAL", BASE_INTERVAL_S)))
    except ValueError:
        return BASE_INTERVAL_S


def _make_bar(stream: TextIO) -> Any:
    import rich.progress as rp
    from rich.console import Console

    return rp.Progress(rp.TextColumn("[bold]{task.fields[label]}"), rp.BarColumn(), rp.MofNCompleteColumn(),
                       rp.TextColumn("{task.fields[unit]}"), rp.TextColumn("{task.fields[stats]}"),
                       rp.TimeElapsedColumn(), rp.TextColumn("ETA"), rp.TimeRemainingColumn(),
                       console=Console(file=stream, force_terminal=True))


class _SharedBar:
    """The one rich live display; reporters add rows to it (rich allows one live display)."""

    lock = threading.Lock()
    bar: Any = None
    users = 0

    @classmethod
    def acquire(cls, stream: TextIO) -> Any:
        with cls.lock:
            if cls.bar is None:
                cls.bar = _make_bar(stream)
                cls.bar.start()
            cls.users += 1
            return cls.bar

    @classmethod
    def release(cls) -> None:
        with cls.lock:
            cls.users -= 1
            if cls.users <= 0 and cls.bar is not None:
                cls.bar.stop()
                cls.bar, cls.users = None, 0


class Progress:
    """Progress of one long command: units done of a total, outcome counts, tokens, free fields.

    Thread-safe. Use as a context manager; `enabled=False` makes every call a no-op. `live`
    forces the bar (True) or plain lines (False); None decides by `stream.isatty()` and
    CLAWLOOP_PROGRESS. `clock` and `ticker=False` make the plain-line mode testable without
    sleeping: call `tick()` by hand.
    """

    def __init__(self, label: str, total: int | None = None, unit: str = "episodes", *,
                 enabled: bool = True, live: bool | None = None, stream: TextIO | None = None,
                 interval: float | None = None, clock: Callable[[], float] = time.monotonic,
                 ticker: bool = True) -> None:
        self.label, self.total, self.unit = label, total, unit
        self.stream = stream if stream is not None else sys.stderr
        mode = _mode()
        self.enabled = enabled and mode != "off"
        if live is None:
            live = mode == "bar" or (mode == "auto" and _isatty(self.stream))
        self.live = live
        self.base = interval if interval is not None else _base_interval()
        self.clock, self.use_ticker = clock, ticker
        self.done = self.done0 = 0
        self.counts: Counter[str] = Counter()
        self.tokens = 0
        self.fields: dict[str, Any] = {}
        self.lock = threading.RLock()
        self.t0 = 0.0
        self.next_due = 0.0
        self.started = self.closed = False
        self._bar: Any = None
        self._row: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> Progress:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> Progress:
        """Show the bar, or print the first line (so a run shows life from its first second)."""
        with self.lock:
            if self.started or not self.enabled:
                self.started = True
                return self
            self.started = True
            self.t0 = self.clock()
            if self.live:
                self._bar = _SharedBar.acquire(self.stream)
                self._row = self._bar.add_task("", total=self.total, label=self.label, unit=self.unit,
                                               stats=self.stats())
                return self
            self._emit()
        if self.use_ticker:
            self._thread = threading.Thread(target=self._tick_loop, name=f"progress-{self.label}", daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop the ticker; a last line (plain mode) or the final state of the row (bar)."""
        with self.lock:
            if self.closed or not self.enabled or not self.started:
                self.closed = True
                return
            self.closed = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self.lock:
            if self._bar is not None:
                self._refresh_row()
                _SharedBar.release()
            else:
                self._emit(final=True)

    def track(self, items: Iterable[T], size: Callable[[T], int] | None = None) -> Iterator[T]:
        """Iterate `items`, one unit per item (or `size(item)` units: a batch), started on the
        first and closed after the last (or when the loop breaks or raises): a loop gains
        progress by changing its `for` line. The reporter is closed after: it must be this
        loop's own."""
        self.start()
        try:
            for item in items:
                yield item
                self.advance(size(item) if size is not None else 1)
        finally:
            self.close()

    # ------------------------------------------------------------------ updates
    def start_at(self, done: int) -> None:
        """Units done before this run (a resumed training): shown, but left out of rate and ETA."""
        with self.lock:
            self.done = self.done0 = done
            self._changed()

    def set_total(self, total: int | None) -> None:
        with self.lock:
            self.total = total
            self._changed()

    def advance(self, n: int = 1, outcome: str | None = None) -> None:
        """`n` more units done; `outcome` (passed, failed, ...) is counted when given."""
        with self.lock:
            self.done += n
            if outcome is not None:
                self.counts[outcome] += n
            self._changed()

    def set_done(self, done: int) -> None:
        with self.lock:
            self.done = done
            self._changed()

    def add_tokens(self, n: int) -> None:
        """Tokens processed (generated, or trained on): the tokens/s figure."""
        with self.lock:
            self.tokens += int(n)
            self._changed()

    def set(self, **fields: Any) -> None:
        """Free figures shown after the counts (loss=2.31); None removes one."""
        with self.lock:
            for k, v in fields.items():
                if v is None:
                    self.fields.pop(k, None)
                else:
                    self.fields[k] = v
            self._changed()

    # ------------------------------------------------------------------ figures
    def elapsed(self) -> float:
        return max(0.0, self.clock() - self.t0) if self.started else 0.0

    def rate(self) -> float | None:
        """Units per second so far (None before the first unit)."""
        e, n = self.elapsed(), self.done - self.done0
        return n / e if n > 0 and e > 0 else None

    def eta(self) -> float | None:
        """Seconds left at the rate so far (None while unknown)."""
        r = self.rate()
        if r is None or self.total is None:
            return None
        return max(0.0, (self.total - self.done) / r)

    def stats(self) -> str:
        """Counts, free fields, tokens/s and the rate: the part both modes share."""
        parts = []
        counts = [f"{k} {self.counts[k]}" for k in (*_OUTCOME_ORDER, *sorted(set(self.counts) - set(_OUTCOME_ORDER)))
                  if self.counts.get(k)]
        if counts:
            parts.append(", ".join(counts))
        parts += [f"{k} {_fmt(v)}" for k, v in self.fields.items()]
        e = self.elapsed()
        if self.tokens and e > 0:
            parts.append(f"{self.tokens / e:,.0f} tok/s")
        r = self.rate()
        if r is not None:
            parts.append(f"{r:.3g} {self.unit}/s" if self.unit else f"{r:.3g}/s")
        return " · ".join(parts)

    def line(self, final: bool = False) -> str:
        """One plain progress line: `[eval model] 12/72 episodes (17%) · passed 3 · ... · ETA 4:46`."""
        if self.total is not None:
            pct = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
            head = f"{self.done}/{self.total} {self.unit}{pct}"
        else:
            head = f"{self.done} {self.unit}" if self.unit else ""
        stats = self.stats()
        tail = (f"done in {clock_text(self.elapsed())}" if final
                else f"elapsed {clock_text(self.elapsed())}" + (f" · ETA {clock_text(self.eta())}"
                                                               if self.total else ""))
        return f"[{self.label}] " + " · ".join(p for p in (head, stats, tail) if p)

    # ------------------------------------------------------------------ output
    def tick(self) -> bool:
        """Plain mode: print a line when one is due; True when it printed."""
        with self.lock:
            if not self.enabled or self.live or not self.started or self.closed:
                return False
            if self.clock() < self.next_due:
                return False
            self._emit()
            return True

    def _tick_loop(self) -> None:
        while not self._stop.wait(min(1.0, self.base)):
            self.tick()

    def _emit(self, final: bool = False) -> None:
        print(self.line(final=final), file=self.stream, flush=True)
        self.next_due = self.clock() + next_interval(self.elapsed(), self.base)

    def _changed(self) -> None:
        if self._bar is not None and not self.closed:
            self._refresh_row()

    def _refresh_row(self) -> None:
        self._bar.update(self._row, total=self.total, completed=self.done, stats=self.stats())


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def progress_for(progress: bool | Progress | None, label: str, total: int | None = None,
                 unit: str = "episodes") -> Iterator[Progress]:
    """The caller's reporter when it passes one (it stays open: the caller owns it), else a new
    one, enabled when `progress` is true: library functions take `progress: bool | Progress`."""
    if isinstance(progress, Progress):
        yield progress
        return
    with Progress(label, total, unit, enabled=bool(progress)) as p:
        yield p
