"""Tuners (tvm.autotvm.tuner): XGBTuner, GATuner, RandomTuner,
GridSearchTuner.  The search runs in the tuning engine (C); a tuner here
holds the options, hands the task to autotvm.tune_task, and feeds each
measured batch to the callbacks."""
import json

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
        # pylint: disable=unused-argument
        f = require("autotvm.tune_task", "tuner.%s.tune" % type(self).__name__)
        n_trial = int(n_trial)
        if n_trial < 1:
            raise KilnError("tune: n_trial must be at least 1, got %d" % n_trial)
        opts = {"n_trial": n_trial, "early_stopping": early_stopping,
                "tuner_options": self.options, "measure_option": _option_dict(measure_option)}
        callbacks = list(callbacks or ())

        def on_batch(batch_json):
            inputs, results = [], []
            for m in json.loads(batch_json):
                inp = MeasureInput(self.task, m["config"])
                res = MeasureResult(*m["result"][:4], record=m.get("record"), flops=m.get("flops"))
                inputs.append(inp)
                results.append(res)
                if res.error_no == MeasureErrorNo.NO_ERROR and res.costs and res.flops:
                    flops = res.flops / (sum(res.costs) / len(res.costs))
                    if flops > self.best_flops:
                        self.best_flops = flops
                        self.best_config = m["config"]
                        self.best_measure_pair = (inp, res)
            for cb in callbacks:
                cb(self, inputs, results)

        return json.loads(f(self.task.to_json(), self.kind, json.dumps(opts), on_batch))


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
