// Protobuf's wire format, the little of it that wire_pixels_request.cc and
// wire_pixels_response.cc write themselves (tags and lengths around pixels kept apart).
#ifndef CUIMG_SERVER_RPC_WIRE_FORMAT_H_
#define CUIMG_SERVER_RPC_WIRE_FORMAT_H_

#include <cstdint>
#include <string>

namespace cuimg::wire_format {

// The wire type of bytes, strings and messages.
inline constexpr std::uint64_t kLengthDelimited = 2;

// Appends `value` as a canonical varint (as short as the value allows).
inline void AppendVarint(std::uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

// The tag of length-delimited field `field`.
inline std::uint64_t LengthTag(std::uint64_t field) { return (field << 3) | kLengthDelimited; }

}  // namespace cuimg::wire_format

#endif  // CUIMG_SERVER_RPC_WIRE_FORMAT_H_
