// What the LLM proposer's prompts say about a key's operator: the operator part of a
// ProposerContext (which prompt files, the semantics in prose, the key line, the contract header the
// kernel includes, who the baseline is, the row prompts' own placeholders). The search adapter adds
// the GPU, the roofline and the tree. A GEMM key gets what it always got, so GEMM prompts render as
// before; a row-operator key (issue 33) gets the row prompt files (search/prompts/*.row.v1.md).
#pragma once

#include "key/gemm_key.hpp"
#include "key/row_key.hpp"
#include "llm/proposer_context.hpp"

namespace kd::llm {

// op gemm; cuBLAS semantics (column-major, op by ta/tb, beta0, the bias epilogue, the precision
// class); <kdispatch/gemm.cuh>; "The vendor library"; no operator_vars.
ProposerContext operator_context(const GemmKey& key);

// op row; the operator's formula (rmsnorm, layernorm with the biased variance, softmax with the
// row's max subtracted), what this key's weight= and bias= make of args.weight and args.bias, and
// the dtype's conversions (f32 arithmetic, y rounded once); <kdispatch/rowop.cuh>; the framework's
// kernel as baseline; operator_vars:
//   rows, cols, dtype    the key's numbers
//   row_bytes            cols * the dtype's bytes
//   row_alignment        whether every row starts 16-byte aligned (the tensors themselves do), and
//                        the widest access that is aligned at every row's start when not
//   min_bytes            min_bytes(shape) (key/row_key.hpp), in bytes and MiB
ProposerContext operator_context(const RowKey& key);

}  // namespace kd::llm
