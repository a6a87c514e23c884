"""relay.add, relay.nn.conv2d, ...: one function per row of Kiln's op table
(the C API's relay.ops), made here at import.  Nothing is written per op:
a row's Relay signature ("data, weight, strides=(1, 1), ...") gives the
function's parameters - the tensor arguments first, then the attributes
with their defaults - and "nn.conv2d" lands in the relay.nn namespace.
A row without a signature takes its tensor arguments and any attribute by
keyword.

As Relay's Python API does, a single int given for a 2-D window attribute
(strides, dilation, kernel_size, pool_size) is used for both dimensions,
and a 2-D op's padding of two values (top/bottom, left/right) is written as
Relay's four (top, left, bottom, right).  Every attribute that is not None
is passed, defaults included, so Kiln computes what the signature says.
"""
import ast
import inspect
import json
import sys
import types

from .. import _ffi
from .._ffi import KilnError
from .expr import call_op, Tuple, TupleWrapper, as_expr

# Ops whose Relay result is a tuple of this many fields (Kiln computes field 0).
_TUPLE_RESULTS = {"nn.batch_norm": 3}
_WINDOW_ATTRS = ("strides", "dilation", "kernel_size", "pool_size")


def _literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node) if hasattr(ast, "unparse") else None


def _parse_signature(op):
    """(tensor parameter names, [(attr, default or REQUIRED)])."""
    ntensor = op["max_args"] if op["max_args"] >= 0 else 1
    if not op["params"]:
        names = ["data"] if ntensor == 1 else ["lhs", "rhs"] if ntensor == 2 else \
            ["arg%d" % i for i in range(ntensor)]
        return names, []
    fn = ast.parse("def f(%s): pass" % op["params"]).body[0]
    params = [a.arg for a in fn.args.args]
    defaults = [_literal(d) for d in fn.args.defaults]
    first_default = len(params) - len(defaults)
    tensors = params[:ntensor]
    attrs = []
    for i, name in enumerate(params[ntensor:], ntensor):
        attrs.append((name, defaults[i - first_default] if i >= first_default else inspect.Parameter.empty))
    return tensors, attrs


def _normalize(opname, key, value):
    if "2d" not in opname:
        return value
    if key in _WINDOW_ATTRS and isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if key == "padding":
        if isinstance(value, int):
            return (value,) * 4
        if isinstance(value, (list, tuple)) and len(value) == 2:
            return (value[0], value[1], value[0], value[1])
    return value


def _check_kind(opname, key, default, value):
    """An attribute must have its default's kind: the C side reads a
    wrong kind as absent, which would silently compute with the default."""
    if value is None or default is None or default is inspect.Parameter.empty:
        return
    num = (int, float)
    ok = {bool: lambda v: isinstance(v, (bool, int)),
          int: lambda v: isinstance(v, int),
          float: lambda v: isinstance(v, num) and not isinstance(v, bool),
          str: lambda v: isinstance(v, str),
          tuple: lambda v: isinstance(v, (list, tuple)) or hasattr(v, "tolist") or isinstance(v, int)}
    check = ok.get(type(default))
    if check is not None and not check(value):
        raise TypeError("relay.%s: attribute %s=%r must be %s, like its default %r"
                        % (opname, key, value, type(default).__name__, default))


def _make(op):
    name = op["name"]
    tensors, attrs = _parse_signature(op)
    variadic = op["max_args"] < 0
    min_args = op["min_args"]
    P = inspect.Parameter
    plist = []
    for i, t in enumerate(tensors):
        plist.append(P(t, P.POSITIONAL_OR_KEYWORD, default=P.empty if i < min_args or variadic else None))
    kind = P.POSITIONAL_OR_KEYWORD
    for a, d in attrs:
        # a required attribute after an optional tensor can only be a
        # keyword, and so can everything after it
        if d is P.empty and any(p.default is not P.empty for p in plist):
            kind = P.KEYWORD_ONLY
        plist.append(P(a, kind, default=d))
    free_attrs = op["params"] is None
    if free_attrs:
        plist.append(P("attrs", P.VAR_KEYWORD))
    sig = inspect.Signature(plist)
    nfields = _TUPLE_RESULTS.get(name)

    def f(*args, **kwargs):
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError("relay.%s: %s (signature: %s%s)" % (name, e, name, sig)) from None
        vals = bound.arguments
        if variadic:
            ins = vals[tensors[0]]
            ins = list(ins.fields if isinstance(ins, Tuple) else ins)
        else:
            ins = [vals[t] for t in tensors if vals.get(t) is not None]
        at = {}
        for a, d in attrs:
            if a in vals:
                _check_kind(name, a, d, vals[a])
                at[a] = _normalize(name, a, vals[a])
            else:
                d = sig.parameters[a].default
                if d is not None:
                    at[a] = _normalize(name, a, d)
        if free_attrs:
            at.update({k: _normalize(name, k, v) for k, v in vals.get("attrs", {}).items()})
        out = call_op(name, at, [as_expr(x) for x in ins])
        return TupleWrapper(out, nfields, name) if nfields else out

    short = name.rsplit(".", 1)[-1]
    f.__name__ = short
    f.__qualname__ = short
    f.__signature__ = sig
    f.__doc__ = "Relay's %s (a row of Kiln's op table; pattern %d)." % (name, op["pattern"])
    return f


def ops():
    """The op table's rows, as the C API describes them."""
    return json.loads(_ffi._get_api("relay.ops")())


def install(package):
    """Add one function per op to the relay package and its namespaces
    (relay.nn, relay.image, ...)."""
    made = []
    for op in ops():
        parts = op["name"].split(".")
        target = package
        for ns in parts[:-1]:
            sub = getattr(target, ns, None)
            if sub is None:
                sub = types.ModuleType("%s.%s" % (target.__name__, ns))
                sub.__doc__ = "relay.%s: the op table's %s.* rows." % (ns, ns)
                setattr(target, ns, sub)
                sys.modules[sub.__name__] = sub
            target = sub
        if hasattr(target, parts[-1]) and not getattr(getattr(target, parts[-1]), "_kiln_op", False):
            raise KilnError("relay: op %s would hide relay.%s" % (op["name"], op["name"]))
        fn = _make(op)
        fn._kiln_op = True
        setattr(target, parts[-1], fn)
        made.append(op["name"])
    return made
