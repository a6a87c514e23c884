/*
 * tasks.c - tuning tasks of a model (AutoTVM's extract_from_program): the
 * optimized graph is fused as the build fuses it, and each group whose
 * anchor has a strategy with a template contributes its (template,
 * workload) pair.  Pairs are deduplicated by the workload key, keeping the
 * order of first use and the names of every fused function that uses the
 * task - what a profile row shows, so tasks and rows can be matched.
 *
 * The graph must have been optimized (alter_layout picks the NCHWc
 * convolutions); a task's workload is keyed by the NCHW shapes, so the
 * blocks alter_layout chose do not change the task.  Fallback warnings are
 * silenced while extracting.
 */
#include "../../knob/knob.h"
#include "../../topi/topi.h"
#include "build.h"
#include "strategy.h"

#include <string.h>

int graph_extract_tasks(Graph *g, int opt_level, const Target *target, DispatchContext *dc, AVec *tasks) {
  if (graph_require_static(g, "extracting tuning tasks")) return -1;
  bool gpu = target && target_is_gpu(target);
  AVec groups = {0};
  if (graph_fuse(g, opt_level, &groups)) return -1;
  DispatchContext *own = dc ? NULL : (dc = dispatch_context_new());
  bool was = graph_dispatch_set_quiet(dc, true);
  int rc = 0;
  for (int i = 0; i < groups.len && !rc; i++) {
    FusedGroup *fg = groups.data[i];
    if (!fg->anchor || !fg->anchor->op->strategy || opt_level < 1) continue;
    Strategy st;
    memset(&st, 0, sizeof st);
    if (gpu ? graph_gpu_strategy(fg->anchor, target, dc, &st) : fg->anchor->op->strategy(fg->anchor, target, dc, &st)) {
      rc = kiln_error_context("%s (node '%s')", fg->anchor->op->name, fg->anchor->name);
      break;
    }
    if (!st.task_name || !st.tmpl || !st.wl) continue;
    /* on a GPU a 3x3 stride-1 convolution is also a Winograd task (TVM's
     * tune_relay_cuda adds it beside the direct one) */
    const Template *tms[2] = {st.tmpl, gpu ? template_find(st.wl->name, "winograd", target) : NULL};
    /* (a convolution already given the Winograd weight, alter_layout_gpu.c,
     * lists its direct task first all the same) */
    if (gpu && st.tmpl == tms[1]) tms[0] = template_find(st.wl->name, "direct", target);
    for (int v = 0; v < 2 && !rc; v++) {
      const Template *tm = tms[v];
      if (!tm || (v == 1 && tm == st.tmpl)) continue;
      ConfigSpace *cs = template_space(tm, target, st.wl);
      if (!cs && v == 1) { /* not a Winograd shape */
        kiln_clear_error();
        continue;
      }
      if (!cs) {
        rc = kiln_error_context("the config space of %s", st.task_name);
        break;
      }
      GraphTask *t = NULL;
      for (int k = 0; k < tasks->len && !t; k++) {
        GraphTask *o = tasks->data[k];
        if (o->tmpl == tm && !strcmp(o->wl->key, st.wl->key)) t = o;
      }
      if (!t) {
        t = KNEW(GraphTask);
        t->tmpl = tm;
        t->wl = st.wl;
        t->desc = st.task_desc ? st.task_desc : wl_describe(st.wl);
        t->space_size = space_size(cs);
        t->flops = wl_flops(st.wl);
        av_push(tasks, t);
      }
      av_push(&t->users, (void *)fg->name);
    }
  }
  graph_dispatch_set_quiet(dc, was);
  dispatch_context_free(own);
  return rc;
}
