#include "server/grpc_server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "server/observability/log.h"
#include "server/rpc/call_scope.h"
#include "server/security/transport_security.h"
#include "server/transport_settings.h"

namespace cuimg {
namespace {

// gRPC sets SO_REUSEPORT by default: a second server on the same port would bind and take half of
// the new connections. Without it the second one fails to start instead.
void BindExclusively(grpc::ServerBuilder& builder) {
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
}

// Calls `fire` on its own thread once `after` has passed, unless destroyed first.
class Timer {
 public:
  Timer(absl::Duration after, std::function<void()> fire)
      : deadline_(std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(after)),
        fire_(std::move(fire)),
        thread_([this] {
          std::unique_lock<std::mutex> lock(mu_);
          if (!cv_.wait_until(lock, deadline_, [this] { return cancelled_; })) fire_();
        }) {}
  ~Timer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

 private:
  const std::chrono::steady_clock::time_point deadline_;
  const std::function<void()> fire_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false;  // guarded by mu_
  std::thread thread_;      // last: starts once the members above exist
};

}  // namespace

absl::StatusOr<std::unique_ptr<CuimgServer>> CuimgServer::Start(const ServerOptions& options,
                                                                std::unique_ptr<Backend> backend) {
  absl::StatusOr<TransportSecurity> security = MakeTransportSecurity(options.security);
  if (!security.ok()) return security.status();
  auto server = std::unique_ptr<CuimgServer>(new CuimgServer());
  server->models_ = std::make_unique<ModelRegistry>();
  if (!options.models_dir.empty()) {
    absl::StatusOr<ModelRegistry> models = ModelRegistry::LoadDirectory(options.models_dir);
    if (!models.ok()) return models.status();
    *server->models_ = *std::move(models);
  }
  server->security_description_ = security->description;
  server->backend_ = std::move(backend);
  server->registry_ = std::make_shared<prometheus::Registry>();
  server->metrics_ = std::make_unique<ServerMetrics>(
      *server->registry_, kVersion, options.build_commit, server->backend_->name());
  if (!options.metrics_address.empty()) {
    // prometheus-cpp reports a failed bind by exception; this is the only place one can arise.
    try {
      server->exposer_ = std::make_unique<prometheus::Exposer>(options.metrics_address, 2);
    } catch (const std::exception& e) {
      return absl::UnavailableError(absl::StrCat(
          "metrics_address ", options.metrics_address,
          ": could not bind (address in use or not local; prometheus-cpp: ", e.what(), ")"));
    }
    server->exposer_->RegisterCollectable(server->registry_);
    const std::vector<int> ports = server->exposer_->GetListeningPorts();
    server->metrics_port_ = ports.empty() ? 0 : ports.front();
  }
  server->queue_ = std::make_unique<WorkQueue>(
      options.worker_threads, options.max_inflight_requests,
      std::chrono::microseconds(options.worker_spin_us), options.warm_cpus);
  const std::uint64_t devices = std::max<std::size_t>(1, server->backend_->Devices().size());
  server->budget_ = std::make_unique<InflightBudget>(
      options.max_inflight_bytes_per_device * devices, options.max_inflight_bytes_per_device);
  server->store_ = std::make_unique<ResidentStore>(ResidentStoreOptions{
      options.resident_budget_bytes, options.resident_ttl_seconds, options.resident_max_ttl_seconds,
      options.resident_max_objects, options.resident_max_total_bytes});
  server->service_ = std::make_unique<ImagingService>(
      options, security->policy, server->backend_.get(), server->queue_.get(),
      server->budget_.get(), server->store_.get(), server->metrics_.get(), server->models_.get());
  server->device_metrics_ = std::make_shared<DeviceMetrics>(
      server->backend_.get(), server->store_.get(), server->service_->shared_memory());
  if (server->exposer_ != nullptr) server->exposer_->RegisterCollectable(server->device_metrics_);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen_address, security->credentials, &server->grpc_port_);
  BindExclusively(builder);
  ApplyTransportSettings(
      TransportSettings{options.max_receive_message_bytes, options.http2_lookahead_bytes},
      &builder);
  builder.RegisterService(server->service_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->grpc_port_ == 0) {
    return absl::UnavailableError(absl::StrCat("listen_address ", options.listen_address,
                                               ": could not bind (address in use or not local)"));
  }
  if (!options.security.health_listen_address.empty()) {
    // No services of its own: gRPC adds the default health service (and reflection) to it.
    grpc::ServerBuilder health_builder;
    health_builder.AddListeningPort(options.security.health_listen_address,
                                    grpc::InsecureServerCredentials(), &server->health_port_);
    BindExclusively(health_builder);
    health_builder.SetMaxReceiveMessageSize(4096);
    server->health_server_ = health_builder.BuildAndStart();
    if (server->health_server_ == nullptr || server->health_port_ == 0) {
      return absl::UnavailableError(absl::StrCat("health_listen_address ",
                                                 options.security.health_listen_address,
                                                 ": could not bind (address in use or not local)"));
    }
  }
  server->SetServing(true);
  CuimgServer* raw = server.get();
  server->monitor_ =
      std::thread([raw, poll = options.health_poll_ms] { raw->MonitorHealth(poll); });
  return server;
}

void CuimgServer::MonitorHealth(int poll_ms) {
  bool serving = true;
  auto next_report = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(monitor_mu_);
  while (!monitor_cv_.wait_for(lock, std::chrono::milliseconds(poll_ms),
                               [this] { return monitor_stop_; })) {
    if (std::chrono::steady_clock::now() >= next_report) {
      ReportSuppressedRequestLines();
      next_report = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    }
    bool any_healthy = false;
    std::string reasons;
    for (const DeviceStatus& d : backend_->Devices()) {
      any_healthy |= d.healthy;
      if (!d.healthy) absl::StrAppend(&reasons, reasons.empty() ? "" : ",", d.label, ":", d.reason);
    }
    if (any_healthy != serving) {
      serving = any_healthy;
      SetServing(serving);
      LogEvent(serving ? LogLevel::kInfo : LogLevel::kError, "health",
               {{"serving", serving}, {"unhealthy", reasons}});
    } else if (!reasons.empty()) {
      LogEvent(LogLevel::kDebug, "device_unhealthy", {{"devices", reasons}});
    }
  }
}

void CuimgServer::SetServing(bool serving) {
  for (grpc::Server* s : {server_.get(), health_server_.get()}) {
    if (s == nullptr) continue;
    if (grpc::HealthCheckServiceInterface* health = s->GetHealthCheckService()) {
      health->SetServingStatus(kServiceName, serving);
      health->SetServingStatus(serving);
    }
  }
}

void CuimgServer::StopMonitor() {
  {
    std::lock_guard<std::mutex> lock(monitor_mu_);
    monitor_stop_ = true;
  }
  monitor_cv_.notify_all();
  if (monitor_.joinable()) monitor_.join();
}

CuimgServer::~CuimgServer() { Shutdown(absl::ZeroDuration()); }

void CuimgServer::Shutdown(absl::Duration grace) {
  if (shut_down_) return;
  shut_down_ = true;
  StopMonitor();
  SetServing(false);
  // Past the grace period gRPC cancels the calls, but a worker deep in a long computation would
  // not notice: the hard stop makes every call's work end at its next check (cancel_token.h),
  // and the queued ones fail before they start.
  const Timer hard_stop(grace, [this, grace] {
    if (service_ != nullptr) service_->HardStop();
    // Only a grace period that ran out is news: a zero grace (a server that failed to start, or
    // the destructor after Shutdown) stops at once by definition.
    if (grace > absl::ZeroDuration()) {
      Log(LogLevel::kWarning,
          "event=shutdown_hard_stop message=\"the grace period is over: "
          "running requests stop at their next check\"");
    }
  });
  // gRPC cancels what is left a moment after the hard stop, not with it: the calls whose work the
  // hard stop ended (at its next check, milliseconds) answer first with the server's reason
  // (UNAVAILABLE "the server is shutting down", with details) rather than gRPC's bare "Cancelling
  // all calls", which clients took for a connection problem (issue 46).
  const absl::Duration answers = grace > absl::ZeroDuration() ? absl::Seconds(1) : grace;
  const absl::Time cancel_at = absl::Now() + grace + answers;
  // The calls in flight end before gRPC's GOAWAY, new ones are refused meanwhile: a call that
  // ends after the GOAWAY has its connection closed right behind its response, which a client
  // still reading it then loses to a reset (live_calls.h).
  if (service_ != nullptr) service_->live_calls().Drain(cancel_at);
  if (server_ != nullptr) {
    server_->Shutdown(absl::ToChronoTime(cancel_at));
    server_->Wait();
  }
  if (health_server_ != nullptr) {
    health_server_->Shutdown(std::chrono::system_clock::now());
    health_server_->Wait();
  }
  if (queue_ != nullptr) queue_->Shutdown();
  ReportSuppressedRequestLines();  // the last calls' counts
}

}  // namespace cuimg
