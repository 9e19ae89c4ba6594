// How a unary call's messages reach ImagingService::Serve: parsed and serialized here, with the
// pixels kept apart (wire_pixels.h), in the order Serve uses the members: Parse, Validate,
// request/response, Serialize. The wire format stays the generated code's.
#ifndef CUIMG_SERVER_CALL_MESSAGES_H_
#define CUIMG_SERVER_CALL_MESSAGES_H_

#include <grpcpp/support/byte_buffer.h>

#include <chrono>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cuimg/common/status_macros.h"
#include "server/backend/backend.h"
#include "server/rpc/wire_pixels.h"
#include "server/server_options.h"
#include "server/validation/request_validation.h"

namespace cuimg {

// A unary call whose messages are parsed and serialized here, with the pixels kept apart
// (wire_pixels.h): the request's inline pixels in one host buffer (when `kInputPixels`: its
// field 1 is an ImageSource), each result's in its own.
template <typename RequestT, typename ResponseT, bool kInputPixels = true>
class DetachedMessages {
 public:
  using Request = RequestT;
  using Response = ResponseT;
  DetachedMessages(const grpc::ByteBuffer* wire_request, grpc::ByteBuffer* wire_response,
                   Backend* backend)
      : wire_request_(wire_request),
        wire_response_(wire_response),
        allocate_([backend](std::size_t bytes) { return backend->AllocateHostBuffer(bytes); }),
        results_(allocate_) {}
  absl::Status Parse() {
    if constexpr (!kInputPixels) {
      return ParseMessage(*wire_request_, &request_);
    } else {
      const auto start = std::chrono::steady_clock::now();
      const auto received = static_cast<std::int64_t>(wire_request_->Length());
      // The received bytes are not read again once the pixels are detached: freed as they are
      // copied, and handed back to the system (malloc_policy.h), rather than when the call ends,
      // so that the pixels are held once, not twice, while the backend runs, and not three
      // times beside a result (gRPC owns the object and only destroys it, at the end of the
      // call). Counted with the copy, not as time spent queueing.
      CUIMG_ASSIGN_OR_RETURN(
          pixels_, ParseWithDetachedPixels(const_cast<grpc::ByteBuffer*>(wire_request_), allocate_,
                                           &request_));
      if (pixels_ != nullptr) {
        request_bytes_ = received;
        pixel_copy_us_ =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                .count();
        // A result may take over the request's own buffer (Backend::MorphologyWritesOverInput).
        results_.set_request_pixels(pixels_);
      }
      return absl::OkStatus();
    }
  }
  // How long Parse took when it copied the request's pixels out of the received bytes (and
  // handed those back).
  double pixel_copy_us() const { return pixel_copy_us_; }
  template <typename Validator>
  auto Validate(Validator validate, const RequestLimits& limits) const {
    if constexpr (!kInputPixels) {
      return validate(request_, limits);
    } else {
      DetachedPixels pixels;
      if (pixels_ != nullptr) {
        pixels = absl::string_view(static_cast<const char*>(pixels_->data()), pixels_->size());
      }
      return validate(request_, limits, pixels);
    }
  }
  const Request& request() const { return request_; }
  Response* response() { return &response_; }
  std::uint64_t detached_request_bytes() const { return pixels_ ? pixels_->size() : 0; }
  DetachedResults* detached_results() { return &results_; }
  absl::Status Serialize() { return results_.Serialize(response_, wire_response_); }
  std::int64_t request_bytes() const {
    return request_bytes_ >= 0 ? request_bytes_
                               : static_cast<std::int64_t>(wire_request_->Length());
  }
  std::int64_t response_bytes() const {
    return static_cast<std::int64_t>(wire_response_->Length());
  }

 private:
  const grpc::ByteBuffer* wire_request_;
  grpc::ByteBuffer* wire_response_;
  HostBufferAllocator allocate_;
  Request request_;
  Response response_;
  std::shared_ptr<HostBuffer> pixels_;
  double pixel_copy_us_ = 0;
  std::int64_t request_bytes_ = -1;  // once the received bytes are freed
  DetachedResults results_;
};

// `backend` gives the pixels' buffers and must outlive the call.
template <typename Request, typename Response>
std::shared_ptr<DetachedMessages<Request, Response>> Detached(const grpc::ByteBuffer* request,
                                                              grpc::ByteBuffer* response,
                                                              Backend* backend) {
  return std::make_shared<DetachedMessages<Request, Response>>(request, response, backend);
}

// Only the results detached: for requests that carry no ImageSource.
template <typename Request, typename Response>
std::shared_ptr<DetachedMessages<Request, Response, false>> DetachedResultsOnly(
    const grpc::ByteBuffer* request, grpc::ByteBuffer* response, Backend* backend) {
  return std::make_shared<DetachedMessages<Request, Response, false>>(request, response, backend);
}

}  // namespace cuimg

#endif  // CUIMG_SERVER_CALL_MESSAGES_H_
