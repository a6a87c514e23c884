/*
 * template.c - what every template shares: its config space, its fallback
 * config (with its index in the space), and the task as a standalone
 * function (template_instantiate), written once for all templates.  The
 * table of templates is src/topi/templates.c.
 */
#include "knob.h"

#include <stdlib.h>
#include <string.h>

bool template_serves(const Template *tm, const Target *t) { return tm && t && tm->key && target_has_key(t, tm->key); }

int template_instantiate(const Template *tm, const Target *t, const Workload *wl, const ConfigEntity *cfg, Schedule **s,
                         int *nargs, Tensor ***args) {
  if (tm->instantiate) return tm->instantiate(t, wl, cfg, s, nargs, args);
  if (!tm->placeholders || !tm->compute || !tm->schedule)
    return kiln_set_error("%s: the template cannot be instantiated (no placeholders, compute or schedule)", tm->name);
  if (tm->check && tm->check(t, cfg, wl)) return -1;
  int nin = 0;
  Tensor **in = NULL;
  if (tm->placeholders(t, wl, cfg, &nin, &in)) return -1;
  Tensor *out = tm->compute(t, wl, cfg, nin, in);
  if (!out) return -1;
  *s = te_create_schedule(1, &out);
  if (!*s || tm->schedule(t, *s, cfg, out, 1, &out)) return -1;
  *nargs = nin + 1;
  *args = KNEWN(Tensor *, nin + 1);
  for (int i = 0; i < nin; i++) (*args)[i] = in[i];
  (*args)[nin] = out;
  return 0;
}

ConfigSpace *template_space(const Template *tm, const Target *t, const Workload *wl) {
  ConfigSpace *cs = KNEW(ConfigSpace);
  space_init(cs);
  if (tm->define_space(t, cs, wl)) return NULL;
  return cs;
}

ConfigEntity *template_fallback(const Template *tm, const Target *t, const Workload *wl) {
  ConfigEntity *cfg = config_new();
  if (tm->fallback(t, cfg, wl)) return NULL;
  cfg->is_fallback = true;
  ConfigSpace *cs = template_space(tm, t, wl);
  if (cs) {
    /* order the entities as the space does, and find the index */
    ConfigEntity *ordered = config_new();
    bool all = true;
    for (int i = 0; i < cs->nknobs; i++) {
      const KnobEntity *e = config_get(cfg, cs->knobs[i].name);
      if (e) config_set(ordered, e);
      else all = false;
    }
    if (all && ordered->n == cfg->n) {
      ordered->is_fallback = true;
      int64_t idx = space_index_of(cs, ordered);
      ordered->index = idx;
      kiln_clear_error();
      return ordered;
    }
  }
  kiln_clear_error();
  return cfg;
}
