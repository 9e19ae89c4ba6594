#include "server/state/upload_buffer.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"

namespace cuimg {
namespace {

// The first allocation: small uploads take one step, large ones few doublings.
constexpr std::uint64_t kMinCapacity = std::uint64_t{1} << 20;

}  // namespace

absl::StatusOr<std::unique_ptr<UploadBuffer>> UploadBuffer::Create(InflightBudget* budget,
                                                                   std::uint64_t declared,
                                                                   absl::string_view field) {
  if (declared > MaxDeclared(*budget)) {
    return MakeError(
        absl::StatusCode::kResourceExhausted, ErrorReason::kLimitExceeded, field,
        absl::StrCat(declared, " bytes exceeds the largest upload, ", MaxDeclared(*budget),
                     " bytes (half of "
                     "max_inflight_bytes_per_device=",
                     budget->per_request_bytes(),
                     ": a growing upload briefly holds its bytes twice)"));
  }
  return std::unique_ptr<UploadBuffer>(new UploadBuffer(budget, declared));
}

std::uint64_t UploadBuffer::MaxDeclared(const InflightBudget& budget) {
  return budget.per_request_bytes() / 2;
}

UploadBuffer::UploadBuffer(InflightBudget* budget, std::uint64_t declared)
    : budget_(budget), declared_(declared) {}

absl::Status UploadBuffer::Append(absl::string_view bytes, absl::string_view field) {
  const std::uint64_t received = bytes_.size();
  if (bytes.size() > declared_ - received) {
    return InvalidFieldError(
        ErrorReason::kDataSizeMismatch, field,
        absl::StrCat("the stream carries more than the object's ", declared_, " bytes"));
  }
  if (bytes.empty()) return absl::OkStatus();
  const std::uint64_t needed = received + bytes.size();
  if (needed > bytes_.capacity()) {
    const std::uint64_t old_capacity = bytes_.capacity();
    const std::uint64_t capacity =
        std::min(declared_, std::max({needed, 2 * old_capacity, kMinCapacity}));
    if (reservation_.bytes() == 0) {
      CUIMG_ASSIGN_OR_RETURN(reservation_, budget_->Reserve(0, field));
    }
    // The old and the new buffer both exist while the bytes move.
    CUIMG_RETURN_IF_ERROR(reservation_.Resize(old_capacity + capacity, field));
    bytes_.reserve(capacity);
    CUIMG_RETURN_IF_ERROR(reservation_.Resize(capacity, field));
  }
  // Default-initialized: no zero fill before the copy.
  bytes_.resize(needed);
  std::memcpy(bytes_.data() + received, bytes.data(), bytes.size());
  return absl::OkStatus();
}

Image::Storage UploadBuffer::Take() {
  reservation_.Release();
  return std::exchange(bytes_, Image::Storage());
}

}  // namespace cuimg
