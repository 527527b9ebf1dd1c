"""Progress of a training run: a tqdm bar on a terminal, plain lines elsewhere, or nothing.

``fit``'s ``ProgressBar(stream, bars=None)`` callback: ``bars=None`` shows a bar per epoch when
the stream is a terminal and tqdm is installed, and one plain line per epoch otherwise (logs,
CI); ``True`` forces the bar (or the lines without tqdm); ``False`` lines only. Without a
``ProgressBar`` (``shown=False`` here) nothing is printed.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

__all__ = ["Progress"]


def _tqdm() -> Any:
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


class Progress:
    """Reports batches (bar) and epoch summaries (line) of one run."""

    def __init__(
        self, shown: bool, bars: bool | None, epochs: int, stream: TextIO | None = None
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.epochs = epochs
        self.quiet = not shown
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.tqdm = _tqdm() if shown and (bars or (bars is None and tty)) else None
        self.bar: Any = None

    def start_epoch(self, epoch: int, batches: int) -> None:
        """A bar over this epoch's batches (when bars are on)."""
        if self.tqdm is not None:
            self.bar = self.tqdm(
                total=batches,
                desc=f"epoch {epoch + 1}/{self.epochs}",
                leave=False,
                file=self.stream,
                unit="batch",
            )

    @property
    def shows_batches(self) -> bool:
        """Whether a bar is showing (only then is a batch's loss worth computing)."""
        return self.bar is not None

    def batch(self, loss: float) -> None:
        """One batch trained."""
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(loss=f"{loss:.4f}", refresh=False)

    def abort(self) -> None:
        """Close the bar of a run that stops with an error."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def end_epoch(self, line: str) -> None:
        """Close the bar and print the epoch's summary line."""
        self.abort()
        if not self.quiet:
            print(line, file=self.stream, flush=True)
