"""The registry functions kiln.autotvm wraps, looked up when used."""
from .. import _ffi
from .._ffi import KilnError

FUNCS = ("autotvm.extract_tasks", "autotvm.tune_task", "autotvm.apply_history_best",
         "autotvm.apply_history_best_exit")


def require(name, what):
    """The registry function name, or KilnError naming what is missing."""
    f = _ffi.get_global_func(name, allow_missing=True)
    if f is None:
        raise KilnError("kiln.autotvm.%s is not available yet: the tuning engine does not register "
                        "'%s' yet" % (what, name))
    return f


def available():
    """Whether the tuning engine registers every function kiln.autotvm needs."""
    return all(_ffi.get_global_func(n, allow_missing=True) is not None for n in FUNCS)
