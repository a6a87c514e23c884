/*
 * template.c - the table of schedule templates (an explicit list, no
 * self-registration) and lookup by task name.
 */
#include "autotune.h"

#include <stdlib.h>
#include <string.h>

#include "../topi/topi.h"

static const Template *const templates[] = {
    &topi_x86_conv2d_NCHWc_template,
    &topi_x86_conv2d_winograd_NCHWc_template,
    &topi_x86_depthwise_conv2d_NCHWc_template,
    &topi_x86_dense_nopack_template,
    &topi_x86_dense_pack_template,
};

#define NBUILTIN ((int)(sizeof templates / sizeof templates[0]))
#define MAX_EXTRA 16

/* Templates added by autotune_add_template (tests, embedders). */
static const Template *extra[MAX_EXTRA];
static int nextra;

int autotune_add_template(const Template *tm) {
  for (int i = 0; i < nextra; i++)
    if (extra[i] == tm) return 0;
  if (nextra == MAX_EXTRA) return kiln_set_error("autotune_add_template: at most %d extra templates", MAX_EXTRA);
  extra[nextra++] = tm;
  return 0;
}

void autotune_remove_template(const Template *tm) {
  for (int i = 0; i < nextra; i++)
    if (extra[i] == tm) {
      memmove(&extra[i], &extra[i + 1], sizeof(extra[0]) * (size_t)(nextra - i - 1));
      nextra--;
      return;
    }
}

int autotune_ntemplates(void) { return NBUILTIN + nextra; }

const Template *autotune_template_at(int i) {
  if (i >= 0 && i < NBUILTIN) return templates[i];
  return i >= NBUILTIN && i < NBUILTIN + nextra ? extra[i - NBUILTIN] : NULL;
}

const Template *autotune_template(const char *name) {
  int n = autotune_ntemplates();
  for (int i = 0; i < n; i++)
    if (name && !strcmp(autotune_template_at(i)->name, name)) return autotune_template_at(i);
  StrBuf sb = {0};
  for (int i = 0; i < n; i++) sb_printf(&sb, "%s%s", i ? ", " : "", autotune_template_at(i)->name);
  kiln_set_error("no schedule template named '%s' (known: %s)", name ? name : "(null)", sb.data ? sb.data : "");
  sb_free(&sb);
  return NULL;
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
