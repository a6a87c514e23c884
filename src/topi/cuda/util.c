/*
 * cuda/util.c - what the CUDA templates (conv2d direct and Winograd,
 * depthwise, dense; TVM 0.6's topi/cuda) share: checking and applying a
 * split knob as TVM's SplitEntity.apply does, the two ways TVM's
 * templates spread a shared-memory fetch over the block's threads, the
 * fused group's epilogue (TVM's traverse_inline: every injective stage is
 * inlined into the group's output, the anchor becomes a local
 * accumulator), and the unroll pragmas.
 *
 * The templates serve both GPU targets (key "gpu"): cuda, and opencl,
 * where POCL runs them on the CPU in the tests.
 */
#include "../../knob/knob.h"
#include "../topi.h"

#include <string.h>

int cuda_check_split(const ConfigEntity *cfg, const char *knob, int nparts, int64_t extent, const char *what) {
  /* the check is the same for every backend: the parts divide the extent */
  return x86_check_split(cfg, knob, nparts, extent, what, true);
}

int cuda_apply_split(Stage *st, IterVar *ax, const ConfigEntity *cfg, const char *knob, int nparts, IterVar **out) {
  int n;
  const int64_t *sz = cfg_split(cfg, knob, &n);
  if (!sz) return -1;
  if (n != nparts) return kiln_set_error("config knob '%s': %d parts, expected %d", knob, n, nparts);
  for (int i = 1; i < n; i++) {
    int64_t f = 1;
    for (int j = i; j < n; j++) f *= sz[j];
    IterVar *o, *in;
    if (stage_split(st, ax, ir_i32(f), &o, &in)) return -1;
    out[i - 1] = o;
    ax = in;
  }
  out[n - 1] = ax;
  return 0;
}

int64_t cuda_split_part(const ConfigEntity *cfg, const char *knob, int part) {
  int n;
  const int64_t *sz = cfg_split(cfg, knob, &n);
  if (!sz) return -1;
  if (part < 0 || part >= n) return kiln_set_error("config knob '%s': no part %d", knob, part), -1;
  return sz[part];
}

int cuda_tile_bind(Stage *st, IterVar *scope, int naxes, IterVar *const *const axes[]) {
  static const char *const blocks[3] = {"blockIdx.z", "blockIdx.y", "blockIdx.x"};
  static const char *const threads[3] = {"threadIdx.z", "threadIdx.y", "threadIdx.x"};
  if (naxes < 2 || naxes > 3) return kiln_set_error("cuda_tile_bind: %d axes (expected 2 or 3)", naxes);
  IterVar *order[13];
  int n = 0;
  if (scope) order[n++] = scope;
  for (int level = 0; level < 4; level++)
    for (int i = 0; i < naxes; i++) order[n++] = axes[i][level];
  if (stage_reorder(st, n, order)) return -1;
  for (int level = 0; level < 3; level++)
    for (int i = 0; i < naxes; i++) {
      int dim = 3 - naxes + i;
      const char *tag = level == 0 ? blocks[dim] : level == 1 ? "vthread" : threads[dim];
      if (stage_bind(st, axes[i][level], tag)) return -1;
    }
  return 0;
}

static int fuse_all(Stage *st, IterVar **fused) {
  IterVar *f = stage_axis(st, 0);
  for (int d = 1; d < st->op->ndim; d++)
    if (stage_fuse(st, f, stage_axis(st, d), &f)) return -1;
  *fused = f;
  return 0;
}

/* threads[] = {z, y, x} extents */
int cuda_coop_fetch(Schedule *s, Tensor *load, const int64_t threads[3], bool outer_first) {
  static const char *const tags[3] = {"threadIdx.z", "threadIdx.y", "threadIdx.x"};
  Stage *st = sch_stage(s, load);
  IterVar *fused, *t[3];
  if (!st || fuse_all(st, &fused)) return -1;
  if (outer_first) {
    /* conv2d direct: tz, ty, tx = nparts splits from the outside */
    for (int i = 0; i < 3; i++)
      if (stage_split_nparts(st, fused, ir_i32(threads[i]), &t[i], &fused)) return -1;
  } else {
    /* depthwise, Winograd: tx, ty, tz = factor splits from the inside */
    for (int i = 2; i >= 0; i--)
      if (stage_split(st, fused, ir_i32(threads[i]), &fused, &t[i])) return -1;
  }
  for (int i = 0; i < 3; i++)
    if (stage_bind(st, t[i], tags[i])) return -1;
  return 0;
}

int cuda_group_epilogue(Schedule *s, Tensor *anchor, Tensor *out, int nkeep, Tensor **keep, Tensor **output,
                        Tensor **ol) {
  Stage *as = sch_stage(s, anchor), *os = sch_stage(s, out);
  if (!as || !os) return -1;
  if (as != os && (out->ndim != anchor->ndim))
    return kiln_set_error("%s: the group's output '%s' has rank %d, the anchor '%s' %d; only an elementwise "
                          "epilogue can be fused into the kernel",
                          anchor->tag ? anchor->tag : anchor->name, out->name, out->ndim, anchor->name, anchor->ndim);
  for (int i = 0; i < s->stages.len; i++) {
    Stage *st = s->stages.data[i];
    if (st == as || st == os || st->op->kind != TE_COMPUTE) continue;
    bool kept = false;
    for (int k = 0; k < nkeep && !kept; k++) kept = sch_stage(s, keep[k]) == st;
    if (kept) continue;
    if (st->op->nreduce)
      return kiln_set_error("%s: the fused group has a second reduction '%s'; it cannot be inlined into the kernel",
                            anchor->tag ? anchor->tag : anchor->name, st->op->name);
    if (stage_compute_inline(st)) return -1;
  }
  if (as == os) {
    *output = anchor;
    *ol = sch_cache_write(s, anchor, "local");
    return *ol ? 0 : -1;
  }
  if (stage_set_scope(as, "local")) return -1;
  *output = out;
  *ol = anchor;
  return 0;
}

int cuda_unroll_pragmas(Stage *st, IterVar *scope, const ConfigEntity *cfg) {
  int64_t step = cfg_other_int(cfg, "auto_unroll_max_step", 0), expl = cfg_other_int(cfg, "unroll_explicit", 1);
  if (stage_pragma(st, scope, "auto_unroll_max_step", ir_i32(step))) return -1;
  return stage_pragma(st, scope, "unroll_explicit", ir_i32(expl));
}

int cuda_check_other(const ConfigEntity *cfg, const char *knob, int n, const int64_t *allowed) {
  const KnobEntity *e = config_get(cfg, knob);
  if (!e) return kiln_set_error("config has no knob '%s'", knob);
  if (e->kind != KNOB_OTHER || (e->val.kind != OPT_INT && e->val.kind != OPT_BOOL))
    return kiln_set_error("config knob '%s': expected an integer option", knob);
  for (int i = 0; i < n; i++)
    if (e->val.i == allowed[i]) return 0;
  StrBuf sb = {0};
  for (int i = 0; i < n; i++) sb_printf(&sb, "%s%lld", i ? ", " : "", (long long)allowed[i]);
  int rc = kiln_set_error("config knob '%s' is %lld, expected one of %s", knob, (long long)e->val.i, sb.data);
  sb_free(&sb);
  return rc;
}

int cuda_define_unroll_knobs(ConfigSpace *cs, int64_t mid) {
  OptVal steps[3] = {opt_int(0), opt_int(mid), opt_int(1500)};
  OptVal expl[2] = {opt_int(0), opt_int(1)};
  if (space_define_knob(cs, "auto_unroll_max_step", 3, steps)) return -1;
  return space_define_knob(cs, "unroll_explicit", 2, expl);
}

int cuda_check_unroll_knobs(const ConfigEntity *cfg, int64_t mid) {
  if (cuda_check_other(cfg, "auto_unroll_max_step", 3, (int64_t[]){0, mid, 1500})) return -1;
  return cuda_check_other(cfg, "unroll_explicit", 2, (int64_t[]){0, 1});
}

int64_t cuda_threads_of(const ConfigEntity *cfg, int n, const char *const *knobs) {
  int64_t t = 1;
  for (int i = 0; i < n; i++) {
    int64_t p = cuda_split_part(cfg, knobs[i], 2);
    if (p < 1) return -1;
    t *= p;
  }
  return t;
}
