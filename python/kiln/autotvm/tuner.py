"""Tuners (tvm.autotvm.tuner): XGBTuner, GATuner, RandomTuner,
GridSearchTuner.  The search runs in the tuning engine (C); a tuner here
holds the options, hands the task to autotvm.tune_task, and gives the
measurements to the callbacks."""
import json
import os
import shutil
import sys
import tempfile

from .. import _ffi
from .._ffi import KilnError, KilnTypeError
from ._base import require
from .measure import MeasureErrorNo, MeasureInput, MeasureResult, _option_dict
from .task import Task


class Tuner:
    """Base: tune(n_trial, measure_option, early_stopping, callbacks)."""

    kind = None

    def __init__(self, task, **options):
        if not isinstance(task, Task):
            raise KilnTypeError("%s: expected a Task (from extract_from_program), got %s"
                                % (type(self).__name__, type(task).__name__))
        self.task = task
        self.options = options
        self.best_config = None
        self.best_flops = 0.0
        self.best_measure_pair = None

    def tune(self, n_trial, measure_option=None, early_stopping=None, callbacks=(), si_prefix="G"):
        """Tune the task for n_trial measurements (records of this workload
        already in the log_to_file file count, as `kiln tune` resumes).
        The engine writes the records to the log_to_file callback's file
        (else a temporary one) and prints progress_bar's line itself; other
        callbacks get every new measurement as one batch when tuning ends.
        Returns the engine's summary (measured, best_gflops, ...)."""
        # pylint: disable=unused-argument
        f = require("autotvm.tune_task", "tuner.%s.tune" % type(self).__name__)
        n_trial = int(n_trial)
        if n_trial < 1:
            raise KilnError("tune: n_trial must be at least 1, got %d" % n_trial)
        callbacks = list(callbacks or ())
        log = next((cb.file_out for cb in callbacks if isinstance(getattr(cb, "file_out", None), str)),
                   None)
        bar = next((cb for cb in callbacks if hasattr(cb, "progress_prefix")), None)
        others = [cb for cb in callbacks if cb is not bar and not (log and getattr(cb, "file_out", None) == log)]
        tmpdir = None
        if log is None:
            tmpdir = tempfile.mkdtemp(prefix="kiln-tune-")
            log = os.path.join(tmpdir, "records.json")
        opts = {"n_trial": n_trial, "early_stopping": early_stopping or 0,
                "tuner_options": self.options, "measure_option": _option_dict(measure_option),
                "log_file": log, "progress": bar is not None,
                "progress_prefix": bar.progress_prefix if bar is not None else "",
                "worker": _worker()}
        start = os.path.getsize(log) if os.path.exists(log) else 0
        sys.stdout.flush()
        try:
            summary = json.loads(f(self.task.to_json(), self.kind, json.dumps(opts)))
            with open(log) as fh:
                fh.seek(start)
                lines = [ln for ln in fh.read().splitlines() if ln.strip()]
        finally:
            if tmpdir:
                shutil.rmtree(tmpdir, ignore_errors=True)
        # a Python template's FLOPs are what it gave cfg.add_flop
        flops = summary.get("flops") or getattr(self.task, "flop", 0.0) or 0.0
        inputs, results = self._batch(lines, flops)
        for cb in others:
            cb(self, inputs, results)
        return summary

    def _batch(self, lines, flops):
        inputs, results = [], []
        for line in lines:
            rec = json.loads(line)
            if "input" in rec:  # v0.2
                config, res = rec["config"], rec["result"]
            else:  # v0.1
                config, res = rec["i"][5], rec["r"]
            inp = MeasureInput(self.task, config)
            r = MeasureResult(*res[:4], record=line, flops=flops)
            inputs.append(inp)
            results.append(r)
            if r.error_no == MeasureErrorNo.NO_ERROR and r.costs and r.flops:
                gf = r.flops / (sum(r.costs) / len(r.costs))
                if gf > self.best_flops:
                    self.best_flops, self.best_config, self.best_measure_pair = gf, config, (inp, r)
        return inputs, results


def _worker():
    """The program the engine starts measure workers from: $KILN_WORKER, else
    the kiln command beside the library (a Python process cannot be one)."""
    w = os.environ.get("KILN_WORKER")
    if w:
        return w
    here = os.path.dirname(_ffi.LIB_PATH) if os.sep in _ffi.LIB_PATH else ""
    cand = os.path.join(here, "kiln")
    if here and os.access(cand, os.X_OK):
        return cand
    found = shutil.which("kiln")
    if found:
        return found
    raise KilnError("tune: no measure worker: set KILN_WORKER to the kiln program (it measures "
                    "candidates in separate processes)")


class XGBTuner(Tuner):
    """A cost model (gradient-boosted trees in TVM) ranks candidates."""

    kind = "xgb"

    def __init__(self, task, plan_size=64, feature_type="itervar", loss_type="rank",
                 num_threads=None, optimizer="sa", diversity_filter_ratio=None, log_interval=50):
        super().__init__(task, plan_size=plan_size, feature_type=feature_type, loss_type=loss_type,
                         num_threads=num_threads, optimizer=optimizer,
                         diversity_filter_ratio=diversity_filter_ratio, log_interval=log_interval)


class GATuner(Tuner):
    """A genetic algorithm."""

    kind = "ga"

    def __init__(self, task, pop_size=100, elite_num=3, mutation_prob=0.1):
        super().__init__(task, pop_size=pop_size, elite_num=elite_num, mutation_prob=mutation_prob)


class RandomTuner(Tuner):
    """Configs in random order, each once."""

    kind = "random"

    def __init__(self, task, range_idx=None):
        super().__init__(task, range_idx=range_idx)


class GridSearchTuner(Tuner):
    """Configs in index order."""

    kind = "gridsearch"

    def __init__(self, task, range_idx=None):
        super().__init__(task, range_idx=range_idx)


__all__ = ["Tuner", "XGBTuner", "GATuner", "RandomTuner", "GridSearchTuner"]
