"""Arrays shared with NumPy (TVM's tvm.nd).

``nd.array(np_array)`` wraps the NumPy array's memory in a Kiln array
(kiln_array_wrap) without copying, and keeps the NumPy array alive for as
long as Kiln uses the memory (a deleter drops the reference); only a
non-contiguous array is first made contiguous, with one copy.
``nd.empty`` allocates with Kiln.  ``.numpy()`` (and ``.asnumpy()``) returns
a NumPy array over the same memory - no copy either way, so the data
pointer is the same.
"""
import ctypes
import itertools

import numpy as np

from . import _ffi
from ._ffi import _LIB, KilnError, check_call


class Device:
    """A device: kiln.cpu(0), kiln.cuda(0) (also kiln.gpu(0)), kiln.opencl(0)."""

    __slots__ = ("device_type", "device_id")
    _NAMES = {1: "cpu", 2: "cuda", 4: "opencl"}

    def __init__(self, device_type=1, device_id=0):
        self.device_type = int(device_type)
        self.device_id = int(device_id)

    def _kiln_arg(self):
        return _ffi.DLDevice(self.device_type, self.device_id), _ffi.DEVICE

    _kiln_return = _kiln_arg

    def _dl(self):
        return _ffi.DLDevice(self.device_type, self.device_id)

    def __eq__(self, other):
        return isinstance(other, Device) and (self.device_type, self.device_id) == (
            other.device_type, other.device_id)

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __repr__(self):
        return "%s(%d)" % (self._NAMES.get(self.device_type, "device%d" % self.device_type),
                           self.device_id)

    @property
    def exist(self):
        """Whether the device is there (its driver loads and it has this id)."""
        out = ctypes.c_int()
        check_call(_LIB.kiln_device_exists(self._dl(), ctypes.byref(out)))
        return bool(out.value)

    def sync(self):
        """Wait for the device's work to finish."""
        check_call(_LIB.kiln_device_sync(self._dl()))


def cpu(dev_id=0):
    return Device(1, dev_id)


def cuda(dev_id=0):
    """An NVIDIA GPU (DLPack kDLCUDA)."""
    return Device(2, dev_id)


gpu = cuda


def opencl(dev_id=0):
    """An OpenCL device (DLPack kDLOpenCL): POCL's CPU device where there is no GPU."""
    return Device(4, dev_id)


cl = opencl


def device(dev_type, dev_id=0):
    """A device by name: 'cpu' (also 'llvm', 'c', TVM's host targets), 'cuda'
    (also 'gpu'), 'opencl' (also 'cl')."""
    if isinstance(dev_type, int):
        return Device(dev_type, dev_id)
    name = str(dev_type).split()[0] if str(dev_type).strip() else ""
    if name in ("cpu", "llvm", "c"):
        return Device(1, dev_id)
    if name in ("cuda", "gpu", "nvptx"):
        return Device(2, dev_id)
    if name in ("opencl", "cl"):
        return Device(4, dev_id)
    raise KilnError("device '%s' is not supported (supported: cpu, cuda, opencl)" % dev_type)


context = device
_ffi.RETURN_FACTORY[_ffi.DEVICE] = lambda d, owned: Device(d.device_type, d.device_id)

# ---- dtypes ----


def _np_dtype(dtype_str):
    if dtype_str == "bool":
        return np.dtype(np.bool_)
    try:
        return np.dtype(dtype_str)
    except TypeError:
        raise KilnError("data type %s has no NumPy equivalent" % dtype_str) from None


def _dl_dtype(npdtype):
    npdtype = np.dtype(npdtype)
    if npdtype == np.bool_:
        return _ffi.DLDataType(1, 1, 1)
    kinds = {"i": 0, "u": 1, "f": 2}
    if npdtype.kind not in kinds or npdtype.byteorder == ">":
        raise KilnError("NumPy dtype %s cannot be a Kiln array (use ints, uints, floats or bool)"
                        % npdtype)
    return _ffi.DLDataType(kinds[npdtype.kind], npdtype.itemsize * 8, 1)


# NumPy arrays whose memory Kiln arrays use: key -> array, dropped by the
# deleter when the last Kiln handle (and view) of that memory goes.
_KEEP = {}
_KEEP_IDS = itertools.count(1)


def _release(key):
    _KEEP.pop(key, None)


_RELEASE = _ffi.ArrayDeleter(_release)


def _wrap_numpy(a, dev=None):
    """A new DLTensor handle over a's memory (a must be C-contiguous)."""
    dev = dev or cpu(0)
    if dev.device_type != 1:
        raise KilnError("nd.array: NumPy memory lives on the CPU, not on %r" % dev)
    dt = _dl_dtype(a.dtype)
    shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
    key = next(_KEEP_IDS)
    _KEEP[key] = a
    out = ctypes.POINTER(_ffi.DLTensor)()
    rc = _LIB.kiln_array_wrap(ctypes.c_void_p(a.ctypes.data), a.ndim, shape, dt, dev._dl(), _RELEASE,
                              ctypes.c_void_p(key), ctypes.byref(out))
    if rc != 0:
        _KEEP.pop(key, None)
        raise _ffi.get_last_error()
    return ctypes.cast(out, ctypes.c_void_p).value


class _Interface:
    """Exposes a Kiln array's memory to NumPy (its base keeps the array)."""

    def __init__(self, arr, shape, typestr, ptr):
        self.arr = arr
        self.__array_interface__ = {"data": (ptr, False), "shape": shape, "typestr": typestr,
                                    "version": 3}


class NDArray:
    """A Kiln array (a DLTensor).  Owns its handle unless it is a view of
    an argument given to a Python callback."""

    __slots__ = ("handle", "_owned", "_np", "__weakref__")

    def __init__(self, handle, owned=True, base=None):
        self.handle = handle
        self._owned = owned
        self._np = base  # the NumPy array whose memory this is, if any

    def __del__(self):
        if _LIB is not None and getattr(self, "_owned", False) and self.handle:
            _LIB.kiln_array_free(ctypes.cast(self.handle, ctypes.POINTER(_ffi.DLTensor)))
            self.handle = None

    @property
    def _t(self):
        if not self.handle:
            raise KilnError("the array is no longer valid (an argument of a callback, kept after "
                            "the callback returned)")
        return ctypes.cast(self.handle, ctypes.POINTER(_ffi.DLTensor)).contents

    @property
    def _borrowed(self):
        return not self._owned

    def _kiln_arg(self):
        if not self.handle:
            raise KilnError("the array is no longer valid (an argument of a callback, kept after "
                            "the callback returned)")
        return self.handle, _ffi.NDARRAY

    def _kiln_return(self):
        """A new handle viewing the same memory, for a callback's result."""
        t = self._t
        shape = (ctypes.c_int64 * max(t.ndim, 1))(*self.shape)
        out = ctypes.POINTER(_ffi.DLTensor)()
        check_call(_LIB.kiln_array_view(ctypes.cast(self.handle, ctypes.POINTER(_ffi.DLTensor)),
                                        t.ndim, shape, t.dtype, ctypes.byref(out)))
        return ctypes.cast(out, ctypes.c_void_p).value, _ffi.NDARRAY

    @property
    def shape(self):
        t = self._t
        return tuple(t.shape[i] for i in range(t.ndim))

    @property
    def dtype(self):
        return _ffi.dtype_str(self._t.dtype)

    @property
    def device(self):
        d = self._t.device
        return Device(d.device_type, d.device_id)

    ctx = device

    @property
    def ndim(self):
        return self._t.ndim

    @property
    def data_ptr(self):
        t = self._t
        return (t.data or 0) + t.byte_offset

    def numpy(self):
        """A NumPy array over this array's memory (no copy); a string
        array becomes a new NumPy object array of str."""
        if self._np is not None:
            return self._np.view()
        t = self._t
        if self.dtype == "string":
            return _strings_to_numpy(self)
        if t.device.device_type != 1:
            host = empty(self.shape, self.dtype)
            check_call(_LIB.kiln_array_copy(_ptr(self), _ptr(host)))
            return host.numpy()
        if t.strides:
            raise KilnError("numpy(): strided Kiln arrays are not supported")
        npdt = _np_dtype(self.dtype)
        iface = _Interface(self, self.shape, npdt.str, self.data_ptr)
        return np.asarray(iface)

    asnumpy = numpy

    def __array__(self, dtype=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def copyfrom(self, source):
        """Copy source (array-like of the same shape) into this array."""
        src = np.asarray(source.numpy() if isinstance(source, NDArray) else source)
        if self._t.device.device_type != 1:
            src = np.ascontiguousarray(src, dtype=_np_dtype(self.dtype))
            if src.shape != tuple(self.shape):
                raise KilnError("copyfrom: shape %s does not match %s" % (src.shape, tuple(self.shape)))
            host = array(src)
            check_call(_LIB.kiln_array_copy(_ptr(host), _ptr(self)))
            return self
        dst = self.numpy()
        if src.shape != dst.shape:
            raise KilnError("copyfrom: shape %s does not match %s" % (src.shape, dst.shape))
        np.copyto(dst, src, casting="same_kind")
        return self

    def copyto(self, target):
        if isinstance(target, Device):
            return array(self.numpy().copy(), target)
        if isinstance(target, NDArray):
            target.copyfrom(self)
            return target
        raise _ffi.KilnTypeError("copyto: target must be an NDArray or a Device")

    def __str__(self):
        return str(self.numpy())

    def __repr__(self):
        return "<kiln.NDArray shape=%s, %r>\n%r" % (self.shape, self.device, self.numpy())

    def __len__(self):
        return self.shape[0]


def _strings_to_numpy(arr):
    n = int(np.prod(arr.shape, dtype=np.int64))
    ptrs = (ctypes.c_char_p * max(n, 1)).from_address(arr.data_ptr) if n else []
    out = np.empty(n, dtype=object)
    for i in range(n):
        out[i] = (ptrs[i] or b"").decode("utf-8", "replace")
    return out.reshape(arr.shape)


def _strings_array(a):
    """A Kiln string array holding a copy of a's text (NumPy str, bytes or
    object array of str/bytes), as UTF-8."""
    flat = a.ravel()
    items = []
    for x in flat:
        if isinstance(x, bytes):
            items.append(x)
        elif isinstance(x, str):
            items.append(x.encode("utf-8"))
        else:
            raise KilnError("nd.array: a text array holds only str or bytes, got %r" % (x,))
        if b"\0" in items[-1]:
            raise KilnError("nd.array: Kiln's strings end at a NUL character; %r holds one" % (x,))
    vals = (ctypes.c_char_p * max(len(items), 1))(*items)
    shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
    out = ctypes.POINTER(_ffi.DLTensor)()
    check_call(_LIB.kiln_array_from_strings(a.ndim, shape, vals, ctypes.byref(out)))
    return NDArray(ctypes.cast(out, ctypes.c_void_p).value, True)


def array(arr, device=None, dtype=None):  # pylint: disable=redefined-outer-name
    """A Kiln array over arr's memory: no copy for a C-contiguous NumPy
    array of the right dtype, one copy otherwise.  Text (NumPy str, bytes
    or object arrays, or dtype="string") becomes a string array holding a
    copy (docs/strings.md)."""
    if isinstance(arr, NDArray):
        arr = arr.numpy()
    if dtype == "string" or (dtype is None and np.asarray(arr).dtype.kind in "USO"):
        a = np.asarray(arr, dtype=object if dtype == "string" else None)
        if a.dtype.kind == "O" and not all(isinstance(x, (str, bytes)) for x in a.ravel()):
            raise KilnError("nd.array: an object array becomes a Kiln array only when it holds text (str or bytes)")
        if device is not None and getattr(device, "device_type", 1) != 1:
            raise KilnError("nd.array: string arrays live on the CPU only")
        return _strings_array(a)
    a = np.asarray(arr, dtype=dtype)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    if device is not None and not isinstance(device, Device):
        raise _ffi.KilnTypeError("nd.array: device must be a Device such as kiln.cpu(), got %r"
                                 % (device,))
    if device is not None and device.device_type != 1:
        host = NDArray(_wrap_numpy(a), True, a)
        out = empty(a.shape, host.dtype, device)
        check_call(_LIB.kiln_array_copy(_ptr(host), _ptr(out)))
        return out
    return NDArray(_wrap_numpy(a, device), True, a)


def empty(shape, dtype="float32", device=None):  # pylint: disable=redefined-outer-name
    """A new uninitialized Kiln array."""
    shape = tuple(int(x) for x in (shape if isinstance(shape, (list, tuple)) else (shape,)))
    dev = device or cpu(0)
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    out = ctypes.POINTER(_ffi.DLTensor)()
    check_call(_LIB.kiln_array_empty(len(shape), dims, _ffi.parse_dtype(dtype), dev._dl(),
                                     ctypes.byref(out)))
    return NDArray(ctypes.cast(out, ctypes.c_void_p).value, True)


def _ptr(arr):
    return ctypes.cast(arr.handle, ctypes.POINTER(_ffi.DLTensor))


def _from_return(handle, owned):
    # A borrowed array (a callback's argument) is valid only during the call.
    return NDArray(handle, owned)


def _numpy_arg(a):
    """A NumPy array passed straight to a function: a temporary handle."""
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    h = _wrap_numpy(a)
    return h, lambda: _LIB.kiln_array_free(ctypes.cast(h, ctypes.POINTER(_ffi.DLTensor)))


_ffi.RETURN_FACTORY[_ffi.NDARRAY] = _from_return
_ffi.RETURN_FACTORY[_ffi.DLTENSOR] = lambda h, owned: NDArray(h, False)
_ffi.NUMPY_ARG = _numpy_arg

__all__ = ["NDArray", "Device", "array", "empty", "cpu", "cuda", "gpu", "opencl", "cl", "device",
           "context"]
