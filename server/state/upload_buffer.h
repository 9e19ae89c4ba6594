// UploadBuffer: the bytes of one Upload stream as they arrive. It never allocates the declared
// size up front (a client may declare 4 GiB and send 1 KiB): the buffer grows with what has
// arrived (doubling, capped at the declared size), and the in-flight budget holds exactly the
// buffer's capacity (both buffers while one grows into the other), so a stalled upload holds only
// what it sent.
#ifndef CUIMG_SERVER_UPLOAD_BUFFER_H_
#define CUIMG_SERVER_UPLOAD_BUFFER_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cuimg/common/image.h"
#include "server/state/inflight_budget.h"

namespace cuimg {

class UploadBuffer {
 public:
  // A buffer for an object of `declared` bytes; `budget` must outlive it. RESOURCE_EXHAUSTED
  // naming `field` and max_inflight_bytes_per_device when `declared` exceeds MaxDeclared: while
  // the buffer grows the old and new copies are both held, up to twice the declared size.
  static absl::StatusOr<std::unique_ptr<UploadBuffer>> Create(InflightBudget* budget,
                                                              std::uint64_t declared,
                                                              absl::string_view field);
  // The largest object a buffer may be created for: half the budget's per-request limit.
  static std::uint64_t MaxDeclared(const InflightBudget& budget);
  UploadBuffer(const UploadBuffer&) = delete;
  UploadBuffer& operator=(const UploadBuffer&) = delete;

  // Appends `bytes` (may be empty). INVALID_ARGUMENT naming `field` when they would pass the
  // declared size; RESOURCE_EXHAUSTED (Reservation::Resize's) when the budget cannot hold the
  // grown buffer. Either way nothing is appended.
  absl::Status Append(absl::string_view bytes, absl::string_view field);
  std::uint64_t declared() const { return declared_; }
  std::uint64_t received() const { return bytes_.size(); }
  // Bytes held in the in-flight budget (the buffer's capacity).
  std::uint64_t reserved() const { return reservation_.bytes(); }
  const std::uint8_t* data() const { return bytes_.data(); }
  // The received bytes; the buffer is left empty and its reservation released (the caller now
  // owns the memory, e.g. as a resident object counted in the resident store instead).
  Image::Storage Take();

 private:
  UploadBuffer(InflightBudget* budget, std::uint64_t declared);

  InflightBudget* budget_;
  const std::uint64_t declared_;
  Image::Storage bytes_;
  InflightBudget::Reservation reservation_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_UPLOAD_BUFFER_H_
