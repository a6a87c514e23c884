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
 *
 * Per version the table also lists the op's attributes (name, type,
 * whether required) and the names of its inputs, and says whether the
 * version accepts attributes beyond its own (only LayerNormalization-17
 * does).  The importer checks each node's attributes against its
 * version's list (onnx_check_attrs below): an attribute the version does
 * not have, one of the wrong type, or a required one missing is an error,
 * as it is for onnx.checker and ONNX Runtime, never silently ignored
 * (ReduceSum's `axes` attribute is ReduceSum-1 and -11's; ReduceSum-13
 * takes axes as input 1, and reading the attribute there would give a
 * wrongly shaped result).  Ops ONNX does not define (ONNX Runtime's
 * com.microsoft ops, its LayerNormalization before opset 17) carry their
 * attribute lists in the importer's table instead.
 */
#ifndef KILN_FRONTEND_ONNX_SCHEMA_H
#define KILN_FRONTEND_ONNX_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ONNX_SCHEMA_MAX_VERSIONS 15

/* An attribute of an op version: its name, its type (AttributeProto's
 * numbers, OnnxAttrType in onnx_model.h) and whether the op requires it.
 * Lists end with a NULL name. */
typedef struct OnnxSchemaAttr {
  const char *name;
  uint8_t type;
  uint8_t required;
} OnnxSchemaAttr;

typedef struct OnnxSchemaOp {
  const char *domain; /* "" for ai.onnx */
  const char *op;
  uint8_t versions[ONNX_SCHEMA_MAX_VERSIONS]; /* ascending, 0 after the last */
  uint16_t types_only; /* bit i: versions[i] changed only the allowed data types */
  uint16_t open_attrs; /* bit i: versions[i] accepts attributes it does not list */
  const OnnxSchemaAttr *attrs[ONNX_SCHEMA_MAX_VERSIONS]; /* per version */
  const char *const *inputs[ONNX_SCHEMA_MAX_VERSIONS];    /* per version, NULL-terminated */
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
/* Index of version in s->versions, -1 if it is not one of the op's. */
int onnx_schema_version_index(const OnnxSchemaOp *s, int version);
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

/* ===== onnx_attr_check.c ===== */
typedef struct OnnxNode OnnxNode;
/* Node n's attributes against version `version` of its op (s: the op's
 * history, NULL for an op ONNX does not define; own: the attribute list
 * to use where the history has no such version, the importer's table's
 * for ONNX Runtime's ops, and own_open whether that version accepts
 * attributes it does not list).  0, or -1 + an error (without the node's
 * name: the caller adds it) naming the attribute and the op version, and
 * saying where the attribute belongs: an attribute the version does not
 * have (a warning on stderr where the version accepts any), one of
 * another type, a required one missing, one given twice. */
int onnx_check_attrs(const OnnxNode *n, const OnnxSchemaOp *s, int version, const OnnxSchemaAttr *own, bool own_open);

#endif
