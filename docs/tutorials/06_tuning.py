"""Tutorial 6 (Python): the same flow with AutoTVM's names - extract the
tasks, tune one, and build with the records.

Run from the repository root after building:
    PYTHONPATH=python /usr/bin/python3 docs/tutorials/06_tuning.py
"""
import json
import os

import kiln
from kiln import autotvm

mod, params = kiln.frontend.from_onnx("models/digits/digits.onnx", {"image": (16, 1, 8, 8)})
with kiln.transform.PassContext(opt_level=3):
    tasks = autotvm.task.extract_from_program(mod["main"], params=params, target="llvm")
for i, task in enumerate(tasks):
    print("[Task %d/%d] %s, %d configs, used by %s" % (i + 1, len(tasks), task.name, len(task.config_space),
                                                       ", ".join(task.nodes)))

log = "build/tutorials/digits_autotvm.log"
os.makedirs("build/tutorials", exist_ok=True)
if os.path.exists(log):
    os.remove(log)
task = tasks[3]  # the last dense layer
tuner = autotvm.tuner.RandomTuner(task)
tuner.tune(n_trial=4,
           measure_option=autotvm.measure_option(builder=autotvm.LocalBuilder(),
                                                 runner=autotvm.LocalRunner(number=4, repeat=3)),
           callbacks=[autotvm.callback.progress_bar(4, prefix="[Task 4/4]"),
                      autotvm.callback.log_to_file(log)])
print(sum(1 for _ in open(log)), "records in", log)

# Builds inside apply_history_best take the best record of each workload.
with autotvm.apply_history_best(log):
    with kiln.transform.PassContext(opt_level=3):
        lib = kiln.build(mod, target="llvm", params=params)
for node in json.loads(lib.get_graph_json())["nodes"]:
    if "kiln_task" in node.get("attrs", {}):
        print(node["name"], "->", node["attrs"]["kiln_config"])
