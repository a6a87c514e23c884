"""Profiling a compiled model (TVM's tvm.contrib.debugger.debug_executor).

    m = kiln.debug_executor.create(lib.get_graph_json(), lib, kiln.cpu())
    m.set_input("data", x)
    report = m.profile(number=10, repeat=3)
    print(report)           # TVM's table, plus Kiln's Task column
    report.rows             # [{"name": ..., "ops": ..., "time_us": ..., "task": ...}, ...]

The report is the C debug executor's (runtime.debug_executor.profile): one
row per kernel, timed with a clock around each call; the Task column names
the tuning task of the kernel's anchor (conv2d, dense) and where its
config came from ("fallback", a records file and line).  run() behaves as
TVM's debug run: it runs once, profiled, and prints the table.
"""
import json
import os

from . import _ffi, nd
from ._ffi import KilnError
from .graph_executor import GraphModule, ExecutorModule, _check_device, create as _create
from .runtime import Module


def _api(name):
    return _ffi._get_api(name)


class ProfileReport:
    """A profile: str() is the table (sorted by time, with Total_time);
    rows are dicts in run order (node, name, func_name, ops, time_us,
    std_us, percent, start_us, shape, dtype, inputs, outputs, task)."""

    def __init__(self, handle):
        from .graph_executor import _Handle  # pylint: disable=import-outside-toplevel
        self._h = _Handle(handle)
        data = json.loads(self._format("json"))
        self.rows = data["rows"]
        self.number = data.get("number")
        self.repeat = data.get("repeat")
        self.total_us = data.get("total_us")  # the sum of the rows' times
        self.run_us = data.get("run_us")      # one whole run, timers included

    def _format(self, kind):
        if not self._h.value:
            raise KilnError("the profile was freed")
        return _api("runtime.profile.format")(self._h, kind)

    def table(self):
        return self._format("table")

    def csv(self):
        return self._format("csv")

    def json(self):
        return self._format("json")

    def trace(self):
        """Chrome trace JSON (chrome://tracing, Perfetto)."""
        return self._format("trace")

    def __str__(self):
        return self.table()

    def __repr__(self):
        return "<kiln.ProfileReport %d rows, %.1f us>" % (len(self.rows), self.total_us or 0.0)

    def __iter__(self):
        return iter(self.rows)

    def __len__(self):
        return len(self.rows)

    def __del__(self):
        if getattr(self, "_h", None) is not None and self._h.value and _ffi._LIB is not None:
            try:
                _api("runtime.profile.free")(self._h)
            except Exception:  # pylint: disable=broad-except
                pass
            self._h.value = None


class GraphModuleDebug(GraphModule):
    """A GraphModule whose run() profiles and prints the table."""

    def __init__(self, module, device=None, graph_json_str=None, dump_root=None):
        super().__init__(module)
        self.graph_json = graph_json_str
        self._dump_root = dump_root
        self.debug_report = None

    def profile(self, number=1, repeat=1, **inputs):
        report = super().profile(number, repeat, **inputs)
        self.debug_report = report
        if self._dump_root:
            d = os.path.join(self._dump_root, "_kiln_debug")
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "profile.csv"), "w") as f:
                f.write(report.csv())
            with open(os.path.join(d, "trace.json"), "w") as f:
                f.write(report.trace())
        return report

    def run(self, **input_dict):
        """Run once with every kernel timed, and print the table (as TVM's
        debug executor does); the report stays in debug_report."""
        print(self.profile(1, 1, **input_dict))

    def run_individual(self, number, repeat=1, min_repeat_ms=0):  # pylint: disable=unused-argument
        """Each kernel's mean time in seconds, in run order."""
        return [r["time_us"] * 1e-6 for r in self.profile(number, repeat).rows]


def create(graph_json_str, libmod, device=None, dump_root=None):
    """A profiling executor for graph JSON over a module's kernels (and the
    module's embedded params)."""
    base = _create(graph_json_str, libmod, device)
    return GraphModuleDebug(base.module, device, graph_json_str, dump_root)


def from_module(lib, device=None, dump_root=None):
    """A profiling executor for a model's module (lib["default"])."""
    if not isinstance(lib, Module):
        raise _ffi.KilnTypeError("expected a model's module, got %s" % type(lib).__name__)
    dev = _check_device(device if device is not None else nd.cpu())
    ex = lib["default"](dev)
    assert isinstance(ex, ExecutorModule)
    return GraphModuleDebug(ex, dev, lib.get_graph_json(), dump_root)


__all__ = ["create", "from_module", "GraphModuleDebug", "ProfileReport"]
