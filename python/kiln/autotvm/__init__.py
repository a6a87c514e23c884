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

These are thin wrappers over the tuning engine (src/autotune), which
src/api/api_autotvm.c registers in the global registry; where those
functions are missing (a library built without them), each raises
KilnError("... not available yet") rather than pretending.  The contract:

  autotvm.extract_tasks(graph, int opt_level, str target) -> str: a JSON
      array of tasks {"name": "conv2d_NCHWc.x86", "args": [...] (TVM's
      record args), "target": the record target of this machine,
      "workload": [...], "config_space_size": int, "flops": float, "desc":
      str, "nodes": [fused function names using the task]}
  autotvm.tune_task(str task_json, str tuner, str options_json) -> str:
      tunes one task (tuner "xgb", "ga", "random", "gridsearch";
      options_json {"n_trial", "early_stopping", "tuner_options": {...},
      "measure_option": {"builder": {"timeout", "n_parallel"}, "runner":
      {"number", "repeat", "min_repeat_ms", "timeout"}}, "log_file": where
      the v0.2 records go (resumed from), "progress": bool,
      "progress_prefix": str, "worker": the kiln program that measures
      candidates in separate processes}); returns a JSON summary
      {"measured", "resumed", "verified" (the best-looking configs and
      the fallback measured again at the end; their records are in the
      log too), "errors": [count per error number],
      "best_cost", "best_gflops", "best_index", "seconds", "early_stopped",
      "flops"}
  autotvm.apply_history_best(str path) -> int token: read and check the
      records (v0.1 or v0.2) and add them to the dispatch context the
      graph build consults (process-wide, as TVM's DispatchContext)
  autotvm.apply_history_best_exit(int token): drop that file (and any
      opened after it)

Differences from AutoTVM: n_trial counts the records of the task already in
the log_to_file file (the engine resumes, as `kiln tune` does); the
progress line is printed by the engine while it measures, and other
callbacks receive all new measurements in one batch when tuning ends.
"""
from . import task, tuner, measure, callback, record, template as _template_module  # noqa: F401
from .measure import measure_option, LocalBuilder, LocalRunner, MeasureInput, MeasureResult  # noqa: F401
from .record import apply_history_best, ApplyHistoryBest  # noqa: F401
from .task import Task  # noqa: F401
from .template import template, get_config  # noqa: F401
from ._base import available  # noqa: F401
