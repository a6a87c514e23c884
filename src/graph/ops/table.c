/*
 * table.c - the op table: an explicit list of the row tables in
 * elemwise.c, nn.c, transform.c, scatter.c, reduce.c, bf16.c, strings.c and datadep.c, searched by name.  Adding an op means adding a row to one of them.
 */
#include <string.h>

#include "../graph.h"

extern const OpDef ops_elemwise[], ops_nn[], ops_transform[], ops_scatter[], ops_reduce[], ops_bf16[], ops_int8[], ops_strings[], ops_datadep[];

static const OpDef *const tables[] = {ops_elemwise, ops_nn, ops_transform, ops_scatter, ops_reduce, ops_bf16, ops_int8, ops_strings, ops_datadep};

int op_count(void) {
  int n = 0;
  for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
    for (const OpDef *d = tables[t]; d->name; d++) n++;
  return n;
}

const OpDef *op_at(int i) {
  for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
    for (const OpDef *d = tables[t]; d->name; d++)
      if (i-- == 0) return d;
  return NULL;
}

const OpDef *op_lookup(const char *name) {
  for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
    for (const OpDef *d = tables[t]; d->name; d++)
      if (!strcmp(d->name, name)) return d;
  return NULL;
}

const OpDef *op_by_id(OpId id) {
  for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
    for (const OpDef *d = tables[t]; d->name; d++)
      if (d->id == id) return d;
  return NULL;
}

int op_table_check(void) {
  static const char *const names[OP_NUM_IDS] = {
      [OP_OTHER] = NULL,
#define X(id, name) [id] = name,
      GRAPH_OP_IDS(X)
#undef X
  };
  int n = op_count();
  for (int i = 0; i < n; i++) {
    const OpDef *d = op_at(i);
    if (op_lookup(d->name) != d) return kiln_set_error("op table: '%s' has two rows", d->name);
    if (d->id != OP_OTHER && (d->id >= OP_NUM_IDS || strcmp(names[d->id], d->name)))
      return kiln_set_error("op table: the row of '%s' has the id of '%s' (fix its id in GRAPH_OP_IDS's order)", d->name,
                            d->id < OP_NUM_IDS ? names[d->id] : "no op");
  }
  for (int id = 1; id < OP_NUM_IDS; id++) {
    const OpDef *d = op_lookup(names[id]);
    if (!d || d->id != (OpId)id)
      return kiln_set_error("op table: '%s' is in GRAPH_OP_IDS but %s", names[id],
                            d ? "its row does not carry the id" : "has no row");
  }
  return 0;
}
