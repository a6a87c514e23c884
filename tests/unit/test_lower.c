/*
 * test_lower.c - the seeds' examples from C (vector add, B = A + 2, the
 * matmul template), lowering texts, and every illegal schedule the issue
 * names returning a clear message.
 */
#include <string.h>
#include <sys/stat.h>

#include "kernel_util.h"

static Tensor *vecadd(int64_t n, Tensor **a, Tensor **b) {
  *a = te_placeholder_c("a", 1, &n, DT_F32);
  *b = te_placeholder_c("b", 1, &n, DT_F32);
  Expr **v = te_axis_vars(1, NULL);
  return te_compute("c", 1, (Expr *[]){ir_i32(n)}, v, ir_add(te_read1(*a, v[0]), te_read1(*b, v[0])), NULL);
}

static void test_vecadd_text(void) {
  Tensor *a, *b, *c = vecadd(128, &a, &b);
  CHECK_NN(c);
  Schedule *s = te_create_schedule(1, &c);
  LoweredFunc *f = kiln_lower(s, 3, (Tensor *[]){a, b, c}, "vadd", NULL);
  CHECK_NN(f);
  if (!f) return;
  CHECK_STR(kiln_lowered_str(f), "produce c {\n"
                                 "  for (i, 0, 128) {\n"
                                 "    c[i] = (a[i] + b[i])\n"
                                 "  }\n"
                                 "}\n");
}

static void test_add2_runs(void) {
  int64_t m = 3;
  Tensor *A = te_placeholder_c("A", 1, &m, DT_F32);
  Expr **v = te_axis_vars(1, NULL);
  Tensor *B = te_compute("B", 1, A->shape, v, ir_add(te_read1(A, v[0]), ir_i32(2)), NULL);
  CHECK_NN(B);
  Schedule *s = te_create_schedule(1, &B);
  KilnModule *mod = kiln_build(s, 2, (Tensor *[]){A, B}, "mul", NULL, NULL);
  CHECK_NN(mod);
  if (!mod) return;
  DLTensor *a = tk_array_for(A), *b = tk_array_for(B);
  tk_fill(a, 0);
  tk_fill(b, -1);
  CHECK_OK(tk_call(mod, "mul", 2, (DLTensor *[]){a, b}));
  for (int i = 0; i < 3; i++) CHECK(tk_get(b, i) == 2.0);
  /* a wrong shape is an error, not a crash */
  int64_t four = 4;
  DLTensor *bad = tk_array(1, &four, DT_F32);
  CHECK(tk_call(mod, "mul", 2, (DLTensor *[]){bad, b}) != 0);
  CHECK_CONTAINS(kiln_last_error(), "argument 0 (A) has shape[0] = 4, expected 3");
  DLTensor *i32 = tk_array(1, &m, DT_I32);
  CHECK(tk_call(mod, "mul", 2, (DLTensor *[]){i32, b}) != 0);
  CHECK_CONTAINS(kiln_last_error(), "dtype int32, expected float32");
  CHECK(tk_call(mod, "mul", 1, (DLTensor *[]){a}) != 0);
  CHECK_CONTAINS(kiln_last_error(), "expected 2 arguments, got 1");
  kiln_array_free(a);
  kiln_array_free(b);
  kiln_array_free(bad);
  kiln_array_free(i32);
  kiln_module_free(mod);
}

/* The seeds' matmul template: C[i, j] = sum_k A[i, k] * B[k, j], split by
 * tile_y/tile_x and reordered (yo, xo, k, yi, xi). */
static Tensor *matmul(int64_t N, int64_t L, int64_t M, Tensor **A, Tensor **B) {
  *A = te_placeholder_c("A", 2, (int64_t[]){N, L}, DT_F32);
  *B = te_placeholder_c("B", 2, (int64_t[]){L, M}, DT_F32);
  IterVar *k = te_reduce_axis_c(L, "k");
  Expr **v = te_axis_vars(2, NULL);
  Expr *body = ir_sum(ir_mul(te_read2(*A, v[0], k->var), te_read2(*B, k->var, v[1])), 1, &k);
  return te_compute("C", 2, (Expr *[]){ir_i32(N), ir_i32(M)}, v, body, NULL);
}

static void reference_matmul(DLTensor *a, DLTensor *b, DLTensor *c, int64_t N, int64_t L, int64_t M) {
  float *A = a->data, *B = b->data, *C = c->data;
  for (int64_t i = 0; i < N; i++)
    for (int64_t j = 0; j < M; j++) {
      double s = 0;
      for (int64_t k = 0; k < L; k++) s += (double)A[i * L + k] * B[k * M + j];
      C[i * M + j] = (float)s;
    }
}

static void test_matmul_template(void) {
  int64_t N = 37, L = 29, M = 41; /* odd sizes: every tile leaves a tail */
  int tiles[][2] = {{1, 1}, {2, 4}, {4, 8}, {8, 16}, {16, 2}, {16, 16}};
  Tensor *A, *B, *C = matmul(N, L, M, &A, &B);
  CHECK_NN(C);
  DLTensor *a = tk_array_for(A), *b = tk_array_for(B), *c = tk_array_for(C), *ref = tk_array_for(C);
  tk_fill_random(a);
  tk_fill_random(b);
  reference_matmul(a, b, ref, N, L, M);
  for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; t++) {
    Schedule *s = te_create_schedule(1, &C);
    Stage *st = sch_stage(s, C);
    IterVar *yo, *yi, *xo, *xi;
    CHECK_OK(stage_split(st, stage_axis(st, 0), ir_i32(tiles[t][0]), &yo, &yi));
    CHECK_OK(stage_split(st, stage_axis(st, 1), ir_i32(tiles[t][1]), &xo, &xi));
    CHECK_OK(stage_reorder(st, 5, (IterVar *[]){yo, xo, stage_reduce_axis(st, 0), yi, xi}));
    KilnModule *mod = kiln_build(s, 3, (Tensor *[]){A, B, C}, "matmul", NULL, NULL);
    CHECK_NN(mod);
    if (!mod) continue;
    tk_fill(c, 0);
    CHECK_OK(tk_call(mod, "matmul", 3, (DLTensor *[]){a, b, c}));
    double err = tk_rel_err(c, ref);
    CHECK_MSG(err < 1e-5, "tile_y=%d tile_x=%d: relative error %g", tiles[t][0], tiles[t][1], err);
    kiln_module_free(mod);
  }
  kiln_array_free(a);
  kiln_array_free(b);
  kiln_array_free(c);
  kiln_array_free(ref);
}

/* ---- illegal schedules ---- */

static void test_error_split_non_leaf(void) {
  Tensor *a, *b, *c = vecadd(64, &a, &b);
  Schedule *s = te_create_schedule(1, &c);
  Stage *st = sch_stage(s, c);
  IterVar *i = stage_axis(st, 0), *o, *in;
  CHECK_OK(stage_split(st, i, ir_i32(8), &o, &in));
  CHECK(stage_split(st, i, ir_i32(4), &o, &in) != 0);
  CHECK_CONTAINS(kiln_get_error(), "axis 'i' of stage 'c' is no longer a leaf");
  CHECK(stage_split(st, in, ir_i32(0), &o, &in) != 0);
  CHECK_CONTAINS(kiln_get_error(), "factor must be positive");
}

static void test_error_vectorize_symbolic(void) {
  Expr *n = ir_var("n", DT_I32);
  Tensor *A = te_placeholder("A", 1, &n, DT_F32);
  Expr **v = te_axis_vars(1, NULL);
  Tensor *B = te_compute("B", 1, &n, v, ir_mul(te_read1(A, v[0]), ir_f32(2)), NULL);
  Schedule *s = te_create_schedule(1, &B);
  Stage *st = sch_stage(s, B);
  CHECK_OK(stage_vectorize(st, stage_axis(st, 0)));
  LoweredFunc *f = kiln_lower(s, 2, (Tensor *[]){A, B}, "f", NULL);
  CHECK(f == NULL);
  CHECK_CONTAINS(kiln_get_error(), "vectorize: axis 'i' of stage 'B' has a non-constant extent");
  /* split by a constant, vectorize the inner axis: fine, and it runs */
  Schedule *s2 = te_create_schedule(1, &B);
  st = sch_stage(s2, B);
  IterVar *o, *in;
  CHECK_OK(stage_split(st, stage_axis(st, 0), ir_i32(8), &o, &in));
  CHECK_OK(stage_vectorize(st, in));
  KilnModule *mod = kiln_build(s2, 2, (Tensor *[]){A, B}, "f", NULL, NULL);
  CHECK_NN(mod);
  if (!mod) return;
  int64_t len = 21;
  DLTensor *a = tk_array(1, &len, DT_F32), *b = tk_array(1, &len, DT_F32);
  tk_fill_random(a);
  CHECK_OK(tk_call(mod, "f", 2, (DLTensor *[]){a, b}));
  for (int i = 0; i < len; i++) CHECK(tk_get(b, i) == 2 * tk_get(a, i));
  kiln_array_free(a);
  kiln_array_free(b);
  kiln_module_free(mod);
}

/* lower/combine_loads.c: words assembled from consecutive bytes of a uint8
 * buffer become one (reinterpreting) load, scalar and vectorized, 2, 4 and
 * 8 bytes, at any byte offset; byte orders or strides that are not one
 * word's bytes stay byte loads.  Every case runs against the words
 * assembled here from full-range random bytes. */
typedef struct WordCase {
  const char *desc;
  int bytes;      /* 2, 4 or 8: uint16, uint32, uint64 */
  int step, off;  /* word i starts at byte step i + off */
  int lanes;      /* vectorized by this many lanes (1: scalar) */
  bool swap;      /* bytes 0 and 1 exchanged: not a little-endian word */
  bool combined;  /* the pass must fire */
} WordCase;

static void test_combine_loads(void) {
  static const WordCase cases[] = {
      {"uint32 scalar", 4, 4, 0, 1, false, true},
      {"uint32 scalar at byte 4 i + 3", 4, 4, 3, 1, false, true},
      {"uint32 x8 contiguous", 4, 4, 0, 8, false, true},
      {"uint32 x4 contiguous at byte 4 i + 1", 4, 4, 1, 4, false, true},
      {"uint32 x8 every 12 bytes (a gather of words)", 4, 12, 2, 8, false, true},
      {"uint16 x8", 2, 2, 0, 8, false, true},
      {"uint64 scalar", 8, 8, 5, 1, false, true},
      {"uint64 x4 overlapping words", 8, 3, 0, 4, false, true},
      {"uint32 x8 bytes 0 and 1 swapped", 4, 4, 0, 8, true, false},
      {"uint32 scalar bytes 0 and 1 swapped", 4, 4, 0, 1, true, false},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const WordCase *c = &cases[ci];
    int64_t nw = 24, nb = c->step * (nw - 1) + c->off + c->bytes;
    DType wt = c->bytes == 2 ? DT_U16 : c->bytes == 4 ? DT_U32 : DT_U64;
    Tensor *A = te_placeholder_c("A", 1, &nb, DT_U8);
    Expr **v = te_axis_vars(1, NULL);
    Expr *w = NULL;
    for (int j = 0; j < c->bytes; j++) {
      int src = c->swap && j < 2 ? 1 - j : j;
      Expr *b = ir_cast(wt, te_read1(A, ir_add(ir_mul(v[0], ir_i32(c->step)), ir_i32(c->off + src))));
      if (j) b = ir_call2(INTRIN_shift_left, b, ir_const(8 * j, wt));
      w = w ? ir_call2(INTRIN_bitwise_or, w, b) : b;
    }
    Tensor *B = te_compute("B", 1, (Expr *[]){ir_i32(nw)}, v, w, NULL);
    Schedule *s = te_create_schedule(1, &B);
    if (c->lanes > 1) {
      Stage *st = sch_stage(s, B);
      IterVar *o, *in;
      CHECK_OK(stage_split(st, stage_axis(st, 0), ir_i32(c->lanes), &o, &in));
      CHECK_OK(stage_vectorize(st, in));
    }
    LoweredFunc *f = kiln_lower(s, 2, (Tensor *[]){A, B}, "f", NULL);
    CHECK_NN(f);
    if (!f) continue;
    const char *text = kiln_lowered_str(f);
    if ((strstr(text, "shift_left") == NULL) != c->combined)
      test_fail(__FILE__, __LINE__, "%s: the pass %s:\n%s", c->desc, c->combined ? "did not combine" : "combined", text);
    KilnModule *mod = kiln_build(s, 2, (Tensor *[]){A, B}, "f", NULL, NULL);
    CHECK_NN(mod);
    if (!mod) continue;
    DLTensor *a = tk_array(1, &nb, DT_U8), *b = tk_array(1, &nw, wt);
    uint8_t *pa = a->data;
    for (int64_t i = 0; i < nb; i++) pa[i] = (uint8_t)(test_rand() & 0xff);
    CHECK_OK(tk_call(mod, "f", 2, (DLTensor *[]){a, b}));
    int bad = 0;
    for (int64_t i = 0; i < nw; i++) {
      uint64_t want = 0, got = 0;
      for (int j = 0; j < c->bytes; j++) {
        int src = c->swap && j < 2 ? 1 - j : j;
        want |= (uint64_t)pa[c->step * i + c->off + src] << (8 * j);
      }
      memcpy(&got, (char *)b->data + i * c->bytes, (size_t)c->bytes); /* little-endian host */
      bad += got != want;
    }
    if (bad) test_fail(__FILE__, __LINE__, "%s: %d of %lld words wrong", c->desc, bad, (long long)nw);
    kiln_array_free(a);
    kiln_array_free(b);
    kiln_module_free(mod);
  }
}

/* codegen_c_expr.c's permuted loads: a vector load whose lanes read
 * constant offsets from one scalar base, spanning less than a vector (a
 * per-group broadcast "lane l reads base + (l / g) s + c", a reversal, a
 * group size that does not divide the lanes), is one masked vector load
 * and a lane permute; a wider span stays a gather.  B[i, l] = A[i W + f(l)]
 * on random data against the same index computed here, with rows placed
 * so the last row's load ends at the buffer's last element. */
typedef struct PermCase {
  const char *desc;
  DType t;
  int lanes;
  int g, s, c; /* lane l reads (l / g) s + c, or 15 - l where g = 0 */
  int W;       /* row stride */
  bool permuted; /* printed as a permuted load, not a gather */
} PermCase;

static int64_t perm_offset(const PermCase *p, int l) { return p->g ? (int64_t)(l / p->g) * p->s + p->c : p->lanes - 1 - l; }

static void test_permuted_loads(void) {
  static const PermCase cases[] = {
      {"float32x16 groups of 4, channel 0", {kDLFloat, 32, 1}, 16, 4, 4, 0, 16, true},
      {"float32x16 groups of 4, channel 3", {kDLFloat, 32, 1}, 16, 4, 4, 3, 16, true},
      {"float32x16 groups of 8, channel 5", {kDLFloat, 32, 1}, 16, 8, 8, 5, 16, true},
      {"float32x16 groups of 12, channel 7", {kDLFloat, 32, 1}, 16, 12, 12, 7, 19, true},
      {"float32x16 groups of 4, stride 3", {kDLFloat, 32, 1}, 16, 4, 3, 1, 13, true},
      {"float32x16 reversed", {kDLFloat, 32, 1}, 16, 0, 0, 0, 16, true},
      {"int32x16 groups of 2, channel 1", {kDLInt, 32, 1}, 16, 2, 2, 1, 17, true},
      {"float32x8 groups of 4, channel 2", {kDLFloat, 32, 1}, 8, 4, 4, 2, 8, true},
      {"float32x16 groups of 4, stride 8 (a gather)", {kDLFloat, 32, 1}, 16, 4, 8, 0, 32, false},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const PermCase *p = &cases[ci];
    int64_t rows = 5, span = 0;
    for (int l = 0; l < p->lanes; l++) span = perm_offset(p, l) > span ? perm_offset(p, l) : span;
    int64_t n = (rows - 1) * p->W + span + 1; /* the last row's highest lane reads the last element */
    Tensor *A = te_placeholder_c("A", 1, &n, p->t);
    Expr **v = te_axis_vars(2, NULL);
    Expr *lane = p->g ? ir_add(ir_mul(ir_floordiv(v[1], ir_i32(p->g)), ir_i32(p->s)), ir_i32(p->c))
                      : ir_sub(ir_i32(p->lanes - 1), v[1]);
    Tensor *B = te_compute("B", 2, (Expr *[]){ir_i32(rows), ir_i32(p->lanes)}, v,
                           te_read1(A, ir_add(ir_mul(v[0], ir_i32(p->W)), lane)), NULL);
    Schedule *s = te_create_schedule(1, &B);
    Stage *st = sch_stage(s, B);
    CHECK_OK(stage_vectorize(st, stage_axis(st, 1)));
    LoweredFunc *f = kiln_lower(s, 2, (Tensor *[]){A, B}, "f", NULL);
    CHECK_NN(f);
    if (!f) continue;
    char *src = codegen_c(&f, 1, 0, NULL);
    if (getenv("KILN_TEST_DUMP")) fprintf(stderr, "%s\n%s\n", kiln_lowered_str(f), src);
    if ((strstr(src, "kiln_permld_") != NULL) != p->permuted || (strstr(src, "kiln_gather_") != NULL) == p->permuted)
      test_fail(__FILE__, __LINE__, "%s: expected a %s", p->desc, p->permuted ? "permuted load" : "gather");
    free(src);
    KilnModule *mod = kiln_build_funcs_units(&f, 1, 1, NULL);
    CHECK_NN(mod);
    if (!mod) continue;
    int64_t shape[2] = {rows, p->lanes};
    DLTensor *a = tk_array(1, &n, p->t), *b = tk_array(2, shape, p->t);
    tk_fill_random(a);
    CHECK_OK(tk_call(mod, "f", 2, (DLTensor *[]){a, b}));
    int bad = 0;
    for (int64_t i = 0; i < rows; i++)
      for (int l = 0; l < p->lanes; l++) bad += tk_get(b, i * p->lanes + l) != tk_get(a, i * p->W + perm_offset(p, l));
    if (bad) test_fail(__FILE__, __LINE__, "%s: %d of %lld values wrong", p->desc, bad, (long long)(rows * p->lanes));
    kiln_array_free(a);
    kiln_array_free(b);
    kiln_module_free(mod);
  }
}

/* lower/combine_loads.c, stores: B[i, c] = uint8(A[c, i] * 3 + bias) for c
 * < k, B [n, k] uint8 (a quantize into NCHW[k]c), with the channels
 * unrolled inside 16 vectorized rows, writes byte c of each row's word
 * by its own strided vector store; the pass makes the k stores (2, 4, 8
 * channels) one reinterpreting store of 16 words, and leaves 3 channels
 * (not a word) alone.  Values past 255 and below 0 wrap as the vector
 * conversion (through int32) wraps; every case against the bytes
 * computed here. */
static void test_combine_stores(void) {
  const int ks[] = {2, 4, 8, 3};
  for (size_t ci = 0; ci < sizeof ks / sizeof ks[0]; ci++) {
    int k = ks[ci];
    int64_t n = 48, ashape[2] = {k, n}, bshape[2] = {n, k};
    Tensor *A = te_placeholder_c("A", 2, ashape, DT_F32);
    Expr **v = te_axis_vars(2, NULL);
    Expr *x = ir_add(ir_mul(te_read2(A, v[1], v[0]), ir_f32(3)), ir_f32(100));
    Tensor *B = te_compute("B", 2, (Expr *[]){ir_i32(n), ir_i32(k)}, v, ir_cast(DT_U8, x), NULL);
    Schedule *s = te_create_schedule(1, &B);
    Stage *st = sch_stage(s, B);
    IterVar *io, *ii;
    CHECK_OK(stage_split(st, stage_axis(st, 0), ir_i32(16), &io, &ii));
    CHECK_OK(stage_reorder(st, 3, (IterVar *[]){io, stage_axis(st, 1), ii}));
    CHECK_OK(stage_unroll(st, stage_axis(st, 1)));
    CHECK_OK(stage_vectorize(st, ii));
    LoweredFunc *f = kiln_lower(s, 2, (Tensor *[]){A, B}, "f", NULL);
    CHECK_NN(f);
    if (!f) continue;
    const char *text = kiln_lowered_str(f);
    bool combined = strstr(text, "bitwise_or") != NULL, word = k == 2 || k == 4 || k == 8;
    if (combined != word)
      test_fail(__FILE__, __LINE__, "%d channels: the stores were %scombined:\n%s", k, combined ? "" : "not ", text);
    KilnModule *mod = kiln_build(s, 2, (Tensor *[]){A, B}, "f", NULL, NULL);
    CHECK_NN(mod);
    if (!mod) continue;
    DLTensor *a = tk_array(2, ashape, DT_F32), *b = tk_array(2, bshape, DT_U8);
    float *ap = (float *)a->data;
    for (int64_t i = 0; i < k * n; i++) ap[i] = (float)((i * 37) % 200) - 60; /* 3x + 100 in [-80, 517] */
    CHECK_OK(tk_call(mod, "f", 2, (DLTensor *[]){a, b}));
    const uint8_t *bp = (const uint8_t *)b->data;
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
      for (int c = 0; c < k; c++) bad += bp[i * k + c] != (uint8_t)(int32_t)(ap[c * n + i] * 3 + 100);
    if (bad) test_fail(__FILE__, __LINE__, "%d channels: %d of %lld bytes wrong", k, bad, (long long)(n * k));
    kiln_array_free(a);
    kiln_array_free(b);
    kiln_module_free(mod);
  }
}

/* lower/unswitch.c: rows split by 4 out of 13 (a tail block of 1), the
 * columns' loop inside the row blocks and the rows unrolled inside it:
 * the guards on the rows do not change in the columns' loop, which is
 * unswitched (a guard-free copy for the full blocks, the guarded loop for
 * the tail).  A guard on the columns' own split (5 by 2) varies inside
 * every loop around it and stays.  Both run against the arithmetic done
 * here on random inputs. */
static void test_unswitch_tail_guards(void) {
  for (int split_cols = 0; split_cols < 2; split_cols++) {
    int64_t shape[2] = {13, 5};
    Tensor *A = te_placeholder_c("A", 2, shape, DT_F32);
    Expr **v = te_axis_vars(2, NULL);
    Tensor *B = te_compute("B", 2, (Expr *[]){ir_i32(13), ir_i32(5)}, v,
                           ir_add(ir_mul(te_read2(A, v[0], v[1]), ir_f32(2)), ir_f32(1)), NULL);
    Schedule *s = te_create_schedule(1, &B);
    Stage *st = sch_stage(s, B);
    IterVar *o, *in;
    if (split_cols) {
      CHECK_OK(stage_split(st, stage_axis(st, 1), ir_i32(2), &o, &in));
    } else {
      CHECK_OK(stage_split(st, stage_axis(st, 0), ir_i32(4), &o, &in));
      CHECK_OK(stage_reorder(st, 3, (IterVar *[]){o, stage_axis(st, 1), in}));
      CHECK_OK(stage_unroll(st, in));
    }
    LoweredFunc *f = kiln_lower(s, 2, (Tensor *[]){A, B}, "f", NULL);
    CHECK_NN(f);
    if (!f) continue;
    const char *text = kiln_lowered_str(f);
    if ((strstr(text, "else") != NULL) == (bool)split_cols)
      test_fail(__FILE__, __LINE__, "%s guard: the loop was %sunswitched:\n%s", split_cols ? "a varying" : "an invariant",
                split_cols ? "" : "not ", text);
    KilnModule *mod = kiln_build(s, 2, (Tensor *[]){A, B}, "f", NULL, NULL);
    CHECK_NN(mod);
    if (!mod) continue;
    DLTensor *a = tk_array(2, shape, DT_F32), *b = tk_array(2, shape, DT_F32);
    tk_fill_random(a);
    CHECK_OK(tk_call(mod, "f", 2, (DLTensor *[]){a, b}));
    int bad = 0;
    for (int i = 0; i < 13 * 5; i++) bad += tk_get(b, i) != 2 * tk_get(a, i) + 1;
    if (bad) test_fail(__FILE__, __LINE__, "split %s: %d of 65 values wrong", split_cols ? "columns" : "rows", bad);
    kiln_array_free(a);
    kiln_array_free(b);
    kiln_module_free(mod);
  }
}

/* lower/hoist_divmod.c: B[i, j, k] = A[i, j + 1, k] * 2 + 1, B [3, 5, 7]
 * and A [3, 6, 7] (a copy out of a padded tensor), with B's first two axes
 * fused into one parallel loop: A's index reads the fused variable's
 * quotient and remainder by 5 inside the columns' loop, and the pass binds
 * both once per fused iteration, the columns' loop left without a divide.
 * All three axes fused (no loop inside) is left alone.  Both run against
 * the arithmetic done here on random inputs. */
static void test_hoist_divmod(void) {
  for (int fuse_all = 0; fuse_all < 2; fuse_all++) {
    int64_t shape[3] = {3, 6, 7};
    Tensor *A = te_placeholder_c("A", 3, shape, DT_F32);
    Expr **v = te_axis_vars(3, NULL);
    Expr *a = te_read(A, 3, (Expr *[]){v[0], ir_add(v[1], ir_i32(1)), v[2]});
    Tensor *B = te_compute("B", 3, (Expr *[]){ir_i32(3), ir_i32(5), ir_i32(7)}, v,
                           ir_add(ir_mul(a, ir_f32(2)), ir_f32(1)), NULL);
    Schedule *s = te_create_schedule(1, &B);
    Stage *st = sch_stage(s, B);
    IterVar *f;
    CHECK_OK(stage_fuse(st, stage_axis(st, 0), stage_axis(st, 1), &f));
    if (fuse_all) CHECK_OK(stage_fuse(st, f, stage_axis(st, 2), &f));
    CHECK_OK(stage_parallel(st, f));
    LoweredFunc *lf = kiln_lower(s, 2, (Tensor *[]){A, B}, "f", NULL);
    CHECK_NN(lf);
    if (!lf) continue;
    const char *text = kiln_lowered_str(lf), *inner = strstr(text, "for ("); /* the columns' loop */
    bool hoisted = strstr(text, "let ") && strstr(text, "_div5") && strstr(text, "_mod5");
    if (hoisted == (bool)fuse_all || (!fuse_all && (!inner || strchr(inner, '/') || strchr(inner, '%'))))
      test_fail(__FILE__, __LINE__, "%s: the quotient and remainder were %shoisted:\n%s",
                fuse_all ? "no inner loop" : "an inner loop", hoisted ? "" : "not ", text);
    KilnModule *mod = kiln_build(s, 2, (Tensor *[]){A, B}, "f", NULL, NULL);
    CHECK_NN(mod);
    if (!mod) continue;
    DLTensor *x = tk_array(3, shape, DT_F32), *y = tk_array(3, (int64_t[]){3, 5, 7}, DT_F32);
    tk_fill_random(x);
    CHECK_OK(tk_call(mod, "f", 2, (DLTensor *[]){x, y}));
    int bad = 0;
    for (int i = 0; i < 3 * 5 * 7; i++) bad += tk_get(y, i) != 2 * tk_get(x, (i / 35) * 42 + (i % 35) + 7) + 1;
    if (bad) test_fail(__FILE__, __LINE__, "fuse %s: %d of 105 values wrong", fuse_all ? "all" : "two", bad);
    kiln_array_free(x);
    kiln_array_free(y);
    kiln_module_free(mod);
  }
}

/* The C of a hoisted quotient's remainder: B[i, j, l, k] = A[i, j, l, k] +
 * 1 over [2, 3, 5, 7] with the first three axes fused into one parallel
 * loop, so j is (f / 5) % 3 and hoist_divmod binds f / 5 by a let.  The
 * let's variable carries its value's bound [0, 6) in the C printer, so its
 * remainder is C's % (the fused variable's is): without the bound the
 * printer wrote kiln_floormod_i32 in the columns' loop, which cost
 * ResNet-50's batch-8 7x7 stem 4.6x its time and its residual 1x1 layers
 * 1.3-1.9x.  The module runs against the arithmetic done here. */
static void test_hoist_divmod_c(void) {
  int64_t shape[4] = {2, 3, 5, 7};
  Tensor *A = te_placeholder_c("A", 4, shape, DT_F32);
  Expr **v = te_axis_vars(4, NULL);
  Tensor *B = te_compute("B", 4, (Expr *[]){ir_i32(2), ir_i32(3), ir_i32(5), ir_i32(7)}, v,
                         ir_add(te_read(A, 4, v), ir_f32(1)), NULL);
  Schedule *s = te_create_schedule(1, &B);
  Stage *st = sch_stage(s, B);
  IterVar *f;
  CHECK_OK(stage_fuse(st, stage_axis(st, 0), stage_axis(st, 1), &f));
  CHECK_OK(stage_fuse(st, f, stage_axis(st, 2), &f));
  CHECK_OK(stage_parallel(st, f));
  LoweredFunc *lf = kiln_lower(s, 2, (Tensor *[]){A, B}, "f", NULL);
  CHECK_NN(lf);
  if (!lf) return;
  CHECK_CONTAINS(kiln_lowered_str(lf), "_div5");
  char *src = codegen_c(&lf, 1, 0, NULL);
  CHECK_NN(src);
  if (src && strstr(src, "kiln_floormod_i32(") && strstr(strstr(src, "kiln_floormod_i32("), "_div5"))
    test_fail(__FILE__, __LINE__, "the hoisted quotient's remainder is a floor-mod call:\n%s", src);
  free(src);
  KilnModule *mod = kiln_build(s, 2, (Tensor *[]){A, B}, "f", NULL, NULL);
  CHECK_NN(mod);
  if (!mod) return;
  DLTensor *x = tk_array(4, shape, DT_F32), *y = tk_array(4, shape, DT_F32);
  tk_fill_random(x);
  CHECK_OK(tk_call(mod, "f", 2, (DLTensor *[]){x, y}));
  int bad = 0;
  for (int i = 0; i < 2 * 3 * 5 * 7; i++) bad += tk_get(y, i) != tk_get(x, i) + 1;
  CHECK_MSG(!bad, "%d of 210 values wrong", bad);
  kiln_array_free(x);
  kiln_array_free(y);
  kiln_module_free(mod);
}

/* The cost rule of small_parallel.c on a loop nest built by hand: a loop
 * multiplies its body (plus one) by its extent, a store counts one plus
 * its value's operations (a load one, exp INTRIN_OPS), indices are free;
 * a symbolic extent saturates. */
static void test_small_parallel_ops(void) {
  Expr *i = ir_var("i", DT_I32), *j = ir_var("j", DT_I32), *n = ir_var("n", DT_I32);
  Expr *a = ir_var("a", DT_HANDLE), *b = ir_var("b", DT_HANDLE);
  Expr *idx = ir_add(ir_mul(i, ir_i32(20)), j);
  Expr *val = ir_add(ir_load(DT_F32, a, idx), ir_f32(1)); /* load + add: 2 */
  Stmt *store = ir_store(b, val, idx);                     /* 3 */
  Stmt *nest = ir_for(i, ir_i32(0), ir_i32(10), FOR_SERIAL, ir_for(j, ir_i32(0), ir_i32(20), FOR_SERIAL, store));
  CHECK(lower_loop_ops(store) == 3);
  CHECK(lower_loop_ops(nest) == 10 * (1 + 20 * (1 + 3)));
  Stmt *e = ir_store(b, ir_call(INTRIN_exp, 1, (Expr *[]){val}), idx);
  CHECK(lower_loop_ops(e) == 1 + 20 + 2);
  Stmt *sym = ir_for(i, ir_i32(0), n, FOR_SERIAL, store);
  CHECK(lower_loop_ops(sym) >= (int64_t)1 << 40);
  /* a small parallel loop made serial takes the parallel loops inside it
   * along (else each would be launched once per outer iteration) */
  Stmt *pp = ir_for(i, ir_i32(0), ir_i32(10), FOR_PARALLEL, ir_for(j, ir_i32(0), ir_i32(20), FOR_PARALLEL, store));
  Stmt *ser = lower_small_parallel(pp);
  CHECK(ser->kind == SK_For && ser->for_.fkind == FOR_SERIAL);
  CHECK(ser->for_.body->kind == SK_For && ser->for_.body->for_.fkind == FOR_SERIAL);
}

/* B = A * 2 + 1 over rows x cols with the row loop parallel, lowered as
 * the model compiler lowers (LowerOptions.serial_small_parallel): a small
 * table's loop runs serially (no fork and join for 48 values), a large
 * one's and one with a symbolic row count stay parallel; each build gives
 * the right values.  Without the option every one stays parallel. */
static void test_small_parallel(void) {
  struct {
    int64_t rows, cols;
    bool symbolic, parallel;
  } cases[] = {{3, 16, false, false}, {64, 256, false, true}, {3, 16, true, true}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    Expr *rows = cases[c].symbolic ? ir_var("rows", DT_I32) : ir_i32(cases[c].rows);
    Tensor *A = te_placeholder("A", 2, (Expr *[]){rows, ir_i32(cases[c].cols)}, DT_F32);
    Expr **v = te_axis_vars(2, NULL);
    Tensor *B = te_compute("B", 2, A->shape, v, ir_add(ir_mul(te_read2(A, v[0], v[1]), ir_f32(2)), ir_f32(1)), NULL);
    Schedule *s = te_create_schedule(1, &B);
    Stage *st = sch_stage(s, B);
    CHECK_OK(stage_parallel(st, stage_axis(st, 0)));
    LowerOptions lo = {.serial_small_parallel = true};
    LoweredFunc *f = kiln_lower(s, 2, (Tensor *[]){A, B}, "f", &lo);
    CHECK_NN(f);
    if (!f) continue;
    const char *text = kiln_lowered_str(f);
    /* lowered without the rule, as a schedule on its own is, it stays parallel */
    LoweredFunc *plain = kiln_lower(s, 2, (Tensor *[]){A, B}, "f", NULL);
    CHECK(plain && strstr(kiln_lowered_str(plain), "parallel (") != NULL);
    if ((strstr(text, "parallel (") != NULL) != cases[c].parallel)
      test_fail(__FILE__, __LINE__, "%lld x %lld%s: the row loop should be %s:\n%s", (long long)cases[c].rows,
                (long long)cases[c].cols, cases[c].symbolic ? " (symbolic rows)" : "",
                cases[c].parallel ? "parallel" : "serial", text);
    KilnModule *mod = kiln_build(s, 2, (Tensor *[]){A, B}, "f", &lo, NULL);
    CHECK_NN(mod);
    if (!mod) continue;
    int64_t shape[2] = {cases[c].rows, cases[c].cols};
    DLTensor *a = tk_array(2, shape, DT_F32), *b = tk_array(2, shape, DT_F32);
    tk_fill_random(a);
    tk_fill(b, -1);
    CHECK_OK(tk_call(mod, "f", 2, (DLTensor *[]){a, b}));
    int bad = 0;
    for (int64_t k = 0; k < shape[0] * shape[1]; k++) bad += tk_get(b, k) != 2 * tk_get(a, k) + 1;
    if (bad) test_fail(__FILE__, __LINE__, "case %zu: %d values wrong", c, bad);
    kiln_array_free(a);
    kiln_array_free(b);
    kiln_module_free(mod);
  }
}

/* Vector casts between floats and 8- or 16-bit integers (the C generator
 * goes through int32 lanes): every value of the small type to float32 and
 * back, and float32 values in range (fractions truncate toward zero), on
 * 16 lanes against the scalar C conversion. */
/* v as a value of type t: 8- and 16-bit types wrap (two's complement). */
static int64_t wrap_to(int64_t v, DType t) {
  if (t.bits >= 32) return v;
  uint64_t m = ((uint64_t)1 << t.bits) - 1, u = (uint64_t)v & m;
  return t.code == kDLInt && (u >> (t.bits - 1)) ? (int64_t)(u | ~m) : (int64_t)u;
}

/* Arithmetic whose constants overflow the type, compiled (scalar code) and
 * run against the values ir.h's rule gives: int8, int16, uint8 and uint16
 * wrap at every node, as ONNX computes them, so x * 16 * 16 is 0, 127 + 1
 * is -128 and x + 127 < x - 1 holds for x in [1, 127] (C computes narrow
 * integers in int, so the C printer casts each result back to its type:
 * without that x * 16 * 16 came out as x * 256).  The int32 comparison has
 * no overflow for x in [-10, 0], and the simplifier once decided it true
 * from the difference's constant read as INT32_MIN. */
static void test_narrow_int_folding(void) {
  const DType types[] = {DT_I8, DT_I16, DT_U8, DT_U16, DT_I32};
  for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
    DType t = types[ti];
    int64_t n = 256, mx = dt_int_max(t), c = t.bits == 8 ? 16 : 256;
    Tensor *X = te_placeholder_c("X", 1, &n, t);
    Expr **v = te_axis_vars(1, NULL);
    Expr *x = te_read1(X, v[0]);
    Expr *cmp = ir_lt(ir_add(x, ir_int(mx, t)), ir_sub(x, ir_int(1, t)));
    Expr *y = ir_select(cmp, ir_i32(1000), ir_i32(0));
    if (t.bits < 32) /* int32 would overflow: undefined */
      y = ir_add(ir_add(y, ir_cast(DT_I32, ir_mul(ir_mul(x, ir_int(c, t)), ir_int(c, t)))),
                 ir_cast(DT_I32, ir_add(ir_int(mx, t), ir_int(1, t))));
    Tensor *Y = te_compute("Y", 1, X->shape, v, y, NULL);
    KilnModule *mod = kiln_build(te_create_schedule(1, &Y), 2, (Tensor *[]){X, Y}, "f", NULL, NULL);
    CHECK_NN(mod);
    if (!mod) continue;
    DLTensor *xa = tk_array(1, &n, t), *ya = tk_array(1, &n, DT_I32);
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
      int64_t xv = t.bits == 32 ? -(i % 11) : wrap_to(t.bits == 8 ? i - 128 : i * 251 - 900, t);
      switch (t.bits * 2 + (t.code == kDLUInt)) {
      case 16: ((int8_t *)xa->data)[i] = (int8_t)xv; break;
      case 17: ((uint8_t *)xa->data)[i] = (uint8_t)xv; break;
      case 32: ((int16_t *)xa->data)[i] = (int16_t)xv; break;
      case 33: ((uint16_t *)xa->data)[i] = (uint16_t)xv; break;
      default: ((int32_t *)xa->data)[i] = (int32_t)xv; break;
      }
    }
    CHECK_OK(tk_call(mod, "f", 2, (DLTensor *[]){xa, ya}));
    for (int64_t i = 0; i < n; i++) {
      int64_t xv = (int64_t)tk_get(xa, i), want = wrap_to(xv + mx, t) < wrap_to(xv - 1, t) ? 1000 : 0;
      if (t.bits < 32) want += wrap_to(wrap_to(xv * c, t) * c, t) + wrap_to(mx + 1, t);
      if (tk_get(ya, i) != (double)want && bad++ < 3)
        test_fail(__FILE__, __LINE__, "%s x = %lld: %g, expected %lld", dt_str(t), (long long)xv, tk_get(ya, i),
                  (long long)want);
    }
    kiln_array_free(xa);
    kiln_array_free(ya);
    kiln_module_free(mod);
  }
}

static void test_vector_casts_narrow(void) {
  const DType types[] = {DT_U8, DT_I8, DT_U16, DT_I16};
  for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
    DType it = types[ti];
    int64_t n = 512;
    Tensor *X = te_placeholder_c("X", 1, &n, it), *F = te_placeholder_c("F", 1, &n, DT_F32);
    Expr **v = te_axis_vars(1, NULL);
    Tensor *Y = te_compute("Y", 1, X->shape, v, ir_cast(DT_F32, te_read1(X, v[0])), NULL);
    v = te_axis_vars(1, NULL);
    Tensor *Z = te_compute("Z", 1, F->shape, v, ir_cast(it, te_read1(F, v[0])), NULL);
    Schedule *s = te_create_schedule(2, (Tensor *[]){Y, Z});
    for (int k = 0; k < 2; k++) {
      Stage *st = sch_stage(s, k ? Z : Y);
      IterVar *o, *in;
      CHECK_OK(stage_split(st, stage_axis(st, 0), ir_i32(16), &o, &in));
      CHECK_OK(stage_vectorize(st, in));
    }
    KilnModule *mod = kiln_build(s, 4, (Tensor *[]){X, F, Y, Z}, "f", NULL, NULL);
    CHECK_NN(mod);
    if (!mod) continue;
    DLTensor *x = tk_array(1, &n, it), *f = tk_array(1, &n, DT_F32), *y = tk_array(1, &n, DT_F32),
             *z = tk_array(1, &n, it);
    int64_t lo = dt_int_min(it), hi = dt_int_max(it);
    float *pf = f->data;
    for (int64_t i = 0; i < n; i++) {
      int64_t xv = i < 256 ? lo + i : i < 384 ? hi - (i - 256) : lo + test_rand() % (hi - lo + 1);
      if (it.bits == 8) xv = lo + i % 256;
      switch (it.bits * 2 + (it.code == kDLUInt)) {
      case 17: ((uint8_t *)x->data)[i] = (uint8_t)xv; break;
      case 16: ((int8_t *)x->data)[i] = (int8_t)xv; break;
      case 33: ((uint16_t *)x->data)[i] = (uint16_t)xv; break;
      default: ((int16_t *)x->data)[i] = (int16_t)xv; break;
      }
      /* in range, with fractions: truncated toward zero */
      pf[i] = (float)(lo + (double)(test_rand() % 1000) / 999.0 * (double)(hi - lo));
      if (i < 4) pf[i] = i == 0 ? (float)lo : i == 1 ? (float)hi : i == 2 ? (float)hi - 0.5f : (float)lo + 0.75f;
    }
    CHECK_OK(tk_call(mod, "f", 4, (DLTensor *[]){x, f, y, z}));
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
      bad += tk_get(y, i) != tk_get(x, i);
      bad += tk_get(z, i) != (double)(int64_t)pf[i];
    }
    if (bad) test_fail(__FILE__, __LINE__, "%s <-> float32 on 16 lanes: %d wrong values", dt_str(it), bad);
    kiln_array_free(x);
    kiln_array_free(f);
    kiln_array_free(y);
    kiln_array_free(z);
    kiln_module_free(mod);
  }
}

/* min and max of float32 on 16 lanes (VMINPS/VMAXPS on AVX-512) against
 * C's `a < b ? a : b` and `a > b ? a : b` bit for bit: NaN in either
 * operand, zeros of both signs, infinities and ordinary values in every
 * pairing, each operand order. */
static void test_vector_minmax_f32(void) {
  const float special[] = {NAN, -NAN, 0.0f, -0.0f, INFINITY, -INFINITY, 1.0f, -1.0f, 255.0f, 1e-40f, -3.5f, 7.25f};
  const int ns = (int)(sizeof special / sizeof special[0]);
  int64_t n = 16 * 20;
  Tensor *A = te_placeholder_c("A", 1, &n, DT_F32), *B = te_placeholder_c("B", 1, &n, DT_F32);
  Expr **v = te_axis_vars(1, NULL);
  Tensor *Mn = te_compute("Mn", 1, A->shape, v, ir_min(te_read1(A, v[0]), te_read1(B, v[0])), NULL);
  v = te_axis_vars(1, NULL);
  Tensor *Mx = te_compute("Mx", 1, A->shape, v, ir_max(te_read1(A, v[0]), te_read1(B, v[0])), NULL);
  Schedule *s = te_create_schedule(2, (Tensor *[]){Mn, Mx});
  for (int k = 0; k < 2; k++) {
    Stage *st = sch_stage(s, k ? Mx : Mn);
    IterVar *o, *in;
    CHECK_OK(stage_split(st, stage_axis(st, 0), ir_i32(16), &o, &in));
    CHECK_OK(stage_vectorize(st, in));
  }
  KilnModule *mod = kiln_build(s, 4, (Tensor *[]){A, B, Mn, Mx}, "f", NULL, NULL);
  CHECK_NN(mod);
  if (!mod) return;
  DLTensor *a = tk_array(1, &n, DT_F32), *b = tk_array(1, &n, DT_F32), *mn = tk_array(1, &n, DT_F32),
           *mx = tk_array(1, &n, DT_F32);
  float *pa = a->data, *pb = b->data;
  for (int64_t i = 0; i < n; i++) {
    if (i < ns * ns) {
      pa[i] = special[i / ns], pb[i] = special[i % ns];
    } else {
      pa[i] = (float)(test_rand() % 2001) / 8.0f - 125.0f, pb[i] = (float)(test_rand() % 2001) / 8.0f - 125.0f;
    }
  }
  CHECK_OK(tk_call(mod, "f", 4, (DLTensor *[]){a, b, mn, mx}));
  int bad = 0;
  for (int64_t i = 0; i < n; i++) {
    float emn = pa[i] < pb[i] ? pa[i] : pb[i], emx = pa[i] > pb[i] ? pa[i] : pb[i];
    bad += memcmp(&((float *)mn->data)[i], &emn, 4) != 0;
    bad += memcmp(&((float *)mx->data)[i], &emx, 4) != 0;
  }
  if (bad) test_fail(__FILE__, __LINE__, "float32 min/max on 16 lanes: %d values differ from C's a < b ? a : b", bad);
  kiln_array_free(a);
  kiln_array_free(b);
  kiln_array_free(mn);
  kiln_array_free(mx);
  kiln_module_free(mod);
}

/* Tensors of 2^31 or more elements: generated code indexes with 32-bit
 * integers, so a constant shape that large is refused where it is made,
 * and a symbolic one when the kernel is called with such a tensor. */
static void test_error_tensor_too_large(void) {
  CHECK(te_placeholder_c("A", 2, (int64_t[]){65536, 32768}, DT_F32) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "placeholder 'A': shape (65536, 32768) has 2147483648 elements, more than Kiln "
                                   "supports (2^31 - 1");
  CHECK_NN(te_placeholder_c("A", 2, (int64_t[]){65536, 32767}, DT_F32)); /* 2^31 - 65536 */
  Expr *big[3] = {ir_i64(INT64_MAX), ir_i32(4), ir_i32(4)}; /* the product overflows */
  CHECK(te_placeholder("P", 3, big, DT_F32) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "has over 9223372036854775807 elements");
  Tensor *A = te_placeholder_c("A", 1, (int64_t[]){4}, DT_F32);
  Expr **v = te_axis_vars(2, NULL);
  CHECK(te_compute("B", 2, (Expr *[]){ir_i32(1 << 16), ir_i32(1 << 16)}, v, te_read1(A, ir_i32(0)), NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "compute 'B': shape (65536, 65536) has 4294967296 elements");
  CHECK(te_reduce_axis(ir_i32(0), ir_i64((int64_t)1 << 32), "k") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "reduce axis 'k': extent 4294967296 is too large");
  /* symbolic: checked when the kernel is called */
  Expr *n = ir_var("n", DT_I32);
  Tensor *X = te_placeholder("X", 2, (Expr *[]){n, ir_i32(65536)}, DT_F32);
  Expr **w = te_axis_vars(2, NULL);
  Tensor *Y = te_compute("Y", 2, X->shape, w, ir_mul(te_read2(X, w[0], w[1]), ir_f32(2)), NULL);
  CHECK_NN(Y);
  if (!Y) return;
  KilnModule *mod = kiln_build(te_create_schedule(1, &Y), 2, (Tensor *[]){X, Y}, "dbl", NULL, NULL);
  CHECK_NN(mod);
  if (!mod) return;
  /* a tensor that claims 32769 x 65536 elements over 4 bytes: the check
   * comes before any element is touched */
  float buf[1] = {0};
  int64_t shape[2] = {32769, 65536};
  DLTensor huge = {.data = buf, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 32, 1}, .shape = shape};
  CHECK(tk_call(mod, "dbl", 2, (DLTensor *[]){&huge, &huge}) != 0);
  CHECK_CONTAINS(kiln_last_error(), "dbl: argument 0 (X) has 2147549184 elements, more than Kiln's generated code "
                                    "indexes (2^31 - 1");
  int64_t ok_shape[2] = {2, 65536};
  DLTensor *a = tk_array(2, ok_shape, DT_F32), *b = tk_array(2, ok_shape, DT_F32);
  tk_fill(a, 1.5);
  CHECK_OK(tk_call(mod, "dbl", 2, (DLTensor *[]){a, b}));
  CHECK(tk_get(b, 2 * 65536 - 1) == 3.0);
  kiln_array_free(a);
  kiln_array_free(b);
  kiln_module_free(mod);
}

static void test_error_compute_at(void) {
  int64_t n = 32;
  Tensor *A = te_placeholder_c("A", 1, &n, DT_F32);
  Expr **v = te_axis_vars(1, NULL);
  Tensor *B = te_compute("B", 1, A->shape, v, ir_add(te_read1(A, v[0]), ir_f32(1)), NULL);
  v = te_axis_vars(1, NULL);
  Tensor *C = te_compute("C", 1, A->shape, v, ir_mul(te_read1(B, v[0]), ir_f32(2)), NULL);
  v = te_axis_vars(1, NULL);
  Tensor *D = te_compute("D", 1, A->shape, v, ir_mul(te_read1(A, v[0]), ir_f32(3)), NULL);
  v = te_axis_vars(1, NULL);
  Tensor *E = te_compute("E", 1, A->shape, v, ir_mul(te_read1(C, v[0]), ir_f32(4)), NULL);
  Schedule *s = te_create_schedule(2, (Tensor *[]){E, D});
  Stage *sb = sch_stage(s, B), *sc = sch_stage(s, C), *sd = sch_stage(s, D);
  /* D does not read B */
  CHECK(stage_compute_at(sb, sd, stage_axis(sd, 0)) != 0);
  CHECK_CONTAINS(kiln_get_error(), "stage 'D' does not read 'B'");
  /* a cycle: B inside C, then C inside B */
  CHECK_OK(stage_compute_at(sb, sc, stage_axis(sc, 0)));
  CHECK(stage_compute_at(sc, sb, stage_axis(sb, 0)) != 0);
  CHECK_CONTAINS(kiln_get_error(), "creates a cycle");
  /* an axis of another stage */
  CHECK(stage_compute_at(sb, sc, stage_axis(sd, 0)) != 0);
  CHECK_CONTAINS(kiln_get_error(), "does not belong to stage 'C'");
  /* inlining a reduction */
  Tensor *Am, *Bm, *Cm = matmul(4, 4, 4, &Am, &Bm);
  v = te_axis_vars(2, NULL);
  Tensor *E2 = te_compute("E", 2, Cm->shape, v, ir_add(te_read2(Cm, v[0], v[1]), ir_f32(1)), NULL);
  Schedule *s2 = te_create_schedule(1, &E2);
  CHECK(stage_compute_inline(sch_stage(s2, Cm)) != 0);
  CHECK_CONTAINS(kiln_get_error(), "stage 'C' is a reduction and cannot be inlined");
}

static void test_error_reorder_other_stage(void) {
  Tensor *a, *b, *c = vecadd(16, &a, &b);
  Expr **v = te_axis_vars(1, NULL);
  Tensor *d = te_compute("d", 1, c->shape, v, ir_mul(te_read1(c, v[0]), ir_f32(2)), NULL);
  Schedule *s = te_create_schedule(1, &d);
  Stage *sc = sch_stage(s, c), *sd = sch_stage(s, d);
  CHECK(stage_reorder(sd, 2, (IterVar *[]){stage_axis(sd, 0), stage_axis(sc, 0)}) != 0);
  CHECK_CONTAINS(kiln_get_error(), "axis 'i' does not belong to stage 'd'");
  CHECK(stage_fuse(sd, stage_axis(sd, 0), stage_axis(sd, 0), NULL) != 0);
  CHECK(stage_split(sch_stage(s, a), NULL, ir_i32(2), NULL, NULL) != 0);
}

/* The compiled-unit cache: a second build of the same source compiles
 * nothing (a logging compiler wrapper sees no -c), links the cached object
 * and runs; another source or other flags compile again; "off" caches
 * nothing. */
static void test_compile_cache(void) {
  char *tmp = kiln_mkdtemp("kiln-cachetest-");
  CHECK(tmp != NULL);
  if (!tmp) return;
  const char *cache = kfmt("%s/cache", tmp), *log = kfmt("%s/cc.log", tmp), *wrap = kfmt("%s/cc.sh", tmp);
  const char *script = kfmt("#!/bin/sh\necho \"$@\" >> %s\nexec cc \"$@\"\n", log);
  CHECK_OK(kiln_write_file(wrap, script, strlen(script)));
  chmod(wrap, 0755);
  const char *keep = getenv("KILN_CACHE_DIR");
  char *saved = keep ? kstrdup(keep) : NULL;
  setenv("KILN_CACHE_DIR", cache, 1);
  CompileOptions co = {wrap, NULL, NULL};
  int compiles[4];
  for (int round = 0; round < 4; round++) {
    Tensor *a, *b, *c = vecadd(round == 2 ? 24 : 16, &a, &b);
    Schedule *s = te_create_schedule(1, &c);
    if (round == 3) setenv("KILN_CACHE_DIR", "off", 1);
    KilnModule *mod = kiln_build(s, 3, (Tensor *[]){a, b, c}, "f", NULL, &co);
    CHECK(mod != NULL);
    kiln_module_free(mod);
    char *text = kiln_read_file(log, NULL);
    compiles[round] = 0;
    for (const char *p = text ? text : ""; (p = strstr(p, " -c ")); p++) compiles[round]++;
    free(text);
  }
  CHECK_INT(compiles[0], 1);
  CHECK_INT(compiles[1], 1); /* the same source: the cached object */
  CHECK_INT(compiles[2], 2); /* another size is another source */
  CHECK_INT(compiles[3], 3); /* off: compiled again */

  /* Clearing the cache while a build that hit it is linking: the link
   * reads the build's own copy, so it still succeeds.  The wrapper deletes
   * the cache folder at the link step once the marker exists. */
  const char *marker = kfmt("%s/clear-at-link", tmp), *wrap2 = kfmt("%s/cc2.sh", tmp);
  const char *script2 = kfmt("#!/bin/sh\necho \"$@\" >> %s\ncase \" $* \" in *\" -shared \"*) "
                             "[ -e %s ] && rm -rf %s;; esac\nexec cc \"$@\"\n",
                             log, marker, cache);
  CHECK_OK(kiln_write_file(wrap2, script2, strlen(script2)));
  chmod(wrap2, 0755);
  setenv("KILN_CACHE_DIR", cache, 1);
  CompileOptions co2 = {wrap2, NULL, NULL};
  for (int round = 0; round < 2; round++) {
    if (round == 1) CHECK_OK(kiln_write_file(marker, "", 0));
    Tensor *a, *b, *c = vecadd(40, &a, &b);
    Schedule *s = te_create_schedule(1, &c);
    KilnModule *mod = kiln_build(s, 3, (Tensor *[]){a, b, c}, "f", NULL, &co2);
    CHECK(mod != NULL); /* round 1 hits the cache, whose folder is gone by the link */
    if (!mod) fprintf(stderr, "  %s\n", kiln_get_error());
    kiln_module_free(mod);
  }
  char *text = kiln_read_file(log, NULL);
  int n = 0;
  for (const char *p = text ? text : ""; (p = strstr(p, " -c ")); p++) n++;
  free(text);
  CHECK_INT(n, 4); /* round 0 compiled, round 1 linked the cached object */
  struct stat st;
  CHECK(stat(cache, &st) != 0); /* the wrapper did clear it */
  if (saved) setenv("KILN_CACHE_DIR", saved, 1);
  else unsetenv("KILN_CACHE_DIR");
  kiln_rmtree(tmp);
  free(tmp);
}

static void test_error_compiler_failure(void) {
  Tensor *a, *b, *c = vecadd(16, &a, &b);
  Schedule *s = te_create_schedule(1, &c);
  CompileOptions bad = {"kiln-no-such-compiler", NULL, NULL};
  CHECK(kiln_build(s, 3, (Tensor *[]){a, b, c}, "f", NULL, &bad) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "cannot run the C compiler 'kiln-no-such-compiler'");
  CompileOptions badflag = {"cc", "-O2 -fPIC --no-such-flag-kiln", NULL};
  CHECK(kiln_build(s, 3, (Tensor *[]){a, b, c}, "f", NULL, &badflag) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "C compiler failed (cc exited with status");
  /* a missing argument */
  CHECK(kiln_lower(s, 2, (Tensor *[]){a, c}, "f", NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "tensor 'b' is read but is neither computed here nor an argument");
  CHECK(kiln_lower(s, 2, (Tensor *[]){a, b}, "f", NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "output 'c' is not in the argument list");
}

const TestCase lower_tests[] = {
    {"error_tensor_too_large", test_error_tensor_too_large},
    {"vecadd_text", test_vecadd_text},
    {"add2_runs", test_add2_runs},
    {"matmul_template", test_matmul_template},
    {"error_split_non_leaf", test_error_split_non_leaf},
    {"error_vectorize_symbolic", test_error_vectorize_symbolic},
    {"combine_loads", test_combine_loads},
    {"permuted_loads", test_permuted_loads},
    {"combine_stores", test_combine_stores},
    {"unswitch_tail_guards", test_unswitch_tail_guards},
    {"hoist_divmod", test_hoist_divmod},
    {"hoist_divmod_c", test_hoist_divmod_c},
    {"small_parallel_ops", test_small_parallel_ops},
    {"small_parallel", test_small_parallel},
    {"narrow_int_folding", test_narrow_int_folding},
    {"vector_casts_narrow", test_vector_casts_narrow},
    {"vector_minmax_f32", test_vector_minmax_f32},
    {"error_compute_at", test_error_compute_at},
    {"error_reorder_other_stage", test_error_reorder_other_stage},
    {"error_compiler_failure", test_error_compiler_failure},
    {"compile_cache", test_compile_cache},
    {NULL, NULL},
};
