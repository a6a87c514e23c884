/*
 * codegen_c_types.c - C names and C types for the C code generator.
 *
 * Every IR variable gets a C name once per kernel: its own name made
 * C-safe and unique (never a keyword, never in the kiln_ / kv_ / __
 * namespaces the generated code uses itself).  A vector type is a GCC/Clang
 * vector-extension typedef `kv_<elem>x<lanes>` with an unaligned may_alias
 * twin `kv_<elem>x<lanes>u`, declared in the unit's helpers on first use.
 */
#include "codegen_c_internal.h"

#include <string.h>

void cgc_fail(CG *g, const char *fmt, const char *arg) {
  if (!g->failed) kiln_set_error(fmt, arg);
  g->failed = true;
}

/* ---- names ---- */

static const char *c_keywords[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "args", "type_codes", "num_args", "main",
    NULL};

const char *cgc_unique_name(CG *g, const char *base) {
  char buf[128];
  size_t n = 0;
  for (const char *p = base; *p && n < sizeof buf - 8; p++) {
    char ch = *p;
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
    buf[n++] = ok ? ch : '_';
  }
  buf[n] = 0;
  if (n == 0 || (buf[0] >= '0' && buf[0] <= '9')) {
    memmove(buf + 1, buf, n + 1);
    buf[0] = 'v';
  }
  for (int i = 0; c_keywords[i]; i++)
    if (!strcmp(buf, c_keywords[i])) {
      strcat(buf, "_");
      break;
    }
  if (!strncmp(buf, "kiln_", 5) || !strncmp(buf, "kv_", 3) || !strncmp(buf, "__", 2)) {
    memmove(buf + 2, buf, strlen(buf) + 1);
    buf[0] = 'v';
    buf[1] = '_';
  }
  const char *name = kstrdup(buf);
  for (int k = 1; pm_has(&g->used, name); k++) name = kfmt("%s_%d", buf, k);
  pm_put(&g->used, name, (void *)1);
  return name;
}

const char *cgc_vname(CG *g, Expr *v) {
  const char *n = pm_get(&g->names, v);
  if (!n) {
    n = cgc_unique_name(g, v->var.name);
    pm_put(&g->names, v, (void *)n);
  }
  return n;
}

/* ---- types ---- */

const char *cgc_scalar_ctype(DType t) {
  if (dt_is_bool(t)) return "int8_t";
  switch (t.code) {
  case kDLFloat:
    return t.bits == 64 ? "double" : t.bits == 32 ? "float" : "_Float16";
  case kDLInt:
    return t.bits == 8 ? "int8_t" : t.bits == 16 ? "int16_t" : t.bits == 32 ? "int32_t" : "int64_t";
  case kDLUInt:
    return t.bits == 8 ? "uint8_t" : t.bits == 16 ? "uint16_t" : t.bits == 32 ? "uint32_t" : "uint64_t";
  default:
    return "void *";
  }
}

/* Short name of a scalar type for helper names: f32, i64, u8, b (bool). */
const char *cgc_short_name(DType t) {
  if (dt_is_bool(t)) return "i32"; /* masks */
  char c = t.code == kDLFloat ? 'f' : t.code == kDLInt ? 'i' : 'u';
  return kfmt("%c%d", c, t.bits);
}

void cgc_need(CG *g, const char *key, const char *text) {
  if (pm_has(&g->emitted, key)) return;
  pm_put(&g->emitted, kstrdup(key), (void *)1);
  sb_puts(&g->helpers, text);
}

/* The C vector type of t (lanes > 1), declaring it on first use. */
static const char *vtype(CG *g, DType t) {
  DType s = dt_scalar(t);
  const char *sn = cgc_short_name(s);
  const char *name = kfmt("kv_%sx%d", sn, t.lanes);
  const char *ct = dt_is_bool(s) ? "int32_t" : cgc_scalar_ctype(s);
  int bytes = (dt_is_bool(s) ? 4 : s.bits / 8) * t.lanes;
  cgc_need(g, name,
       kfmt("typedef %s %s __attribute__((vector_size(%d)));\n"
            "typedef %s %su __attribute__((vector_size(%d), aligned(%d), may_alias));\n",
            ct, name, bytes, ct, name, bytes, dt_is_bool(s) ? 4 : s.bits / 8));
  return name;
}

const char *cgc_ctype(CG *g, DType t) {
  if (t.lanes > 1) return vtype(g, t);
  if (dt_is_bool(t)) return "int32_t";
  return cgc_scalar_ctype(t);
}

/* The mask type matching a vector type of the same element width. */
const char *cgc_mask_of(CG *g, DType t) {
  DType s = dt_scalar(t);
  int bits = dt_is_bool(s) ? 32 : s.bits;
  return vtype(g, dt_make(kDLInt, bits, t.lanes));
}
