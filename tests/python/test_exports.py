"""What the shared libraries export: exactly the public C API.

Kiln builds with -fvisibility=hidden, and include/kiln/*.h marks each public
function KILN_API.  libkiln_runtime.so must export the functions
include/kiln/runtime.h declares and nothing else; libkiln.so the ones
include/kiln/kiln.h adds (it takes the runtime's from libkiln_runtime.so).
Everything the Python package, the tests and the benchmarks look up by name
through ctypes must be among them.
"""
import os
import re
import shutil
import subprocess

import pytest

from kiln import _ffi

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.dirname(_ffi.LIB_PATH)


def _exported(lib):
    nm = shutil.which("nm")
    assert nm, "nm (binutils) is needed to read the libraries' symbol tables"
    path = os.path.join(BUILD, lib)
    out = subprocess.run([nm, "-D", "--defined-only", path], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        # "ADDRESS TYPE NAME"; the linker's own markers are not Kiln's
        if len(parts) == 3 and parts[2] not in ("_init", "_fini", "__bss_start", "_edata", "_end"):
            names.add(parts[2].split("@")[0])
    return names


def _declared_in(text):
    """The functions a header text declares (comments and preprocessor lines
    stripped), and those of them that carry KILN_API."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"#[^\n]*", " ", text)
    declared, marked = set(), set()
    for stmt in text.split(";"):
        stmt = re.split(r"[{}]", stmt)[-1]  # what follows a struct body or extern "C" {
        m = re.match(r"\s*(KILN_API\s+)?[\w\s*]*?\b(kiln_\w+)\s*\(", stmt)
        if m and "typedef" not in stmt:
            declared.add(m.group(2))
            if m.group(1):
                marked.add(m.group(2))
    return declared, marked


def _declared(header):
    return _declared_in(open(os.path.join(ROOT, "include", "kiln", header)).read())


def _looked_up(paths, pattern):
    names = set()
    for p in paths:
        full = os.path.join(ROOT, p)
        files = [full] if os.path.isfile(full) else [
            os.path.join(d, f) for d, _, fs in os.walk(full) for f in fs if f.endswith(".py")]
        for f in files:
            names |= set(re.findall(pattern, open(f).read()))
    return names


def test_public_headers_mark_every_function():
    for header in ("runtime.h", "kiln.h"):
        declared, marked = _declared(header)
        assert declared, header
        assert declared == marked, "%s: declared without KILN_API (so not exported): %s" % (
            header, sorted(declared - marked))


def test_runtime_exports_exactly_runtime_h():
    declared, _ = _declared("runtime.h")
    exported = _exported("libkiln_runtime.so")
    assert exported - declared == set(), "libkiln_runtime.so exports internals"
    assert declared - exported == set(), "runtime.h functions libkiln_runtime.so lacks"
    assert len(exported) == len(declared) > 50


def test_compiler_exports_exactly_kiln_h():
    declared, _ = _declared("kiln.h")
    exported = _exported("libkiln.so")
    assert exported == declared == {"kiln_init"}, sorted(exported ^ declared)


def test_ctypes_names_are_exported():
    """Every kiln_* name python/kiln and the tests look up through libkiln.so,
    and those the benchmarks look up through libkiln_runtime.so."""
    public = _exported("libkiln.so") | _exported("libkiln_runtime.so")
    via_kiln = _looked_up(["python/kiln", "tests/python"],
                          r"""(?:_proto\(\s*["']|_LIB\.)(kiln_\w+)""")
    assert len(via_kiln) > 30
    assert via_kiln - public == set()
    via_runtime = _looked_up(["bench/workers.py", "bench/load.py"], r"\b(?:rt|lib)\.(kiln_\w+)")
    assert via_runtime
    assert via_runtime - _exported("libkiln_runtime.so") == set()


def test_the_check_can_fail():
    """The header reader sees a declaration that lacks the mark."""
    text = open(os.path.join(ROOT, "include", "kiln", "runtime.h")).read()
    assert "KILN_API int kiln_func_free(" in text
    declared, marked = _declared_in(text.replace("KILN_API int kiln_func_free(",
                                                 "int kiln_func_free("))
    assert declared - marked == {"kiln_func_free"}
