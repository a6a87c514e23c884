"""Running a compiled model (TVM's tvm.contrib.graph_executor).

    lib = kiln.build(mod, target="cpu", params=params)
    m = kiln.graph_executor.GraphModule(lib["default"](kiln.cpu()))
    m.set_input("data", x)          # NumPy array or kiln.nd array, copied in
    m.run()
    y = m.get_output(0).numpy()

The executor is Kiln's C graph executor (runtime.graph_executor.*): memory
planned once, each kernel bound once.  set_input copies the value into the
executor's own buffer, as TVM does (a NumPy array is read in place, not
copied first; one of another dtype is converted as TVM's copyfrom does);
get_output returns a new array that .numpy() views without a copy.  Every
failure - an unknown input name, a wrong shape - raises KilnError with the
C message.

Sequences and optionals (docs/sequences.md): a model compiled with a
sequence input takes a list of arrays for it (``set_input("s", [a, b])``),
an optional input None when compiled empty; get_output returns a list for a
sequence output and None for an empty optional.  In such a model the
inputs and outputs are counted and indexed as the model's values
(get_num_outputs, get_output(i), get_output_names); a model without them
has one value per tensor, so nothing changes there.
"""
import math
import time

import numpy as np

from . import _ffi, nd
from ._ffi import KilnError, KilnTypeError
from .runtime import Module


def _api(name):
    return _ffi._get_api(name)


class _Handle:
    """An opaque C handle passed as KILN_HANDLE."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def _kiln_arg(self):
        if not self.value:
            raise KilnError("the executor was freed")
        return self.value, _ffi.HANDLE


def _lib_device_type(lib):
    """The device type a module's kernels run on (1 cpu, 2 cuda, 4 opencl)."""
    mods = lib.imported_modules if lib is not None else []
    if not mods:
        return 1
    return 2 if mods[0].type_key == "cuda" else 4


def _check_device(dev, lib=None):
    if isinstance(dev, (list, tuple)):
        if len(dev) != 1:
            raise KilnError("Kiln runs a model on one device, got %r" % (dev,))
        dev = dev[0]
    if not isinstance(dev, nd.Device):
        raise KilnTypeError("expected a device such as kiln.cpu(), got %r" % (dev,))
    want = _lib_device_type(lib)
    if dev.device_type != want:
        if want == 1:
            raise KilnError("this model runs on the CPU, not on %r (build it with "
                            "target=\"cuda\" or \"opencl\" for a GPU)" % dev)
        raise KilnError("this model was built for %s; run it on %r, not on %r"
                        % (nd.Device._NAMES[want], nd.Device(want, 0), dev))
    return dev


class ExecutorModule:
    """A graph executor over a model's module (what lib["default"](dev)
    returns; wrap it in GraphModule)."""

    def __init__(self, handle, lib, dev):
        self._h = _Handle(handle)
        self.lib = lib  # keeps the kernels loaded as long as the executor
        self.device = dev

    def free(self):
        if self._h.value and _ffi._LIB is not None:
            _api("runtime.graph_executor.free")(self._h)
        self._h.value = None

    def __del__(self):
        try:
            self.free()
        except Exception:  # pylint: disable=broad-except
            pass

    def __repr__(self):
        return "<kiln.graph_executor.ExecutorModule of %r>" % (self.lib,)


class DefaultFactory:
    """lib["default"]: makes an executor for the module on a device."""

    def __init__(self, lib):
        self.lib = lib

    def __call__(self, dev=None):
        dev = _check_device(dev if dev is not None else nd.cpu(), self.lib)
        h = _api("runtime.graph_executor.create")(self.lib, dev.device_type, dev.device_id)
        return ExecutorModule(h, self.lib, dev)

    def __repr__(self):
        return "<kiln default factory of %r>" % (self.lib,)


class GraphExecutorFactoryModule(Module):
    """What kiln.build returns for a model: the loaded module (kernels,
    graph JSON, params).  lib["default"](dev) makes an executor;
    ``graph_json, lib, params = lib`` unpacks as TVM's old relay.build
    tuple did."""

    def __iter__(self):
        return iter((self.get_graph_json(), self, self.get_params()))

    @property
    def graph_json(self):
        return self.get_graph_json()

    @property
    def params(self):
        return self.get_params()


class BenchmarkResult:
    """Run times of benchmark(): results, mean, median, max, min, std, all
    in milliseconds (TVM's BenchmarkResult keeps seconds; its printout is
    the same)."""

    def __init__(self, results_ms):
        self.results = [float(x) for x in results_ms]
        a = np.asarray(self.results, dtype="float64")
        self.mean = float(a.mean())
        self.median = float(np.median(a))
        self.max = float(a.max())
        self.min = float(a.min())
        self.std = float(a.std())

    def __str__(self):
        return ("Execution time summary:\n"
                "{:^12} {:^12} {:^12} {:^12} {:^12}\n"
                "{:^12.4f} {:^12.4f} {:^12.4f} {:^12.4f} {:^12.4f}\n").format(
                    "mean (ms)", "median (ms)", "max (ms)", "min (ms)", "std (ms)",
                    self.mean, self.median, self.max, self.min, self.std)

    def __repr__(self):
        return "BenchmarkResult(min=%g, mean=%g, median=%g, max=%g, std=%g, results=%r) (ms)" % (
            self.min, self.mean, self.median, self.max, self.std, self.results)


class GraphModule:
    """TVM's GraphModule over a Kiln executor.  Give it lib["default"](dev);
    a model's module itself is also accepted (run on the CPU)."""

    def __init__(self, module):
        if isinstance(module, Module):
            module = DefaultFactory(module)(nd.cpu())
        if not isinstance(module, ExecutorModule):
            raise KilnTypeError("GraphModule: expected lib[\"default\"](dev) (an executor module), "
                                "got %s" % type(module).__name__)
        self.module = module
        self._h = module._h
        self._input_names = None
        self._value_infos = {}

    # ---- the model's values: tensors, sequences, optionals ----

    _TENSOR, _SEQUENCE, _OPTIONAL = 0, 1, 2

    def _values(self, output):
        """The model's input (output) values: dicts of kind, holds,
        has_value, tensors (names), first (outputs: first tensor index)."""
        if output not in self._value_infos:
            info = _api("runtime.graph_executor.get_value_info")
            vals = []
            for i in range(_api("runtime.graph_executor.get_num_values")(self._h, int(output))):
                lines = info(self._h, int(output), i).split("\n")
                kind, holds, has, n, first = (int(x) for x in lines[0].split())
                vals.append({"name": lines[1], "kind": kind, "holds": holds, "has_value": bool(has),
                             "tensors": lines[2:2 + n], "first": first})
            self._value_infos[output] = vals
        return self._value_infos[output]

    def _structured(self):
        return any(v["kind"] != self._TENSOR for io in (False, True) for v in self._values(io))

    def _input_value(self, key):
        """The input value key names (its index among the values, or its
        name) in a model with sequences or optionals; None otherwise."""
        if not self._structured():
            return None
        vals = self._values(False)
        if isinstance(key, str):
            return next((v for v in vals if v["name"] == key), None)
        if not 0 <= key < len(vals):
            raise KilnError("set_input: input %d does not exist (the model has %d inputs: %s)"
                            % (key, len(vals), ", ".join(v["name"] for v in vals)))
        return vals[key]

    def _set_value(self, v, value):
        """Set a sequence (a list of arrays) or optional (None or its value)."""
        index = self._values(False).index(v)
        if v["kind"] == self._OPTIONAL and value is None:
            _api("runtime.graph_executor.set_input_value")(self._h, index, 0)
            return
        seq = v["kind"] == self._SEQUENCE or (v["kind"] == self._OPTIONAL and v["holds"] == self._SEQUENCE)
        if seq and not isinstance(value, (list, tuple)):
            raise KilnTypeError("set_input: input '%s' is a sequence: give a list of arrays, got %s"
                                % (v["name"], type(value).__name__))
        if value is None:
            raise KilnError("set_input: input '%s' is a %s: it cannot be None (only an optional can be empty)"
                            % (v["name"], "sequence" if seq else "tensor"))
        items = list(value) if seq else [value]
        # each element converted to its input's dtype (an extra element is
        # refused by the C call, which names the compiled length)
        names = v["tensors"] or [v["name"]]
        arrays = [self._value(names[min(k, len(names) - 1)], x) for k, x in enumerate(items)]
        _api("runtime.graph_executor.set_input_value")(self._h, index, 1, *arrays)

    # ---- inputs ----

    def get_num_inputs(self):
        return _api("runtime.graph_executor.get_num_inputs")(self._h)

    def get_num_outputs(self):
        """The model's outputs (a sequence or optional counts once)."""
        if self._structured():
            return len(self._values(True))
        return _api("runtime.graph_executor.get_num_outputs")(self._h)

    def _names(self):
        if self._input_names is None:
            f = _api("runtime.graph_executor.get_input_name")
            self._input_names = [f(self._h, i) for i in range(self.get_num_inputs())]
        return self._input_names

    def get_input_index(self, name):
        names = self._names()
        if name not in names:
            raise KilnError("the model has no input '%s' (inputs: %s)" % (name, ", ".join(names)))
        return names.index(name)

    def get_input_info(self):
        """(shape_dict, dtype_dict): each input's shape and dtype by name,
        as TVM's get_input_info returns them."""
        shapes, dtypes = {}, {}
        for i, name in enumerate(self._names()):
            shapes[name] = tuple(int(x) for x in
                                 _api("runtime.graph_executor.get_input_shape")(self._h, i).numpy())
            dtypes[name] = _api("runtime.graph_executor.get_input_dtype")(self._h, i)
        return shapes, dtypes

    def get_output_info(self):
        """(shapes, dtypes): lists, one entry per output."""
        n = self.get_num_outputs()
        return ([tuple(int(x) for x in _api("runtime.graph_executor.get_output_shape")(self._h, i).numpy())
                 for i in range(n)],
                [_api("runtime.graph_executor.get_output_dtype")(self._h, i) for i in range(n)])

    @staticmethod
    def _key(key):
        if isinstance(key, str):
            return key
        if isinstance(key, bool) or not hasattr(key, "__index__"):
            raise KilnTypeError("an input is named by its index (int) or name (str), got %r" % (key,))
        return int(key)

    def _input_dtype(self, key):
        if isinstance(key, str):
            names = self._names()
            if key not in names:
                return None  # a parameter, or no such input: the C call says which
            key = names.index(key)
        if not 0 <= key < self.get_num_inputs():
            return None
        return _api("runtime.graph_executor.get_input_dtype")(self._h, key)

    def _value(self, key, value):
        if value is None:
            raise KilnError("set_input: no value given for input %r" % (key,))
        if isinstance(value, nd.NDArray):
            return value
        a = value if isinstance(value, np.ndarray) else np.asarray(value)
        want = self._input_dtype(key)
        if want == "string" or a.dtype.kind in "USO":  # text: a string array (docs/strings.md)
            return nd.array(a, dtype="string")
        if want is not None and str(a.dtype) != want:
            try:
                a = a.astype(nd._np_dtype(want), casting="same_kind")
            except TypeError as e:
                raise KilnError("set_input: input %r is %s; cannot convert a %s array (%s)"
                                % (key, want, a.dtype, e)) from None
        return a

    def set_input(self, key=None, value=None, **params):
        """Copy value into input key (index or name), and each name=value
        of params (inputs or parameters by name)."""
        f = _api("runtime.graph_executor.set_input")
        if key is not None:
            key = self._key(key)
            v = self._input_value(key)
            if v is not None and v["kind"] != self._TENSOR:
                self._set_value(v, value)
            elif v is not None:
                f(self._h, v["tensors"][0], self._value(v["tensors"][0], value))
            else:
                f(self._h, key, self._value(key, value))
        elif value is not None:
            raise KilnError("set_input: a value without an input name or index")
        for k, x in params.items():
            v = self._input_value(k)
            if v is not None and v["kind"] != self._TENSOR:
                self._set_value(v, x)
            else:
                f(self._h, k, self._value(k, x))

    def get_input(self, index, out=None):
        """A copy of an input as the executor holds it."""
        a = _api("runtime.graph_executor.get_input")(self._h, self._key(index))
        if out is not None:
            return _copy_into(out, a)
        return a

    def load_params(self, params_bytes):
        """Load a params blob (TVM's format) into the parameters of those names."""
        _api("runtime.graph_executor.load_params")(self._h, bytes(params_bytes))

    # ---- running ----

    def run(self, **input_dict):
        if input_dict:
            self.set_input(**input_dict)
        _api("runtime.graph_executor.run")(self._h)

    def get_output_names(self):
        """The outputs' names, in order: the model's (the ONNX output
        'logits'), not the kernels' that compute them."""
        if self._structured():
            return [v["name"] for v in self._values(True)]
        return [_api("runtime.graph_executor.get_output_name")(self._h, i) for i in range(self.get_num_outputs())]

    def get_output(self, index, out=None):
        """Output index (or the output of that name) as a new kiln.nd array
        (.numpy() views it), or copied into out (a kiln.nd array or NumPy
        array of its shape and dtype)."""
        if isinstance(index, str):
            names = self.get_output_names()
            if index not in names:
                raise KilnError("get_output: the model has no output '%s' (outputs: %s)" % (index, ", ".join(names)))
            index = names.index(index)
        if isinstance(index, bool) or not hasattr(index, "__index__"):
            raise KilnTypeError("get_output: the index must be an int or an output name, got %r" % (index,))
        if self._structured():
            vals = self._values(True)
            if not 0 <= int(index) < len(vals):
                raise KilnError("get_output: output %d does not exist (the model has %d outputs)" % (int(index), len(vals)))
            v = vals[int(index)]
            get = _api("runtime.graph_executor.get_output")
            if v["kind"] == self._OPTIONAL and not v["has_value"]:
                return None
            if v["kind"] == self._SEQUENCE or v["holds"] == self._SEQUENCE:
                if out is not None:
                    raise KilnError("get_output: output '%s' is a sequence: out= takes one tensor" % v["name"])
                return [get(self._h, v["first"] + k) for k in range(len(v["tensors"]))]
            index = v["first"]
        if out is not None:
            if isinstance(out, np.ndarray) and not (out.flags.c_contiguous and out.flags.writeable):
                raise KilnError("get_output: out must be a writable C-contiguous array")
            _api("runtime.graph_executor.get_output")(self._h, int(index), out)
            return out
        return _api("runtime.graph_executor.get_output")(self._h, int(index))

    def benchmark(self, device=None, func_name="run", repeat=5, number=5, min_repeat_ms=None,
                  end_to_end=False, **kwargs):
        """Time run(): one warm-up run, then `repeat` measurements of the
        mean of `number` runs (with min_repeat_ms, number grows until a
        measurement takes that long).  end_to_end also times setting the
        inputs given in kwargs and reading every output.  Returns a
        BenchmarkResult (ms)."""
        if device is not None:
            _check_device(device)
        if func_name != "run":
            raise KilnError("benchmark: only 'run' can be timed, got %r" % (func_name,))
        repeat, number = int(repeat), int(number)
        if repeat < 1 or number < 1:
            raise KilnError("benchmark: repeat and number must be at least 1, got %d and %d"
                            % (repeat, number))
        if end_to_end:
            return self._benchmark_end_to_end(repeat, number, kwargs)
        if kwargs:
            self.set_input(**kwargs)
        timer = _api("runtime.graph_executor.benchmark")
        if min_repeat_ms:
            while True:
                t = float(timer(self._h, number, 1).numpy()[0])
                if t * number >= min_repeat_ms:
                    break
                number = max(number + 1, int(math.ceil(min_repeat_ms / max(t, 1e-6) * 1.1)),
                             int(number * 1.618))
        return BenchmarkResult(timer(self._h, number, repeat).numpy())

    def _benchmark_end_to_end(self, repeat, number, inputs):
        nout = self.get_num_outputs()

        def once():
            if inputs:
                self.set_input(**inputs)
            self.run()
            for i in range(nout):
                self.get_output(i)

        once()
        res = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(number):
                once()
            res.append((time.perf_counter() - t0) * 1e3 / number)
        return BenchmarkResult(res)

    def profile(self, number=1, repeat=1, **inputs):
        """Run the graph kernel by kernel with a clock around each (the debug
        executor): a ProfileReport, printable as TVM's table with Kiln's
        Task column, and its rows as dicts."""
        from .debug_executor import ProfileReport  # pylint: disable=import-outside-toplevel
        if inputs:
            self.set_input(**inputs)
        h = _api("runtime.debug_executor.profile")(self._h, int(number), int(repeat))
        return ProfileReport(h)

    # ---- memory ----

    def get_planned_bytes(self):
        return _api("runtime.graph_executor.get_planned_bytes")(self._h)

    def get_naive_bytes(self):
        return _api("runtime.graph_executor.get_naive_bytes")(self._h)

    def __getitem__(self, name):
        f = {"set_input": self.set_input, "run": self.run, "get_output": self.get_output,
             "get_input": self.get_input, "get_num_inputs": self.get_num_inputs,
             "get_num_outputs": self.get_num_outputs, "load_params": self.load_params,
             "get_input_index": self.get_input_index}.get(name)
        if f is None:
            raise KilnError("the graph executor has no function '%s'" % name)
        return f


def _copy_into(out, a):
    if isinstance(out, nd.NDArray):
        out.copyfrom(a)
    else:
        np.copyto(out, a.numpy(), casting="no")
    return out


def create(graph_json_str, libmod, device=None):
    """An executor for graph JSON over a module's kernels (TVM's
    graph_executor.create).  Kiln embeds the params in the module: they
    are loaded too, by name."""
    dev = _check_device(device if device is not None else nd.cpu(),
                        libmod if isinstance(libmod, Module) else None)
    if not isinstance(graph_json_str, str):
        raise KilnTypeError("create: the graph JSON must be a str, got %s" % type(graph_json_str).__name__)
    if not isinstance(libmod, Module):
        raise KilnTypeError("create: expected a kiln Module, got %s" % type(libmod).__name__)
    params = libmod.get_params_bytes()
    f = _api("runtime.graph_executor.create")
    extra = (params,) if params is not None else ()
    h = f(graph_json_str, libmod, *extra, dev.device_type, dev.device_id)
    return GraphModule(ExecutorModule(h, libmod, dev))


__all__ = ["GraphModule", "create", "BenchmarkResult", "GraphExecutorFactoryModule",
           "ExecutorModule"]
