"""The build configuration (TVM's tvm.transform.PassContext).

    with kiln.transform.PassContext(opt_level=3):
        lib = kiln.build(mod, target="cpu", params=params)

``kiln.build`` of a model reads the innermost context's opt_level (0-3;
TVM's default, 2, outside any context).  ``build_config`` is the old name
(relay.build_config).  Kiln's pass list is fixed per level (see
src/graph/pipeline.c: fold_constant from 1, fuse_layer_norm, fuse_gelu, fuse_silu, fold_scale_axis, sink_reshape
and CSE from 2,
alter_layout from 3), so required_pass / disabled_pass / config, which
TVM uses to switch single passes, are refused rather than ignored.
"""
import threading

from ._ffi import KilnError, KilnTypeError

_STACK = threading.local()


def _stack():
    s = getattr(_STACK, "items", None)
    if s is None:
        s = _STACK.items = []
    return s


# The config keys a PassContext takes, with their values (TVM's
# PassContext(config=...)).  "kiln.precision": "bf16" is `kiln compile
# --precision bf16` (docs/bf16.md): dense layers with bfloat16 weights on
# AVX512-BF16, float32 accumulation and outputs.
CONFIG_KEYS = {"kiln.precision": ("fp32", "bf16")}


def current_precision():
    """The current PassContext's "kiln.precision" (None when not set)."""
    return PassContext.current().config.get("kiln.precision")


class PassContext:
    """A build configuration, used as a context manager."""

    def __init__(self, opt_level=2, required_pass=None, disabled_pass=None, instruments=None,
                 config=None):
        if isinstance(opt_level, bool) or not isinstance(opt_level, int):
            raise KilnTypeError("PassContext: opt_level must be an int, got %r" % (opt_level,))
        if not 0 <= opt_level <= 3:
            raise KilnError("PassContext: opt_level must be 0 to 3, got %d" % opt_level)
        for what, v in (("required_pass", required_pass), ("disabled_pass", disabled_pass),
                        ("instruments", instruments)):
            if v:
                raise KilnError("PassContext: %s is not supported by Kiln (its passes are chosen by "
                                "opt_level alone), got %r" % (what, v))
        config = dict(config or {})
        for key, v in config.items():
            if key not in CONFIG_KEYS:
                raise KilnError("PassContext: config key %r is not supported by Kiln (known: %s)"
                                % (key, ", ".join(sorted(CONFIG_KEYS))))
            if v not in CONFIG_KEYS[key]:
                raise KilnError("PassContext: config %r must be one of %s, got %r"
                                % (key, ", ".join(CONFIG_KEYS[key]), v))
        self.opt_level = opt_level
        self.required_pass = []
        self.disabled_pass = []
        self.config = config

    def __enter__(self):
        _stack().append(self)
        return self

    def __exit__(self, *exc):
        s = _stack()
        if s and s[-1] is self:
            s.pop()

    @staticmethod
    def current():
        """The innermost context of this thread (a default one outside)."""
        s = _stack()
        return s[-1] if s else PassContext()

    def __repr__(self):
        if self.config:
            return "PassContext(opt_level=%d, config=%r)" % (self.opt_level, self.config)
        return "PassContext(opt_level=%d)" % self.opt_level


def build_config(opt_level=2, **kwargs):
    """The old name of PassContext (relay.build_config)."""
    return PassContext(opt_level=opt_level, **kwargs)


__all__ = ["PassContext", "build_config"]
