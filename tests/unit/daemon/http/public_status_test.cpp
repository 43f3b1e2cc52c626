// What GET /status answers (http/public_status.hpp): the status object's counts and states by an
// allow list; paths, job keys, the backend's message and any field not listed stay private.
#include <gtest/gtest.h>

#include "http/public_status.hpp"

namespace kd::daemon {
namespace {

using nlohmann::json;

const std::string kKey = "m=4096 n=16 k=4096 a=bf16 b=bf16 c=bf16 compute=32F";

// The shape of the daemon's status object (daemon.cpp), with a running job and top_jobs.
json full_status() {
  return json{{"daemon", "0.1.0"},
              {"pid", 4321},
              {"uptime_s", 12},
              {"generation", 9},
              {"cache_dir", "/var/cache/kdispatch"},
              {"socket", "/run/kdispatch/kdispatch.sock"},
              {"search_backend", {{"available", true}, {"message", "2 GPUs at /var/cache/kdispatch"}}},
              {"jobs", {{"queued", 3}, {"running", 1}, {"done", 5}, {"failed", 0}, {"cancelled", 0}}},
              {"queue_depth", 3},
              {"clients", 2},
              {"subscribers", 1},
              {"running", json::array({kKey})},
              {"transactions_committed", 77},
              {"clients_reporting", 1},
              {"client_totals", {{"hits", 10}, {"misses", 2}}},
              {"bounds", {{"max_cache_bytes", 1024}}},
              {"remote", {{"url", "redis://10.0.0.1:6379"}}},
              {"top_jobs", json::array({{{"key", kKey}, {"state", "running"}}})}};
}

TEST(PublicStatus, KeepsTheCountsAndStatesOfTheAllowList) {
  const json full = full_status();
  const json pub = public_status(full);
  for (const char* field : {"daemon", "uptime_s", "generation", "jobs", "queue_depth", "clients",
                            "subscribers", "transactions_committed", "clients_reporting",
                            "client_totals"})
    EXPECT_EQ(pub.at(field), full.at(field)) << field;
  EXPECT_EQ(pub.at("search_backend"), (json{{"available", true}}));
}

TEST(PublicStatus, DropsPathsKeysTheBackendsMessageAndUnlistedFields) {
  const json pub = public_status(full_status());
  for (const char* field : {"pid", "cache_dir", "socket", "running", "top_jobs", "bounds", "remote"})
    EXPECT_FALSE(pub.contains(field)) << field;
  const std::string text = pub.dump();
  for (const std::string& secret : {std::string("/var/cache"), std::string("/run/"), kKey, std::string("redis://")})
    EXPECT_EQ(text.find(secret), std::string::npos) << secret << " in " << text;

  json later = full_status();
  later["new_private_field"] = "/home/someone";
  EXPECT_FALSE(public_status(later).contains("new_private_field"));
}

TEST(PublicStatus, AnAbsentFieldStaysAbsentAndAnEmptyStatusGivesAnEmptyObject) {
  json partial = full_status();
  partial.erase("generation");
  partial.erase("search_backend");
  const json pub = public_status(partial);
  EXPECT_FALSE(pub.contains("generation"));
  EXPECT_FALSE(pub.contains("search_backend"));
  EXPECT_EQ(public_status(json::object()), json::object());
}

}  // namespace
}  // namespace kd::daemon
