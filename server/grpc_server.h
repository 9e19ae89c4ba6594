// CuimgServer: owns the gRPC server (health, reflection), the Prometheus exposer, the work queue,
// the resident store and the service, and shuts them down in order.
#ifndef CUIMG_SERVER_GRPC_SERVER_H_
#define CUIMG_SERVER_GRPC_SERVER_H_

#include <grpcpp/grpcpp.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/backend/backend.h"
#include "server/device_metrics.h"
#include "server/observability/metrics.h"
#include "server/rpc/imaging_service.h"
#include "server/scheduling/work_queue.h"
#include "server/server_options.h"
#include "server/state/inflight_budget.h"
#include "server/state/model_registry.h"
#include "server/state/resident_store.h"

namespace cuimg {

inline constexpr char kServiceName[] = "cuimg.v1.Imaging";

class CuimgServer {
 public:
  // Loads the models of options.models_dir, binds the gRPC and metrics addresses (port 0 picks a
  // free port) and starts serving. UNAVAILABLE naming the flag and address when an address cannot
  // be bound (in use by another process included: ports are not shared); a model
  // directory or file that cannot be loaded fails with ModelRegistry::LoadDirectory's error.
  static absl::StatusOr<std::unique_ptr<CuimgServer>> Start(const ServerOptions& options,
                                                            std::unique_ptr<Backend> backend);
  ~CuimgServer();

  int grpc_port() const { return grpc_port_; }
  // 0 when metrics are disabled.
  int metrics_port() const { return metrics_port_; }
  // The plaintext health port; 0 when there is none.
  int health_port() const { return health_port_; }
  // CPUs kept from idling while a worker polls (work_queue.h), for the start-up log.
  int warm_cpus() const { return queue_->warm_cpus(); }
  // Transport and authentication, for the start-up log.
  const std::string& security_description() const { return security_description_; }
  Backend& backend() { return *backend_; }
  const ModelRegistry& models() const { return *models_; }
  prometheus::Registry& registry() { return *registry_; }

  // Health turns NOT_SERVING, new calls are refused, in-flight calls get `grace` to finish (then
  // are cancelled) before gRPC closes the connections, and the workers stop. Idempotent.
  void Shutdown(absl::Duration grace);

 private:
  CuimgServer() = default;
  // Re-evaluates device health every health_poll_ms: the services are SERVING while at least one
  // device is healthy. Also reports the request lines left out (call_scope.h) once a second.
  void MonitorHealth(int poll_ms);
  void StopMonitor();
  // Both the "" and cuimg.v1.Imaging statuses, on the main and the plaintext health servers.
  void SetServing(bool serving);

  std::unique_ptr<Backend> backend_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<ServerMetrics> metrics_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::unique_ptr<WorkQueue> queue_;
  std::unique_ptr<InflightBudget> budget_;
  std::unique_ptr<ResidentStore> store_;
  std::unique_ptr<ModelRegistry> models_;
  std::unique_ptr<ImagingService> service_;
  std::shared_ptr<DeviceMetrics> device_metrics_;
  std::unique_ptr<grpc::Server> server_;
  // Serves only grpc.health.v1 (and reflection), without TLS, for probes.
  std::unique_ptr<grpc::Server> health_server_;
  std::string security_description_;
  std::mutex monitor_mu_;
  std::condition_variable monitor_cv_;
  bool monitor_stop_ = false;
  std::thread monitor_;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
  int health_port_ = 0;
  bool shut_down_ = false;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_GRPC_SERVER_H_
