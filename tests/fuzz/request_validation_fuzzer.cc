// libFuzzer target: request validation of every RPC. The first byte picks the request type (0
// Morphology, 1 Gradient, 2 Pyramid, 3 Deform, 4 and 5 Upload's image and mesh headers, 6
// DetectPedestrians), the rest is parsed as that protobuf message (the bytes a client could
// send); validation must return a status, never crash, and admission's estimate must be
// computable for whatever it accepts.
#include <cstddef>
#include <cstdint>

#include "cuimg/v1/resident.pb.h"
#include "server/admission.h"
#include "server/request_validation.h"
#include "server/resident_store.h"

namespace {

template <typename Request, typename Job>
void Check(const std::uint8_t* data, std::size_t size,
           absl::StatusOr<Job> (*validate)(const Request&, const cuimg::RequestLimits&),
           const cuimg::RequestLimits& limits, cuimg::ResidentStore& store) {
  Request request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  absl::StatusOr<Job> job = validate(request, limits);
  if (!job.ok()) return;
  // Every accepted job can be sized for admission (an unknown handle is NOT_FOUND, not a crash).
  (void)cuimg::EstimateInflightBytes(*job, request, "fuzzer", store, limits);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  static cuimg::ResidentStore store(cuimg::ResidentStoreOptions{});
  cuimg::RequestLimits limits;
  // Small enough that accepted inline requests stay cheap to size.
  limits.max_pixels = 1 << 22;
  limits.max_decoded_pixels = 1 << 20;
  const std::uint8_t kind = data[0];
  ++data;
  --size;
  switch (kind % 7) {
    case 0:
      Check(data, size, &cuimg::ValidateMorphologyRequest, limits, store);
      break;
    case 1:
      Check(data, size, &cuimg::ValidateGradientRequest, limits, store);
      break;
    case 2:
      Check(data, size, &cuimg::ValidatePyramidRequest, limits, store);
      break;
    case 3:
      Check(data, size, &cuimg::ValidateDeformRequest, limits, store);
      break;
    case 6:
      Check(data, size, &cuimg::ValidateDetectRequest, limits, store);
      break;
    case 4: {
      cuimg::v1::UploadRequest upload;
      if (upload.ParseFromArray(data, static_cast<int>(size)) && upload.has_image()) {
        (void)cuimg::ValidateUploadHeader(upload.image(), limits);
      }
      break;
    }
    case 5: {
      cuimg::v1::UploadRequest upload;
      if (upload.ParseFromArray(data, static_cast<int>(size)) && upload.has_mesh()) {
        (void)cuimg::ValidateUploadMeshHeader(upload.mesh(), limits);
      }
      break;
    }
  }
  return 0;
}
