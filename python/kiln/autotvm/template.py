"""Tuning templates written in Python (AutoTVM's @autotvm.template).

    @autotvm.template("tutorial/matmul")
    def matmul(N, L, M, dtype):
        A = kiln.placeholder((N, L), name="A", dtype=dtype)
        ...
        cfg = autotvm.get_config()
        cfg.define_knob("tile_y", [1, 2, 4, 8, 16])
        cfg.define_split("tile_x", x, num_outputs=2)
        yo, yi = s[C].split(y, cfg["tile_y"].val)
        xo, xi = cfg["tile_x"].apply(s, C, x)
        return s, [A, B, C]

    task = autotvm.task.create("tutorial/matmul", args=(N, L, M, "float32"), target="llvm")
    autotvm.tuner.RandomTuner(task).tune(n_trial=10, measure_option=..., callbacks=[...])
    with autotvm.apply_history_best("matmul.log"):
        with kiln.target.Target("llvm"):
            s, arg_bufs = matmul(N, L, M, "float32")

The template is a row of Kiln's template table (C: autotvm.register_template,
src/api/api_template.c), so the C tuners (random, grid, ga, xgb) search its
space exactly as they search the built-in ones: the knobs' choices and a
config index's meaning are the engine's (TVM's order).  The schedule is
built through the same C schedule API as every other.  Measuring: a worker
process cannot run Python, so the tuning process instantiates each
candidate with its config, lowers it and generates its C; the isolated
worker processes compile it, check it against the unscheduled lowering of
the same output and time it, as they do for C templates.

Calling the decorated function outside tuning (TVM's dispatch): the config
is the best record of the current apply_history_best context for the
workload (template name and args), else the fallback: each knob's first
choice.
"""
import functools
import json
import threading

from .. import _ffi
from .._ffi import KilnError

_local = threading.local()
_templates = {}


def _api(name):
    return _ffi._get_api(name)


def _stack():
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


# ---- entities: one knob's choice ----

class OtherOptionEntity:
    def __init__(self, val):
        self.val = val

    def __repr__(self):
        return repr(self.val)


class SplitEntity:
    """Split sizes [-1, f1, ..., fk]; apply() splits an axis into k + 1."""

    def __init__(self, size):
        self.size = list(size)

    def apply(self, sch, op, axis):
        ret = []
        for i in range(1, len(self.size)):
            factor = 1
            for f in self.size[i:]:
                factor *= f
            ax0, ax1 = sch[op].split(axis, int(factor))
            ret.append(ax0)
            axis = ax1
        return ret + [axis]

    def __repr__(self):
        return "sp%s" % self.size


class ReorderEntity:
    def __init__(self, perm):
        self.perm = list(perm)

    def apply(self, sch, op, axes):
        if len(axes) == len(self.perm):
            new = [axes[i] for i in self.perm]
        else:
            new = [axes[i] for i in self.perm if i < len(axes)]
        sch[op].reorder(*new)
        return new

    def __repr__(self):
        return "re%s" % self.perm


class AnnotateEntity:
    def __init__(self, anns):
        self.anns = list(anns)

    def apply(self, sch, op, axes, axis_lens=None, max_unroll=None, vec_size=None, cfg=None, source=None):
        # pylint: disable=unused-argument
        for ax, ann in zip(axes, self.anns):
            if ann == "unroll":
                sch[op].unroll(ax)
            elif ann == "vec":
                sch[op].vectorize(ax)
            elif ann == "parallel":
                sch[op].parallel(ax)
            elif ann != "none":
                raise KilnError("annotation '%s' is not supported (none, unroll, vec, parallel)" % ann)
        return list(axes)

    def __repr__(self):
        return "an%s" % self.anns


def _entity(kind, value):
    return {"ot": OtherOptionEntity, "sp": SplitEntity, "re": ReorderEntity, "an": AnnotateEntity}[kind](value)


def _extent(axis):
    dom = getattr(axis, "dom", None)
    ext = getattr(dom, "extent", None) if dom is not None else None
    if ext is None:
        raise KilnError("define_split: give an axis of constant extent (an IterVar), got %r" % (axis,))
    return int(getattr(ext, "value", ext))


class _Config:
    """What get_config() returns inside a template: collecting the knobs
    (the space) or holding one config's entities."""

    def __init__(self, entity=None):
        self.knobs = []            # the knobs' JSON, in declaration order
        self._entity = entity      # name -> (kind, value); None while collecting
        self._first = None
        self.flop = 0.0
        self.is_fallback = False

    # the define_* calls (TVM's ConfigSpace)
    def _define(self, knob):
        if self._entity is None:
            if any(k["name"] == knob["name"] for k in self.knobs):
                raise KilnError("knob '%s' is defined twice" % knob["name"])
            self.knobs.append(knob)
            self._first = None

    def define_knob(self, name, candidate):
        self._define({"name": name, "kind": "ot", "candidates": list(candidate)})

    def define_split(self, name, axis, policy="factors", num_outputs=2, max_factor=None, filter=None,
                     **kwargs):  # pylint: disable=redefined-builtin
        if filter is not None or kwargs:
            raise KilnError("define_split '%s': filter and %s are not supported" % (name, ", ".join(kwargs)))
        self._define({"name": name, "kind": "sp", "extent": _extent(axis), "num_outputs": int(num_outputs),
                      "policy": policy, "max_factor": int(max_factor or 0)})
        return [None] * int(num_outputs)

    def define_reorder(self, name, axes, policy, **kwargs):
        cand = kwargs.get("candidate")
        handles = [getattr(a, "handle", id(a)) for a in axes]

        def position(a):
            h = getattr(a, "handle", id(a))
            if h not in handles:
                raise KilnError("define_reorder '%s': a candidate names an axis not in the list" % name)
            return handles.index(h)

        rows = [[position(a) for a in c] for c in cand] if cand else []
        self._define({"name": name, "kind": "re", "naxes": len(axes), "policy": policy, "candidates": rows})

    def define_annotate(self, name, axes, policy, **kwargs):
        cand = kwargs.get("candidate")
        self._define({"name": name, "kind": "an", "naxes": len(axes), "policy": policy,
                      "candidates": [list(c) for c in cand] if cand else []})

    def add_flop(self, flop):
        self.flop += float(flop)

    def __getitem__(self, name):
        if self._entity is not None:
            if name not in self._entity:
                raise KilnError("the config has no knob '%s'" % name)
            return _entity(*self._entity[name])
        # collecting: the space's first config, as TVM's ConfigSpace answers
        if self._first is None:
            self._first = {e[0]: (e[1], e[2]) for e in json.loads(
                _api("autotvm.space_entity")(json.dumps(self.knobs), 0))}
        if name not in self._first:
            raise KilnError("knob '%s' is used before it is defined" % name)
        return _entity(*self._first[name])


def get_config():
    """The config of the template being instantiated (TVM's
    autotvm.get_config)."""
    st = _stack()
    if not st:
        raise KilnError("get_config: call it inside an @autotvm.template function")
    return st[-1]


class ConfigSpace:
    """task.config_space: its size and knobs (TVM's ConfigSpace)."""

    def __init__(self, knobs):
        self.knobs = knobs
        info = json.loads(_api("autotvm.space_info")(json.dumps(knobs)))
        self.size = int(info["size"])
        self.space_map = {k["name"]: k for k in info["knobs"]}

    def __len__(self):
        return self.size

    def get(self, index):
        """The config at index, as its entity list [[name, kind, value], ...]."""
        return json.loads(_api("autotvm.space_entity")(json.dumps(self.knobs), int(index)))

    def __repr__(self):
        lines = ["ConfigSpace (len=%d, space_map=" % self.size]
        kinds = {"ot": "OtherOption", "sp": "Split", "re": "Reorder", "an": "Annotate"}
        for i, k in enumerate(self.knobs):
            what = k.get("candidates") if k["kind"] == "ot" else k.get("policy")
            lines.append("   %d %s: %s(%s) len=%d" % (i, k["name"], kinds[k["kind"]], what,
                                                      self.space_map[k["name"]]["len"]))
        lines.append(")")
        return "\n".join(lines)


def _run(func, args, cfg):
    _stack().append(cfg)
    try:
        return func(*args)
    finally:
        _stack().pop()


def _args_json(args):
    return json.dumps([list(a) if isinstance(a, tuple) else a for a in args])


def _args_from_json(text):
    return [tuple(a) if isinstance(a, list) else a for a in json.loads(text)]


class _Template:
    def __init__(self, name, func):
        self.name = name
        self.func = func

        def space(args_json):
            cfg = _Config()
            _run(self.func, _args_from_json(args_json), cfg)
            return json.dumps(cfg.knobs)

        def instantiate(args_json, entity_json):
            cfg = _Config({e[0]: (e[1], e[2]) for e in json.loads(entity_json)})
            s, tensors = _run(self.func, _args_from_json(args_json), cfg)
            return _api("api.Array")(s, *tensors)

        # kept alive here: the C table holds them
        self._fns = (_ffi.convert_to_func(space), _ffi.convert_to_func(instantiate))
        _api("autotvm.register_template")(name, *self._fns)

    def space(self, args):
        cfg = _Config()
        _run(self.func, list(args), cfg)
        return cfg

    def __call__(self, *args):
        """Outside tuning: the best record of the current
        apply_history_best context for this workload, else the fallback
        (each knob's first choice)."""
        st = _stack()
        if st:  # called from inside another template: share its config
            return self.func(*args)
        best = _api("autotvm.query_best")(self.name, _args_json(args))
        if best:
            cfg = _Config({e[0]: (e[1], e[2]) for e in json.loads(best)["entity"]})
        else:
            knobs = self.space(args).knobs
            entity = json.loads(_api("autotvm.space_entity")(json.dumps(knobs), 0)) if knobs else []
            cfg = _Config({e[0]: (e[1], e[2]) for e in entity})
            cfg.is_fallback = True
        return _run(self.func, list(args), cfg)


def template(task_name, func=None):
    """@autotvm.template("name") registers a tuning template; the bare
    @autotvm.template (TVM 0.6) names it after the function."""
    if callable(task_name) and func is None:
        return template(task_name.__name__, task_name)
    if func is None:
        return lambda f: template(task_name, f)
    t = _Template(str(task_name), func)
    _templates[t.name] = t
    wrapper = functools.wraps(func)(lambda *args: t(*args))
    wrapper.template = t
    return wrapper


def lookup(name_or_func):
    if callable(name_or_func) and hasattr(name_or_func, "template"):
        return name_or_func.template
    t = _templates.get(name_or_func)
    if t is None:
        raise KilnError("no template '%s' is registered (decorate it with @autotvm.template)" % (name_or_func,))
    return t
