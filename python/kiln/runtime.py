"""Compiled modules (TVM's tvm.module / tvm.runtime.Module).

``kiln.build`` returns a Module; ``mod[name]`` / ``mod.get_function(name)``
/ ``mod.entry_func`` are its kernels, called with kiln arrays or NumPy
arrays.  A kernel checks its arguments (count, types, ranks, dtypes,
shapes) and a mismatch raises KilnError.  ``mod.free()`` releases the
module; its functions then refuse to run (KilnError) instead of touching
freed code.
"""
import ctypes

from . import _ffi
from ._ffi import _LIB, KilnError, check_call


class ModuleFunction(_ffi.Function):
    """A kernel of a module: refuses to run once the module was freed."""

    def __init__(self, handle, module, name):
        super().__init__(handle, name)
        self.module = module

    def __call__(self, *args):
        if self.module.handle is None:
            raise KilnError("function '%s' called after its module was freed" % self.__name__)
        return _ffi.call_packed(self.handle, args)

    def __repr__(self):
        return "<kiln.ModuleFunction %s>" % self.__name__


class Module:
    """A loaded Kiln module (a shared object of kernels)."""

    def __init__(self, handle, entry_name=None, funcs=None):
        self.handle = handle
        self.entry_name = entry_name
        self._funcs = list(funcs or [])  # the lowered functions it was built from

    def _check(self):
        if self.handle is None:
            raise KilnError("the module was freed")

    def _kiln_arg(self):
        self._check()
        return self.handle, _ffi.MODULE

    def _kiln_return(self):
        self._check()
        check_call(_LIB.kiln_module_retain(self.handle))
        return self.handle, _ffi.MODULE

    @property
    def function_names(self):
        self._check()
        n = ctypes.c_int()
        names = ctypes.POINTER(ctypes.c_char_p)()
        check_call(_LIB.kiln_module_list_functions(self.handle, ctypes.byref(n), ctypes.byref(names)))
        return [names[i].decode() for i in range(n.value)]

    @property
    def path(self):
        self._check()
        p = _LIB.kiln_module_path(self.handle)
        return p.decode() if p else None

    def get_function(self, name):
        self._check()
        if not isinstance(name, str):
            raise _ffi.KilnTypeError("function names are str, got %s" % type(name).__name__)
        h = ctypes.c_void_p()
        check_call(_LIB.kiln_module_get_function(self.handle, name.encode(), ctypes.byref(h)))
        return ModuleFunction(h.value, self, name)

    __getitem__ = get_function

    @property
    def entry_func(self):
        """The function the module was built for (else its first one)."""
        names = self.function_names
        if self.entry_name in names:
            return self.get_function(self.entry_name)
        if not names:
            raise KilnError("the module has no functions")
        return self.get_function(names[0])

    def export_library(self, path):
        """Copy the module's shared object to path (kiln.runtime.load_module
        loads it back)."""
        _ffi._get_api("runtime.module_export")(self, str(path))

    def get_source(self, fmt="c"):
        if not self._funcs:
            raise KilnError("the module's source is known only for modules made by kiln.build")
        return _ffi._get_api("driver.codegen_c")(*self._funcs)

    def free(self):
        """Release the module now (its functions can no longer be called)."""
        if self.handle is not None and _LIB is not None:
            _LIB.kiln_module_free(self.handle)
        self.handle = None

    def __del__(self):
        self.free()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def __repr__(self):
        if self.handle is None:
            return "<kiln.Module (freed)>"
        return "<kiln.Module %s: %s>" % (self.path, ", ".join(self.function_names))


def load_module(path):
    """Load a module exported with export_library."""
    return _ffi._get_api("runtime.module_load")(str(path))


def _from_return(handle, owned):
    if not owned:
        check_call(_LIB.kiln_module_retain(handle))
    return Module(handle)


_ffi.RETURN_FACTORY[_ffi.MODULE] = _from_return

__all__ = ["Module", "ModuleFunction", "load_module"]
