// `cuimg load`: drives the server with one RPC (--rpc morphology, gradient, pyramid, detect or
// deform) through the callback API: a closed loop of --concurrency calls in flight, or an open
// loop at --rate calls/s; for --duration seconds (or --requests calls) after --warmup. Prints
// throughput, latency percentiles, errors by code with the server's messages and the server's
// stage breakdown (from the cuimg-timing trailers), with the run's context (date, host, server
// version and backend); --json, --csv for machines, --report for people (an HTML page or PNG
// with a latency histogram and throughput/latency over time). --shm (morphology) passes the
// pixels through a registered POSIX shared-memory object instead (same host). SIGINT or SIGTERM
// stops the run early (load_run.h); the summary and every report then cover the time it ran.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/commands/commands.h"
#include "client/io/atomic_output.h"
#include "client/io/volume_file.h"
#include "client/load/load_context.h"
#include "client/load/load_report.h"
#include "client/load/load_rpc.h"
#include "client/load/load_run.h"
#include "client/load/load_stats.h"
#include "client/load/shared_memory.h"
#include "cuimg/v1/imaging_service.grpc.pb.h"

namespace cuimg {
namespace {

int Usage(const std::string& message) {
  std::fprintf(stderr, "usage: %s\n", message.c_str());
  return kExitUsage;
}

// The request re-pointed at a shared-memory region holding its pixels at offset 0, one per slot:
// slot i writes its result to its own bytes after the input's.
std::vector<v1::MorphologyRequest> SharedMemoryRequests(const v1::MorphologyRequest& request,
                                                        const std::string& region, int slots) {
  const std::uint64_t bytes = request.input().image().data().size();
  v1::Image shape = request.input().image();
  shape.clear_data();
  std::vector<v1::MorphologyRequest> out;
  for (int i = 0; i < slots; ++i) {
    v1::MorphologyRequest r = request;
    v1::SharedMemoryImage* in = r.mutable_input()->mutable_shared_memory();
    in->set_region(region);
    in->set_offset(0);
    *in->mutable_image() = shape;
    r.mutable_output()->mutable_shared_memory()->set_region(region);
    r.mutable_output()->mutable_shared_memory()->set_offset(bytes * (1 + i));
    out.push_back(std::move(r));
  }
  return out;
}

// The run's settings and the request's payload, for the summary.
nlohmann::ordered_json ConfigJson(const ConnectionOptions& connection, const LoadCommand& c,
                                  const LoadRpc& rpc) {
  nlohmann::ordered_json config = {{"target", connection.target}, {"rpc", c.rpc}};
  for (const auto& [key, value] : rpc.payload()) config[key] = value;
  config["request_bytes"] = rpc.request_bytes();
  config["concurrency"] = c.concurrency;
  config["rate"] = c.rate;
  config["duration_s"] = c.duration_s;
  config["requests"] = c.requests;
  config["warmup_s"] = c.warmup_s;
  config["channels"] = c.channels;
  config["shm"] = c.shm;
  return config;
}

// Why the run exits 1, on stderr (the numbers are on stdout).
void ExplainFailure(const LoadSummary& s, const LoadCommand& c) {
  if (s.requests == 0) {
    // Only a duration run gets here (--requests issues its calls after the warm-up): the calls
    // issued during the warm-up were all still in flight when the run ended.
    std::fprintf(stderr,
                 "error: no call started after the %.1f s --warmup: the warm-up's calls were "
                 "still in flight when --duration ended\n",
                 c.warmup_s);
  } else {
    std::fprintf(stderr,
                 "error: %lld of %lld calls failed (see the codes and messages in the summary)\n",
                 static_cast<long long>(s.requests - s.ok), static_cast<long long>(s.requests));
  }
}

}  // namespace

int RunLoad(const ConnectionOptions& connection, const LoadCommand& c) {
  if (c.concurrency < 1 || c.channels < 1 || c.duration_s <= 0 || c.warmup_s < 0 || c.rate < 0 ||
      c.requests < 0) {
    return Usage(
        "cuimg load: --concurrency and --channels >= 1, --duration > 0, --warmup >= 0, "
        "--rate >= 0, --requests >= 0");
  }
  if (!c.report.empty() && !IsReportPath(c.report)) {
    return Usage("--report: expected FILE.html or FILE.png");
  }
  if (auto spec = MakeChannelSpec(connection); !spec.ok()) {
    return Usage(std::string(spec.status().message()));
  }
  // With --shm: the input once, then a result slot per call in flight (open loop: per call
  // index, modulo the same count), all in one object registered for the run.
  std::unique_ptr<SharedMemoryObject> shm;
  std::unique_ptr<v1::Imaging::Stub> admin;
  std::string region;
  bool shm_failed = false;
  auto shared_memory = [&](const v1::MorphologyRequest& request)
      -> absl::StatusOr<std::vector<v1::MorphologyRequest>> {
    shm_failed = true;  // a failure from here on is the server's or the host's, not usage
    const std::string& pixels = request.input().image().data();
    admin = v1::Imaging::NewStub(MakeChannel(connection, 0));
    absl::StatusOr<std::string> prefix = KeyPrefix(*admin, connection);
    if (!prefix.ok()) return prefix.status();
    absl::StatusOr<std::unique_ptr<SharedMemoryObject>> object =
        SharedMemoryObject::Create(pixels.size() * (1 + c.concurrency), "load", *prefix);
    if (!object.ok()) return object.status();
    shm = *std::move(object);
    std::memcpy(shm->data(), pixels.data(), pixels.size());
    absl::StatusOr<std::string> handle = RegisterRegion(*admin, connection, *shm);
    if (!handle.ok()) return handle.status();
    region = *handle;
    shm_failed = false;
    return SharedMemoryRequests(request, region, c.concurrency);
  };
  absl::StatusOr<std::unique_ptr<LoadRpc>> rpc = MakeLoadRpc(c, shared_memory);
  if (!rpc.ok() && shm_failed) {
    std::fprintf(stderr, "error: %s\n", std::string(rpc.status().message()).c_str());
    return kExitRpcError;
  }
  if (!rpc.ok()) return ReportCommandError(rpc.status());  // usage, or an --input file (3)
  // Read before the calls: a server that falls over during the run is still named.
  const std::time_t started = std::time(nullptr);
  const std::string metrics = MetricsEndpoint(c.server_metrics, connection.target);
  const absl::StatusOr<std::map<std::string, std::string>> build =
      metrics.empty() ? absl::StatusOr<std::map<std::string, std::string>>(
                            absl::NotFoundError("no metrics endpoint"))
                      : ServerBuildInfo(metrics, 2.0);
  const LoadRunResult run = RunLoadCalls(connection, c, **rpc);
  if (c.shm) {
    if (absl::Status s = UnregisterRegion(*admin, connection, region); !s.ok()) {
      std::fprintf(stderr, "warning: %s\n", std::string(s.message()).c_str());
    }
  }
  // A stopped run is measured over the time it ran: from the warm-up's end to the signal.
  const double seconds = run.stopped_by != 0 ? std::max(run.stopped_at_s - c.warmup_s, 1e-9)
                         : c.requests > 0    ? std::max(run.measured_seconds, 1e-9)
                                             : c.duration_s;
  const LoadSummary summary = Summarize(run.records, c.warmup_s, seconds);
  const nlohmann::ordered_json context =
      LoadContext(started, c.client_build, metrics, build, summary);
  nlohmann::ordered_json config = ConfigJson(connection, c, **rpc);
  if (run.stopped_by != 0) {
    config["stopped_by"] = run.stopped_by == SIGINT ? "SIGINT" : "SIGTERM";
    config["stopped_at_s"] = run.stopped_at_s;
    config["abandoned_calls"] = run.abandoned;
  }
  const std::string json = SummaryJson(summary, config, context).dump();
  const std::string csv = RecordsCsv(run.records);
  // Every report asked for is attempted; the first failure decides the exit code.
  int write_failed = kExitOk;
  auto write = [&](const std::string& path, const std::string& text) {
    if (path.empty()) return;
    if (absl::Status s = WriteTextFile(path, text); !s.ok()) {
      std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
      write_failed = kExitUsage;
    }
  };
  write(c.json_out, json + "\n");
  write(c.csv, csv);
  if (c.json) {
    std::printf("%s\n", json.c_str());
  } else {
    std::printf("%s", SummaryText(summary).c_str());
    const nlohmann::ordered_json& server = context["server"];
    std::printf("context: %s on %s; server %s (commit %s), backend %s, devices %s\n",
                context["date_utc"].get<std::string>().c_str(),
                context["client_host"].get<std::string>().c_str(),
                server["version"].get<std::string>().c_str(),
                server["commit"].get<std::string>().c_str(),
                server["backend"].get<std::string>().c_str(),
                context["devices"].empty() ? "unknown" : context["devices"].dump().c_str());
  }
  if (!c.report.empty()) {
    if (absl::Status s = WriteLoadReport(c.report, json, csv); !s.ok()) {
      std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
      write_failed = kExitUsage;
    } else if (!c.json) {
      std::printf("report: %s\n", c.report.c_str());
    }
  }
  if (run.stopped_by != 0) {
    std::fprintf(stderr, "stopped by %s after %.1f s%s\n",
                 run.stopped_by == SIGINT ? "SIGINT" : "SIGTERM", run.stopped_at_s,
                 run.abandoned > 0
                     ? absl::StrCat("; ", run.abandoned,
                                    " calls still in flight after the grace were cancelled and "
                                    "are not counted")
                           .c_str()
                     : "");
  }
  if (write_failed != kExitOk) return write_failed;
  if (summary.ok == summary.requests && summary.requests > 0) return kExitOk;
  ExplainFailure(summary, c);
  return kExitRpcError;
}

}  // namespace cuimg
