"""relay.build_module: build, optimize and create_executor over Kiln's
graph build and graph executor."""
from .. import _ffi, nd
from .._ffi import KilnError
from ..graph import IRModule, build as _build, _changed_params
from ..graph_executor import GraphModule


def build(ir_mod, target=None, target_host=None, params=None, mod_name="default", executor="graph"):
    """relay.build: compile a model at the current PassContext's opt_level;
    executor="aot" gives a module to export as standalone C
    (lib.export_library("model.tar", fmt="c"))."""
    return _build(ir_mod, target, target_host, params, mod_name, executor=executor)


def optimize(mod, target=None, params=None):
    """relay.optimize: (the optimized graph, its params) at the current
    PassContext's opt_level; the params are bound first."""
    if target is not None:
        _ffi._get_api("driver.check_target")(str(target))
    changed = _changed_params(mod, params)
    g = mod.bind_params(changed) if changed else mod
    out = g.optimize()
    return out, out.params


class GraphExecutor:
    """What create_executor("graph", ...) returns: evaluate() builds the
    model (at the PassContext current then) and returns a function of the
    inputs, by position or by name, that runs it and returns the output
    (a list when there are several)."""

    def __init__(self, mod, device, target, params):
        self.mod = mod
        self.device = device
        self.target = target
        self.params = params

    def evaluate(self, expr=None):
        if expr is not None and expr is not self.mod:
            raise KilnError("evaluate: Kiln evaluates the whole module; pass no expression")
        lib = _build(self.mod, self.target, None, self.params)
        gmod = GraphModule(lib["default"](self.device))
        own = self.mod.params
        inputs = list(self.mod.input_info())

        def _graph_wrapper(*args, **kwargs):
            if len(args) > len(inputs):
                raise KilnError("the model has %d inputs (%s), got %d values"
                                % (len(inputs), ", ".join(inputs), len(args)))
            for i, a in enumerate(args):
                gmod.set_input(i, a)
            for k, v in kwargs.items():
                if k in own:
                    if _changed_params(self.mod, {k: v}):
                        raise KilnError("parameter '%s' has new values: give them to "
                                        "create_executor(params=...) or kiln.build" % k)
                    continue
                gmod.set_input(k, v)
            gmod.run()
            outs = [gmod.get_output(i) for i in range(gmod.get_num_outputs())]
            return outs[0] if len(outs) == 1 else outs

        return _graph_wrapper


def create_executor(kind="debug", mod=None, device=None, target="llvm", params=None):
    """relay.create_executor: only the "graph" kind (Kiln has no Relay
    interpreter or VM)."""
    if kind != "graph":
        raise KilnError("create_executor: Kiln has the 'graph' executor only, not '%s'" % kind)
    if type(mod).__name__ == "MainFunction":
        mod = mod.mod
    if not isinstance(mod, IRModule):
        raise _ffi.KilnTypeError("create_executor: expected an IRModule, got %s" % type(mod).__name__)
    from ..graph_executor import _check_device  # pylint: disable=import-outside-toplevel
    dev = _check_device(device if device is not None else nd.cpu())
    return GraphExecutor(mod, dev, target, params)
