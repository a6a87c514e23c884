"""Tensors and operations.

A Kiln tensor is the single output of its operation, so ``T.op`` is a thin
view (Operation) of the same tensor; ``s[T].op`` is the view of the op the
stage computes, whose axes are the ones the stage's primitives take.
"""
from . import _ffi
from .expr import IterVar
from .object import Object, register_object


def _api(name):
    return _ffi._get_api(name)


@register_object("Tensor")
class Tensor(Object):
    """A tensor: placeholder, compute or extern output."""

    __slots__ = ()

    def __getitem__(self, indices):
        if not isinstance(indices, tuple):
            indices = (indices,)
        for x in indices:
            if isinstance(x, slice):
                raise _ffi.KilnTypeError("tensor '%s': slices are not supported in a tensor "
                                         "expression; index with expressions" % self.name)
        return _api("te.read")(self, *indices)

    def __call__(self, *indices):
        return self[tuple(indices)]

    @property
    def name(self):
        return _api("te.TensorName")(self)

    @property
    def dtype(self):
        return _api("te.TensorDType")(self)

    @property
    def ndim(self):
        return _api("te.TensorNDim")(self)

    @property
    def shape(self):
        return tuple(_api("te.TensorShape")(self))

    @property
    def op(self):
        return Operation(self)

    @property
    def value_index(self):
        return 0

    def __len__(self):
        raise _ffi.KilnTypeError("len() of a tensor is not defined; use .shape")

    def __iter__(self):
        raise _ffi.KilnTypeError("a tensor is not iterable; index it with expressions")

    def __repr__(self):
        return _api("ir.AsText")(self)

    def _no_arith(self, *_):
        raise _ffi.KilnTypeError("tensor '%s' cannot be used in arithmetic as a whole; index it "
                                 "inside a compute (%s[i] + ...)" % (self.name, self.name))

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _no_arith
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __neg__ = _no_arith
    __lt__ = __le__ = __gt__ = __ge__ = _no_arith

    def __bool__(self):
        return True


class Operation:
    """The operation that computes a tensor (TVM's Operation)."""

    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor

    @property
    def name(self):
        return self.tensor.name

    @property
    def tag(self):
        return _api("te.TensorTag")(self.tensor)

    @property
    def kind(self):
        """'placeholder', 'compute' or 'extern'."""
        return _api("te.TensorOpKind")(self.tensor)

    @property
    def axis(self):
        return list(_api("te.TensorAxis")(self.tensor))

    @property
    def reduce_axis(self):
        return list(_api("te.TensorReduceAxis")(self.tensor))

    @property
    def body(self):
        b = _api("te.TensorBody")(self.tensor)
        return [] if b is None else [b]

    @property
    def input_tensors(self):
        return list(_api("te.TensorInputs")(self.tensor))

    @property
    def num_outputs(self):
        return 1

    def output(self, index):
        if index != 0:
            raise IndexError("operation '%s' has one output" % self.name)
        return self.tensor

    def __eq__(self, other):
        return isinstance(other, Operation) and self.tensor.same_as(other.tensor)

    def __hash__(self):
        return hash(("op", self.tensor.handle))

    def __repr__(self):
        return "%s(%s)" % (self.kind, self.name)


def as_tensor(x):
    """The tensor of an Operation; anything else as is (the C function it
    goes to checks it and names the argument if it is not a tensor)."""
    return x.tensor if isinstance(x, Operation) else x


__all__ = ["Tensor", "Operation", "IterVar", "as_tensor"]
