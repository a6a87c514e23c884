"""Targets (TVM's tvm.target): Target("llvm"), create, cuda, arm_cpu.

A Target is a row of Kiln's C target table, parsed by the C side
(target.create: the kind, its attributes, keys and vector width), so what
Kiln can build for is decided in one place; this class only wraps it.  A
library older than the table (no target.create registered) checks the
string with driver.check_target instead.  Used as a context
(``with kiln.target.Target("llvm"):``) it is Target.current(), which
@autotvm.template functions dispatch under.  Targets Kiln cannot build for
fail when made, with the C side's message naming the ones it can.
"""
import threading

from . import _ffi
from ._ffi import KilnError

_local = threading.local()


def _stack():
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def _table(name):
    return _ffi.get_global_func(name, allow_missing=True)


class Target:
    """A compilation target, from TVM's target string ("llvm",
    "llvm -mcpu=skylake-avx512", "cpu", "c") and an optional host."""

    def __init__(self, target, host=None):
        if isinstance(target, Target):
            target = str(target)
        if not isinstance(target, str) or not target.strip():
            raise KilnError("Target: expected a target string such as 'llvm', got %r" % (target,))
        create = _table("target.create")
        self._obj = None
        if create is not None:
            self._obj = create(target) if host is None else create(target, str(host))
            self._str = _table("target.Str")(self._obj)
            self.kind = _table("target.Kind")(self._obj)
            self.keys = tuple(k for k in _table("target.Keys")(self._obj).split(",") if k)
        else:
            _ffi._get_api("driver.check_target")(target)
            self._str = " ".join(target.split())
            self.kind = self._str.split()[0]
            self.keys = ("cpu",)
        self.host = Target(host) if host is not None else None

    @property
    def options(self):
        return self._str.split()[1:]

    def attr(self, name):
        """An attribute as written (target.attr("mcpu")), or None."""
        get = _table("target.Attr")
        if get is not None and self._obj is not None:
            return get(self._obj, name)
        for opt in self.options:
            k, _, v = opt.lstrip("-").partition("=")
            if k == name.lstrip("-"):
                return v
        return None

    def __str__(self):
        return self._str

    def __repr__(self):
        return "Target(%r)" % self._str

    def __eq__(self, other):
        return str(self) == str(other)

    def __hash__(self):
        return hash(self._str)

    def __enter__(self):
        _stack().append(self)
        return self

    def __exit__(self, *exc):
        _stack().pop()

    @staticmethod
    def current(allow_none=True):
        st = _stack()
        if st:
            return st[-1]
        if not allow_none:
            raise KilnError("no target is set (use `with kiln.target.Target('llvm'):`)")
        return None


def create(target):
    """TVM's tvm.target.create (Target(target))."""
    return Target(target)


def cuda(model="unknown", options=None):
    """TVM's tvm.target.cuda(): a cuda target where Kiln's target table has
    the row, else the table's error naming the kinds it has."""
    return Target("cuda -model=%s%s" % (model, (" " + " ".join(options)) if options else ""))


def arm_cpu(model="unknown", options=None):
    """TVM's tvm.target.arm_cpu(): not a target Kiln builds for."""
    raise KilnError("target arm_cpu (model %s) is not supported: Kiln generates code for the CPU it runs "
                    "on (target 'llvm' / 'cpu')" % model)


__all__ = ["Target", "create", "cuda", "arm_cpu"]
