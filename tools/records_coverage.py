"""Which tuning tasks of a model the records Kiln ships cover.

    /usr/bin/python3 tools/records_coverage.py MODEL.onnx NAME:SHAPE [MODEL.onnx NAME:SHAPE ...]
    /usr/bin/python3 tools/records_coverage.py models/digits/digits.onnx 'image:[16,1,8,8]'

For each model: its tasks at opt level 3 (as `kiln tasks` lists them) and,
per task, whether compile-time dispatch finds a shipped record for this
machine's class (docs/tuning.md, "Which config a compile uses").  Prints
one line per model: covered/total and the uncovered tasks.  Run with the
library built (KILN_LIBRARY_PATH=build) and no --tuning-records in play.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import kiln  # noqa: E402
from kiln import autotvm  # noqa: E402


def parse_shape(text):
    name, _, dims = text.partition(":")
    return name, tuple(int(d) for d in dims.strip("[]() ").split(","))


def coverage(path, shape):
    name, dims = parse_shape(shape)
    mod, params = kiln.frontend.from_onnx(path, {name: dims})
    tasks = autotvm.task.extract_from_program(mod, params=params, target="llvm")
    query = kiln._ffi._get_api("autotvm.query_best")
    covered = [t for t in tasks if query(t.name, json.dumps(t.args))]
    missing = [t for t in tasks if t not in covered]
    return covered, missing


def main(argv):
    if len(argv) < 2 or len(argv) % 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for path, shape in zip(argv[::2], argv[1::2]):
        covered, missing = coverage(path, shape)
        print("%s %s: %d/%d tasks have a shipped record" % (os.path.basename(path), shape, len(covered),
                                                           len(covered) + len(missing)))
        for t in missing:
            print("  not covered: %s %s" % (t.name, t.desc))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
