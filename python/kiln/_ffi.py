"""The ctypes bridge to libkiln: library loading, the packed calling
convention, the global function registry, and Python callbacks.

This is TVM's python/tvm/_ffi in one file (see the seed note on TVM's
function bridge).  Every compiler entry point is a packed function in the
runtime's global registry; ``init_api`` lists the registry's names and binds
each ``prefix.Name`` as attribute ``Name`` of the module ``kiln.capi.prefix``
(``kiln.capi.ir.BinaryOp``, ``kiln.capi.schedule.split`` ...).  The thin
classes in the rest of the package call those.

Values cross as (KilnValue, type code) pairs.  Python values are converted
by ``_set_arg``; results by ``_return_value``.  Compiler objects are wrapped
by the factory ``object.py`` installs, modules and arrays by the ones
``runtime.py`` and ``nd.py`` install (``RETURN_FACTORY``), so this file
imports nothing of the package.

Every C failure raises ``KilnError`` with the C message.  Python values
that cannot be passed at all raise ``KilnTypeError`` (a KilnError and a
TypeError).  IR objects live in the process-default arena and are never
freed: IR built from Python lives until the process exits.
"""
import ctypes
import itertools
import numbers
import os
import sys
import threading
import traceback
import types


class KilnError(RuntimeError):
    """An error reported by Kiln (the C message), or a misuse of the API."""


class KilnTypeError(KilnError, TypeError):
    """A Python value of a type that cannot go where it was passed."""


# ---- type codes (kiln/runtime.h) ----

INT, UINT, FLOAT, HANDLE, NULL, DTYPE, DEVICE, DLTENSOR = 0, 1, 2, 3, 4, 5, 6, 7
OBJECT, MODULE, FUNC, STR, BYTES, NDARRAY = 8, 9, 10, 11, 12, 13


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class KilnValue(ctypes.Union):
    _fields_ = [
        ("v_int64", ctypes.c_int64),
        ("v_float64", ctypes.c_double),
        ("v_handle", ctypes.c_void_p),
        ("v_str", ctypes.c_char_p),
        ("v_type", DLDataType),
        ("v_device", DLDevice),
    ]


class KilnBytes(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("size", ctypes.c_size_t)]


PackedCFunc = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.POINTER(KilnValue),
    ctypes.POINTER(ctypes.c_int),
    ctypes.c_int,
    ctypes.POINTER(KilnValue),
    ctypes.POINTER(ctypes.c_int),
    ctypes.c_void_p,
)
ResourceFinalizer = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

# ---- loading the library ----


def _candidates():
    env = os.environ.get("KILN_LIBRARY_PATH")
    if env:
        for p in env.split(os.pathsep):
            if p:
                yield os.path.join(p, "libkiln.so") if os.path.isdir(p) else p
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.normpath(os.path.join(here, "..", "..", "build", "libkiln.so"))
    yield "libkiln.so"  # the system's search path


def _load_lib():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (no such file)" % path)
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise KilnError("cannot find libkiln.so; set KILN_LIBRARY_PATH to the build folder "
                    "(tried: %s)" % "; ".join(tried))


_LIB, LIB_PATH = _load_lib()


def _proto(name, restype, *argtypes):
    f = getattr(_LIB, name)
    f.restype = restype
    f.argtypes = list(argtypes)


_vp, _int, _i64p = ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int64)
_DLTensorP = ctypes.POINTER(DLTensor)
ArrayDeleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

_proto("kiln_init", _int)
_proto("kiln_last_error", ctypes.c_char_p)
_proto("kiln_set_last_error", None, ctypes.c_char_p)
_proto("kiln_version", ctypes.c_char_p)
_proto("kiln_func_create", _int, PackedCFunc, _vp, ResourceFinalizer, ctypes.POINTER(_vp))
_proto("kiln_func_call", _int, _vp, ctypes.POINTER(KilnValue), ctypes.POINTER(_int), _int,
       ctypes.POINTER(KilnValue), ctypes.POINTER(_int))
_proto("kiln_func_free", _int, _vp)
_proto("kiln_func_retain", _int, _vp)
_proto("kiln_func_register_global", _int, ctypes.c_char_p, _vp, _int)
_proto("kiln_func_get_global", _int, ctypes.c_char_p, ctypes.POINTER(_vp))
_proto("kiln_func_list_global_names", _int, ctypes.POINTER(_int),
       ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p)))
_proto("kiln_module_load", _int, ctypes.c_char_p, ctypes.POINTER(_vp))
_proto("kiln_module_get_function", _int, _vp, ctypes.c_char_p, ctypes.POINTER(_vp))
_proto("kiln_module_list_functions", _int, _vp, ctypes.POINTER(_int),
       ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p)))
_proto("kiln_module_path", ctypes.c_char_p, _vp)
_proto("kiln_module_get_blob", _int, _vp, ctypes.c_char_p, ctypes.POINTER(_vp),
       ctypes.POINTER(ctypes.c_size_t))
_proto("kiln_module_free", _int, _vp)
_proto("kiln_module_save_params", _int, _vp, ctypes.POINTER(_vp), ctypes.POINTER(ctypes.c_size_t))
_proto("kiln_module_retain", _int, _vp)
_proto("kiln_array_empty", _int, _int, _i64p, DLDataType, DLDevice, ctypes.POINTER(_DLTensorP))
_proto("kiln_array_wrap", _int, _vp, _int, _i64p, DLDataType, DLDevice, ArrayDeleter, _vp,
       ctypes.POINTER(_DLTensorP))
_proto("kiln_array_view", _int, _DLTensorP, _int, _i64p, DLDataType, ctypes.POINTER(_DLTensorP))
_proto("kiln_array_copy", _int, _DLTensorP, _DLTensorP)
_proto("kiln_array_free", _int, _DLTensorP)
_proto("kiln_array_from_strings", _int, _int, _i64p, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(_DLTensorP))
_proto("kiln_device_exists", _int, DLDevice, ctypes.POINTER(ctypes.c_int))
_proto("kiln_device_sync", _int, DLDevice)
_proto("kiln_array_nbytes", ctypes.c_size_t, _DLTensorP)
_proto("kiln_params_save", _int, _int, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(_DLTensorP),
       ctypes.POINTER(_vp), ctypes.POINTER(ctypes.c_size_t))
_proto("kiln_params_load", _int, _vp, ctypes.c_size_t, ctypes.POINTER(_int),
       ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p)), ctypes.POINTER(ctypes.POINTER(_DLTensorP)))
_proto("kiln_params_free", _int, _int, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(_DLTensorP))
_proto("kiln_free", _int, _vp)
_proto("kiln_set_num_threads", _int, _int)
_proto("kiln_get_num_threads", _int)


def get_last_error():
    msg = _LIB.kiln_last_error()
    return KilnError(msg.decode("utf-8", "replace") if msg else "unknown error")


def check_call(rc):
    """Raise the thread's last error if a C call failed."""
    if rc != 0:
        raise get_last_error()


# ---- dtypes ----

_DT_CODES = {"int": 0, "uint": 1, "float": 2, "handle": 3, "bfloat": 4}
STRING_CODE = 200  # KILN_DL_STRING: each element a const char * to UTF-8
_DT_NAMES = {v: k for k, v in _DT_CODES.items()}


def parse_dtype(s):
    """'float32' -> DLDataType (also 'bool', 'int8x4')."""
    if isinstance(s, DLDataType):
        return s
    if not isinstance(s, str):
        s = str(s)  # numpy dtypes
    if s == "bool":
        return DLDataType(1, 1, 1)
    if s == "string":  # Kiln's string tensors (docs/strings.md)
        return DLDataType(STRING_CODE, 64, 1)
    name, lanes = s, 1
    if "x" in s:
        name, l = s.split("x", 1)
        if not l.isdigit():
            raise KilnError("'%s' is not a data type" % s)
        lanes = int(l)
    for prefix in ("uint", "int", "float", "handle", "bfloat"):
        if name.startswith(prefix):
            bits = name[len(prefix):]
            if prefix == "handle" and not bits:
                bits = "64"
            if bits.isdigit():
                return DLDataType(_DT_CODES[prefix], int(bits), lanes)
    raise KilnError("'%s' is not a data type (e.g. float32, int64, bool)" % s)


def dtype_str(t):
    if t.code == 1 and t.bits == 1 and t.lanes == 1:
        return "bool"
    if t.code == STRING_CODE and t.bits == 64 and t.lanes == 1:
        return "string"
    s = "%s%d" % (_DT_NAMES.get(t.code, "code%d_" % t.code), t.bits)
    return s if t.lanes == 1 else "%sx%d" % (s, t.lanes)


# ---- functions ----


class Function:
    """A packed function: a global one, a kernel of a module, or a wrapped
    Python callable.  Calling it converts the arguments, calls
    kiln_func_call and converts the result."""

    def __init__(self, handle, name=None):
        self.handle = handle
        self.__name__ = name or "kiln_function"

    def __del__(self):
        if _LIB is not None and getattr(self, "handle", None):
            _LIB.kiln_func_free(self.handle)
            self.handle = None

    def _kiln_arg(self):
        return self.handle, FUNC

    def __call__(self, *args):
        return call_packed(self.handle, args)

    def __repr__(self):
        return "<kiln.Function %s>" % self.__name__


class _Cleanup:
    """Something to run after a call (freeing a temporary array handle)."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn


# Factories other modules install: type code -> fn(value, owned) -> object.
RETURN_FACTORY = {}
# fn(numpy array) -> (DLTensor pointer, cleanup) for numpy arguments.
NUMPY_ARG = None


def _set_arg(values, codes, i, a, temps):
    if a is None:
        values[i].v_handle = None
        codes[i] = NULL
    elif hasattr(a, "_kiln_arg"):
        v, code = a._kiln_arg()
        if code == DEVICE:
            values[i].v_device = v
        elif code == DTYPE:
            values[i].v_type = v
        else:
            values[i].v_handle = v
        codes[i] = code
    elif isinstance(a, bool):
        values[i].v_int64 = int(a)
        codes[i] = INT
    elif isinstance(a, numbers.Integral):
        a = int(a)
        if not -(1 << 63) <= a < (1 << 63):
            raise KilnTypeError("integer %d does not fit in 64 bits" % a)
        values[i].v_int64 = a
        codes[i] = INT
    elif isinstance(a, numbers.Real):
        values[i].v_float64 = float(a)
        codes[i] = FLOAT
    elif type(a).__name__ == "bool_":  # numpy.bool_ is no numbers.Integral
        values[i].v_int64 = int(bool(a))
        codes[i] = INT
    elif isinstance(a, str):
        b = a.encode("utf-8")
        temps.append(b)
        values[i].v_str = b
        codes[i] = STR
    elif isinstance(a, (bytes, bytearray)):
        buf = ctypes.create_string_buffer(bytes(a), len(a))
        kb = KilnBytes(ctypes.cast(buf, ctypes.c_void_p), len(a))
        temps.extend([buf, kb])
        values[i].v_handle = ctypes.addressof(kb)
        codes[i] = BYTES
    elif type(a).__name__ == "ndarray" and NUMPY_ARG is not None:
        ptr, cleanup = NUMPY_ARG(a)
        temps.append(_Cleanup(cleanup))
        values[i].v_handle = ptr
        codes[i] = NDARRAY
    elif isinstance(a, (list, tuple)):
        arr = _get_api("api.Array")(*a)
        temps.append(arr)
        values[i].v_handle = arr.handle
        codes[i] = OBJECT
    elif callable(a):
        f = convert_to_func(a)
        temps.append(f)
        values[i].v_handle = f.handle
        codes[i] = FUNC
    else:
        raise KilnTypeError("cannot pass a %s (%r) to a Kiln function" % (type(a).__name__, a))


def _return_value(v, code, owned=True):
    """Convert a (value, code) pair to Python.  owned: handle results are
    the caller's (a call's result); otherwise borrowed (a callback's
    argument), and modules/functions take a reference of their own."""
    if code in (INT, UINT):
        return v.v_int64
    if code == FLOAT:
        return v.v_float64
    if code == NULL:
        return None
    if code == STR:
        return v.v_str.decode("utf-8", "replace") if v.v_str is not None else ""
    if code == BYTES:
        kb = ctypes.cast(v.v_handle, ctypes.POINTER(KilnBytes)).contents
        return ctypes.string_at(kb.data, kb.size) if kb.size else b""
    if code == DTYPE:
        return dtype_str(v.v_type)
    if code == HANDLE:
        return v.v_handle
    if code == FUNC:
        if not owned:
            check_call(_LIB.kiln_func_retain(v.v_handle))
        return Function(v.v_handle)
    if code == DEVICE:
        d = v.v_device
        factory = RETURN_FACTORY.get(DEVICE)
        return factory(d, owned) if factory else (d.device_type, d.device_id)
    if code in RETURN_FACTORY:
        return RETURN_FACTORY[code](v.v_handle, owned)
    raise KilnError("a Kiln function returned type code %d, which Python cannot read" % code)


def call_packed(handle, args):
    """Call the KilnFunction at `handle` with Python values."""
    if not handle:
        raise KilnError("calling a freed function")
    n = len(args)
    values = (KilnValue * max(n, 1))()
    codes = (ctypes.c_int * max(n, 1))()
    temps = []
    try:
        for i, a in enumerate(args):
            _set_arg(values, codes, i, a, temps)
        ret = KilnValue()
        ret_code = ctypes.c_int(NULL)
        if _LIB.kiln_func_call(handle, values, codes, n, ctypes.byref(ret), ctypes.byref(ret_code)) != 0:
            raise get_last_error()
        return _return_value(ret, ret_code.value)
    finally:
        for t in temps:
            if isinstance(t, _Cleanup):
                t.fn()


# ---- Python callbacks ----

_CALLBACKS = {}  # resource id -> Python callable
_CALLBACK_IDS = itertools.count(1)
_RETURN_KEEP = threading.local()  # a callback's str/bytes result, per thread


def _set_return(ret, ret_code, r):
    keep = []
    if r is None:
        ret[0].v_handle = None
        ret_code[0] = NULL
        return
    if type(r).__name__ == "ndarray" and NUMPY_ARG is not None:
        from . import nd  # pylint: disable=import-outside-toplevel
        r = nd.array(r)
    if hasattr(r, "_kiln_return"):
        v, code = r._kiln_return()  # a new reference the caller owns
        if code == DEVICE:
            ret[0].v_device = v
        else:
            ret[0].v_handle = v
        ret_code[0] = code
        return
    values = (KilnValue * 1)()
    codes = (ctypes.c_int * 1)()
    _set_arg(values, codes, 0, r, keep)
    if codes[0] == FUNC:  # a callable made into a function: hand over a reference
        check_call(_LIB.kiln_func_retain(values[0].v_handle))
    ret[0] = values[0]
    ret_code[0] = codes[0]
    _RETURN_KEEP.value = keep  # kiln_func_call copies str/bytes right after we return


def _trampoline(args, codes, num_args, ret, ret_code, resource):
    pyargs = []
    try:
        f = _CALLBACKS[resource]
        pyargs = [_return_value(args[i], codes[i], owned=False) for i in range(num_args)]
        _set_return(ret, ret_code, f(*pyargs))
        return 0
    except BaseException as e:  # pylint: disable=broad-except
        name = getattr(_CALLBACKS.get(resource), "__name__", "callback")
        tb = "".join(traceback.format_exception(type(e), e, e.__traceback__)[-3:])
        msg = "Python function '%s' raised %s: %s\n%s" % (name, type(e).__name__, e, tb)
        _LIB.kiln_set_last_error(msg.encode("utf-8", "replace"))
        return -1
    finally:
        # Borrowed arrays are valid only during the call: a wrapper the
        # callback kept refuses to be used later instead of crashing.
        for a in pyargs:
            if getattr(a, "_borrowed", False):
                a.handle = None


def _finalize(resource):
    _CALLBACKS.pop(resource, None)


# Kept alive for the life of the process: every Python function made into
# a KilnFunction shares these two trampolines.
_TRAMPOLINE = PackedCFunc(_trampoline)
_FINALIZER = ResourceFinalizer(_finalize)


def convert_to_func(pyfunc):
    """A new KilnFunction that calls pyfunc (a Function owning it)."""
    if isinstance(pyfunc, Function):
        return pyfunc
    if not callable(pyfunc):
        raise KilnTypeError("%r is not callable" % (pyfunc,))
    key = next(_CALLBACK_IDS)
    _CALLBACKS[key] = pyfunc
    h = ctypes.c_void_p()
    rc = _LIB.kiln_func_create(_TRAMPOLINE, ctypes.c_void_p(key), _FINALIZER, ctypes.byref(h))
    if rc != 0:
        _CALLBACKS.pop(key, None)
        raise get_last_error()
    return Function(h.value, getattr(pyfunc, "__name__", None))


# ---- the registry ----


def register_func(func_name, f=None, override=False):
    """Register a Python function as a global function.

    Usable as ``register_func("my.add", f)`` or as a decorator
    (``@register_func`` or ``@register_func("my.add")``).  C code then finds
    it with kiln_func_get_global and calls it with kiln_func_call."""
    if callable(func_name):
        f, func_name = func_name, func_name.__name__
    if not isinstance(func_name, str):
        raise KilnTypeError("the function name must be a str")

    def register(myf):
        fn = convert_to_func(myf)
        check_call(_LIB.kiln_func_register_global(func_name.encode(), fn.handle, int(override)))
        return myf

    return register(f) if f is not None else register


def get_global_func(name, allow_missing=False):
    h = ctypes.c_void_p()
    check_call(_LIB.kiln_func_get_global(name.encode(), ctypes.byref(h)))
    if h.value:
        return Function(h.value, name)
    if allow_missing:
        return None
    raise KilnError("cannot find global function %s" % name)


def list_global_func_names():
    n = ctypes.c_int()
    names = ctypes.POINTER(ctypes.c_char_p)()
    check_call(_LIB.kiln_func_list_global_names(ctypes.byref(n), ctypes.byref(names)))
    return [names[i].decode() for i in range(n.value)]


_API_CACHE = {}


def _get_api(name):
    f = _API_CACHE.get(name)
    if f is None:
        f = _API_CACHE[name] = get_global_func(name)
    return f


def _package_module(name):
    mod = sys.modules.get(name)
    if mod is None:
        mod = types.ModuleType(name, "Kiln packed functions %s.*" % name.rsplit(".", 1)[-1])
        sys.modules[name] = mod
        parent, _, leaf = name.rpartition(".")
        if parent in sys.modules:
            setattr(sys.modules[parent], leaf, mod)
    return mod


def init_api(root="kiln.capi"):
    """Bind every registered ``prefix.Name`` as ``<root>.prefix.Name``."""
    check_call(_LIB.kiln_init())
    _package_module(root)
    params = _get_api("api.FuncParams")
    for name in list_global_func_names():
        prefix, dot, fname = name.partition(".")
        if not dot or not fname.isidentifier() or not prefix.isidentifier():
            continue
        mod = _package_module("%s.%s" % (root, prefix))
        f = get_global_func(name)
        try:
            sig = params(name)
        except KilnError:
            sig = "..."
        f.__name__ = fname
        f.__doc__ = "Kiln packed function %s(%s)." % (name, sig)
        setattr(mod, fname, f)
    return sys.modules[root]


def version():
    return _LIB.kiln_version().decode()
