/*
 * test_batch_matmul.c - batch_matmul.x86, the batched matrix product of
 * two activations (attention's Q K^T and P V).
 *
 * Random workloads (rank 3 and 4, odd sizes, M from 1 to 40 so row blocks
 * have tails), each with a random config of the template's space or its
 * fallback, with and without a fused epilogue (scale, scale + add),
 * built, run on random data and compared with the unscheduled lowering of
 * the same compute (1e-6) and with a naive product in double (1e-5).
 * Then bad configs and operands are refused with the reason, the
 * fallback is a point of the space, and a record of the task round-trips.
 * Builds use -O1.
 */
#include <math.h>
#include <stdlib.h>

#include "autotune/autotune.h"
#include "kernel_util.h"
#include "topi/topi.h"

static const CompileOptions copt = {NULL, "-O1 -march=native -fPIC -std=gnu11", NULL};

static bool run_case(const Template *tm, int caseno, bool fallback) {
  int r = test_rand() % 3 ? 3 : 4;
  int64_t b0 = test_rand_between(1, 3), b1 = r == 4 ? test_rand_between(1, 3) : 1;
  int64_t M = test_rand_between(1, 40), K = test_rand_between(1, 37);
  int64_t N = test_pick(8, (int64_t[]){1, 3, 8, 16, 24, 32, 48, 64});
  int64_t batch = b0 * b1;
  Workload *wl = wl_batch_matmul(tm->name, batch, M, N, K, "float32", "float32");
  int64_t idx;
  ConfigEntity *cfg = tk_random_config(tm, wl, fallback, &idx);
  if (!cfg) return false;
  int epi = caseno % 3; /* none, scale, scale + add of a same-shaped tensor */
  const char *desc = kfmt("case %d: rank %d %s: config %lld %s, epilogue %d", caseno, r, wl->key, (long long)idx,
                          config_entity_json(cfg), epi);
  if (getenv("KILN_X86_VERBOSE")) fprintf(stderr, "  %s\n", desc);
  int64_t sa[4], sb[4], so[4];
  int nb = r - 2;
  if (r == 4) sa[0] = sb[0] = so[0] = b0, sa[1] = sb[1] = so[1] = b1;
  else sa[0] = sb[0] = so[0] = b0;
  sa[nb] = M, sa[nb + 1] = K, sb[nb] = K, sb[nb + 1] = N, so[nb] = M, so[nb + 1] = N;
  Tensor *a = te_placeholder_c("a", r, sa, DT_F32), *bt = te_placeholder_c("b", r, sb, DT_F32);
  Tensor *c = topi_x86_batch_matmul(a, bt, DT_F32), *out = c, *res = NULL;
  CHECK_MSG(c != NULL, "%s: %s", desc, kiln_get_error());
  if (!c) return false;
  if (epi) {
    Expr **v = te_axis_vars(r, NULL);
    Expr *e = ir_mul(te_read(c, r, v), ir_f32(0.125f));
    if (epi == 2) {
      res = te_placeholder_c("res", r, so, DT_F32);
      e = ir_add(e, te_read(res, r, v));
    }
    out = te_compute("T_epi", r, c->shape, v, e, "elemwise");
  }
  Schedule *s = te_create_schedule(1, &out);
  if (tm->schedule(target_host(), s, cfg, c, 1, &out)) {
    test_fail(__FILE__, __LINE__, "%s: schedule failed: %s", desc, kiln_get_error());
    return false;
  }
  Tensor *args[4] = {a, bt, res ? res : out, out};
  int na = res ? 4 : 3;
  DLTensor **arr = tk_run_vs_unscheduled(s, na, args, &copt, 1e-6, desc);
  bool ok = arr != NULL;
  if (ok) {
    DLTensor *want = tk_array_for(out);
    const float *av = arr[0]->data, *bv = arr[1]->data, *rv = res ? arr[2]->data : NULL;
    float *wv = want->data;
    for (int64_t q = 0; q < batch; q++)
      for (int64_t y = 0; y < M; y++)
        for (int64_t x = 0; x < N; x++) {
          double sum = 0;
          for (int64_t k = 0; k < K; k++) sum += (double)av[(q * M + y) * K + k] * bv[(q * K + k) * N + x];
          int64_t o = (q * M + y) * N + x;
          if (epi) sum *= 0.125;
          if (rv) sum += rv[o];
          wv[o] = (float)sum;
        }
    double err = tk_rel_err(arr[na - 1], want);
    if (!(err < 1e-5)) {
      test_fail(__FILE__, __LINE__, "%s: relative error %g against a naive product", desc, err);
      ok = false;
    }
    kiln_array_free(want);
  }
  tk_arrays_free(na, arr);
  return ok;
}

static void test_random(void) {
  const Template *tm = template_lookup("batch_matmul.x86");
  CHECK_NN(tm);
  for (int i = 0; tm && i < tk_template_cases(8); i++) run_case(tm, i, i % 3 == 2);
}

static void test_space_fallback_records(void) {
  const Template *tm = template_lookup("batch_matmul.x86");
  if (!tm) return;
  /* ViT-B/16's attention: 12 heads, 197 tokens (prime: the fallback's 12
   * rows leave a tail, and that config is in the space) */
  Workload *wl = wl_batch_matmul(tm->name, 12, 197, 197, 64, "float32", "float32");
  CHECK(wl_flops(wl) == 2.0 * 12 * 197 * 197 * 64);
  ConfigSpace *cs = template_space(tm, target_host(), wl);
  ConfigEntity *fb = template_fallback(tm, target_host(), wl);
  CHECK(cs && fb);
  if (!cs || !fb) return;
  CHECK_INT(cfg_split_inner(fb, "tile_y"), 12);
  CHECK_INT(cfg_split_inner(fb, "tile_x"), 1); /* 197 columns: no larger block divides them */
  CHECK(fb->index >= 0 && space_index_of(cs, fb) == fb->index);
  CHECK_OK(tm->check(target_host(), fb, wl));
  /* its P V (64 columns): two vectors of columns, a point of the space */
  Workload *pv = wl_batch_matmul(tm->name, 12, 197, 64, 197, "float32", "float32");
  ConfigSpace *cpv = template_space(tm, target_host(), pv);
  ConfigEntity *fpv = template_fallback(tm, target_host(), pv);
  CHECK(cpv && fpv);
  if (cpv && fpv) {
    CHECK_INT(cfg_split_inner(fpv, "tile_y"), 12);
    CHECK_INT(cfg_split_inner(fpv, "tile_x"), 2 * target_host()->vector_lanes);
    CHECK(fpv->index >= 0 && space_index_of(cpv, fpv) == fpv->index);
    CHECK_OK(tm->check(target_host(), fpv, pv));
  }
  /* a record of the task */
  int64_t idx = space_size(cs) / 2;
  const char *line =
      kfmt("{\"input\": [\"llvm -mcpu=x86-64-v4\", \"batch_matmul.x86\", %s, {}], \"config\": {\"index\": %lld, "
           "\"code_hash\": null, \"entity\": %s}, \"result\": [[0.0002], 0, 1.5, 1700000000.5], \"version\": 0.2}",
           wl_args_json(wl), (long long)idx, config_entity_json(space_get(cs, idx)));
  TuneRecord *rec = record_parse(line);
  CHECK_MSG(rec != NULL, "%s", kiln_get_error());
  if (rec) {
    CHECK_STR(record_json(rec), line);
    CHECK_INT(rec->kind, TASK_BATCH_MATMUL);
    CHECK(wl_equal(rec->wl, wl));
    CHECK_INT(space_index_of(cs, rec->config), idx);
  }
  /* bad configs and operands */
  ConfigEntity *c = config_entity_from_json("[[\"tile_y\", \"sp\", [-1, 12]], [\"tile_x\", \"sp\", [-1, 16]], "
                                            "[\"tile_k\", \"sp\", [-1, 4]]]");
  CHECK(tm->check(target_host(), c, wl) != 0);
  CHECK_CONTAINS(kiln_get_error(), "'tile_x': the parts multiply to 16, which does not divide the 197 columns (N)");
  Tensor *a = te_placeholder_c("a", 3, (int64_t[]){2, 5, 7}, DT_F32);
  CHECK(topi_x86_batch_matmul(a, te_placeholder_c("b", 3, (int64_t[]){3, 7, 4}, DT_F32), DT_F32) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "batch dimension 0 differs (2 vs 3)");
  CHECK(topi_x86_batch_matmul(a, te_placeholder_c("b", 3, (int64_t[]){2, 6, 4}, DT_F32), DT_F32) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "the inner dimensions differ");
  Workload *bad = wl_from_json("batch_matmul.x86", "[[\"TENSOR\", [2, 5, 7], \"float32\"], [\"TENSOR\", [2, 8, 4], "
                                                   "\"float32\"], null, \"float32\"]");
  CHECK(bad && template_space(tm, target_host(), bad) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "expected a [batch, M, K] and b [batch, K, N]");
}

const TestCase batch_matmul_tests[] = {
    {"random", test_random},
    {"space_fallback_records", test_space_fallback_records},
    {NULL, NULL},
};
