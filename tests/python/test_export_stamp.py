"""tools/export_models.py keeps an exported model while its stamp
(NAME.export.json: the exporter's hash, the torch and torchvision versions,
the model's options) matches, and exports it again when the stamp changes,
a file is missing or --reexport asks; a file's time does not matter.

A two-layer network stands in for the torchvision models (its export takes
a fraction of a second).
"""
import importlib.util
import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture
def exporter(monkeypatch):
    spec = importlib.util.spec_from_file_location("export_models", os.path.join(ROOT, "tools", "export_models.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def tiny(name):
        assert name == "tiny"
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()).eval()

    monkeypatch.setattr(mod, "build", tiny)
    monkeypatch.setattr(mod, "input_shape", lambda name: (1, 8))
    return mod


def test_kept_while_the_stamp_matches(exporter, tmp_path):
    out = str(tmp_path)
    assert exporter.export("tiny", out)
    files = [os.path.join(out, "tiny" + ext) for ext in (".onnx", ".input.npy", ".output.npy", ".export.json")]
    assert all(os.path.exists(p) for p in files)
    # older than the exporter (a fresh checkout): kept all the same
    for p in files:
        os.utime(p, (1, 1))
    assert not exporter.export("tiny", out)
    assert exporter.export("tiny", out, force=True)  # --reexport
    assert not exporter.export("tiny", out)


def test_exported_again_when_the_stamp_changes(exporter, tmp_path, monkeypatch):
    out = str(tmp_path)
    assert exporter.export("tiny", out)
    monkeypatch.setattr(exporter, "OPSET", exporter.OPSET + 1)  # a model option
    assert exporter.export("tiny", out)
    assert not exporter.export("tiny", out)
    monkeypatch.setattr(exporter.torch, "__version__", "0.0.1")  # another torch
    assert exporter.export("tiny", out)
    os.remove(os.path.join(out, "tiny.output.npy"))  # a file missing
    assert exporter.export("tiny", out)
    with open(os.path.join(out, "tiny.export.json"), "a", encoding="utf-8") as f:
        f.write(" ")  # a stamp from another exporter
    assert exporter.export("tiny", out)
    assert not exporter.export("tiny", out)


def test_stamp_names_what_the_export_depends_on(exporter):
    import json  # pylint: disable=import-outside-toplevel
    s = json.loads(exporter.stamp("tiny"))
    assert s["torch"] == torch.__version__ and s["options"]["input_shape"] == [1, 8]
    assert s["options"]["opset"] == exporter.OPSET and len(s["exporter"]) == 64
