"""Auto-tuning with TVM's AutoTVM names (tvm.autotvm):

    tasks = autotvm.task.extract_from_program(mod["main"], params=params, target="llvm")
    for task in tasks:
        tuner = autotvm.tuner.XGBTuner(task, loss_type="rank")
        tuner.tune(n_trial=min(1000, len(task.config_space)),
                   measure_option=autotvm.measure_option(
                       builder=autotvm.LocalBuilder(),
                       runner=autotvm.LocalRunner(number=10, repeat=1, min_repeat_ms=0)),
                   callbacks=[autotvm.callback.progress_bar(1000, prefix=task.name),
                              autotvm.callback.log_to_file("tuning.log")])
    with autotvm.apply_history_best("tuning.log"):
        with kiln.transform.PassContext(opt_level=3):
            lib = kiln.build(mod, target="llvm", params=params)

These are thin wrappers over functions the tuning engine (src/autotune)
registers in the global registry; until it does, each raises KilnError
("... not available yet") rather than pretending.  The contract:

  autotvm.extract_tasks(graph, int opt_level, str target) -> str: a JSON
      array of tasks {"name": "conv2d_NCHWc.x86", "args": [...] (TVM's
      record args), "target": str, "workload": [...], "config_space_size":
      int, "nodes": [fused function names using the task], "ops": [their
      anchor ops, e.g. "nn.conv2d"]}
  autotvm.tune_task(str task_json, str tuner, str options_json,
      function callback) -> str: tunes one task (tuner "xgb", "ga", "random",
      "gridsearch"; options_json {"n_trial", "early_stopping",
      "tuner_options": {...}, "measure_option": {"builder": {...},
      "runner": {...}}}); calls callback(str batch_json) after each measured
      batch, batch_json a JSON array of {"config": {"index", "code_hash",
      "entity"}, "result": [costs, error_no, all_cost, timestamp],
      "record": one v0.2 record line, "flops": float}; a callback's
      failure stops the tuning with its message; returns {"best": {...} or
      null, "measured": int} as JSON
  autotvm.apply_history_best(str path) -> handle: read and check the
      records (v0.1 or v0.2) and make them the calling thread's innermost
      dispatch context: kiln.build/graph.build on this thread take the best
      record per workload (DESIGN.md section 5)
  autotvm.apply_history_best_exit(handle): pop that context
"""
from . import task, tuner, measure, callback, record  # noqa: F401
from .measure import measure_option, LocalBuilder, LocalRunner, MeasureInput, MeasureResult  # noqa: F401
from .record import apply_history_best, ApplyHistoryBest  # noqa: F401
from .task import Task  # noqa: F401
from ._base import available  # noqa: F401
