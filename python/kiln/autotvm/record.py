"""Tuning records (tvm.autotvm.record) and their use at compile time
(apply_history_best)."""
import os

from .._ffi import KilnError
from ._base import require


class ApplyHistoryBest:
    """A context in which kiln.build (on this thread) takes, per workload,
    the best record of the given log (v0.1 or v0.2 lines)."""

    def __init__(self, records):
        require("autotvm.apply_history_best", "apply_history_best")
        if not isinstance(records, (str, os.PathLike)):
            raise KilnError("apply_history_best: give the path of a records file, got %s"
                            % type(records).__name__)
        self.records = os.fspath(records)
        self._h = None

    def __enter__(self):
        from ..graph_executor import _Handle  # pylint: disable=import-outside-toplevel
        h = require("autotvm.apply_history_best", "apply_history_best")(self.records)
        self._h = _Handle(h) if isinstance(h, int) else h
        self._entered = True
        return self

    def __exit__(self, *exc):
        if getattr(self, "_entered", False):
            f = require("autotvm.apply_history_best_exit", "apply_history_best")
            if self._h is None:
                f()
            else:
                f(self._h)
            self._h = None
            self._entered = False


def apply_history_best(records):
    return ApplyHistoryBest(records)


__all__ = ["ApplyHistoryBest", "apply_history_best"]
