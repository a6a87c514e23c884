"""Targets (TVM's tvm.target): Target("llvm"), create, cuda, arm_cpu.

A Target holds TVM's target string; the C side parses and checks it
(driver.check_target), so what Kiln can build for is decided in one place.
Used as a context (``with kiln.target.Target("llvm"):``) it is
Target.current(), which @autotvm.template functions dispatch under.
Targets Kiln cannot build for fail when made, with the C side's message
naming the ones it can.
"""
import threading

from . import _ffi
from ._ffi import KilnError

_local = threading.local()


def _stack():
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


class Target:
    """A compilation target, from TVM's target string ("llvm",
    "llvm -mcpu=skylake-avx512", "cpu", "c")."""

    def __init__(self, target, host=None):
        if isinstance(target, Target):
            target = str(target)
        if not isinstance(target, str) or not target.strip():
            raise KilnError("Target: expected a target string such as 'llvm', got %r" % (target,))
        _ffi._get_api("driver.check_target")(target)  # the C side refuses what Kiln cannot build
        self._str = " ".join(target.split())
        self.kind = self._str.split()[0]
        self.host = Target(host) if host is not None else None
        self.keys = ("cpu",)

    @property
    def options(self):
        return self._str.split()[1:]

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
    """TVM's tvm.target.cuda(): Kiln checks whether it can build for it."""
    return Target("cuda -model=%s%s" % (model, (" " + " ".join(options)) if options else ""))


def arm_cpu(model="unknown", options=None):
    """TVM's tvm.target.arm_cpu(): not a target Kiln builds for."""
    raise KilnError("target arm_cpu (model %s) is not supported: Kiln generates code for the CPU it runs "
                    "on (target 'llvm' / 'cpu')" % model)


__all__ = ["Target", "create", "cuda", "arm_cpu"]
