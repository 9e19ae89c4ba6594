// DeviceMetrics: Prometheus series read at scrape time from the backend's devices and the
// resident store (health, requests, memory, buffer cache, stream pool, resident objects).
#ifndef CUIMG_SERVER_DEVICE_METRICS_H_
#define CUIMG_SERVER_DEVICE_METRICS_H_

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <vector>

#include "server/backend.h"
#include "server/resident_store.h"

namespace cuimg {

class DeviceMetrics final : public prometheus::Collectable {
 public:
  // Both must outlive this collector.
  DeviceMetrics(const Backend* backend, ResidentStore* store) : backend_(backend), store_(store) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const Backend* backend_;
  ResidentStore* store_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_DEVICE_METRICS_H_
