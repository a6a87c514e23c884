"""Schedules and stages (TVM's tvm.schedule API).

``s = te.create_schedule(C.op)``; ``s[C]`` is C's stage, whose methods are
the scheduling primitives.  Each calls a schedule.* packed function, which
checks its arguments and the schedule's rules and raises KilnError with
the reason (a split of an axis that is no longer a leaf, a fuse of axes
that are not adjacent, ...).
"""
from . import _ffi
from .object import Object, register_object, as_list
from .tensor import Operation, as_tensor


def _api(name):
    return _ffi._get_api(name)


def create_schedule(ops):
    """A schedule for one output op (or tensor) or a list of them."""
    return _api("schedule.create_schedule")(*[as_tensor(o) for o in as_list(ops)])


@register_object("Schedule")
class Schedule(Object):
    __slots__ = ()

    def __getitem__(self, k):
        return _api("schedule.Stage")(self, as_tensor(k))

    @property
    def stages(self):
        return list(_api("schedule.ScheduleStages")(self))

    @property
    def outputs(self):
        return [t.op for t in _api("schedule.ScheduleOutputs")(self)]

    def cache_read(self, tensor, scope, readers):
        """Read tensor through a new stage in scope, for the readers."""
        return _api("schedule.cache_read")(self, as_tensor(tensor), scope,
                                           *[as_tensor(r) for r in as_list(readers)])

    def cache_write(self, tensor, scope):
        """Compute tensor into a new stage in scope, then copy it out."""
        return _api("schedule.cache_write")(self, as_tensor(tensor), scope)

    def check(self):
        """Raise KilnError if the schedule cannot be lowered."""
        _api("schedule.check")(self)


@register_object("Stage")
class Stage(Object):
    __slots__ = ()

    @property
    def op(self):
        return Operation(_api("schedule.StageOp")(self))

    @property
    def origin_op(self):
        return Operation(_api("schedule.StageOrigin")(self))

    @property
    def leaf_iter_vars(self):
        return list(_api("schedule.StageLeafIters")(self))

    @property
    def all_iter_vars(self):
        return list(_api("schedule.StageAllIters")(self))

    @property
    def attach_type(self):
        """'root', 'inline' or 'scope' (compute_at)."""
        return _api("schedule.StageAttach")(self)

    @property
    def scope(self):
        return _api("schedule.StageScope")(self)

    def split(self, parent, factor=None, nparts=None):
        """Split parent into (outer, inner) by factor (the inner extent) or
        nparts (the outer extent)."""
        if (factor is None) == (nparts is None):
            raise _ffi.KilnError("split: give exactly one of factor and nparts")
        if factor is not None:
            return tuple(_api("schedule.split")(self, parent, factor))
        return tuple(_api("schedule.split_nparts")(self, parent, nparts))

    def tile(self, x_parent, y_parent, x_factor, y_factor):
        """Tile two axes: returns (x_outer, y_outer, x_inner, y_inner)."""
        return tuple(_api("schedule.tile")(self, x_parent, y_parent, x_factor, y_factor))

    def fuse(self, *args):
        """Fuse adjacent axes, outermost first, into one."""
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        return _api("schedule.fuse")(self, *args)

    def reorder(self, *args):
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        _api("schedule.reorder")(self, *args)

    def vectorize(self, var):
        _api("schedule.vectorize")(self, var)

    def unroll(self, var):
        _api("schedule.unroll")(self, var)

    def parallel(self, var):
        _api("schedule.parallel")(self, var)

    def bind(self, ivar, thread_ivar):
        """Bind ivar to a thread axis (te.thread_axis) or a tag string."""
        _api("schedule.bind")(self, ivar, thread_ivar)

    def pragma(self, var, pragma_type, pragma_value=None):
        _api("schedule.pragma")(self, var, pragma_type, pragma_value)

    def prefetch(self, tensor, var, offset, locality=3):
        """At the start of each iteration of loop var, touch the cache lines
        of what iteration var + offset reads of tensor (TVM's prefetch;
        locality 0-3 as __builtin_prefetch's)."""
        _api("schedule.prefetch")(self, tensor, var, offset, locality)

    def prefetch_spread(self, var, along, parts):
        """Share loop var's prefetches among parts iterations of the
        enclosing loop along: iteration i touches only where
        i % parts == along % parts (Kiln's; TVM has no counterpart)."""
        _api("schedule.prefetch_spread")(self, var, along, parts)

    def compute_at(self, parent, scope):
        _api("schedule.compute_at")(self, parent, scope)

    def compute_inline(self):
        _api("schedule.compute_inline")(self)

    def compute_root(self):
        _api("schedule.compute_root")(self)

    def set_scope(self, scope):
        """Keep this stage's buffer in "global", "shared" or "local" memory."""
        _api("schedule.set_scope")(self, scope)


__all__ = ["Schedule", "Stage", "create_schedule"]
