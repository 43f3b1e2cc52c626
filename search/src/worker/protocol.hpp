// Messages between the daemon (WorkerParent) and kdispatch-worker, as frames (frame.hpp).
//
//   worker -> parent, once at start:  {"type":"ready","arch":..,"gpu":..,"roofline":{..}}
//                                  or {"type":"fatal","error":..} and the worker exits
//   parent -> worker: {"type":"evaluate","id":N,"key":"<key line>","plan":{..},"options":{..}}
//                     with the cubin as the blob; or, for a cuBLASLt algorithm,
//                     {"type":"evaluate","id":N,"key":..,"cublaslt":{"workspace_bytes":W,
//                     "version":V},"options":{..}} with the 64 algorithm bytes as the blob
//   worker -> parent: {"type":"verdict","id":N,"verdict":{..},"worker":"continues"|"exits"}
//                     "exits": the CUDA context is lost (trap, illegal address); the worker
//                     exits after this frame and the parent starts a fresh one.
//   parent -> worker: {"type":"enumerate_cublaslt","id":N,"key":"<key line>","options":{..}}
//   worker -> parent: {"type":"cublaslt_algos","id":N,"version":V,"algos":[{"algo":"<hex>",
//                     "workspace_bytes":W,"description":..,"origin":..,"waves":..},..],
//                     "worker":..} or {"type":"cublaslt_algos","id":N,"error":"..","worker":..}
//   parent -> worker: {"type":"shutdown"}
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "eval/cublaslt_enumeration.hpp"
#include "eval/evaluator.hpp"
#include "eval/verdict.hpp"
#include "worker/frame.hpp"

namespace kd::worker {

enum class WorkerFate { continues, exits };

nlohmann::json to_json(const eval::EvalOptions& o);
eval::EvalOptions options_from_json(const nlohmann::json& j);  // missing fields keep defaults

Frame evaluate_frame(std::uint64_t id, const eval::EvalRequest& request);
// Throws kd::Error (data) when the frame is not a well-formed evaluate request.
eval::EvalRequest request_from_frame(const Frame& frame);

Frame verdict_frame(std::uint64_t id, const eval::Verdict& verdict, WorkerFate fate);
struct VerdictMessage {
  std::uint64_t id = 0;
  eval::Verdict verdict;
  WorkerFate fate = WorkerFate::continues;
};
VerdictMessage verdict_from_frame(const Frame& frame);  // throws kd::Error (data)

nlohmann::json to_json(const cublaslt::EnumerationOptions& o);
// Missing fields keep defaults; throws kd::Error (data) on wrong types or out-of-range values.
cublaslt::EnumerationOptions enumeration_options_from_json(const nlohmann::json& j);

struct EnumerateRequest {
  std::string key_line;
  cublaslt::EnumerationOptions options;
};
Frame enumerate_frame(std::uint64_t id, const EnumerateRequest& request);
EnumerateRequest enumerate_request_from_frame(const Frame& frame);  // throws kd::Error (data)

// The enumeration, or why there is none.
using EnumerationResult = std::variant<cublaslt::Enumeration, std::string>;
Frame algos_frame(std::uint64_t id, const EnumerationResult& result, WorkerFate fate);
struct AlgosMessage {
  std::uint64_t id = 0;
  EnumerationResult result;
  WorkerFate fate = WorkerFate::continues;
};
// Throws kd::Error (data), also for an algorithm that is not 64 bytes of hex.
AlgosMessage algos_from_frame(const Frame& frame);

Frame shutdown_frame();

// The type field of a frame ("" when absent).
std::string frame_type(const Frame& frame);

}  // namespace kd::worker
