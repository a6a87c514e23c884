/*
 * templates.c - the table of tunable templates, beside them: one row per
 * template (an explicit list, no self-registration), looked up by task
 * name.  A new template is one more row; the strategies use a template for
 * a target only when template_serves(tm, target) (the target has the
 * template's key).
 */
#include <string.h>

#include "../knob/knob.h"
#include "topi.h"

static const Template *const templates[] = {
    /* x86/: NCHW[x]c convolutions, depthwise, grouped, dense, batch_matmul (key "cpu") */
    &topi_x86_conv2d_NCHWc_template,
    &topi_x86_conv2d_winograd_NCHWc_template,
    &topi_x86_depthwise_conv2d_NCHWc_template,
    &topi_x86_group_conv2d_NCHWc_template,
    &topi_x86_dense_nopack_template,
    &topi_x86_dense_pack_template,
    &topi_x86_batch_matmul_template,
    &topi_x86_dense_pack_bf16_template, /* --precision bf16 (docs/bf16.md) */
    &topi_x86_conv2d_NCHWc_bf16_template,
    &topi_x86_conv2d_winograd_NCHWc_bf16_template,
    &topi_x86_dense_vnni_template, /* int8 layers of quantized models (docs/int8.md) */
    &topi_x86_conv2d_NCHWc_int8_template,
    /* cuda/: TVM 0.6's CUDA templates, TopHub's tasks (key "gpu") */
    &topi_cuda_conv2d_direct_template,
    &topi_cuda_conv2d_winograd_template,
    &topi_cuda_depthwise_conv2d_template,
    &topi_cuda_dense_template,
};

#define NBUILTIN ((int)(sizeof templates / sizeof templates[0]))
#define MAX_EXTRA 16

/* Templates added by template_register (tests, embedders). */
static const Template *extra[MAX_EXTRA];
static int nextra;

int template_register(const Template *tm) {
  for (int i = 0; i < nextra; i++)
    if (extra[i] == tm) return 0;
  if (nextra == MAX_EXTRA) return kiln_set_error("template_register: at most %d extra templates", MAX_EXTRA);
  extra[nextra++] = tm;
  return 0;
}

void template_unregister(const Template *tm) {
  for (int i = 0; i < nextra; i++)
    if (extra[i] == tm) {
      memmove(&extra[i], &extra[i + 1], sizeof(extra[0]) * (size_t)(nextra - i - 1));
      nextra--;
      return;
    }
}

int template_count(void) { return NBUILTIN + nextra; }

const Template *template_at(int i) {
  if (i >= 0 && i < NBUILTIN) return templates[i];
  return i >= NBUILTIN && i < NBUILTIN + nextra ? extra[i - NBUILTIN] : NULL;
}

const Template *template_find(const char *name, const char *template_key, const Target *t) {
  int n = template_count();
  for (int i = 0; i < n; i++) {
    const Template *tm = template_at(i);
    if (!name || strcmp(tm->name, name)) continue;
    if (t && !template_serves(tm, t)) continue;
    if (template_key && tm->template_key && strcmp(tm->template_key, template_key)) continue;
    return tm;
  }
  return NULL;
}

const Template *template_lookup(const char *name) {
  int n = template_count();
  for (int i = 0; i < n; i++)
    if (name && !strcmp(template_at(i)->name, name)) return template_at(i);
  StrBuf sb = {0};
  for (int i = 0; i < n; i++) sb_printf(&sb, "%s%s", i ? ", " : "", template_at(i)->name);
  kiln_set_error("no schedule template named '%s' (known: %s)", name ? name : "(null)", sb.data ? sb.data : "");
  sb_free(&sb);
  return NULL;
}

