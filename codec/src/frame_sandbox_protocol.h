// What FrameSandbox and its helper (cuimg-frame-decoder) say to each other over their socket:
// a request header, then the frame's bytes; a reply header, then the message (on an error) or
// the decoded values. Both ends are the same build on the same host, so the headers travel in
// host order.
#ifndef CUIMG_CODEC_SRC_FRAME_SANDBOX_PROTOCOL_H_
#define CUIMG_CODEC_SRC_FRAME_SANDBOX_PROTOCOL_H_

#include <cstddef>
#include <cstdint>

namespace cuimg::sandbox {

constexpr std::uint32_t kRequestMagic = 0x43464452;  // "CFDR"
constexpr std::uint32_t kReplyMagic = 0x43464450;    // "CFDP"
// The helper's end of its socket.
constexpr int kHelperFd = 3;
// The largest frame a helper reads (a 65535x65535 16-bit frame's raw size).
constexpr std::uint64_t kMaxFrameBytes = std::uint64_t{65535} * 65535 * 2;

struct Request {
  std::uint32_t magic = kRequestMagic;
  std::uint32_t syntax = 0;  // FrameSyntax
  std::int32_t rows = 0;
  std::int32_t columns = 0;
  std::int32_t bits_allocated = 0;
  std::int32_t bits_stored = 0;
  std::int32_t is_signed = 0;
  std::uint32_t reserved = 0;
  std::uint64_t frame_bytes = 0;
};

struct Reply {
  std::uint32_t magic = kReplyMagic;
  std::int32_t code = 0;  // absl::StatusCode; 0 with the values following
  std::uint32_t message_bytes = 0;
  std::uint32_t reserved = 0;
  std::uint64_t pixel_bytes = 0;
};

// Reads or writes exactly `size` bytes of `fd`; false on an error or the peer's end.
bool ReadAll(int fd, void* data, std::size_t size);
bool WriteAll(int fd, const void* data, std::size_t size);

}  // namespace cuimg::sandbox

#endif  // CUIMG_CODEC_SRC_FRAME_SANDBOX_PROTOCOL_H_
