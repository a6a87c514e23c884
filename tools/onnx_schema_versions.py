#!/usr/bin/env python3
"""Write src/frontend/onnx/onnx_schema.c: the version history of every
operator of the ai.onnx, ai.onnx.ml, ai.onnx.preview and ai.onnx.preview.training
domains,
from the operator schemas of the onnx Python package running this script
(the newest onnx release: run it with build/onnx-venv/bin/python, which
tests/onnx/newest_suite.sh --setup makes).

For each op: the ONNX versions (the opsets at which ONNX changed it) and,
per version, whether the change from the previous version is only in the
data types it allows, the attributes the version takes (name, type,
whether required), the names of its inputs, and whether it accepts
attributes beyond its own (LayerNormalization-17 does, for ONNX Runtime's
older op of that name; found by asking onnx.checker about an unknown
attribute on every version).  The importer checks every node's attributes
against its version's list (src/frontend/onnx/import.c).  Such a version needs nothing from Kiln's importer:
a type Kiln lacks is refused where the value is made.  A version that
changed inputs, outputs, attributes or the op's description (its
semantics) is one Kiln must implement explicitly (the `upto` column of the
importer's table, src/frontend/onnx/ops/table.c).

Usage:  build/onnx-venv/bin/python tools/onnx_schema_versions.py [-o FILE]
        build/onnx-venv/bin/python tools/onnx_schema_versions.py --check
(--check: exit 1 when the file differs from what this onnx gives.)
"""
import argparse
import collections
import os
import re
import sys

import onnx
import onnx.checker
import onnx.defs
import onnx.helper
from onnx import AttributeProto

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "src", "frontend", "onnx", "onnx_schema.c")
DOMAINS = ("", "ai.onnx.ml", "ai.onnx.preview", "ai.onnx.preview.training")
MAXV = 15  # versions per op the C table has room for


def signature(s):
    attrs = sorted((a.name, int(a.type), a.required, a.default_value.SerializeToString())
                   for a in s.attributes.values())
    ins = [(i.name, int(i.option), i.is_homogeneous) for i in s.inputs]
    outs = [(o.name, int(o.option), o.is_homogeneous) for o in s.outputs]
    doc = re.sub(r"\s+", " ", s.doc or "").strip()
    return (attrs, ins, outs, s.min_input, s.max_input, s.min_output, s.max_output, doc)

ATTR_TYPE = {int(v): k for k, v in AttributeProto.AttributeType.items()}


def attr_list(s):
    return tuple(sorted((a.name, ATTR_TYPE[int(a.type)], 1 if a.required else 0)
                        for a in s.attributes.values()))


def input_names(s):
    return tuple(i.name for i in s.inputs)


def probe_value(name, t):
    """An attribute of type t with some value (to build a node the checker
    gets past its required attributes with)."""
    a = AttributeProto(name=name, type=t)
    if t == AttributeProto.FLOAT:
        a.f = 1.0
    elif t == AttributeProto.INT:
        a.i = 1
    elif t == AttributeProto.STRING:
        a.s = b"x"
    elif t == AttributeProto.INTS:
        a.ints.extend([1])
    elif t == AttributeProto.FLOATS:
        a.floats.extend([1.0])
    elif t == AttributeProto.STRINGS:
        a.strings.extend([b"x"])
    elif t == AttributeProto.TENSOR:
        a.t.CopyFrom(onnx.helper.make_tensor("t", onnx.TensorProto.FLOAT, [1], [1.0]))
    elif t == AttributeProto.GRAPH:
        a.g.CopyFrom(onnx.helper.make_graph([], "g", [], []))
    return a


def accepts_unknown_attributes(s):
    """Whether onnx.checker accepts a node of this version with an attribute
    its schema does not list (OpSchema::AllowUncheckedAttributes, which the
    Python bindings do not show)."""
    node = onnx.helper.make_node(s.name, [f"x{i}" for i in range(s.min_input)],
                                 [f"y{i}" for i in range(max(1, s.min_output))], domain=s.domain)
    for a in s.attributes.values():
        if a.required:
            node.attribute.append(probe_value(a.name, int(a.type)))
    node.attribute.append(probe_value("kiln_unknown_attribute_probe", AttributeProto.INT))
    ctx = onnx.checker.DEFAULT_CONTEXT
    ctx.ir_version = onnx.IR_VERSION
    ctx.opset_imports = {s.domain: s.since_version}
    try:
        onnx.checker.check_node(node, ctx)
        return True
    except onnx.checker.ValidationError:
        # "Unrecognized attribute", or a deprecated version the checker
        # refuses outright: either way, not one that accepts any attribute
        return False


class Pool:
    """Deduplicated C arrays: one per distinct list, named prefix + index."""

    def __init__(self, prefix):
        self.prefix, self.index = prefix, {}

    def name(self, key):
        if key not in self.index:
            self.index[key] = f"{self.prefix}{len(self.index)}"
        return self.index[key]


def text():
    hist = collections.defaultdict(list)
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain in DOMAINS or (s.domain == "ai.onnx" and True):
            hist[("" if s.domain == "ai.onnx" else s.domain, s.name)].append(s)
    newest = {d: 0 for d in DOMAINS}
    rows = []
    attrs, inputs = Pool("a"), Pool("in")
    for (dom, name), schemas in sorted(hist.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        schemas.sort(key=lambda s: s.since_version)
        if len(schemas) > MAXV:
            sys.exit(f"{name} has {len(schemas)} versions; raise MAXV here and ONNX_SCHEMA_MAX_VERSIONS")
        vers, mask, unchecked, a, i_ = [], 0, 0, [], []
        for i, s in enumerate(schemas):
            vers.append(s.since_version)
            newest[dom] = max(newest[dom], s.since_version)
            if i and signature(s) == signature(schemas[i - 1]):
                mask |= 1 << i
            if accepts_unknown_attributes(s):
                unchecked |= 1 << i
            a.append(attrs.name(attr_list(s)))
            i_.append(inputs.name(input_names(s)))
        rows.append(f'    {{"{dom}", "{name}", {{{", ".join(map(str, vers))}}}, 0x{mask:x}, 0x{unchecked:x}, '
                    f'{{{", ".join(a)}}}, {{{", ".join(i_)}}}}},')
    opsets = {d: onnx.defs.onnx_opset_version() if d == "" else newest[d] for d in DOMAINS}
    head = [
        "/*",
        " * onnx_schema.c - the version history of ONNX's operators, generated by",
        f" * tools/onnx_schema_versions.py from onnx {onnx.__version__}; do not edit.",
        " *",
        " * Per op: the opsets at which ONNX released a new version of it; a bit per",
        " * version set when that version changed only the data types the op",
        " * allows; a bit per version set when it accepts attributes beyond its",
        " * own; and per version its attributes (name, type, 1 if required) and",
        " * the names of its inputs (see onnx_schema.h).",
        " */",
        '#include "onnx_schema.h"',
        "",
        '#include "onnx_model.h"',
        "",
        f'const char onnx_schema_onnx_version[] = "{onnx.__version__}";',
        "",
        "const OnnxSchemaDomain onnx_schema_domains[] = {",
    ] + [f'    {{"{d}", {opsets[d]}}},' for d in DOMAINS] + [
        "    {NULL, 0},",
        "};",
        "",
        "/* attribute lists, shared by the versions that have the same */",
    ]
    for key, cname in attrs.index.items():
        items = "".join(f'{{"{n}", ONNX_ATTR_{t}, {r}}}, ' for n, t, r in key)
        head.append(f"static const OnnxSchemaAttr {cname}[] = {{{items}{{NULL, 0, 0}}}};")
    head += ["", "/* input names */"]
    for key, cname in inputs.index.items():
        items = "".join(f'"{n}", ' for n in key)
        head.append(f"static const char *const {cname}[] = {{{items}NULL}};")
    head += ["", "const OnnxSchemaOp onnx_schema_ops[] = {"]
    return "\n".join(head + rows + ["    {NULL, NULL, {0}, 0, 0, {NULL}, {NULL}},", "};", ""])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", default=OUT)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    t = text()
    if args.check:
        with open(args.o) as f:
            same = f.read() == t
        print(f"{args.o}: {'up to date' if same else 'differs from onnx ' + onnx.__version__}")
        sys.exit(0 if same else 1)
    with open(args.o, "w") as f:
        f.write(t)


if __name__ == "__main__":
    main()
