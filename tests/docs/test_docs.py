"""The documentation against the code (docs/, README.md):

- every tutorial script runs and prints what its page shows, every file a
  page shows is the file as it is, every excerpt of source code is still in
  its file (doccheck.py explains the markers and placeholders);
- the C examples build with the project's headers and libraries and run
  (their pages' scripts compile them with cc);
- the command reference (docs/cli.md) lists exactly the subcommands and
  options of `kiln --help` and `kiln <command> --help`;
- the install page lists the packages CI installs, and relative links
  between pages lead to files that exist.
"""
import glob
import os
import re
import subprocess

import pytest

import doccheck

ROOT = doccheck.ROOT
DOCS = os.path.join(ROOT, "docs")
KILN = os.path.join(doccheck.BUILD, "kiln")


def pages():
    return sorted(glob.glob(os.path.join(DOCS, "**", "*.md"), recursive=True))


def marked_pages():
    return [p for p in pages() if doccheck.blocks(p)]


@pytest.mark.parametrize("page", marked_pages(), ids=lambda p: os.path.relpath(p, DOCS))
def test_page(page):
    problems = doccheck.check_page(page)
    assert not problems, "\n\n".join(problems)


def test_every_tutorial_runs_its_scripts():
    """Each tutorial page shows and runs a script, and every script under
    docs/tutorials is shown and run by a page."""
    shown, run = set(), set()
    tutorials = sorted(glob.glob(os.path.join(DOCS, "tutorials", "[0-9][0-9]_*.md")))
    assert len(tutorials) >= 8
    for page in tutorials:
        bs = doccheck.blocks(page)
        outs = [b.arg.split()[0] for b in bs if b.kind == "output"]
        assert outs, "%s runs no script" % os.path.relpath(page, ROOT)
        run.update(outs)
        shown.update(b.arg for b in bs if b.kind == "file")
    for script in glob.glob(os.path.join(DOCS, "tutorials", "*.py")) + \
            glob.glob(os.path.join(DOCS, "tutorials", "*.sh")):
        rel = os.path.relpath(script, ROOT)
        assert rel in shown, "%s is not shown by any tutorial page" % rel
        assert rel in run, "%s is not run by any tutorial page" % rel


# ---- the command reference ----

def _help(*args):
    p = subprocess.run([KILN, *args, "--help"], capture_output=True, text=True, check=True)
    return p.stdout


def _norm(s):
    return re.sub(r"\s+", " ", s.strip())


def _help_options(text):
    """The option heads ("-o, --output MODEL.so") of a --help text."""
    heads = []
    in_opts = False
    for line in text.split("\n"):
        if line.strip() == "options:":
            in_opts = True
            continue
        if in_opts and line.startswith("  ") and line.strip().startswith("-"):
            head = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
            assert len(head.split()) <= 3, "cannot read the option head of %r" % line
            heads.append(_norm(head))
    return heads


def _help_commands(text):
    cmds, flags, in_cmds = [], [], False
    for line in text.split("\n"):
        if line.strip() == "commands:":
            in_cmds = True
            continue
        m = re.match(r"^  (\S+)\s{2,}\S", line)
        if in_cmds and m:
            (flags if m.group(1).startswith("-") else cmds).append(m.group(1))
    return cmds, flags


def _reference():
    """docs/cli.md as {section: (usage, [first cells of its table rows])}."""
    with open(os.path.join(DOCS, "cli.md"), encoding="utf-8") as f:
        text = f.read()
    sections = {}
    for m in re.finditer(r"^## kiln( \S+)?\n(.*?)(?=^## |\Z)", text, re.M | re.S):
        name = (m.group(1) or "").strip()
        body = m.group(2)
        usage = re.search(r"^\s*(usage: kiln.*)$", body, re.M)
        rows = re.findall(r"^\| `([^`]+)` \|", body, re.M)
        sections[name] = (usage.group(1).strip() if usage else None, [_norm(r) for r in rows])
    return sections


def test_cli_reference_matches_help():
    ref = _reference()
    assert "" in ref, "docs/cli.md has no '## kiln' section"
    top = _help()
    cmds, flags = _help_commands(top)
    assert cmds, "could not read the commands of kiln --help"
    usage, rows = ref[""]
    assert usage == top.split("\n")[0].strip()
    assert sorted(r for r in rows if not r.startswith("-")) == sorted(cmds), \
        "the commands in docs/cli.md's '## kiln' table differ from kiln --help"
    assert sorted(r for r in rows if r.startswith("-")) == sorted(flags)
    assert sorted(k for k in ref if k) == sorted(cmds), \
        "docs/cli.md needs one '## kiln <command>' section per command of kiln --help"
    problems = []
    for cmd in cmds:
        text = _help(cmd)
        usage, rows = ref[cmd]
        if usage != text.split("\n")[0].strip():
            problems.append("kiln %s: usage in docs %r, in --help %r" % (cmd, usage, text.split("\n")[0]))
        have, doc = _help_options(text), rows
        for h in have:
            if h not in doc:
                problems.append("kiln %s: option '%s' is missing from docs/cli.md" % (cmd, h))
        for d in doc:
            if d not in have:
                problems.append("kiln %s: docs/cli.md documents '%s', which kiln %s --help does not have"
                                % (cmd, d, cmd))
    assert not problems, "\n".join(problems)


# ---- install page, links ----

def _apt_packages(text):
    """The packages of the first 'apt-get install' command in text,
    following its backslash-continued lines."""
    start = text.find("apt-get install")
    assert start >= 0, "no apt-get install command"
    words = []
    for line in text[start:].splitlines():
        cont = line.rstrip().endswith("\\")
        words += line.rstrip().rstrip("\\").split()
        if not cont:
            break
    return sorted(w for w in words[2:] if not w.startswith("-") and w not in (">/dev/null",))


def test_install_lists_the_ci_packages():
    with open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8") as f:
        ci = _apt_packages(f.read())
    for page in (os.path.join(DOCS, "install.md"), os.path.join(ROOT, "README.md")):
        with open(page, encoding="utf-8") as f:
            doc = _apt_packages(f.read())
        assert doc == ci, "%s installs %s, .ci/run %s" % (os.path.relpath(page, ROOT), doc, ci)


def test_relative_links_resolve():
    bad = []
    files = pages() + [os.path.join(ROOT, "README.md")]
    for page in files:
        with open(page, encoding="utf-8") as f:
            text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
        text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = os.path.normpath(os.path.join(os.path.dirname(page), target.split("#")[0]))
            if not os.path.exists(path):
                bad.append("%s: %s" % (os.path.relpath(page, ROOT), target))
    assert not bad, "broken links:\n" + "\n".join(bad)


# ---- API pages ----

def test_python_api_names_exist():
    """Every `kiln.xxx` name on the Python API page resolves."""
    import importlib
    import sys
    sys.path.insert(0, os.path.join(ROOT, "python"))
    kiln = importlib.import_module("kiln")
    with open(os.path.join(DOCS, "python_api.md"), encoding="utf-8") as f:
        text = f.read()
    missing = []
    for name in sorted(set(re.findall(r"`(kiln(?:\.[A-Za-z_]\w*)+)", text))):
        obj = kiln
        for part in name.split(".")[1:]:
            if not hasattr(obj, part):
                missing.append(name)
                break
            obj = getattr(obj, part)
    assert not missing, "docs/python_api.md names what the package lacks: %s" % ", ".join(missing)


def _c_names(text):
    return set(re.findall(r"\b(kiln_[a-z0-9_]+)\s*\(", text))


def test_c_api_page_covers_the_headers():
    """docs/c_api.md names every function of the public headers, and no
    kiln_ function that does not exist."""
    decl = set()
    for h in ("runtime.h", "kiln.h"):
        with open(os.path.join(ROOT, "include", "kiln", h), encoding="utf-8") as f:
            decl |= _c_names(f.read())
    with open(os.path.join(DOCS, "c_api.md"), encoding="utf-8") as f:
        page = f.read()
    named = set(re.findall(r"`(kiln_[a-z0-9_]+)", page)) | _c_names(page)
    assert not sorted(decl - named), "docs/c_api.md does not mention %s" % ", ".join(sorted(decl - named))
    internal = set()  # the page may also name the layers' internal functions
    for h in glob.glob(os.path.join(ROOT, "src", "**", "*.h"), recursive=True):
        with open(h, encoding="utf-8") as f:
            internal |= _c_names(f.read())
    unknown = sorted(named - decl - internal)
    assert not unknown, "docs/c_api.md names unknown functions %s" % ", ".join(unknown)


# ---- the command examples run as printed ----

def _command_block(path, heading):
    """The indented `kiln ...` lines of the first code block after a line
    starting with heading."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start = text.index(heading)
    lines, seen = [], False
    for line in text[start:].split("\n")[1:]:
        if line.startswith("    kiln "):
            lines.append(line.strip())
            seen = True
        elif seen and line.strip():
            break
    assert lines, "no kiln commands after %r in %s" % (heading, path)
    return lines


@pytest.mark.parametrize("page,heading", [("README.md", "## Using Kiln"), ("docs/cli.md", "The typical session")])
def test_command_examples_run_as_printed(page, heading, tmp_path):
    """Each line runs with bash as printed, from a folder that looks like
    the repository root (models/ is there), with build/ first on PATH and
    the shipped records on: it succeeds and warns of nothing."""
    os.symlink(os.path.join(ROOT, "models"), tmp_path / "models")
    env = dict(os.environ, PATH=doccheck.BUILD + os.pathsep + os.environ.get("PATH", ""))
    env.pop("KILN_RECORDS_PATH", None)
    shipped = _shipped_records_for_this_machine()
    for cmd in _command_block(os.path.join(ROOT, page), heading):
        p = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, "%s: `%s` failed (%d):\n%s%s" % (page, cmd, p.returncode, p.stdout, p.stderr)
        # the shipped records cover the digits model: no fallback warnings
        # where they are for this machine's class
        if shipped:
            assert "warning" not in p.stderr, "%s: `%s` warns:\n%s" % (page, cmd, p.stderr)


def _shipped_records_for_this_machine():
    """Whether records/ has records of this machine's target."""
    files = glob.glob(os.path.join(ROOT, "records", "*.json"))
    out = subprocess.run([KILN, "records", *files], capture_output=True, text=True, check=True).stdout
    target = re.search(r"this machine's target: (.*)$", out, re.M).group(1).strip()
    return any('"%s"' % target in open(f).read() for f in files)


def test_quickstart_compile_has_shipped_records():
    """Every tuning task of what tools/quickstart.sh compiles (the digits
    model, batch 16) has a shipped record, so it prints no "no tuning
    record" warnings where the records are for this machine's class."""
    with open(os.path.join(ROOT, "tools", "quickstart.sh"), encoding="utf-8") as f:
        shapes = re.search(r'--input-shapes "([^"]+)"', f.read()).group(1)
    tasks = subprocess.run([KILN, "tasks", os.path.join(ROOT, "models", "digits", "digits.onnx"),
                            "--input-shapes", shapes], capture_output=True, text=True, check=True).stdout
    workloads = re.findall(r"workload: (\[.*?\](?: s\d+ p\d+)?),", tasks)
    assert len(workloads) == 4, tasks
    summary = subprocess.run([KILN, "records", *glob.glob(os.path.join(ROOT, "records", "*.json"))],
                             capture_output=True, text=True, check=True).stdout
    missing = [w for w in workloads if w not in summary]
    assert not missing, "no shipped record for %s" % missing


@pytest.mark.parametrize("width,cls", [(4, "x86_sse"), (8, "x86_avx2"), (16, "x86_avx512")])
def test_shipped_records_for_every_x86_class(tmp_path, width, cls):
    """records/ has a file for each x86 class (SSE, AVX2, AVX-512), and the
    quick start's compile (digits, batch 16) gets no "no tuning record"
    warning on a machine of that class ($KILN_SIMD_WIDTH picks the class,
    as on such a machine).  The files also cover batch 1 (the README's
    examples, run as printed on this machine's class above)."""
    assert os.path.exists(os.path.join(ROOT, "records", cls + ".json"))
    with open(os.path.join(ROOT, "tools", "quickstart.sh"), encoding="utf-8") as f:
        shapes = re.search(r'--input-shapes "([^"]+)"', f.read()).group(1)
    p = subprocess.run([KILN, "compile", os.path.join(ROOT, "models", "digits", "digits.onnx"), "-o",
                        str(tmp_path / "digits.so"), "--input-shapes", shapes],
                       capture_output=True, text=True, env=dict(os.environ, KILN_SIMD_WIDTH=str(width)), timeout=300)
    assert p.returncode == 0 and "warning" not in p.stderr, p.stderr
