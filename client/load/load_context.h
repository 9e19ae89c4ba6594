// `cuimg load`: what a report needs to be read later: when and from where the run was made, and
// against which server (version, commit, backend) and devices.
#ifndef CUIMG_CLIENT_LOAD_CONTEXT_H_
#define CUIMG_CLIENT_LOAD_CONTEXT_H_

#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "client/load/load_stats.h"

namespace cuimg {

// The metrics endpoint (host:port) to read for `target`: `flag` itself when given, none ("")
// for "none" or for a target without a plain host (unix sockets), else the target's first
// host at the server's default metrics port 9464.
std::string MetricsEndpoint(const std::string& flag, const std::string& target);

// The labels of the cuimg_build_info metric (version, backend, and commit where the server
// exports it) read from http://ENDPOINT/metrics within about `timeout_s`. UNAVAILABLE when the
// endpoint cannot be reached, NOT_FOUND when it answers without that metric.
absl::StatusOr<std::map<std::string, std::string>> ServerBuildInfo(const std::string& endpoint,
                                                                   double timeout_s);

// The run's context: {"date_utc" (of `started`), "client_host", "client" (`client_build`, the
// client's --version text, its lines joined by ", "), "server": {"metrics", "version", "commit",
// "backend", and any other build label; "unknown" for what the server did not say, with "note"
// saying why}, "devices": the device ids the OK calls' trailers named}.
nlohmann::ordered_json LoadContext(std::time_t started, const std::string& client_build,
                                   const std::string& metrics_endpoint,
                                   const absl::StatusOr<std::map<std::string, std::string>>& build,
                                   const LoadSummary& summary);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_LOAD_CONTEXT_H_
