/* dce.c - dead-code elimination: graph_rewrite only visits what the
 * outputs reach, so rebuilding the graph drops everything else. */
#include "passes.h"

Graph *pass_dce(Graph *g, const PassContext *pc) {
  (void)pc;
  return graph_rewrite(g, NULL, NULL);
}
