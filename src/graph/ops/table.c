/*
 * table.c - the op table: an explicit list of the row tables in
 * elemwise.c, nn.c, transform.c and reduce.c, searched by name.  Adding an op means adding a row to one of them.
 */
#include <string.h>

#include "../graph.h"

extern const OpDef ops_elemwise[], ops_nn[], ops_transform[], ops_reduce[];

static const OpDef *const tables[] = {ops_elemwise, ops_nn, ops_transform, ops_reduce};

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
