"""The file formats of docs/formats.md, read from real files: a compiled
module's symbols, sections and blobs, its graph JSON, its params index and
TVM params blob parsed by hand,
and a tuning record in both AutoTVM versions.

Run from the repository root after building:
    PATH="$PWD/build:$PATH" PYTHONPATH=python /usr/bin/python3 docs/formats_tour.py
"""
import json
import os
import struct
import subprocess

import numpy as np
import onnx

import kiln

os.makedirs("build/examples", exist_ok=True)
path = "build/examples/digits_tour.so"
mod, params = kiln.frontend.from_onnx(onnx.load("models/digits/digits.onnx"), {"image": (1, 1, 8, 8)})
with kiln.transform.PassContext(opt_level=3):
    kiln.build(mod, target="cpu").export_library(path)

print("== the module's ABI symbols")
nm = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True)
print("\n".join(sorted(line.split()[-1] for line in nm.stdout.splitlines() if "__kiln" in line)))

print("== its sections")
sections = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True, check=True)
print("\n".join(line.split("]", 1)[1].split()[0] for line in sections.stdout.splitlines() if ".kiln." in line))

lib = kiln.load_module(path)
print("== blobs")
for name in ("graph_json", "param_index", "param_data", "lowered_ir"):
    print(name, type(lib.get_blob(name)).__name__)

print("== graph JSON")
graph = json.loads(lib.get_blob("graph_json"))
print(list(graph))
print(json.dumps(graph["nodes"][0]))
op = next(n for n in graph["nodes"] if n["op"] == "tvm_op" and "kiln_task" in n["attrs"])
print(json.dumps({k: v for k, v in op.items() if k != "inputs"}, indent=1))
print("inputs", op["inputs"])
print("arg_nodes", graph["arg_nodes"], "heads", graph["heads"])
for key, (kind, values) in graph["attrs"].items():
    print(key, kind, values[:3], "...")

print("== params index")
index = lib.get_blob("param_index")
magic, data_size, chunk, nchunks = struct.unpack_from("<8sQQQ", index, 0)
pos = 32 + 8 * nchunks
(count,) = struct.unpack_from("<Q", index, pos)
(n,) = struct.unpack_from("<Q", index, pos + 8)
name = index[pos + 16:pos + 16 + n].decode()
ndim, code, bits, lanes = struct.unpack_from("<iBBH", index, pos + 16 + n)
shape = struct.unpack_from("<%dq" % ndim, index, pos + 24 + n)
offset, size = struct.unpack_from("<QQ", index, pos + 24 + n + 8 * ndim)
print(magic, data_size, "bytes of data,", nchunks, "chunk of", chunk, "bytes,", count, "arrays")
print("first:", name, "dtype", (code, bits, lanes), "shape", shape, "at", offset, size, "bytes")
first = np.frombuffer(lib.get_blob("param_data"), "<f4", size // 4, offset).reshape(shape)

print("== params blob (TVM's, as lib.get_params_bytes() writes it)")
blob = lib.get_params_bytes()
magic, _, count = struct.unpack_from("<QQQ", blob, 0)
pos, names = 24, []
for _ in range(count):
    (n,) = struct.unpack_from("<Q", blob, pos)
    names.append(blob[pos + 8:pos + 8 + n].decode())
    pos += 8 + n
(narrays,) = struct.unpack_from("<Q", blob, pos)
pos += 8
print(hex(magic), count, "names", names[:3], "...", narrays, "arrays")
amagic, _, dev_type, dev_id, ndim, code, bits, lanes = struct.unpack_from("<QQiiiBBH", blob, pos)
shape = struct.unpack_from("<%dq" % ndim, blob, pos + 32)
(nbytes,) = struct.unpack_from("<q", blob, pos + 32 + 8 * ndim)
data = np.frombuffer(blob, "<f4", nbytes // 4, pos + 40 + 8 * ndim).reshape(shape)
print(hex(amagic), "device", (dev_type, dev_id), "dtype", (code, bits, lanes), "shape", shape, nbytes, "bytes")
same = np.array_equal(data, kiln.runtime.load_param_dict(blob)[names[0]].numpy())
print("first array as load_param_dict reads it:", same, "| as the module holds it:", np.array_equal(data, first))

print("== tuning records")
with open("tests/data/tophub/vgg16_bs_1.log") as f:
    v01 = f.readline()
rec = json.loads(v01)
target, task, args, kwargs, workload, config = rec["i"]
print("v0.1 keys:", sorted(rec), "version", rec["v"])
print("target:", target, "| task:", task, "| args:", json.dumps(args))
print("config: index", config["i"], "template", config["t"], "entities", json.dumps(config["e"][:3]), "...")
print("result: %d costs, error %d" % (len(rec["r"][0]), rec["r"][1]))
with open("build/examples/one_record.log", "w") as f:
    f.write(v01)
v02 = subprocess.run(["kiln", "records", "build/examples/one_record.log", "--pick-best"],
                     capture_output=True, text=True, check=True).stdout
print("v0.2:", v02.strip())
