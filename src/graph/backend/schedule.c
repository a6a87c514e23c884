/*
 * schedule.c - scheduling a fused group whose anchor's strategy chose a
 * tunable template: the template's schedule with the chosen config, given
 * the group's output so the elementwise epilogue is computed inside the
 * anchor's register block.  Groups without a template use the operator
 * library's generic schedules (build.c).
 */
#include "../../knob/knob.h"
#include "../../topi/topi.h"
#include "build.h"

int graph_schedule_anchor(Schedule *s, Tensor *out, Tensor *anchor, const Strategy *st) {
  const Template *tm = st->tmpl;
  if (!anchor) return kiln_set_error("%s: the group's anchor has no tensor", tm->name);
  return tm->schedule(st->target, s, st->config, anchor, 1, &out);
}
