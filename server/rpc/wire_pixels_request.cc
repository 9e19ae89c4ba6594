// The request half of wire_pixels.h: a request's inline pixels copied once out of gRPC's
// received slices, the rest of the message parsed by protobuf.
#include <grpcpp/support/proto_buffer_reader.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "cuimg/common/malloc_policy.h"
#include "cuimg/common/status_macros.h"
#include "server/rpc/wire_format.h"
#include "server/rpc/wire_pixels.h"

namespace cuimg {
namespace {

using wire_format::AppendVarint;
using wire_format::kLengthDelimited;

// Where a request's pixels are: Request.input (1), ImageSource.image (1), Image.data (6).
constexpr std::uint64_t kPixelPath[] = {1, 1, 6};
constexpr int kPixelDepth = 2;
// ImageSource's depth on that path: its other fields are the image's oneof siblings.
constexpr int kSourceDepth = 1;

// A request's pixels are copied out of the received bytes by one thread per this many bytes, up
// to kMaxCopyThreads (and the cores): only volumes take more than one.
constexpr std::size_t kBytesPerCopyThread = std::size_t{16} << 20;
constexpr unsigned kMaxCopyThreads = 4;

// A volume whose received bytes are freed as they are copied goes in at most this many rounds,
// each freeing at least the bytes that make a trim worth it (MallocTrimmer::kPromptTrimBytes).
constexpr std::size_t kMaxReleaseRounds = 4;

// Reads gRPC's received slices in order without joining them.
class SliceReader {
 public:
  explicit SliceReader(std::vector<grpc::Slice> slices) : slices_(std::move(slices)) {
    for (const grpc::Slice& s : slices_) {
      starts_.push_back(size_);
      size_ += s.size();
    }
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
    for (std::size_t i = 0; i < slices_.size(); ++i) {
      const grpc::Slice& s = slices_[i];
      const std::size_t begin = starts_[i];  // a released slice is empty: no piece
      const std::size_t end = begin + s.size();
      const std::size_t lo = std::max(begin, at);
      const std::size_t hi = std::min(end, at + n);
      if (lo < hi) pieces.push_back({s.begin() + (lo - begin), hi - lo, lo - at});
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

  // CopyRange in rounds, each followed by releasing the slices it has finished with (they must be
  // these slices' last references) and handing their bytes back to the system: the received
  // bytes and the copy are then never both held whole (for a volume copied into pinned memory,
  // about 1.25x its size rather than 2x). Reads nothing after.
  void CopyRangeReleasing(std::size_t at, std::size_t n, void* dst) {
    auto* out = static_cast<std::uint8_t*>(dst);
    const std::size_t rounds =
        std::clamp<std::size_t>(n / MallocTrimmer::kPromptTrimBytes, 1, kMaxReleaseRounds);
    std::size_t next = 0;  // the first slice not yet released
    for (std::size_t r = 0; r < rounds; ++r) {
      const std::size_t lo = r * n / rounds;
      const std::size_t hi = (r + 1) * n / rounds;
      CopyRange(at + lo, hi - lo, out + lo);
      // Slices wholly before the next round's bytes (all of them after the last round).
      std::size_t released = 0;
      for (; next < slices_.size(); ++next) {
        const bool last = r + 1 == rounds;
        if (!last && starts_[next] + slices_[next].size() > at + hi) break;
        released += slices_[next].size();
        slices_[next] = grpc::Slice();
      }
      MallocTrimmer::TrimAfterFree(released);
    }
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
  std::vector<std::size_t> starts_;  // each slice's offset in the received bytes
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

  bool has_pixels() const { return pixels_bytes_ != 0; }

  // The pixels found, copied into a buffer from `allocate`; null when there were none. With
  // `release`, the received bytes are freed as they are copied (SliceReader::CopyRangeReleasing).
  std::unique_ptr<HostBuffer> TakePixels(bool release) {
    if (pixels_bytes_ == 0) return nullptr;
    std::unique_ptr<HostBuffer> pixels = allocate_(pixels_bytes_);
    if (release) {
      in_.CopyRangeReleasing(pixels_at_, pixels_bytes_, pixels->data());
    } else {
      in_.CopyRange(pixels_at_, pixels_bytes_, pixels->data());
    }
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
  // The whole message is at fault, not one of its fields.
  return InvalidFieldError(
      ErrorReason::kMalformedMessage, "",
      absl::StrCat("the request's bytes are not a valid ", request.GetTypeName()));
}

}  // namespace

namespace {

// Both ParseWithDetachedPixels: `consume` is `wire` itself when its bytes may be freed.
absl::StatusOr<std::unique_ptr<HostBuffer>> Parse(const grpc::ByteBuffer& wire,
                                                  grpc::ByteBuffer* consume,
                                                  const HostBufferAllocator& allocate,
                                                  google::protobuf::Message* request) {
  std::vector<grpc::Slice> slices;
  if (wire.Dump(&slices).ok()) {
    SliceReader in(std::move(slices));
    PixelSplitter splitter(&in, allocate);
    std::string rest;
    if (splitter.Split(0, in.size(), &rest)) {
      if (!request->ParseFromString(rest)) return NotAMessage(*request);
      // The reader's slices are the last references to the received bytes from here.
      const bool release = consume != nullptr && splitter.has_pixels();
      if (release) consume->Clear();
      // The split gave up on any sibling of the image, so pixels found are the image's.
      return splitter.TakePixels(release);
    }
  }
  CUIMG_RETURN_IF_ERROR(ParseMessage(wire, request));
  return std::unique_ptr<HostBuffer>();
}

}  // namespace

absl::StatusOr<std::unique_ptr<HostBuffer>> ParseWithDetachedPixels(
    const grpc::ByteBuffer& wire, const HostBufferAllocator& allocate,
    google::protobuf::Message* request) {
  return Parse(wire, nullptr, allocate, request);
}

absl::StatusOr<std::unique_ptr<HostBuffer>> ParseWithDetachedPixels(
    grpc::ByteBuffer* wire, const HostBufferAllocator& allocate,
    google::protobuf::Message* request) {
  return Parse(*wire, wire, allocate, request);
}

absl::Status ParseMessage(const grpc::ByteBuffer& wire, google::protobuf::Message* request) {
  grpc::ByteBuffer whole(wire);  // shares the slices
  grpc::ProtoBufferReader reader(&whole);
  request->Clear();
  if (!request->ParseFromZeroCopyStream(&reader)) return NotAMessage(*request);
  return absl::OkStatus();
}

}  // namespace cuimg
