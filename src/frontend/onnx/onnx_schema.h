/*
 * onnx_schema.h - ONNX's operator versions, and how a node's version is
 * found.
 *
 * A model imports an opset per domain; an operator's version is the
 * newest version ONNX released of it at or below that opset (Relu at
 * opset 20 is Relu-14).  onnx_schema.c, generated from the newest onnx
 * release by tools/onnx_schema_versions.py, lists every op's versions and
 * marks those that changed only the data types the op allows.  Such a
 * version asks nothing new of Kiln (a type Kiln lacks is refused where a
 * value of it is made), so the version Kiln must implement is the op's
 * "semantic" version: the newest one at or below the opset that changed
 * inputs, outputs, attributes or the op's description.  The importer's
 * table (ops/table.c) says, row by row, up to which version Kiln
 * implements an op; a newer semantic version is an error that names the
 * op, its version and the versions Kiln has.
 */
#ifndef KILN_FRONTEND_ONNX_SCHEMA_H
#define KILN_FRONTEND_ONNX_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#define ONNX_SCHEMA_MAX_VERSIONS 15

typedef struct OnnxSchemaOp {
  const char *domain; /* "" for ai.onnx */
  const char *op;
  uint8_t versions[ONNX_SCHEMA_MAX_VERSIONS]; /* ascending, 0 after the last */
  uint16_t types_only; /* bit i: versions[i] changed only the allowed data types */
} OnnxSchemaOp;

typedef struct OnnxSchemaDomain {
  const char *domain;
  int newest_opset; /* the newest opset of the domain the table knows */
} OnnxSchemaDomain;

/* ===== onnx_schema.c (generated) ===== */
extern const char onnx_schema_onnx_version[]; /* the onnx release it was made from */
extern const OnnxSchemaDomain onnx_schema_domains[]; /* ends with a NULL domain */
extern const OnnxSchemaOp onnx_schema_ops[];         /* sorted by domain, op; ends with NULL op */

/* ===== onnx_version.c ===== */
/* The domain's name as the table spells it ("ai.onnx" is ""). */
const char *onnx_domain_canonical(const char *domain);
/* The newest opset Kiln knows of a domain; 0 for a domain ONNX does not
 * define (com.microsoft: Kiln's table alone says what it has). */
int onnx_schema_newest_opset(const char *domain);
/* The op's versions, or NULL when ONNX defines no such op. */
const OnnxSchemaOp *onnx_schema_find(const char *domain, const char *op);
/* The op's version at opset (0: the op does not exist yet at that opset),
 * and the newest version at or below it that is not a data-type-only
 * change. */
int onnx_schema_version(const OnnxSchemaOp *s, int64_t opset);
int onnx_schema_semantic_version(const OnnxSchemaOp *s, int version);
/* The version of op (domain) at opset against the version ranges Kiln
 * implements ([since[i], until[i]], ONNX versions, n ranges): the index of
 * the range that holds the op's semantic version, with *version set to
 * the op's version; -1 + an error naming the op, its version and the
 * versions Kiln has when none does, when the op does not exist yet at
 * that opset, or when the opset is newer than the newest the table knows.
 * An op of a domain ONNX does not define (com.microsoft) is at the
 * domain's opset, checked against the ranges alone. */
int onnx_version_resolve(const char *domain, const char *op, int64_t opset, int n, const int *since, const int *until,
                         int *version);

#endif
