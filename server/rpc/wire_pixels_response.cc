// The response half of wire_pixels.h: results' pixels written outside the message and sent
// from their own buffers, spliced by reference between the bytes protobuf serializes.
#include <grpcpp/impl/codegen/proto_utils.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/common/status_macros.h"
#include "server/rpc/wire_format.h"
#include "server/rpc/wire_pixels.h"

namespace cuimg {
namespace {

using google::protobuf::FieldDescriptor;
using wire_format::AppendVarint;
using wire_format::LengthTag;

// Where a result's pixels are: ImageResult.image (1), Image.data (6).
constexpr std::uint32_t kResultImageField = 1;
constexpr std::uint32_t kImageDataField = 6;

void DeleteSharedBuffer(void* owner) { delete static_cast<std::shared_ptr<HostBuffer>*>(owner); }

// A message's bytes with pixels spliced in by reference: runs of bytes and pixel ranges, in
// order, and their total size (which the enclosing field's length needs before its bytes).
class Spliced {
 public:
  using Pixels = DetachedResults::Pixels;

  std::size_t size() const { return size_; }

  void Bytes(const std::string& bytes) {
    if (bytes.empty()) return;
    if (pieces_.empty() || pieces_.back().pixels.buffer != nullptr) pieces_.emplace_back();
    pieces_.back().bytes += bytes;
    size_ += bytes.size();
  }
  void Varint(std::uint64_t value) {
    std::string bytes;
    AppendVarint(value, &bytes);
    Bytes(bytes);
  }
  void Splice(const Pixels& pixels) {
    if (pixels.bytes == 0) return;
    pieces_.push_back(Piece{{}, pixels});
    size_ += pixels.bytes;
  }
  // `pixels` as the value of length-delimited field `number`.
  void PixelsField(std::uint64_t number, const Pixels& pixels) {
    Varint(LengthTag(number));
    Varint(pixels.bytes);
    Splice(pixels);
  }
  // `inner` as the value of length-delimited field `number`.
  void Field(std::uint64_t number, const Spliced& inner) {
    Varint(LengthTag(number));
    Varint(inner.size());
    for (const Piece& p : inner.pieces_) {
      if (p.pixels.buffer != nullptr) {
        Splice(p.pixels);
      } else {
        Bytes(p.bytes);
      }
    }
  }

  // Each slice of pixels keeps its buffer alive until gRPC has sent it.
  std::vector<grpc::Slice> Slices() const {
    std::vector<grpc::Slice> slices;
    for (const Piece& p : pieces_) {
      if (p.pixels.buffer == nullptr) {
        slices.emplace_back(p.bytes);
        continue;
      }
      auto* owner = new std::shared_ptr<HostBuffer>(p.pixels.buffer);
      slices.emplace_back(static_cast<char*>(p.pixels.buffer->data()) + p.pixels.offset,
                          p.pixels.bytes, &DeleteSharedBuffer, owner);
    }
    return slices;
  }

 private:
  struct Piece {
    std::string bytes;
    Pixels pixels;
  };
  std::vector<Piece> pieces_;
  std::size_t size_ = 0;
};

// Writes a message whose subtree holds detached results: the fields that lead to a result are
// written here, one by one; the rest of the message as protobuf serializes it.
class ResultSplicer {
 public:
  using Results = std::unordered_map<const google::protobuf::Message*, Spliced::Pixels>;
  using Field = std::pair<int, Spliced::Pixels>;  // a bytes field's number, its pixels
  using Fields = std::unordered_map<const google::protobuf::Message*, std::vector<Field>>;

  ResultSplicer(const Results& results, const Fields& fields)
      : results_(results), fields_(fields) {}

  // Results and bytes fields written so far.
  std::size_t found() const { return found_; }

  absl::Status Write(const google::protobuf::Message& m, Spliced* out) {
    if (const auto it = results_.find(&m); it != results_.end()) {
      ++found_;
      return WriteResult(m, it->second, out);
    }
    const google::protobuf::Reflection* reflection = m.GetReflection();
    std::unique_ptr<google::protobuf::Message> rest(m.New());
    rest->CopyFrom(m);
    if (const auto it = fields_.find(&m); it != fields_.end()) {
      for (const auto& [number, pixels] : it->second) {
        const FieldDescriptor* f = m.GetDescriptor()->FindFieldByNumber(number);
        if (f == nullptr || f->is_repeated() || f->type() != FieldDescriptor::TYPE_BYTES ||
            !reflection->GetString(m, f).empty()) {
          return absl::InternalError(absl::StrCat("detached field ", number, " of ",
                                                  m.GetTypeName(),
                                                  " is not an empty singular bytes field"));
        }
        CUIMG_RETURN_IF_ERROR(CheckInside(pixels));
        ++found_;
        out->PixelsField(static_cast<std::uint64_t>(number), pixels);
        rest->GetReflection()->ClearField(rest.get(), f);
      }
    }
    std::vector<const FieldDescriptor*> fields;
    reflection->ListFields(m, &fields);
    for (const FieldDescriptor* f : fields) {
      if (!HoldsResults(m, f)) continue;
      const int count = f->is_repeated() ? reflection->FieldSize(m, f) : 1;
      for (int i = 0; i < count; ++i) {
        const google::protobuf::Message& sub = f->is_repeated()
                                                   ? reflection->GetRepeatedMessage(m, f, i)
                                                   : reflection->GetMessage(m, f);
        Spliced inner;
        if (Holds(sub)) {
          CUIMG_RETURN_IF_ERROR(Write(sub, &inner));
        } else {
          inner.Bytes(sub.SerializeAsString());
        }
        out->Field(static_cast<std::uint64_t>(f->number()), inner);
      }
      rest->GetReflection()->ClearField(rest.get(), f);
    }
    out->Bytes(rest->SerializeAsString());
    return absl::OkStatus();
  }

 private:
  // An ImageResult: its image with the pixels as the data, then its other fields.
  absl::Status WriteResult(const google::protobuf::Message& m, const Spliced::Pixels& pixels,
                           Spliced* out) {
    if (m.GetDescriptor() != v1::ImageResult::descriptor()) {
      return absl::InternalError("a detached result is not an ImageResult");
    }
    const auto& result = static_cast<const v1::ImageResult&>(m);
    if (!result.image().data().empty()) {
      return absl::InternalError("a detached result's image already holds data");
    }
    CUIMG_RETURN_IF_ERROR(CheckInside(pixels));
    Spliced image;
    image.Bytes(result.image().SerializeAsString());
    image.PixelsField(kImageDataField, pixels);
    out->Field(kResultImageField, image);
    v1::ImageResult others = result;
    others.clear_image();
    out->Bytes(others.SerializeAsString());
    return absl::OkStatus();
  }

  static absl::Status CheckInside(const Spliced::Pixels& pixels) {
    if (pixels.buffer == nullptr || pixels.offset > pixels.buffer->size() ||
        pixels.bytes > pixels.buffer->size() - pixels.offset) {
      return absl::InternalError("detached pixels lie outside their buffer");
    }
    return absl::OkStatus();
  }

  bool HoldsResults(const google::protobuf::Message& m, const FieldDescriptor* f) {
    if (f->type() != FieldDescriptor::TYPE_MESSAGE) return false;
    const google::protobuf::Reflection* reflection = m.GetReflection();
    if (!f->is_repeated()) return Holds(reflection->GetMessage(m, f));
    for (int i = 0; i < reflection->FieldSize(m, f); ++i) {
      if (Holds(reflection->GetRepeatedMessage(m, f, i))) return true;
    }
    return false;
  }

  // Whether `m` is a result or has one below it (remembered: a parent asks before writing).
  bool Holds(const google::protobuf::Message& m) {
    if (results_.count(&m) != 0 || fields_.count(&m) != 0) return true;
    if (const auto it = holds_.find(&m); it != holds_.end()) return it->second;
    std::vector<const FieldDescriptor*> fields;
    m.GetReflection()->ListFields(m, &fields);
    bool holds = false;
    for (const FieldDescriptor* f : fields) holds = holds || HoldsResults(m, f);
    holds_[&m] = holds;
    return holds;
  }

  const Results& results_;
  const Fields& fields_;
  std::unordered_map<const google::protobuf::Message*, bool> holds_;
  std::size_t found_ = 0;
};

}  // namespace

void* DetachedResults::Add(const v1::ImageResult* result, std::size_t bytes) {
  std::shared_ptr<HostBuffer> buffer = allocate_(bytes);
  void* data = buffer->data();
  Attach(result, std::move(buffer), 0, bytes);
  return data;
}

void DetachedResults::Attach(const v1::ImageResult* result, std::shared_ptr<HostBuffer> buffer,
                             std::size_t offset, std::size_t bytes) {
  results_[result] = Pixels{std::move(buffer), offset, bytes};
}

void* DetachedResults::TakeRequestPixels(const v1::ImageResult* result, const void* input,
                                         std::size_t bytes) {
  if (request_pixels_ == nullptr || input == nullptr || input != request_pixels_->data() ||
      bytes != request_pixels_->size()) {
    return nullptr;
  }
  void* data = request_pixels_->data();
  Attach(result, std::move(request_pixels_), 0, bytes);
  request_pixels_ = nullptr;
  return data;
}

void* DetachedResults::AddBytes(const google::protobuf::Message* message, int field,
                                std::size_t bytes) {
  std::shared_ptr<HostBuffer> buffer = allocate_(bytes);
  void* data = buffer->data();
  fields_[message].emplace_back(field, Pixels{std::move(buffer), 0, bytes});
  return data;
}

absl::Status DetachedResults::Serialize(const google::protobuf::Message& response,
                                        grpc::ByteBuffer* wire) {
  const ResultSplicer::Results results = std::move(results_);
  const ResultSplicer::Fields fields = std::move(fields_);
  results_.clear();
  fields_.clear();
  if (results.empty() && fields.empty()) {
    // Nothing detached (resident outputs, JPEG-in detections): as gRPC's generated code would.
    bool own_buffer = false;
    const grpc::Status status = grpc::SerializationTraits<google::protobuf::Message>::Serialize(
        response, wire, &own_buffer);
    if (!status.ok()) {
      return absl::InternalError(
          absl::StrCat("serializing the ", response.GetTypeName(), ": ", status.error_message()));
    }
    return absl::OkStatus();
  }
  std::size_t added = results.size();
  for (const auto& [message, list] : fields) added += list.size();
  Spliced out;
  ResultSplicer splicer(results, fields);
  CUIMG_RETURN_IF_ERROR(splicer.Write(response, &out));
  if (splicer.found() != added) {
    return absl::InternalError(
        absl::StrCat("a detached result or field is not in the ", response.GetTypeName()));
  }
  const std::vector<grpc::Slice> slices = out.Slices();
  *wire = grpc::ByteBuffer(slices.data(), slices.size());
  return absl::OkStatus();
}

}  // namespace cuimg
