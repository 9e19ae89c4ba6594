// InflightBudget: the host bytes that admitted requests hold at once (request messages, decoded
// inputs, results, open uploads), so that overload or a few huge requests are refused with
// RESOURCE_EXHAUSTED before allocating, instead of growing the process until the OOM killer ends
// every request.
#ifndef CUIMG_SERVER_STATE_INFLIGHT_BUDGET_H_
#define CUIMG_SERVER_STATE_INFLIGHT_BUDGET_H_

#include <cstdint>
#include <mutex>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cuimg {

class InflightBudget {
 public:
  // At most `capacity_bytes` reserved at once, at most `per_request_bytes` by one reservation.
  InflightBudget(std::uint64_t capacity_bytes, std::uint64_t per_request_bytes);
  InflightBudget(const InflightBudget&) = delete;
  InflightBudget& operator=(const InflightBudget&) = delete;

  // Holds its bytes until destroyed (or moved from).
  class Reservation {
   public:
    Reservation() = default;
    Reservation(Reservation&& other) noexcept
        : budget_(std::exchange(other.budget_, nullptr)), bytes_(other.bytes_) {}
    Reservation& operator=(Reservation&& other) noexcept;
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    ~Reservation() { Release(); }
    std::uint64_t bytes() const { return budget_ == nullptr ? 0 : bytes_; }
    // Holds `bytes` instead (for a buffer that grows as data arrives): shrinking always succeeds;
    // growing is refused as Reserve refuses `bytes`, and then the reservation is unchanged.
    // FAILED_PRECONDITION (INTERNAL_ERROR: a caller's bug) on a released or default-constructed
    // reservation.
    absl::Status Resize(std::uint64_t bytes, absl::string_view field);
    // Returns the bytes now (idempotent).
    void Release();

   private:
    friend class InflightBudget;
    Reservation(InflightBudget* budget, std::uint64_t bytes) : budget_(budget), bytes_(bytes) {}
    InflightBudget* budget_ = nullptr;
    std::uint64_t bytes_ = 0;
  };

  // RESOURCE_EXHAUSTED when `bytes` alone exceed the per-request limit (LIMIT_EXCEEDED naming
  // `field`: retrying cannot help), or when the budget is full now (OVERLOADED, no field:
  // retrying later can). `field` is the request field whose bytes these are ("slab", "chunk"),
  // "" for the whole request; messages name it.
  absl::StatusOr<Reservation> Reserve(std::uint64_t bytes, absl::string_view field);
  // Requests up to this size may succeed on retry when Reserve refuses them.
  std::uint64_t per_request_bytes() const { return per_request_; }
  std::uint64_t used() const;
  std::uint64_t capacity() const { return capacity_; }

 private:
  // OK when `held` bytes already reserved may become `bytes`; the refusal Reserve documents.
  absl::Status CheckLocked(std::uint64_t held, std::uint64_t bytes, absl::string_view field) const;
  const std::uint64_t capacity_;
  const std::uint64_t per_request_;
  mutable std::mutex mu_;
  std::uint64_t used_ = 0;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_STATE_INFLIGHT_BUDGET_H_
