"""Keep the documentation honest: the machinery behind tests/docs.

The pages under docs/ mark what the tests check with HTML comments, which
Markdown renderers hide.  Each marker applies to the fenced code block that
follows it:

  <!-- file: PATH -->       the block is the whole file PATH (relative to the
                           repository root), so a page never shows a stale
                           copy of a script;
  <!-- excerpt: PATH -->    the block's lines appear in PATH in this order, as
                           runs of consecutive lines; a line "..." between
                           runs stands for lines left out (trailing spaces
                           are ignored);
  <!-- output: CMD -->      the block is what CMD prints (stdout and stderr
                           together), CMD being a script and its arguments:
                           .py runs with this Python, .sh with bash, from the
                           repository root.

Expected output may hold placeholders for what changes from run to run:
  <num>        a number (12, -0.5, 3.1e-05, inf)
  <any>        any text within the line (possibly none)
  <lines>      alone on a line: any number of lines (possibly none)
  <any order>  alone on a line, up to a line <end any order>: the lines
               between match the same number of output lines in any order
               (a table sorted by time)
Runs of spaces count as one space, trailing spaces and trailing blank lines
are ignored.

The scripts run with the build directory first on PATH, the package on
PYTHONPATH, KILN_LIBRARY_PATH set, and two settings that make their output
the same on every machine: KILN_SIMD_WIDTH=16 (the vector width of an
AVX-512 machine) and KILN_RECORDS_PATH= (no shipped tuning records).

Run it by hand to see what a page's scripts print now, or (--sync) to
paste the files and the new outputs into a page:
  /usr/bin/python3 tests/docs/doccheck.py docs/tutorials/01_vector_add.md
  /usr/bin/python3 tests/docs/doccheck.py --sync docs/tutorials/01_vector_add.md
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build")))

MARKER = re.compile(r"^<!--\s*(file|excerpt|output):\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(```+|~~~+)(.*)$")


class Block:
    """A marked fenced block of a page."""

    def __init__(self, page, line, kind, arg, text):
        self.page = page    # the page's path
        self.line = line    # 1-based line of the marker
        self.kind = kind    # "file", "excerpt" or "output"
        self.arg = arg      # the path or the command
        self.text = text    # the block's content, lines joined with "\n"

    def where(self):
        return "%s:%d" % (os.path.relpath(self.page, ROOT), self.line)


def blocks(page):
    """The marked blocks of a page, in order."""
    with open(page, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i].strip())
        if not m:
            i += 1
            continue
        start = i + 1
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        f = FENCE.match(lines[j]) if j < len(lines) else None
        if not f:
            raise AssertionError("%s:%d: a '%s' marker must be followed by a fenced code block"
                                 % (os.path.relpath(page, ROOT), start, m.group(1)))
        fence = f.group(1)
        k = j + 1
        while k < len(lines) and lines[k].rstrip() != fence:
            k += 1
        if k >= len(lines):
            raise AssertionError("%s:%d: unclosed code block" % (os.path.relpath(page, ROOT), j + 1))
        out.append(Block(page, start, m.group(1), m.group(2), "\n".join(lines[j + 1:k])))
        i = k + 1
    return out


# ---- file and excerpt blocks ----

def check_file(b):
    """'' if the block is the file's content, else what differs."""
    path = os.path.join(ROOT, b.arg)
    if not os.path.isfile(path):
        return "%s: shows %s, which does not exist" % (b.where(), b.arg)
    with open(path, encoding="utf-8") as f:
        want = f.read().rstrip("\n")
    if b.text.rstrip("\n") == want:
        return ""
    return "%s: the block differs from %s; paste the file again\n%s" % (
        b.where(), b.arg, first_difference(want.split("\n"), b.text.split("\n")))


def check_excerpt(b):
    """'' if the block's runs of lines appear in the file in order."""
    path = os.path.join(ROOT, b.arg)
    if not os.path.isfile(path):
        return "%s: quotes %s, which does not exist" % (b.where(), b.arg)
    with open(path, encoding="utf-8") as f:
        src = [ln.rstrip() for ln in f.read().split("\n")]
    runs, cur = [], []
    for ln in b.text.split("\n"):
        if ln.strip() == "...":
            if cur:
                runs.append(cur)
            cur = []
        else:
            cur.append(ln.rstrip())
    if cur:
        runs.append(cur)
    pos = 0
    for run in runs:
        found = -1
        for s in range(pos, len(src) - len(run) + 1):
            if src[s:s + len(run)] == run:
                found = s
                break
        if found < 0:
            return "%s: these lines are no longer in %s (after line %d):\n  %s" % (
                b.where(), b.arg, pos, "\n  ".join(run))
        pos = found + len(run)
    return ""


def first_difference(want, have):
    for i in range(max(len(want), len(have))):
        w = want[i] if i < len(want) else "<end>"
        h = have[i] if i < len(have) else "<end>"
        if w != h:
            return "  line %d\n    expected: %s\n    got:      %s" % (i + 1, w, h)
    return "  (same lines)"


# ---- output blocks ----

NUM = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+|inf|nan)"


def _norm(line):
    return re.sub(r"[ \t]+", " ", line.rstrip())


def _line_regex(line):
    parts = re.split(r"(<num>|<any>)", _norm(line))
    rx = "".join(NUM if p == "<num>" else ".*?" if p == "<any>" else re.escape(p) for p in parts)
    return re.compile(rx + r"\Z")


def _lines(text):
    ls = [_norm(x) for x in text.replace("\r\n", "\n").split("\n")]
    while ls and not ls[-1]:
        ls.pop()
    return ls


def _items(expected):
    """Expected lines as items: ("line", rx), ("lines",), ("group", [rx...])."""
    items, group = [], None
    for ln in _lines(expected):
        s = ln.strip()
        if group is not None:
            if s == "<end any order>":
                items.append(("group", group))
                group = None
            else:
                group.append(_line_regex(ln))
        elif s == "<lines>":
            items.append(("lines",))
        elif s == "<any order>":
            group = []
        else:
            items.append(("line", _line_regex(ln)))
    if group is not None:
        raise AssertionError("<any order> without <end any order>")
    return items


def _group_matches(rxs, lines):
    """Whether each regex matches a distinct line (bipartite matching)."""
    owner = [-1] * len(lines)

    def place(i, seen):
        for j, ln in enumerate(lines):
            if j in seen or not rxs[i].match(ln):
                continue
            seen.add(j)
            if owner[j] < 0 or place(owner[j], seen):
                owner[j] = i
                return True
        return False

    return all(place(i, set()) for i in range(len(rxs)))


def output_matches(expected, actual):
    """(True, '') if actual fits the expected block, else (False, where)."""
    items, act = _items(expected), _lines(actual)
    best = [0, 0]  # the furthest (item, line) reached, for the message

    def match(i, j):
        if i > best[0] or (i == best[0] and j > best[1]):
            best[:] = [i, j]
        if i == len(items):
            return j == len(act)
        it = items[i]
        if it[0] == "lines":
            return any(match(i + 1, k) for k in range(j, len(act) + 1))
        if it[0] == "group":
            n = len(it[1])
            return j + n <= len(act) and _group_matches(it[1], act[j:j + n]) and match(i + 1, j + n)
        return j < len(act) and bool(it[1].match(act[j])) and match(i + 1, j + 1)

    sys.setrecursionlimit(max(10000, 4 * (len(items) + len(act))))
    if match(0, 0):
        return True, ""
    exp_lines = _lines(expected)
    # report the expected line (not counting placeholders' expansion) where it stopped
    k = best[0]
    want = "<end of output>" if k >= len(items) else _describe(items, k, exp_lines)
    got = act[best[1]] if best[1] < len(act) else "<end of output>"
    return False, "  output line %d\n    expected: %s\n    got:      %s" % (best[1] + 1, want, got)


def _describe(items, k, exp_lines):
    it = items[k]
    if it[0] == "line":
        return it[1].pattern
    if it[0] == "group":
        return "one of %d lines in any order" % len(it[1])
    return "<lines>"


def script_env():
    env = dict(os.environ)
    env["PATH"] = BUILD + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["KILN_LIBRARY_PATH"] = BUILD
    env["KILN_SIMD_WIDTH"] = "16"
    env["KILN_RECORDS_PATH"] = ""
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("KILN_NUM_THREADS", None)
    env.pop("KILN_DUMP_LOWER", None)
    return env


def run_command(cmd, timeout=300):
    """Run a block's command from the repository root; (rc, output)."""
    argv = cmd.split()
    script = argv[0]
    if script.endswith(".py"):
        argv = [sys.executable, "-u"] + argv
    elif script.endswith(".sh"):
        argv = ["bash"] + argv
    else:
        raise AssertionError("don't know how to run %s (a .py or .sh script)" % script)
    p = subprocess.run(argv, cwd=ROOT, env=script_env(), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace")


def check_output(b, timeout=300):
    """'' if the command prints what the block shows, else why not."""
    rc, out = run_command(b.arg, timeout)
    if rc != 0:
        return "%s: '%s' failed (exit status %d):\n%s" % (b.where(), b.arg, rc, out)
    ok, why = output_matches(b.text, out)
    if ok:
        return ""
    return "%s: '%s' printed something else than the page shows\n%s\n--- it printed:\n%s" % (
        b.where(), b.arg, why, out)


def check_page(page):
    """Every marked block of a page; the list of problems."""
    problems = []
    for b in blocks(page):
        if b.kind == "file":
            p = check_file(b)
        elif b.kind == "excerpt":
            p = check_excerpt(b)
        else:
            p = check_output(b)
        if p:
            problems.append(p)
    return problems


def sync(page):
    """Rewrite a page's file blocks from the files and its output blocks
    that no longer match from what the commands print now (an author's
    tool: placeholders in a rewritten block must be put back by hand)."""
    with open(page, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for b in reversed(blocks(page)):
        if b.kind == "excerpt":
            continue
        if b.kind == "file":
            with open(os.path.join(ROOT, b.arg), encoding="utf-8") as f:
                new = f.read().rstrip("\n")
        else:
            rc, out = run_command(b.arg)
            ok, _ = output_matches(b.text, out)
            if ok and rc == 0:
                continue
            new = "\n".join(x.rstrip() for x in out.rstrip("\n").split("\n"))
            print("%s: output of %s rewritten (exit status %d); put placeholders back" % (
                b.where(), b.arg, rc))
        # the block starts after the marker (and blank lines) at its fence
        j = b.line
        while not FENCE.match(lines[j]):
            j += 1
        fence = FENCE.match(lines[j]).group(1)
        k = j + 1
        while lines[k].rstrip() != fence:
            k += 1
        lines[j + 1:k] = new.split("\n")
    with open(page, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    if argv[0] == "--sync":
        for page in argv[1:]:
            sync(os.path.abspath(page))
        return 0
    bad = 0
    for page in argv:
        for b in blocks(os.path.abspath(page)):
            if b.kind != "output":
                p = check_file(b) if b.kind == "file" else check_excerpt(b)
                print("%s %s %s: %s" % (b.where(), b.kind, b.arg, p or "ok"))
                bad += bool(p)
                continue
            rc, out = run_command(b.arg)
            ok, why = output_matches(b.text, out)
            print("%s output of %s: %s" % (b.where(), b.arg, "ok" if ok and rc == 0 else
                                            "exit %d, differs\n%s" % (rc, why)))
            if not ok or rc:
                bad += 1
                print(out)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
