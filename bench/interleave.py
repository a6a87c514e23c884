"""Engines measured interleaved (A B C A B C ...): the worker loop that
bench/models.py, bench/int8.py and bench/bf16.py share.  Each engine is a
bench/workers.py process (its protocol: "ready <checksum>", then "run N"
answered by a JSON list of N latencies in ms, then "quit")."""
import json
import subprocess
import sys
import time


def start(cmd):
    """Start worker cmd and wait for it to be ready: (process, checksum
    fields); RuntimeError with its first line when it does not start."""
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    line = p.stdout.readline()
    if not line.startswith("ready"):
        p.kill()
        raise RuntimeError(f"worker failed to start: {' '.join(cmd)}: {line}")
    return p, line.split()[1:]


def interleaved(name, cmds, rounds, per_round):
    """Start a worker per engine (cmds: {engine: command}, in order) and run
    `rounds` rounds, each engine in turn (the order rotated every round)
    running per_round + 1 times, the first untimed.  An engine that does not
    start (a peer that cannot load this model) is reported on stderr and
    left out.  Returns ({engine: latencies in ms}, {engine: checksum
    fields}) for the engines that started, in cmds' order."""
    procs, sums, live = {}, {}, []
    for e, c in cmds.items():
        try:
            procs[e], sums[e] = start(c)
            live.append(e)
        except RuntimeError as err:
            print(f"{name}: {e} left out: {err}", file=sys.stderr, flush=True)
    times = {e: [] for e in live}
    for r in range(rounds):
        for e in live[r % len(live):] + live[:r % len(live)]:
            # let the previous engine's idle threads stop spinning (ONNX
            # Runtime, OpenMP and Kiln all spin a while after a run), then
            # one untimed run to wake this engine's
            time.sleep(0.2)
            procs[e].stdin.write(f"run {per_round + 1}\n")
            times[e] += json.loads(procs[e].stdout.readline())[1:]
    for e in live:
        procs[e].stdin.write("quit\n")
        procs[e].wait()
    return times, sums
