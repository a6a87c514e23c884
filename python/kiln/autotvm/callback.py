"""Tuning callbacks (tvm.autotvm.callback): each is called as
callback(tuner, inputs, results) after a measured batch."""
import sys
import time

from .measure import MeasureErrorNo


def log_to_file(file_out, protocol="json"):
    """Append each measurement's record (v0.2, one JSON object a line)."""
    if protocol != "json":
        raise ValueError("log_to_file: only the json protocol is supported")

    def _callback(_, inputs, results):  # pylint: disable=unused-argument
        if isinstance(file_out, str):
            with open(file_out, "a") as f:
                for r in results:
                    if r.record:
                        f.write(r.record.rstrip("\n") + "\n")
        else:
            for r in results:
                if r.record:
                    file_out.write(r.record.rstrip("\n") + "\n")

    _callback.file_out = file_out
    return _callback


def progress_bar(total, prefix="", si_prefix="G"):
    """Print Current/Best GFLOPS and the progress, in place."""
    scale = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[si_prefix]
    state = {"ct": 0, "cur": 0.0, "best": 0.0, "start": time.time()}

    def _callback(tuner, inputs, results):  # pylint: disable=unused-argument
        for r in results:
            state["ct"] += 1
            if r.error_no == MeasureErrorNo.NO_ERROR and r.costs and r.flops:
                state["cur"] = r.flops / (sum(r.costs) / len(r.costs))
                state["best"] = max(state["best"], state["cur"])
        sys.stdout.write("\r%s Current/Best: %7.2f/%7.2f %sFLOPS | Progress: (%d/%d) | %.2f s"
                         % (prefix, state["cur"] / scale, state["best"] / scale, si_prefix,
                            state["ct"], total, time.time() - state["start"]))
        if state["ct"] >= total:
            sys.stdout.write(" Done.\n")
        sys.stdout.flush()

    # Tuner.tune hands this to the engine, which prints the same line as it
    # measures; the function itself serves callers that feed batches.
    _callback.progress_prefix = prefix
    return _callback
