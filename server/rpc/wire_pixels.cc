#include "server/rpc/wire_pixels.h"

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/common/status_macros.h"

namespace cuimg {
namespace {

using google::protobuf::FieldDescriptor;

constexpr std::uint64_t kLengthDelimited = 2;
// Where a request's pixels are: Request.input (1), ImageSource.image (1), Image.data (6).
constexpr std::uint64_t kPixelPath[] = {1, 1, 6};
constexpr int kPixelDepth = 2;
// ImageSource's depth on that path: its other fields are the image's oneof siblings.
constexpr int kSourceDepth = 1;
// Where a result's are: ImageResult.image (1), Image.data (6).
constexpr std::uint32_t kResultImageField = 1;
constexpr std::uint32_t kImageDataField = 6;

// A request's pixels are copied out of the received bytes by one thread per this many bytes, up
// to kMaxCopyThreads (and the cores): only volumes take more than one.
constexpr std::size_t kBytesPerCopyThread = std::size_t{16} << 20;
constexpr unsigned kMaxCopyThreads = 4;

void AppendVarint(std::uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

std::uint64_t LengthTag(std::uint64_t field) { return (field << 3) | kLengthDelimited; }

// Reads gRPC's received slices in order without joining them.
class SliceReader {
 public:
  explicit SliceReader(std::vector<grpc::Slice> slices) : slices_(std::move(slices)) {
    for (const grpc::Slice& s : slices_) size_ += s.size();
    Advance(0);
  }
  std::size_t position() const { return position_; }
  std::size_t size() const { return size_; }
  std::size_t left() const { return size_ - position_; }

  // Only canonical varints (as long as their value needs, within 64 bits): then writing the
  // value again gives the same bytes. Others make the caller leave the bytes to protobuf.
  bool ReadVarint(std::uint64_t* value) {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      std::uint8_t byte = 0;
      if (!Read(&byte, 1)) return false;
      if (shift == 63 && byte > 1) return false;
      v |= std::uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) {
        if (byte == 0 && shift > 0) return false;  // padded
        *value = v;
        return true;
      }
    }
    return false;
  }

  bool Read(void* dst, std::size_t n) {
    if (n > left()) return false;
    auto* d = static_cast<std::uint8_t*>(dst);
    while (n > 0) {
      const grpc::Slice& s = slices_[slice_];
      const std::size_t take = std::min(n, s.size() - offset_);
      std::memcpy(d, s.begin() + offset_, take);
      d += take;
      n -= take;
      Advance(take);
    }
    return true;
  }

  bool Skip(std::size_t n) {
    if (n > left()) return false;
    while (n > 0) {
      const std::size_t take = std::min(n, slices_[slice_].size() - offset_);
      n -= take;
      Advance(take);
    }
    return true;
  }

  // Copies the `n` bytes at `at` (inside the received bytes) to `dst`, a volume's on several
  // threads: the trailer's h2d counts this copy, and on one core it would take longer than the
  // DMA that follows it (issue #34 asks both copies of a 157 MB volume to fit in 30 ms).
  void CopyRange(std::size_t at, std::size_t n, void* dst) const {
    struct Piece {
      const std::uint8_t* src;
      std::size_t bytes;
      std::size_t to;  // offset in dst
    };
    std::vector<Piece> pieces;
    std::size_t begin = 0;
    for (const grpc::Slice& s : slices_) {
      const std::size_t end = begin + s.size();
      const std::size_t lo = std::max(begin, at);
      const std::size_t hi = std::min(end, at + n);
      if (lo < hi) pieces.push_back({s.begin() + (lo - begin), hi - lo, lo - at});
      begin = end;
    }
    auto* out = static_cast<std::uint8_t*>(dst);
    // Part p copies dst[p * n / parts, (p + 1) * n / parts).
    const std::size_t parts = std::clamp<std::size_t>(
        n / kBytesPerCopyThread, 1,
        std::max(1u, std::min(kMaxCopyThreads, std::thread::hardware_concurrency())));
    auto copy_part = [&](std::size_t p) {
      const std::size_t lo = p * n / parts;
      const std::size_t hi = (p + 1) * n / parts;
      for (const Piece& piece : pieces) {
        const std::size_t a = std::max(lo, piece.to);
        const std::size_t b = std::min(hi, piece.to + piece.bytes);
        if (a < b) std::memcpy(out + a, piece.src + (a - piece.to), b - a);
      }
    };
    std::vector<std::thread> helpers;
    for (std::size_t p = 1; p < parts; ++p) helpers.emplace_back(copy_part, p);
    copy_part(0);
    for (std::thread& t : helpers) t.join();
  }

  bool AppendTo(std::string* out, std::size_t n) {
    if (n > left()) return false;
    const std::size_t at = out->size();
    out->resize(at + n);
    return Read(out->data() + at, n);
  }

 private:
  // Moves on by n bytes and past exhausted slices, so that a read never sits at one.
  void Advance(std::size_t n) {
    offset_ += n;
    position_ += n;
    while (slice_ < slices_.size() && offset_ == slices_[slice_].size()) {
      ++slice_;
      offset_ = 0;
    }
  }

  std::vector<grpc::Slice> slices_;
  std::size_t size_ = 0;
  std::size_t slice_ = 0;
  std::size_t offset_ = 0;
  std::size_t position_ = 0;
};

// Copies a request into `rest` field by field, but for its pixels, which go to their own
// buffer. Anything but the plain layout (a field on the pixels' path repeated, or with another
// wire type; groups; bytes that do not parse) makes it give up, and protobuf parses the whole
// request: protobuf's merge rules and its errors stay the authority.
class PixelSplitter {
 public:
  PixelSplitter(SliceReader* in, const HostBufferAllocator& allocate)
      : in_(*in), allocate_(allocate) {}

  // The fields up to `end` of the message at `depth` on the pixels' path, appended to `out`.
  bool Split(int depth, std::size_t end, std::string* out) {
    bool seen = false;
    while (in_.position() < end) {
      std::uint64_t tag = 0;
      // Field numbers are 1 to 2^29 - 1: protobuf reads tags as 32 bits.
      if (!in_.ReadVarint(&tag) || (tag >> 3) == 0 || tag > 0xffffffffu) return false;
      if ((tag >> 3) != kPixelPath[depth]) {
        // A handle, region or encoded file (or one replacing the image): no pixels to take
        // apart, and copying an encoded file into `out` would cost two passes over it.
        if (depth == kSourceDepth) return false;
        AppendVarint(tag, out);
        if (!CopyValue(tag & 7, end, out)) return false;
        continue;
      }
      std::uint64_t n = 0;
      if ((tag & 7) != kLengthDelimited || seen || !ReadLength(end, &n)) return false;
      seen = true;
      if (depth == kPixelDepth) {
        // Copied once the whole message is known to be plain (TakePixels).
        pixels_at_ = in_.position();
        pixels_bytes_ = n;
        if (!in_.Skip(n)) return false;
        continue;
      }
      std::string inner;
      if (!Split(depth + 1, in_.position() + n, &inner)) return false;
      AppendVarint(tag, out);
      AppendVarint(inner.size(), out);
      out->append(inner);
    }
    return in_.position() == end;
  }

  // The pixels found, copied into a buffer from `allocate`; null when there were none.
  std::unique_ptr<HostBuffer> TakePixels() {
    if (pixels_bytes_ == 0) return nullptr;
    std::unique_ptr<HostBuffer> pixels = allocate_(pixels_bytes_);
    in_.CopyRange(pixels_at_, pixels_bytes_, pixels->data());
    return pixels;
  }

 private:
  // A length-delimited field's length, which must fit before `end`.
  bool ReadLength(std::size_t end, std::uint64_t* n) {
    return in_.ReadVarint(n) && *n <= end - std::min(end, in_.position());
  }

  // One field's value, its tag already copied.
  bool CopyValue(std::uint64_t wire_type, std::size_t end, std::string* out) {
    switch (wire_type) {
      case 0: {
        std::uint64_t v = 0;
        if (!in_.ReadVarint(&v)) return false;
        AppendVarint(v, out);
        break;
      }
      case 1:
        if (!in_.AppendTo(out, 8)) return false;
        break;
      case kLengthDelimited: {
        std::uint64_t n = 0;
        if (!ReadLength(end, &n)) return false;
        AppendVarint(n, out);
        if (!in_.AppendTo(out, n)) return false;
        break;
      }
      case 5:
        if (!in_.AppendTo(out, 4)) return false;
        break;
      default:
        return false;
    }
    return in_.position() <= end;
  }

  SliceReader& in_;
  const HostBufferAllocator& allocate_;
  std::size_t pixels_at_ = 0;
  std::size_t pixels_bytes_ = 0;
};

absl::Status NotAMessage(const google::protobuf::Message& request) {
  return absl::InvalidArgumentError(
      absl::StrCat("request: the bytes are not a valid ", request.GetTypeName()));
}

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

absl::StatusOr<std::unique_ptr<HostBuffer>> ParseWithDetachedPixels(
    const grpc::ByteBuffer& wire, const HostBufferAllocator& allocate,
    google::protobuf::Message* request) {
  std::vector<grpc::Slice> slices;
  if (wire.Dump(&slices).ok()) {
    SliceReader in(std::move(slices));
    PixelSplitter splitter(&in, allocate);
    std::string rest;
    if (splitter.Split(0, in.size(), &rest)) {
      if (!request->ParseFromString(rest)) return NotAMessage(*request);
      // The split gave up on any sibling of the image, so pixels found are the image's.
      return splitter.TakePixels();
    }
  }
  CUIMG_RETURN_IF_ERROR(ParseMessage(wire, request));
  return std::unique_ptr<HostBuffer>();
}

absl::Status ParseMessage(const grpc::ByteBuffer& wire, google::protobuf::Message* request) {
  grpc::ByteBuffer whole(wire);  // shares the slices
  grpc::ProtoBufferReader reader(&whole);
  request->Clear();
  if (!request->ParseFromZeroCopyStream(&reader)) return NotAMessage(*request);
  return absl::OkStatus();
}

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
