"""Tuning records (tvm.autotvm.record) and their use at compile time
(apply_history_best)."""
import os

from .._ffi import KilnError
from ._base import require


class ApplyHistoryBest:
    """A context in which kiln.build takes, per workload, the best record of
    the given log (v0.1 or v0.2 lines), before the records Kiln ships and
    the fallback.  Kiln's dispatch context is process-wide (as TVM's
    DispatchContext.current), so it applies to builds on every thread."""

    def __init__(self, records):
        require("autotvm.apply_history_best", "apply_history_best")
        if not isinstance(records, (str, os.PathLike)):
            raise KilnError("apply_history_best: give the path of a records file, got %s"
                            % type(records).__name__)
        self.records = os.fspath(records)
        self._h = None

    def __enter__(self):
        self._h = require("autotvm.apply_history_best", "apply_history_best")(self.records)
        return self

    def __exit__(self, *exc):
        if self._h is not None:
            require("autotvm.apply_history_best_exit", "apply_history_best")(self._h)
            self._h = None


def apply_history_best(records):
    return ApplyHistoryBest(records)


__all__ = ["ApplyHistoryBest", "apply_history_best"]
