#include "server/rpc/result_slot.h"

#include <utility>

#include "cuimg/common/error.h"
#include "server/validation/proto_conversion.h"

namespace cuimg {

absl::Status KeptResultError(const absl::Status& status) {
  return ErrorFieldOf(status).empty() ? AtField(status, "output.keep_resident")
                                      : WithFieldPrefix(status, "output.");
}

v1::Image* DescribeResult(PixelType type, const Extent& extent, const v1::Spacing& spacing,
                          v1::ImageResult* result) {
  v1::Image* image = result->mutable_image();
  SetImageHeader(ImageView{type, extent, 1, nullptr}, image);
  *image->mutable_spacing() = spacing;
  return image;
}

ResultSlot::ResultSlot(const OutputSpec& output, PixelType type, const Extent& extent,
                       const v1::Spacing& spacing, v1::ImageResult* result,
                       DetachedResults& detached, const void* overwrite)
    : output_(output), result_(result) {
  if (!output.keep_resident) {
    DescribeResult(type, extent, spacing, result);
    const std::size_t bytes = ImageView{type, extent, 1, nullptr}.Bytes();
    data_ = detached.TakeRequestPixels(result, overwrite, bytes);
    if (data_ == nullptr) data_ = detached.Add(result, bytes);
    return;
  }
  stored_ = std::make_unique<StoredImage>();
  stored_->image = Image(type, extent, 1);
  stored_->spacing = spacing;
  data_ = stored_->image.bytes();
}

absl::Status ResultSlot::Deliver(ResidentStore& store, absl::string_view identity) {
  if (stored_ == nullptr) return absl::OkStatus();
  if (!output_.omit_data) {
    v1::Image* image = result_->mutable_image();
    SetImageHeader(stored_->image.view(), image);
    *image->mutable_spacing() = stored_->spacing;
    image->mutable_data()->assign(reinterpret_cast<const char*>(stored_->image.bytes()),
                                  stored_->image.size_bytes());
  }
  absl::StatusOr<ResidentInfo> info = store.Put(
      identity, std::shared_ptr<const StoredImage>(std::move(stored_)), output_.ttl_seconds);
  if (!info.ok()) return KeptResultError(info.status());
  result_->set_handle(info->handle);
  return absl::OkStatus();
}

}  // namespace cuimg
