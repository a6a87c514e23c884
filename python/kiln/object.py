"""Compiler objects as Python objects.

A compiler object (expression, statement, iteration variable, tensor,
stage, schedule, lowered function, reducer, array) is a KILN_OBJECT handle.
``wrap`` picks the Python class from the object's type key (api.TypeKey:
"Expr.Add", "Tensor", ...), as TVM's _return_node does with its type index.
Objects live in Kiln's process-default arena and are never freed, so the
wrappers own nothing.
"""
from . import _ffi
from ._ffi import KilnError

# type key ("Expr.Var") or kind ("Tensor") -> class
_CLASSES = {}


def register_object(*keys):
    """Class decorator: wrap objects of these type keys / kinds as cls."""

    def deco(cls):
        for k in keys:
            _CLASSES[k] = cls
        return cls

    return deco


class Object:
    """Base of every compiler object."""

    __slots__ = ("handle", "__weakref__")

    def __init__(self, handle):
        self.handle = handle

    def _kiln_arg(self):
        return self.handle, _ffi.OBJECT

    @property
    def type_key(self):
        return _ffi._get_api("api.TypeKey")(self)

    def same_as(self, other):
        return isinstance(other, Object) and self.handle == other.handle

    def __eq__(self, other):
        return self.same_as(other)

    def __ne__(self, other):
        return not self.same_as(other)

    def __hash__(self):
        return hash(self.handle)

    def __repr__(self):
        return _ffi._get_api("ir.AsText")(self)

    __str__ = __repr__


@register_object("Array")
class Array(Object):
    """An array of objects returned by Kiln (split's axes, a shape...)."""

    __slots__ = ()

    def __len__(self):
        return _ffi._get_api("api.ArraySize")(self)

    def __getitem__(self, i):
        n = len(self)
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(n))]
        if not isinstance(i, int):
            raise _ffi.KilnTypeError("array indices must be integers, not %s" % type(i).__name__)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("array index %d out of range (size %d)" % (i, n))
        return _ffi._get_api("api.ArrayGetItem")(self, i)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __eq__(self, other):
        if isinstance(other, (list, tuple, Array)):
            return len(self) == len(other) and all(
                (a is None and b is None) or (a is not None and a.same_as(b))
                for a, b in zip(self, other))
        return False

    __hash__ = Object.__hash__


def wrap(handle, owned=True):
    """The Python object for a KILN_OBJECT handle."""
    if not handle:
        return None
    o = Object(handle)
    key = _ffi._get_api("api.TypeKey")(o)
    cls = _CLASSES.get(key) or _CLASSES.get(key.split(".", 1)[0], Object)
    obj = cls.__new__(cls)
    obj.handle = handle
    return obj


_ffi.RETURN_FACTORY[_ffi.OBJECT] = wrap


def as_list(x):
    """A list from an Array, list, tuple or a single item."""
    if isinstance(x, (list, tuple, Array)):
        return list(x)
    return [x]


__all__ = ["Object", "Array", "KilnError", "register_object", "wrap"]
