/*
 * onnx_version.c - an operator's version at a model's opset, from the
 * generated history in onnx_schema.c (see onnx_schema.h).
 */
#include "onnx_schema.h"

#include <string.h>

#include "../../base/base.h"

const char *onnx_domain_canonical(const char *domain) {
  return !domain || !strcmp(domain, "ai.onnx") ? "" : domain;
}

int onnx_schema_newest_opset(const char *domain) {
  domain = onnx_domain_canonical(domain);
  for (const OnnxSchemaDomain *d = onnx_schema_domains; d->domain; d++)
    if (!strcmp(d->domain, domain)) return d->newest_opset;
  return 0;
}

const OnnxSchemaOp *onnx_schema_find(const char *domain, const char *op) {
  domain = onnx_domain_canonical(domain);
  /* a few hundred rows, looked up once per node: a linear scan is enough */
  for (const OnnxSchemaOp *s = onnx_schema_ops; s->op; s++)
    if (!strcmp(s->op, op) && !strcmp(s->domain, domain)) return s;
  return NULL;
}

int onnx_schema_version(const OnnxSchemaOp *s, int64_t opset) {
  int v = 0;
  for (int i = 0; i < ONNX_SCHEMA_MAX_VERSIONS && s->versions[i]; i++)
    if (s->versions[i] <= opset) v = s->versions[i];
  return v;
}

int onnx_schema_semantic_version(const OnnxSchemaOp *s, int version) {
  int i = 0;
  while (i < ONNX_SCHEMA_MAX_VERSIONS && s->versions[i] && s->versions[i] != version) i++;
  if (i == ONNX_SCHEMA_MAX_VERSIONS || !s->versions[i]) return version;
  while (i > 0 && (s->types_only >> i & 1)) i--;
  return s->versions[i];
}

/* "1, 6, 13" (the ONNX versions of s that the ranges cover) */
static void list_versions(StrBuf *sb, const OnnxSchemaOp *s, int n, const int *since, const int *until) {
  for (int i = 0; s && i < ONNX_SCHEMA_MAX_VERSIONS && s->versions[i]; i++) {
    int v = s->versions[i], sv = onnx_schema_semantic_version(s, v);
    for (int r = 0; r < n; r++)
      if (v >= since[r] && sv <= until[r]) {
        sb_printf(sb, "%s%d", sb->len ? ", " : "", v);
        break;
      }
  }
  if (!s)
    for (int r = 0; r < n; r++) sb_printf(sb, "%s%d to %d", sb->len ? ", " : "", since[r], until[r]);
}

int onnx_version_resolve(const char *domain, const char *op, int64_t opset, int n, const int *since, const int *until,
                         int *version) {
  const char *dom = onnx_domain_canonical(domain);
  const char *dname = *dom ? dom : "ai.onnx";
  int newest = onnx_schema_newest_opset(dom);
  const OnnxSchemaOp *s = onnx_schema_find(dom, op);
  if (newest && opset > newest)
    return kiln_set_error("opset %lld of domain '%s' is not supported: the newest Kiln knows is %d (onnx %s)",
                          (long long)opset, dname, newest, onnx_schema_onnx_version);
  int v = (int)opset, sv = v;
  if (!s && newest && n > 0) {
    /* not an ONNX op, yet in an ONNX domain: one of ONNX Runtime's contrib
     * ops it registers there (SimplifiedLayerNormalization) */
    *version = since[0];
    return 0;
  }
  if (s) {
    v = onnx_schema_version(s, opset);
    if (!v && n > 0 && since[0] < s->versions[0]) {
      /* a row from before ONNX's first version: ONNX Runtime's contrib op
       * of the same name (LayerNormalization before opset 17) */
      *version = since[0];
      return 0;
    }
    if (!v)
      return kiln_set_error("operator '%s' does not exist at opset %lld of domain '%s' (its first version is %d)", op,
                            (long long)opset, dname, s->versions[0]);
    sv = onnx_schema_semantic_version(s, v);
  }
  *version = v;
  for (int r = 0; r < n; r++)
    if (sv >= since[r] && sv <= until[r]) return r;
  StrBuf sb = {0};
  list_versions(&sb, s, n, since, until);
  kiln_set_error("%s version %d (opset %lld of domain '%s') is not supported: Kiln implements %s version%s %s", op, v,
                 (long long)opset, dname, op, strchr(sb.data ? sb.data : "", ',') ? "s" : "", sb.data ? sb.data : "none");
  sb_free(&sb);
  return -1;
}
