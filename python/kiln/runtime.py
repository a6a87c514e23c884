"""Compiled modules (TVM's tvm.module / tvm.runtime.Module).

``kiln.build`` returns a Module; ``mod[name]`` / ``mod.get_function(name)``
/ ``mod.entry_func`` are its kernels, called with kiln arrays or NumPy
arrays.  A kernel checks its arguments (count, types, ranks, dtypes,
shapes) and a mismatch raises KilnError.  ``mod.free()`` releases the
module; its functions then refuse to run (KilnError) instead of touching
freed code.

A model's module (``kiln.build(mod, ...)`` of a graph, or
``load_module("model.so")`` of one exported) also carries the graph JSON and
the params: ``lib["default"](kiln.cpu())`` makes a graph executor for it,
as TVM's factory module does (wrap it in
``kiln.graph_executor.GraphModule``), and ``get_graph_json()`` /
``get_params()`` read them.  ``load_param_dict`` / ``save_param_dict`` read
and write TVM's params format.
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


class DeviceModule:
    """The GPU kernels a module carries (TVM's imported CUDA/OpenCL module)."""

    def __init__(self, host, source):
        self._host = host
        self._source = source

    @property
    def type_key(self):
        return "opencl" if "__kernel" in self._source else "cuda"

    def get_source(self, fmt=""):  # pylint: disable=unused-argument
        """The device source: CUDA C or OpenCL C."""
        return self._source

    def __repr__(self):
        return "Module(%s)" % self.type_key


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
        if name == "default" and self.has_graph() and "default" not in self.function_names:
            from . import graph_executor  # pylint: disable=import-outside-toplevel
            return graph_executor.DefaultFactory(self)
        h = ctypes.c_void_p()
        check_call(_LIB.kiln_module_get_function(self.handle, name.encode(), ctypes.byref(h)))
        return ModuleFunction(h.value, self, name)

    __getitem__ = get_function

    def __call__(self, *args):
        """Call the entry function (TVM's Module.__call__): fm(a, b) is
        fm.entry_func(a, b)."""
        return self.entry_func(*args)

    @property
    def entry_func(self):
        """The function the module was built for (else its first one)."""
        names = self.function_names
        if self.entry_name in names:
            return self.get_function(self.entry_name)
        if not names:
            raise KilnError("the module has no functions")
        return self.get_function(names[0])

    def get_blob(self, name):
        """The bytes embedded in the module under name, or None."""
        self._check()
        data, size = ctypes.c_void_p(), ctypes.c_size_t()
        check_call(_LIB.kiln_module_get_blob(self.handle, name.encode(), ctypes.byref(data),
                                             ctypes.byref(size)))
        if not data.value:
            return None
        return ctypes.string_at(data.value, size.value)

    def has_graph(self):
        """Whether this is a model's module (it embeds a graph JSON)."""
        return self.get_blob("graph_json") is not None

    def get_graph_json(self):
        """The graph JSON (TVM's format) of a model's module."""
        b = self.get_blob("graph_json")
        if b is None:
            raise KilnError("the module has no graph: it was not built from a model")
        return b.decode("utf-8")

    def get_params_bytes(self):
        """The parameters embedded in a model's module as a params blob in
        TVM's format (what save_param_dict writes), or None.  Kiln embeds
        them aligned, to be used in place; this is a copy."""
        self._check()
        if self.get_blob("param_index") is None:
            return self.get_blob("params")
        data, size = ctypes.c_void_p(), ctypes.c_size_t()
        check_call(_LIB.kiln_module_save_params(self.handle, ctypes.byref(data), ctypes.byref(size)))
        try:
            return ctypes.string_at(data.value, size.value)
        finally:
            _LIB.kiln_free(data)

    def get_params(self):
        """The parameters embedded in a model's module: name -> kiln.nd array."""
        b = self.get_params_bytes()
        if b is None:
            if self.has_graph():
                return {}
            raise KilnError("the module has no params: it was not built from a model")
        return load_param_dict(b)

    def get_lib(self):
        """The module with the kernels (this module: Kiln keeps one .so)."""
        return self

    def export_library(self, path):
        """Copy the module's shared object to path (kiln.runtime.load_module
        loads it back)."""
        _ffi._get_api("runtime.module_export")(self, str(path))

    @property
    def imported_modules(self):
        """The device modules: for a module built for cuda or opencl, one whose
        get_source() is the kernels' CUDA C or OpenCL C (as in TVM)."""
        self._check()
        src = _ffi._get_api("driver.device_source")(self)
        return [DeviceModule(self, src)] if src else []

    def get_source(self, fmt="c"):
        if fmt in ("cu", "cuda", "cl", "opencl"):
            mods = self.imported_modules
            if not mods:
                raise KilnError("the module has no device code (it was built for the CPU)")
            return mods[0].get_source()
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


def load_param_dict(param_bytes):
    """Read a params blob (TVM's format, as save_param_dict or
    lib.get_params write it): name -> kiln.nd array (copies)."""
    from . import nd  # pylint: disable=import-outside-toplevel
    if isinstance(param_bytes, (bytearray, memoryview)):
        param_bytes = bytes(param_bytes)
    if not isinstance(param_bytes, bytes):
        raise _ffi.KilnTypeError("load_param_dict: expected bytes, got %s" % type(param_bytes).__name__)
    buf = ctypes.create_string_buffer(param_bytes, len(param_bytes))
    n = ctypes.c_int()
    names = ctypes.POINTER(ctypes.c_char_p)()
    arrays = ctypes.POINTER(ctypes.POINTER(_ffi.DLTensor))()
    check_call(_LIB.kiln_params_load(ctypes.cast(buf, ctypes.c_void_p), len(param_bytes),
                                     ctypes.byref(n), ctypes.byref(names), ctypes.byref(arrays)))
    try:
        out = {}
        for i in range(n.value):
            view = nd.NDArray(ctypes.cast(arrays[i], ctypes.c_void_p).value, owned=False)
            out[names[i].decode("utf-8", "replace")] = nd.array(view.numpy().copy())
        return out
    finally:
        _LIB.kiln_params_free(n.value, names, arrays)


def save_param_dict(params):
    """Serialize name -> array (kiln.nd arrays or NumPy arrays) in TVM's
    params format."""
    from . import nd  # pylint: disable=import-outside-toplevel
    items = [(str(k), v if isinstance(v, nd.NDArray) else nd.array(v)) for k, v in params.items()]
    n = len(items)
    names = (ctypes.c_char_p * max(n, 1))(*[k.encode() for k, _ in items])
    arrays = (ctypes.POINTER(_ffi.DLTensor) * max(n, 1))(
        *[ctypes.cast(v.handle, ctypes.POINTER(_ffi.DLTensor)) for _, v in items])
    data, size = ctypes.c_void_p(), ctypes.c_size_t()
    check_call(_LIB.kiln_params_save(n, names, arrays, ctypes.byref(data), ctypes.byref(size)))
    try:
        return ctypes.string_at(data.value, size.value)
    finally:
        _LIB.kiln_free(data)


def set_num_threads(n):
    """Threads kernels may use (0: KILN_NUM_THREADS or all cores)."""
    check_call(_LIB.kiln_set_num_threads(int(n)))


def get_num_threads():
    return _LIB.kiln_get_num_threads()


def _from_return(handle, owned):
    if not owned:
        check_call(_LIB.kiln_module_retain(handle))
    return Module(handle)


_ffi.RETURN_FACTORY[_ffi.MODULE] = _from_return

__all__ = ["Module", "ModuleFunction", "load_module", "load_param_dict", "save_param_dict",
           "set_num_threads", "get_num_threads"]
