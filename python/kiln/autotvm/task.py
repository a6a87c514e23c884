"""Tuning tasks (tvm.autotvm.task)."""
import json

from .._ffi import KilnTypeError
from ._base import require


class ConfigSpaceInfo:
    """The size of a task's config space (len(task.config_space))."""

    def __init__(self, size):
        self.size = int(size)

    def __len__(self):
        return self.size

    def __repr__(self):
        return "ConfigSpace(len=%d)" % self.size


class Task:
    """A tuning task: a template name, its workload args and the target."""

    def __init__(self, d):
        self._d = d
        self.name = d["name"]
        self.args = d.get("args", [])
        self.target = d.get("target", "llvm")
        self.workload = d.get("workload")
        self.config_space = ConfigSpaceInfo(d.get("config_space_size", 0))
        self.nodes = d.get("nodes", [])
        self.flops = d.get("flops", 0.0)
        self.desc = d.get("desc", "")

    def to_json(self):
        return json.dumps(self._d)

    def __repr__(self):
        return "Task(func_name=%s, args=%s, target=%s, nodes=%s)" % (
            self.name, json.dumps(self.args), self.target, self.nodes)


def create(func_name, args, target="llvm", target_host=None, template_key=None):
    """A task of a Python template (@autotvm.template): its name (or the
    decorated function) and workload args (TVM's autotvm.task.create).
    task.config_space is the template's space for these args, task.flop
    what the template gave cfg.add_flop."""
    # pylint: disable=unused-argument,import-outside-toplevel
    from .template import lookup, ConfigSpace
    tm = lookup(func_name)
    args = list(args)
    cfg = tm.space(args)
    t = Task({"name": tm.name, "args": [list(a) if isinstance(a, tuple) else a for a in args],
              "target": str(target), "flops": cfg.flop, "config_space_size": 0})
    t.config_space = ConfigSpace(cfg.knobs)
    t.flop = cfg.flop
    t.func = tm
    return t


def extract_from_program(mod, params, target, target_host=None, ops=None):
    """The tuning tasks of a model's graph (conv2d, dense... anchors), as
    the build would dispatch them at the current PassContext's opt_level
    (TVM's default 3 for extraction)."""
    # pylint: disable=unused-argument
    from ..graph import IRModule, _changed_params  # pylint: disable=import-outside-toplevel
    from ..transform import PassContext, _stack  # pylint: disable=import-outside-toplevel
    if type(mod).__name__ == "MainFunction":
        mod = mod.mod  # mod["main"]
    if not isinstance(mod, IRModule):
        raise KilnTypeError("extract_from_program: expected an IRModule, got %s" % type(mod).__name__)
    f = require("autotvm.extract_tasks", "task.extract_from_program")
    changed = _changed_params(mod, params)
    g = mod.bind_params(changed) if changed else mod
    level = PassContext.current().opt_level if _stack() else 3
    precision = PassContext.current().config.get("kiln.precision") if _stack() else None
    extra = (precision,) if precision else ()
    tasks = [Task(d) for d in json.loads(f(g, level, str(target or "llvm"), *extra))]
    if ops:
        # "nn.conv2d" keeps conv2d_NCHWc.x86 (and depthwise), "nn.dense" dense_*
        short = {str(o).rsplit(".", 1)[-1] for o in ops}
        tasks = [t for t in tasks if any(s in t.name for s in short)]
    return tasks


__all__ = ["Task", "create", "extract_from_program"]
