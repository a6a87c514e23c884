"""How candidates are measured (tvm.autotvm.measure): options handed to
the tuning engine, and the measured pairs its callbacks receive."""
import json


class LocalBuilder:
    """Compile candidates on this machine (timeout in seconds;
    n_parallel: builds at once, None: one per core)."""

    def __init__(self, timeout=10, n_parallel=None, build_func="default"):
        if build_func != "default":
            raise ValueError("LocalBuilder: only the default build function is supported")
        self.timeout = float(timeout)
        self.n_parallel = n_parallel

    def to_dict(self):
        return {"kind": "local", "timeout": self.timeout, "n_parallel": self.n_parallel}


class LocalRunner:
    """Run candidates in an isolated worker on this machine."""

    def __init__(self, timeout=10, number=4, repeat=3, min_repeat_ms=0, cooldown_interval=0.1,
                 enable_cpu_cache_flush=False):
        self.timeout = float(timeout)
        self.number = int(number)
        self.repeat = int(repeat)
        self.min_repeat_ms = float(min_repeat_ms)
        self.cooldown_interval = float(cooldown_interval)
        self.enable_cpu_cache_flush = bool(enable_cpu_cache_flush)

    def to_dict(self):
        return {"kind": "local", "timeout": self.timeout, "number": self.number,
                "repeat": self.repeat, "min_repeat_ms": self.min_repeat_ms,
                "cooldown_interval": self.cooldown_interval,
                "enable_cpu_cache_flush": self.enable_cpu_cache_flush}


def measure_option(builder=None, runner=None):
    """{"builder": ..., "runner": ...} for Tuner.tune."""
    builder = builder if builder is not None else LocalBuilder()
    runner = runner if runner is not None else LocalRunner()
    if isinstance(builder, str):
        if builder != "local":
            raise ValueError("measure_option: builder 'local' only, got %r" % builder)
        builder = LocalBuilder()
    if isinstance(runner, str):
        if runner != "local":
            raise ValueError("measure_option: runner 'local' only, got %r" % runner)
        runner = LocalRunner()
    return {"builder": builder, "runner": runner}


def _option_dict(opt):
    return {k: v.to_dict() if hasattr(v, "to_dict") else v for k, v in (opt or {}).items()}


class MeasureErrorNo:
    """TVM's error numbers (DESIGN.md section 3)."""
    NO_ERROR = 0
    INSTANTIATION_ERROR = 1
    COMPILE_HOST = 2
    COMPILE_DEVICE = 3
    RUNTIME_DEVICE = 4
    WRONG_ANSWER = 5
    BUILD_TIMEOUT = 6
    RUN_TIMEOUT = 7
    UNKNOWN_ERROR = 8


class MeasureInput:
    """(task, config) of one measurement; config is the record's config
    object {"index", "code_hash", "entity"}."""

    def __init__(self, task, config, target=None):
        self.task = task
        self.config = config
        self.target = target if target is not None else task.target

    def __repr__(self):
        return "MeasureInput(%s, config=%s)" % (self.task.name, json.dumps(self.config))


class MeasureResult:
    """costs (s), error_no, all_cost (s), timestamp; record is the v0.2
    log line, flops the workload's FLOP count per run."""

    def __init__(self, costs, error_no, all_cost, timestamp, record=None, flops=0.0):
        self.costs = list(costs)
        self.error_no = int(error_no)
        self.all_cost = float(all_cost)
        self.timestamp = float(timestamp)
        self.record = record
        self.flops = float(flops or 0.0)

    def __repr__(self):
        return "MeasureResult(costs=%r, error_no=%d, all_cost=%g, timestamp=%g)" % (
            self.costs, self.error_no, self.all_cost, self.timestamp)
