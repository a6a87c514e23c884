"""Models as graphs (TVM's IRModule of a Relay function) and their build.

``kiln.frontend.from_onnx`` returns an IRModule: a handle to Kiln's graph
(C: graph.*), which owns its memory and is freed with the Python object.
``print(mod)`` gives its Relay-style text; ``mod.optimize(level)`` runs the
pass pipeline, ``mod.fused_text()`` shows the fused functions with TVM's
names.  ``build(mod, target, params)`` (what ``kiln.build`` calls for a
model) compiles it into one module with the kernels, the graph JSON and
the params.
"""
from . import _ffi
from ._ffi import KilnError, KilnTypeError
from .object import Object, register_object


def _api(name):
    return _ffi._get_api(name)


@register_object("Graph")
class IRModule(Object):
    """A model's graph.  Functions never change it; optimize and
    bind_params return new ones."""

    __slots__ = ()

    def __del__(self):
        if getattr(self, "handle", None):
            try:
                if _ffi is not None and _ffi._LIB is not None:
                    _api("graph.free")(self)
            except Exception:  # pylint: disable=broad-except
                pass  # interpreter shutdown: the process frees everything
            self.handle = None

    def _kiln_arg(self):
        if not self.handle:
            raise KilnError("the graph was freed")
        return self.handle, _ffi.OBJECT

    def astext(self, show_meta_data=False):  # pylint: disable=unused-argument
        """The module as Relay's text prints one: def @main(%data:
        Tensor[(1, 3, 224, 224), float32], ...) -> ... {...}."""
        text = self.astext_fn()
        return "def @main" + text[len("fn "):] if text.startswith("fn (") else text

    def astext_fn(self):
        """The main function's text: fn (%data: Tensor[...], ...) -> ... {...}."""
        return _api("graph.as_text")(self)

    def __str__(self):
        return self.astext()

    @staticmethod
    def from_expr(expr, functions=None, type_defs=None):
        """A module whose main function is expr (a relay.Function; another
        expression gets its free variables as parameters), TVM's
        IRModule.from_expr."""
        # pylint: disable=unused-argument
        from .relay.expr import Function, Expr, Tuple, free_vars  # pylint: disable=import-outside-toplevel
        if isinstance(expr, (Expr, Tuple)):
            expr = Function(free_vars(expr), expr)
        if not isinstance(expr, Function):
            raise KilnTypeError("IRModule.from_expr: expected a relay.Function or expression, got %s"
                                % type(expr).__name__)
        return expr._graph()

    def __repr__(self):
        names = ", ".join("%s: %s" % (k, v) for k, v in self.input_info().items())
        return "<kiln.IRModule (%s) -> %d output%s>" % (names, self.num_outputs,
                                                         "" if self.num_outputs == 1 else "s")

    def __getitem__(self, name):
        """mod["main"]: the module's one function (prints as fn (...))."""
        if name != "main":
            raise KilnError("the module has one function, 'main', not %r" % (name,))
        return MainFunction(self)

    def optimize(self, opt_level=None):
        """The graph after the pass pipeline at opt_level (default: the
        current PassContext's)."""
        if opt_level is None:
            from .transform import PassContext  # pylint: disable=import-outside-toplevel
            opt_level = PassContext.current().opt_level
        from .transform import current_precision  # pylint: disable=import-outside-toplevel
        precision = current_precision()
        extra = (precision,) if precision else ()
        return _api("graph.optimize")(self, int(opt_level), *extra)

    def fused_text(self, opt_level=None):
        """The graph fused at opt_level (default: the current PassContext's)
        with each group shown as a primitive function named as TVM names
        it; optimizes a copy first unless this graph came from optimize()."""
        if opt_level is None:
            from .transform import PassContext  # pylint: disable=import-outside-toplevel
            opt_level = PassContext.current().opt_level
        g = self.optimize(opt_level) if self.opt_level is None else self
        return _api("graph.fused_text")(g, int(opt_level))

    @property
    def opt_level(self):
        """The level optimize() ran at to make this graph, or None."""
        lvl = _api("graph.opt_level")(self)
        return None if lvl < 0 else lvl

    def bind_params(self, params):
        """A copy whose parameters of the names in params (name -> array)
        hold copies of those values."""
        from . import nd  # pylint: disable=import-outside-toplevel
        args = []
        for k, v in params.items():
            args += [str(k), v if isinstance(v, nd.NDArray) else nd.array(v)]
        return _api("graph.bind_params")(self, *args) if args else self

    @property
    def num_inputs(self):
        return _api("graph.num_inputs")(self)

    @property
    def num_outputs(self):
        return _api("graph.num_outputs")(self)

    def input_info(self):
        """name -> (shape, dtype) of each input, in order."""
        n = self.num_inputs
        return {_api("graph.input_name")(self, i): (
            tuple(int(x) for x in _api("graph.input_shape")(self, i).numpy()),
            _api("graph.input_dtype")(self, i)) for i in range(n)}

    def output_info(self):
        """[(shape, dtype)] of each output."""
        return [(tuple(int(x) for x in _api("graph.output_shape")(self, i).numpy()),
                 _api("graph.output_dtype")(self, i)) for i in range(self.num_outputs)]

    @property
    def params(self):
        """The model's weights this graph uses: name -> kiln.nd array sharing
        the graph's memory (TVM's params).  Empty after optimize()."""
        n = _api("graph.num_params")(self)
        return {_api("graph.param_name")(self, i): _api("graph.param")(self, i) for i in range(n)}


class MainFunction:
    """mod["main"]: the module's function.  Prints as Relay prints a
    function (fn (...) {...}); everything else is the module's."""

    def __init__(self, mod):
        self.mod = mod

    def astext(self, show_meta_data=False):  # pylint: disable=unused-argument
        return self.mod.astext_fn()

    def __str__(self):
        return self.astext()

    def __getattr__(self, name):
        return getattr(self.mod, name)


def _changed_params(mod, params):
    """The entries of params that are not mod's own arrays (by memory)."""
    if not params:
        return {}
    from . import nd  # pylint: disable=import-outside-toplevel
    if not isinstance(params, dict):
        raise KilnTypeError("params must be a dict of name -> array, got %s" % type(params).__name__)
    own = {k: v.data_ptr for k, v in mod.params.items()}
    out = {}
    for k, v in params.items():
        if isinstance(v, nd.NDArray):
            ptr = v.data_ptr
        elif type(v).__name__ == "ndarray":
            ptr = v.ctypes.data
        else:
            ptr = None
        if own.get(k) is not None and own.get(k) == ptr:
            continue  # the array from_onnx returned: the graph holds it already
        out[k] = v
    return out


def build(mod, target=None, target_host=None, params=None, mod_name="default", opt_level=None, executor="graph"):
    """Compile a model's graph (TVM's relay.build) into a loaded module with
    the kernels, the graph JSON and the params; opt_level defaults to the
    current PassContext's.  params (name -> array) give the model's weights
    new values; the arrays from_onnx returned are the graph's own and cost
    nothing.  executor="aot" (or an object named "aot", as TVM's
    Executor("aot")) returns an AotExecutorFactoryModule instead, whose
    export_library(path, fmt="c") writes the model as standalone C."""
    executor = getattr(executor, "name", executor)
    if executor not in ("graph", "aot"):
        raise KilnError("build: executor must be 'graph' or 'aot', got %r" % (executor,))
    if isinstance(mod, MainFunction):
        mod = mod.mod
    if not isinstance(mod, IRModule):
        raise KilnTypeError("build: expected an IRModule (from kiln.frontend.from_onnx), got %s"
                            % type(mod).__name__)
    if mod_name != "default":
        raise KilnError("build: mod_name must be 'default' (Kiln modules hold one model)")
    if isinstance(target, dict):
        if len(target) != 1:
            raise KilnError("build: one target only (the CPU), got %r" % (target,))
        target = list(target.values())[0]
    target = "cpu" if target is None else str(target)
    if target_host is not None:
        _api("driver.check_target")(str(target_host))
    if opt_level is None:
        from .transform import PassContext  # pylint: disable=import-outside-toplevel
        opt_level = PassContext.current().opt_level
    changed = _changed_params(mod, params)
    g = mod.bind_params(changed) if changed else mod
    from .transform import current_precision  # pylint: disable=import-outside-toplevel
    precision = current_precision()
    if executor == "aot":
        if precision not in (None, "fp32"):
            raise KilnError("build: config kiln.precision=%r builds a graph-executor module; "
                            "executor='aot' (standalone C) is fp32 only" % precision)
        from .aot import AotExecutorFactoryModule  # pylint: disable=import-outside-toplevel
        return AotExecutorFactoryModule(g, opt_level)
    from .graph_executor import GraphExecutorFactoryModule  # pylint: disable=import-outside-toplevel
    extra = (precision,) if precision else ()
    lib = _api("graph.build")(g, int(opt_level), target, *extra)
    handle, lib.handle = lib.handle, None
    return GraphExecutorFactoryModule(handle)


__all__ = ["IRModule", "build"]
