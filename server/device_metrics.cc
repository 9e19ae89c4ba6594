#include "server/device_metrics.h"

#include <string>

namespace cuimg {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

MetricFamily Family(std::string name, std::string help, MetricType type) {
  MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

void Add(MetricFamily& f, std::vector<ClientMetric::Label> labels, double value) {
  ClientMetric m;
  m.label = std::move(labels);
  if (f.type == MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(std::move(m));
}

}  // namespace

std::vector<MetricFamily> DeviceMetrics::Collect() const {
  auto healthy =
      Family("cuimg_device_healthy", "1 when the device is in rotation.", MetricType::Gauge);
  auto requests = Family("cuimg_device_requests_total", "Requests scheduled on the device.",
                         MetricType::Counter);
  auto inflight = Family("cuimg_device_inflight_requests", "Requests running on the device.",
                         MetricType::Gauge);
  auto memory = Family("cuimg_device_memory_bytes",
                       "Device memory: used (all processes), cached (idle in cuimg's buffer "
                       "cache), total.",
                       MetricType::Gauge);
  auto hits = Family("cuimg_buffer_cache_hits_total", "Device buffers reused from the cache.",
                     MetricType::Counter);
  auto misses = Family("cuimg_buffer_cache_misses_total", "Device buffers newly allocated.",
                       MetricType::Counter);
  auto evictions =
      Family("cuimg_buffer_cache_evictions_total",
             "Idle device buffers freed to stay within the cache budget.", MetricType::Counter);
  auto busy = Family("cuimg_stream_pool_busy", "Streams leased to requests.", MetricType::Gauge);
  auto streams =
      Family("cuimg_stream_pool_size", "Streams in the device's pool.", MetricType::Gauge);
  auto staging = Family("cuimg_pinned_staging_bytes",
                        "Page-locked host staging memory: used (leased to copies), cached (idle).",
                        MetricType::Gauge);
  auto staging_leases = Family("cuimg_pinned_staging_leases_total",
                               "Staging chunk leases by outcome: hit (an idle chunk), miss (newly "
                               "allocated), refused (budget spent: copied from pageable memory).",
                               MetricType::Counter);
  for (const DeviceStatus& d : backend_->Devices()) {
    const std::vector<ClientMetric::Label> dev = {{"device", d.label}};
    Add(healthy, dev, d.healthy ? 1 : 0);
    Add(requests, dev, static_cast<double>(d.requests));
    Add(inflight, dev, d.inflight);
    if (d.has_memory) {
      Add(memory, {{"device", d.label}, {"kind", "used"}}, static_cast<double>(d.memory_used));
      Add(memory, {{"device", d.label}, {"kind", "cached"}}, static_cast<double>(d.memory_cached));
      Add(memory, {{"device", d.label}, {"kind", "total"}}, static_cast<double>(d.memory_total));
      Add(hits, dev, static_cast<double>(d.cache_hits));
      Add(misses, dev, static_cast<double>(d.cache_misses));
      Add(evictions, dev, static_cast<double>(d.cache_evictions));
      Add(staging, {{"device", d.label}, {"kind", "used"}}, static_cast<double>(d.staging_used));
      Add(staging, {{"device", d.label}, {"kind", "cached"}},
          static_cast<double>(d.staging_cached));
      Add(staging_leases, {{"device", d.label}, {"outcome", "hit"}},
          static_cast<double>(d.staging_hits));
      Add(staging_leases, {{"device", d.label}, {"outcome", "miss"}},
          static_cast<double>(d.staging_misses));
      Add(staging_leases, {{"device", d.label}, {"outcome", "refused"}},
          static_cast<double>(d.staging_refusals));
      Add(busy, dev, d.streams_busy);
      Add(streams, dev, d.streams_total);
    }
  }
  auto messages = Family("cuimg_pinned_message_bytes",
                         "Page-locked host memory holding request and response pixels (all "
                         "devices): used (leased to calls), cached (idle).",
                         MetricType::Gauge);
  auto message_leases = Family("cuimg_pinned_message_leases_total",
                               "Pinned message buffer leases by outcome: hit, miss (newly "
                               "allocated), refused (budget spent: the heap served).",
                               MetricType::Counter);
  if (const HostBufferPoolStats pool = backend_->HostBufferPool(); pool.pinned) {
    Add(messages, {{"kind", "used"}}, static_cast<double>(pool.used));
    Add(messages, {{"kind", "cached"}}, static_cast<double>(pool.cached));
    Add(message_leases, {{"outcome", "hit"}}, static_cast<double>(pool.hits));
    Add(message_leases, {{"outcome", "miss"}}, static_cast<double>(pool.misses));
    Add(message_leases, {{"outcome", "refused"}}, static_cast<double>(pool.refusals));
  }
  auto resident =
      Family("cuimg_resident_objects", "Resident objects held, by kind.", MetricType::Gauge);
  auto resident_bytes =
      Family("cuimg_resident_bytes", "Bytes held by resident objects.", MetricType::Gauge);
  auto resident_evictions = Family("cuimg_resident_evictions_total",
                                   "Resident objects dropped without their owner releasing them, "
                                   "by reason: ttl, budget (the identity's bytes), count (its "
                                   "objects), server_cap (all identities' bytes).",
                                   MetricType::Counter);
  const ResidentStore::Totals totals = store_->totals();
  Add(resident, {{"kind", "image"}}, static_cast<double>(totals.images));
  Add(resident, {{"kind", "mesh"}}, static_cast<double>(totals.meshes));
  Add(resident_bytes, {}, static_cast<double>(totals.bytes));
  for (int r = 0; r < kEvictionReasons; ++r) {
    const auto reason = static_cast<EvictionReason>(r);
    Add(resident_evictions, {{"reason", std::string(EvictionReasonName(reason))}},
        static_cast<double>(store_->evictions(reason)));
  }

  auto shm_regions =
      Family("cuimg_shared_memory_regions", "Shared-memory regions registered (all identities).",
             MetricType::Gauge);
  auto shm_bytes =
      Family("cuimg_shared_memory_bytes", "Bytes of shared memory mapped for registered regions.",
             MetricType::Gauge);
  if (shared_memory_ != nullptr) {
    const SharedMemoryRegistry::Totals shm = shared_memory_->totals();
    Add(shm_regions, {}, static_cast<double>(shm.regions));
    Add(shm_bytes, {}, static_cast<double>(shm.bytes));
  }

  std::vector<MetricFamily> out;
  for (MetricFamily* f :
       {&healthy, &requests, &inflight, &memory, &hits, &misses, &evictions, &staging,
        &staging_leases, &messages, &message_leases, &busy, &streams, &resident, &resident_bytes,
        &resident_evictions, &shm_regions, &shm_bytes}) {
    out.push_back(std::move(*f));  // empty families still announce what the server can export
  }
  return out;
}

}  // namespace cuimg
