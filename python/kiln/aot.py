"""The AOT executor: a model as standalone C (``kiln compile --emit c``).

``kiln.relay.build(mod, target, params=params, executor="aot")`` returns an
:class:`AotExecutorFactoryModule`; its ``export_library("model.tar",
fmt="c")`` writes a tar in the spirit of TVM's Model Library Format::

    metadata.json                 the export's metadata (format, API, plan, kernels)
    codegen/host/include/NAME.h   the API: NAME_run, NAME_WORKSPACE_BYTES, shapes
    codegen/host/src/             NAME.c, the weights, NAME.h again, and an
                                  example main.c with its Makefile and CMakeLists.txt
    src/relay.txt                 the optimized model as Relay-style text
    parameters/NAME.bin           the weights, with weights="separate"

Nothing in it needs Kiln: ``make -C codegen/host/src`` builds the example.
See docs/deploy_c.md.
"""
import io
import json
import os
import shutil
import tarfile
import tempfile

from . import _ffi
from ._ffi import KilnError


class AotExecutorFactoryModule:
    """What kiln.build(..., executor="aot") returns: the optimized model,
    to export as C.  (Kiln's AOT executor is the generated C itself; there
    is nothing to run in-process.)"""

    def __init__(self, mod, opt_level):
        self.ir_mod = mod
        self.opt_level = int(opt_level)

    def export_library(self, path, fmt="c", prefix="default", threads="none", isa="native", freestanding=False,
                       weights="embedded"):
        """Write the model as standalone C: fmt="c" writes a Model Library
        Format tar at path (".tar"), or the plain export directory when
        path does not end in ".tar".  prefix names the API (prefix_run,
        prefix.h); threads, isa, freestanding and weights are the options
        of kiln compile --emit c."""
        if fmt != "c":
            raise KilnError("export_library: the AOT executor exports C only (fmt='c'), got fmt=%r" % (fmt,))
        if weights not in ("embedded", "separate"):
            raise KilnError("export_library: weights must be 'embedded' or 'separate', got %r" % (weights,))
        export = _ffi._get_api("graph.standalone_c")
        if not str(path).endswith(".tar"):
            export(self.ir_mod, self.opt_level, str(path), prefix, threads, isa, int(bool(freestanding)),
                   int(weights == "separate"))
            return str(path)
        tmp = tempfile.mkdtemp(prefix="kiln-aot-")
        try:
            out = os.path.join(tmp, "export")
            export(self.ir_mod, self.opt_level, out, prefix, threads, isa, int(bool(freestanding)),
                   int(weights == "separate"))
            with tarfile.open(str(path), "w") as tar:
                meta = json.load(open(os.path.join(out, "metadata.json")))
                meta["executors"] = ["aot"]
                meta["style"] = "full-model"
                blob = json.dumps(meta, indent=2).encode()
                info = tarfile.TarInfo("metadata.json")
                info.size = len(blob)
                tar.addfile(info, io.BytesIO(blob))
                for name in sorted(os.listdir(out)):
                    full = os.path.join(out, name)
                    if name == "metadata.json":
                        continue
                    if name.endswith(".bin"):
                        tar.add(full, "parameters/" + name)
                        continue
                    tar.add(full, "codegen/host/src/" + name)
                    if name == prefix + ".h":
                        tar.add(full, "codegen/host/include/" + name)
                text = self.ir_mod.optimize(self.opt_level).astext().encode()
                info = tarfile.TarInfo("src/relay.txt")
                info.size = len(text)
                tar.addfile(info, io.BytesIO(text))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return str(path)

    def __repr__(self):
        return "<kiln AOT executor factory (opt_level %d)>" % self.opt_level


__all__ = ["AotExecutorFactoryModule"]
