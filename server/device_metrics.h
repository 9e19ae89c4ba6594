// DeviceMetrics: Prometheus series read at scrape time from the backend's devices and the
// resident store (health, requests, memory, buffer cache, staging pool, stream pool, resident
// objects, shared-memory regions).
#ifndef CUIMG_SERVER_DEVICE_METRICS_H_
#define CUIMG_SERVER_DEVICE_METRICS_H_

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <vector>

#include "server/backend/backend.h"
#include "server/state/resident_store.h"
#include "server/state/shared_memory_registry.h"

namespace cuimg {

class DeviceMetrics final : public prometheus::Collectable {
 public:
  // All must outlive this collector; `shared_memory` is null when the server offers none.
  DeviceMetrics(const Backend* backend, ResidentStore* store,
                const SharedMemoryRegistry* shared_memory = nullptr)
      : backend_(backend), store_(store), shared_memory_(shared_memory) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const Backend* backend_;
  ResidentStore* store_;
  const SharedMemoryRegistry* shared_memory_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_DEVICE_METRICS_H_
