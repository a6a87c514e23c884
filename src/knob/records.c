/*
 * records.c - tuning records: one JSON object a line, in AutoTVM's two
 * forms (DESIGN §3).
 *
 *   v0.1 (TopHub's logs):
 *     {"i": [target, task_name, args, kwargs, workload,
 *            {"i": index, "t": template_key, "c": code_hash, "e": entities}],
 *      "r": [costs, error_no, all_cost, timestamp], "v": 0.1}
 *   v0.2 (what Kiln writes, as AutoTVM >= 0.7 does):
 *     {"input": [target, task_name, args, kwargs],
 *      "config": {"index": i, "code_hash": null, "entity": entities},
 *      "result": [costs, error_no, all_cost, timestamp], "version": 0.2}
 *
 * Both are read into one TuneRecord; a record written again in its own
 * version gives the same bytes (pyjson.c writes json.dumps' text), which
 * the tests check on every line of the seeds' TopHub logs.  Failed
 * measurements carry costs [1e9], as AutoTVM writes them.
 *
 * A record's task name also tells which op family it tunes (conv2d,
 * depthwise conv2d, dense, batch_matmul), whatever backend wrote it:
 * TopHub's CUDA tasks (topi_nn_conv2d with template "direct" or
 * "winograd", topi_nn_depthwise_conv2d_nchw, topi_nn_dense), TVM's newer
 * names (conv2d_nchw_winograd.cuda, dense_small_batch.cuda) and the x86
 * ones (topi_x86_conv2d_NCHWc, conv2d_NCHWc.x86).  Only records whose
 * target matches the machine (target.c) are ever applied.
 */
#include "knob.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *measure_error_name(int error_no) {
  static const char *names[] = {"no error",      "instantiation error", "compile error (host)", "compile error (device)",
                                "runtime error", "wrong answer",        "build timeout",        "run timeout",
                                "unknown error"};
  return error_no >= 0 && error_no <= MEASURE_UNKNOWN_ERROR ? names[error_no] : "unknown error";
}

TaskKind record_task_kind(const char *task_name) {
  if (!task_name) return TASK_OTHER;
  if (strstr(task_name, "depthwise")) return TASK_DEPTHWISE_CONV2D;
  if (strstr(task_name, "conv2d_transpose")) return TASK_OTHER;
  if (strstr(task_name, "conv2d")) return TASK_CONV2D;
  if (strstr(task_name, "dense")) return TASK_DENSE;
  if (strstr(task_name, "batch_matmul")) return TASK_BATCH_MATMUL;
  return TASK_OTHER;
}

const char *task_kind_name(TaskKind k) {
  switch (k) {
  case TASK_OTHER:
    return "other";
  case TASK_CONV2D:
    return "conv2d";
  case TASK_DEPTHWISE_CONV2D:
    return "depthwise_conv2d";
  case TASK_DENSE:
    return "dense";
  case TASK_BATCH_MATMUL:
    return "batch_matmul";
  }
  KUNREACHABLE();
}

double record_cost(const TuneRecord *r) {
  if (r->error_no != MEASURE_NO_ERROR || r->ncosts < 1) return INFINITY;
  double s = 0;
  for (int i = 0; i < r->ncosts; i++) s += r->costs[i];
  return s / r->ncosts;
}

void records_keep_latest(AVec *recs) {
  PtrMap newest = {0};
  pm_init_str(&newest);
  const char **keys = KNEWN(const char *, recs->len + 1);
  for (int i = 0; i < recs->len; i++) {
    TuneRecord *r = recs->data[i];
    keys[i] = kfmt("%s\n%s\n%s", r->target ? r->target : "", r->wl->key, config_entity_json(r->config));
    TuneRecord *o = pm_get(&newest, keys[i]);
    if (!o || r->timestamp >= o->timestamp) pm_put(&newest, keys[i], r);
  }
  int k = 0;
  for (int i = 0; i < recs->len; i++)
    if (pm_get(&newest, keys[i]) == recs->data[i]) recs->data[k++] = recs->data[i];
  recs->len = k;
  pm_free(&newest);
}

/* ---- reading ---- */

static TuneRecord *bad(const char *what) {
  kiln_set_error("tuning record: %s", what);
  return NULL;
}

static int parse_result(TuneRecord *r, const cJSON *res) {
  if (!cJSON_IsArray(res) || cJSON_GetArraySize(res) != 4)
    return kiln_set_error("tuning record: the result must be [costs, error_no, all_cost, timestamp]");
  const cJSON *costs = cJSON_GetArrayItem(res, 0), *eno = cJSON_GetArrayItem(res, 1), *all = cJSON_GetArrayItem(res, 2),
              *ts = cJSON_GetArrayItem(res, 3);
  if (!cJSON_IsArray(costs)) return kiln_set_error("tuning record: costs must be a list of seconds");
  int64_t eno_v;
  if (!pyjson_int64(eno, &eno_v)) return kiln_set_error("tuning record: error_no must be an integer");
  int n = cJSON_GetArraySize(costs);
  r->costs = KNEWN(double, n > 0 ? n : 1);
  r->ncosts = 0;
  bool all_numbers = true;
  for (const cJSON *c = costs->child; c; c = c->next) {
    if (cJSON_IsNumber(c)) r->costs[r->ncosts++] = c->valuedouble;
    else all_numbers = false; /* some TVM versions put the error text there */
  }
  /* a number beyond double's range (1e400) reads as infinity, which JSON
   * cannot write back: a record holds finite seconds */
  for (int i = 0; i < r->ncosts; i++)
    if (!isfinite(r->costs[i]))
      return kiln_set_error("tuning record: cost %d of the result is not a finite number of seconds", i);
  if ((cJSON_IsNumber(all) && !isfinite(all->valuedouble)) || (cJSON_IsNumber(ts) && !isfinite(ts->valuedouble)))
    return kiln_set_error("tuning record: all_cost and timestamp must be finite numbers");
  r->error_no = eno_v < 0 || eno_v > MEASURE_UNKNOWN_ERROR ? MEASURE_UNKNOWN_ERROR : (int)eno_v;
  if (!all_numbers && r->error_no == MEASURE_NO_ERROR) r->error_no = MEASURE_UNKNOWN_ERROR;
  r->all_cost = cJSON_IsNumber(all) ? all->valuedouble : 0;
  r->timestamp = cJSON_IsNumber(ts) ? ts->valuedouble : 0;
  return 0;
}

static int parse_input(TuneRecord *r, const cJSON *in, int want) {
  if (!cJSON_IsArray(in) || cJSON_GetArraySize(in) < want)
    return want == 6 ? kiln_set_error("tuning record: v0.1 \"i\" must be [target, task_name, args, kwargs, workload, "
                                      "config]")
                     : kiln_set_error("tuning record: \"input\" must be [target, task_name, args, kwargs]");
  const cJSON *tgt = cJSON_GetArrayItem(in, 0), *name = cJSON_GetArrayItem(in, 1), *args = cJSON_GetArrayItem(in, 2),
              *kw = cJSON_GetArrayItem(in, 3);
  if (!cJSON_IsString(tgt)) return kiln_set_error("tuning record: the target must be a string");
  if (!cJSON_IsString(name)) return kiln_set_error("tuning record: the task name must be a string");
  r->target = kstrdup(tgt->valuestring);
  r->wl = wl_from_cjson(name->valuestring, args);
  if (!r->wl) return kiln_error_context("tuning record of task '%s'", name->valuestring);
  r->kwargs = kw ? pyjson_dumps(kw) : "{}";
  r->kind = record_task_kind(name->valuestring);
  return 0;
}

TuneRecord *record_parse(const char *line) {
  /* records are UTF-8 text (AutoTVM reads them with Python's text I/O);
   * other bytes in a string could not be written back as they were read */
  long bad_at = utf8_invalid_at(line ? line : "");
  if (bad_at >= 0) {
    kiln_set_error("tuning record: not valid UTF-8 at column %ld (byte 0x%02x): tuning records are UTF-8 JSON text; "
                   "fix or remove the line", bad_at + 1, (unsigned)(unsigned char)line[bad_at]);
    return NULL;
  }
  cJSON *j = cJSON_Parse(line ? line : "");
  if (!j) return bad("not valid JSON");
  if (!cJSON_IsObject(j)) {
    cJSON_Delete(j);
    return bad("expected a JSON object");
  }
  TuneRecord *r = KNEW(TuneRecord);
  r->file = "";
  const cJSON *v1 = cJSON_GetObjectItemCaseSensitive(j, "i");
  int rc = 0;
  if (v1) {
    r->version = 1;
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(j, "r");
    rc = parse_input(r, v1, 6);
    if (!rc) {
      r->v1_workload = pyjson_dumps(cJSON_GetArrayItem(v1, 4));
      r->config = config_from_cjson(cJSON_GetArrayItem(v1, 5));
      if (!r->config) rc = kiln_error_context("tuning record of task '%s': config", r->wl->name);
    }
    if (!rc) rc = parse_result(r, res);
  } else {
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(j, "input");
    if (!in) {
      cJSON_Delete(j);
      return bad("neither v0.2 (\"input\", \"config\", \"result\") nor v0.1 (\"i\", \"r\")");
    }
    r->version = 2;
    rc = parse_input(r, in, 4);
    if (!rc) {
      r->config = config_from_cjson(cJSON_GetObjectItemCaseSensitive(j, "config"));
      if (!r->config) rc = kiln_error_context("tuning record of task '%s': config", r->wl->name);
    }
    if (!rc) rc = parse_result(r, cJSON_GetObjectItemCaseSensitive(j, "result"));
  }
  cJSON_Delete(j);
  return rc ? NULL : r;
}

static int load(const char *path, AVec *out, long *torn_at) {
  size_t len;
  char *text = kiln_read_file(path, &len);
  if (!text) return kiln_error_context("tuning records");
  if (torn_at) *torn_at = -1;
  int lineno = 0, rc = 0;
  const char *file = kstrdup(path);
  for (char *p = text; *p && !rc;) {
    char *nl = strchr(p, '\n');
    if (nl) *nl = 0;
    lineno++;
    char *s = p;
    while (*s == ' ' || *s == '\t' || *s == '\r') s++;
    if (*s && *s != '#') {
      TuneRecord *r = record_parse(s);
      if (!r && !nl && torn_at) {
        *torn_at = (long)(p - text); /* an interrupted write: the caller cuts it off */
        kiln_clear_error();
      } else if (!r) {
        rc = kiln_error_context("%s:%d", path, lineno);
      } else {
        r->file = file;
        r->line = lineno;
        av_push(out, r);
      }
    }
    if (!nl) break;
    p = nl + 1;
  }
  free(text);
  return rc;
}

int records_load(const char *path, AVec *out) { return load(path, out, NULL); }

int records_load_resume(const char *path, AVec *out, long *torn_at) { return load(path, out, torn_at); }

/* ---- writing ---- */

static void put_result(StrBuf *sb, const TuneRecord *r) {
  sb_puts(sb, "[[");
  if (r->error_no == MEASURE_NO_ERROR) {
    for (int i = 0; i < r->ncosts; i++) {
      if (i) sb_puts(sb, ", ");
      pyjson_float(sb, r->costs[i]);
    }
  } else {
    pyjson_float(sb, 1e9);
  }
  sb_printf(sb, "], %d, ", r->error_no);
  pyjson_float(sb, r->all_cost);
  sb_puts(sb, ", ");
  pyjson_float(sb, r->timestamp);
  sb_putc(sb, ']');
}

static void put_head(StrBuf *sb, const TuneRecord *r) {
  pyjson_str(sb, r->target ? r->target : "");
  sb_puts(sb, ", ");
  pyjson_str(sb, r->wl->name);
  sb_puts(sb, ", ");
  sb_puts(sb, wl_args_json(r->wl));
  sb_puts(sb, ", ");
  sb_puts(sb, r->kwargs ? r->kwargs : "{}");
}

char *record_json(const TuneRecord *r) {
  StrBuf sb = {0};
  sb_puts(&sb, "{\"input\": [");
  put_head(&sb, r);
  sb_puts(&sb, "], \"config\": ");
  sb_puts(&sb, config_json(r->config));
  sb_puts(&sb, ", \"result\": ");
  put_result(&sb, r);
  sb_puts(&sb, ", \"version\": 0.2}");
  char *s = kstrdup(sb.data);
  sb_free(&sb);
  return s;
}

char *record_json_v01(const TuneRecord *r) {
  StrBuf sb = {0};
  sb_puts(&sb, "{\"i\": [");
  put_head(&sb, r);
  sb_puts(&sb, ", ");
  sb_puts(&sb, r->v1_workload ? r->v1_workload : r->wl->key ? r->wl->key : wl_finish(r->wl)->key);
  sb_printf(&sb, ", {\"i\": %lld, \"t\": ", (long long)r->config->index);
  pyjson_str(&sb, r->config->template_key ? r->config->template_key : "");
  sb_puts(&sb, ", \"c\": ");
  if (r->config->code_hash) pyjson_str(&sb, r->config->code_hash);
  else sb_puts(&sb, "null");
  sb_puts(&sb, ", \"e\": ");
  sb_puts(&sb, config_entity_json(r->config));
  sb_puts(&sb, "}], \"r\": ");
  put_result(&sb, r);
  sb_puts(&sb, ", \"v\": 0.1}");
  char *s = kstrdup(sb.data);
  sb_free(&sb);
  return s;
}

int records_append(const char *path, int n, TuneRecord *const *recs) {
  FILE *f = fopen(path, "a");
  if (!f) return kiln_set_error("cannot open '%s' for appending tuning records: %s", path, strerror(errno));
  for (int i = 0; i < n; i++) fprintf(f, "%s\n", record_json(recs[i]));
  if (fclose(f)) return kiln_set_error("writing tuning records to '%s': %s", path, strerror(errno));
  return 0;
}
