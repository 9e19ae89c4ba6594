// libFuzzer target: the multipart/related parser that WADO-RS answers go through. Input: a
// Content-Type value, '\n', the body. Whatever the bytes: a status; the parts it returns lie inside
// the body, are at most the cap, and a body joined from their contents splits back into them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "client/io/multipart.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::size_t newline = input.find('\n');
  if (newline == std::string::npos) return 0;
  const absl::string_view content_type(input.data(), newline);
  const absl::string_view body(input.data() + newline + 1, size - newline - 1);
  absl::StatusOr<std::string> boundary = cuimg::MultipartBoundary(content_type);
  if (!boundary.ok()) return 0;
  constexpr std::size_t kMaxParts = 16;
  absl::StatusOr<std::vector<cuimg::MultipartPart>> parts =
      cuimg::SplitMultipart(body, *boundary, kMaxParts);
  if (!parts.ok()) return 0;
  if (parts->size() > kMaxParts) std::abort();
  std::vector<absl::string_view> bodies;
  for (const cuimg::MultipartPart& part : *parts) {
    for (absl::string_view view : {part.headers, part.body}) {
      if (!view.empty() &&
          (view.data() < body.data() || view.data() + view.size() > body.data() + body.size())) {
        std::abort();
      }
    }
    (void)cuimg::MultipartHeader(part, "Content-Type");
    bodies.push_back(part.body);
  }
  const std::string joined = cuimg::JoinMultipart(bodies, *boundary, "application/dicom");
  absl::StatusOr<std::vector<cuimg::MultipartPart>> again =
      cuimg::SplitMultipart(joined, *boundary, kMaxParts);
  if (!again.ok() || again->size() != bodies.size()) std::abort();
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    if ((*again)[i].body != bodies[i]) std::abort();
  }
  return 0;
}
