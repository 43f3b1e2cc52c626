#include "commands.hpp"

namespace kd::kdctl {

namespace {
constexpr Command kCommands[] = {
    {"devices", "List the CUDA devices this machine has, with the key's device part for each",
     setup_devices},
    {"search", "Run one branching search for a key (GEMM or row operator) in the foreground and print the tree",
     setup_search},
    {"validate", "Run the validation gate and timing on your own kernel for a key (GEMM or row operator)",
     setup_validate},
    {"verify", "Re-run the validation gate on this GPU's stored records (GEMM and row operators') and evict those "
               "that fail",
     setup_verify},
    {"bench", "Time tuned kernels against their baseline (cuBLAS; a row operator's framework kernel) and the roofline "
              "for a shape list; table and PNG chart",
     setup_bench},
    {"prewarm", "Queue a shape list (GEMM and row-operator lines) on kdispatchd, follow the searches and print the "
                "per-shape table",
     setup_prewarm},
    {"status", "Show kdispatchd's status: search backend, jobs, clients", setup_status},
    {"stop", "Stop kdispatchd gracefully through its socket and wait until it exited", setup_stop},
    {"cancel", "Cancel a queued or running job of kdispatchd", setup_cancel},
    {"record", "Merge KD_RECORD files into one deduplicated shape list with call counts", setup_record},
    {"ls", "List the cache's records, GEMM and row operators' (filter by op, dtype, GPU)", setup_ls},
    {"show", "Show one record (GEMM or row operator), its provenance and the search tree that found it", setup_show},
    {"stats", "Summarize the cache (records per GPU and operator, sizes, trees, jobs) and client hits, misses, "
              "fallbacks",
     setup_stats},
    {"export", "Write the records of one GPU model (GEMM and row operators') to a portable, checksummed archive",
     setup_export},
    {"import", "Validate an archive from kdctl export and publish its records", setup_import},
    {"evict", "Remove records by age, size cap, GPU or key pattern", setup_evict},
    {"doctor", "Check the cache without a GPU; salvage a damaged one into a new cache", setup_doctor},
    {"purge", "Remove finished jobs (done, failed, cancelled) from the job queue, by state and age", setup_purge},
    {"remote", "The fleet's remote tier on Redis: status, push this cache's records, pull the fleet's records into it", setup_remote},
};
}  // namespace

std::span<const Command> commands() { return kCommands; }

void add_cache_dir_flag(CLI::App& sub, std::string& cache_dir) {
  sub.add_option("--cache-dir", cache_dir,
                 "Cache directory (default: KD_CACHE_DIR, else $XDG_CACHE_HOME/kdispatch, else ~/.cache/kdispatch)");
}

}  // namespace kd::kdctl
