"""lower and build (TVM's tvm.lower / tvm.build).

    print(kiln.lower(s, [A, B, C], simple_mode=True))   # the loop IR
    mod = kiln.build(s, [A, B, C], target="cpu", name="f")
    mod["f"](a, b, c)
"""
from . import _ffi
from .object import Object, register_object, as_list
from .runtime import Module
from .schedule import Schedule
from .tensor import as_tensor


def _api(name):
    return _ffi._get_api(name)


@register_object("LoweredFunc")
class LoweredFunc(Object):
    """A lowered function; printing it gives its body as TVM prints it."""

    __slots__ = ()

    @property
    def name(self):
        return _api("driver.FuncName")(self)

    @property
    def args(self):
        return list(_api("driver.FuncArgs")(self))

    @property
    def body(self):
        return _api("driver.FuncBody")(self)

    @property
    def notes(self):
        """What a pass could not do, and why (one message a line)."""
        n = _api("driver.FuncNotes")(self)
        return n.split("\n") if n else []


def _tensors(args):
    if args is None:
        raise _ffi.KilnError("the argument tensors are needed (e.g. [A, B, C])")
    return [as_tensor(a) for a in as_list(args)]


def lower(sch, args, name="default_function", binds=None, simple_mode=False, target=None):
    """Lower a schedule to a function over args.  With simple_mode, the
    function's body (a Stmt, as TVM returns); else the LoweredFunc.  Both
    print the same TVM-style text.  With a GPU target ("cuda", "opencl")
    the function is split into host code and kernels, and prints both."""
    if binds:
        raise _ffi.KilnError("lower: binds are not supported")
    if target is not None:
        f = _api("driver.lower_target")(sch, name, int(bool(simple_mode)), _target_str(target),
                                        *_tensors(args))
        return f
    f = _api("driver.lower")(sch, name, int(bool(simple_mode)), *_tensors(args))
    return f.body if simple_mode else f


def _target_str(target):
    return target if isinstance(target, str) else str(target)


def build(inputs, args=None, target="cpu", target_host=None, name="default_function", binds=None,
          params=None, mod_name="default", executor="graph"):
    """Build a schedule (with its argument tensors), a LoweredFunc or a
    list of them into a loaded Module; or a model (an IRModule from
    kiln.frontend.from_onnx, TVM's relay.build: kiln.build(mod, target,
    params=params) at the current PassContext's opt_level) into a model's
    module (executor="aot": a module to export as standalone C).  Targets:
    cpu (also llvm, c), cuda and opencl (kernels for a GPU; target_host
    is the CPU)."""
    from .graph import IRModule, build as graph_build  # pylint: disable=import-outside-toplevel
    inputs = getattr(inputs, "mod", inputs) if type(inputs).__name__ == "MainFunction" else inputs
    if isinstance(inputs, IRModule):
        if args is not None and not isinstance(args, (str, dict)):
            raise _ffi.KilnTypeError("build: a model's second argument is the target, got %s"
                                     % type(args).__name__)
        return graph_build(inputs, args if args is not None else target, target_host, params,
                           mod_name, executor=executor)
    if params:
        raise _ffi.KilnError("build: params are for models (an IRModule), not schedules")
    if getattr(executor, "name", executor) != "graph":
        raise _ffi.KilnError("build: an executor is for models (an IRModule), not schedules")
    if binds:
        raise _ffi.KilnError("build: binds are not supported")
    check = _api("driver.check_target")
    target = str(target) if target is not None else "cpu"  # a string or a kiln.target.Target
    check(target)
    if target_host is not None:
        from .target import Target  # pylint: disable=import-outside-toplevel
        if "cpu" not in Target(str(target_host)).keys:
            raise _ffi.KilnError("target_host '%s' is not a CPU target (llvm, cpu, c)" % target_host)
    if isinstance(inputs, Schedule):
        funcs = [_api("driver.lower_target")(inputs, name, 0, target, *_tensors(args))]
    else:
        funcs = as_list(inputs)
        for f in funcs:
            if not isinstance(f, LoweredFunc):
                raise _ffi.KilnTypeError("build: expected a schedule or lowered functions, got %s"
                                         % type(f).__name__)
    mod = _api("driver.build_funcs")(*funcs)
    return Module(_detach(mod), funcs[0].name if len(funcs) == 1 else None, funcs)


def _detach(mod):
    """Take the handle out of a Module the call returned."""
    h, mod.handle = mod.handle, None
    return h


__all__ = ["lower", "build", "LoweredFunc"]
