// multipart/related bodies (RFC 2046 section 5.1, RFC 2387) as DICOMweb uses them: WADO-RS
// answers with one part per instance, STOW-RS sends one. The parser reads untrusted server
// responses: it never copies a part, bounds the part count, and names what is malformed.
#ifndef CUIMG_CLIENT_IO_MULTIPART_H_
#define CUIMG_CLIENT_IO_MULTIPART_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cuimg {

struct MultipartPart {
  // The part's header block (without the blank line that ends it); may be empty.
  absl::string_view headers;
  absl::string_view body;
};

// The `boundary` parameter of a Content-Type header value such as
// `multipart/related; type="application/dicom"; boundary=abc` (quoted or not). INVALID_ARGUMENT,
// naming the header, when the media type is not multipart/* or the boundary is missing, empty,
// longer than RFC 2046's 70 characters, or holds characters outside its alphabet.
absl::StatusOr<std::string> MultipartBoundary(absl::string_view content_type);

// The value of header `name` (case-insensitive) in a part's header block, trimmed; empty when the
// part has no such header.
std::string MultipartHeader(const MultipartPart& part, absl::string_view name);

// Splits `body` on `boundary`: an optional preamble, then parts each introduced by
// "--boundary" (CRLF-preceded except at the very start) and a CRLF-ended header block, closed by
// "--boundary--" (anything after it is ignored). The parts view `body`, which must outlive them.
// INVALID_ARGUMENT when the first boundary, a header block's end or the closing boundary is
// missing, and RESOURCE_EXHAUSTED when there are more than `max_parts` parts.
absl::StatusOr<std::vector<MultipartPart>> SplitMultipart(absl::string_view body,
                                                          absl::string_view boundary,
                                                          std::size_t max_parts);

// A body SplitMultipart reads back: each of `parts` as "--boundary CRLF Content-Type:
// `part_type` CRLF CRLF data CRLF", then "--boundary--". `boundary` must not occur in any part
// (the caller picks one: NewMultipartBoundary).
std::string JoinMultipart(const std::vector<absl::string_view>& parts, absl::string_view boundary,
                          absl::string_view part_type);

// A random boundary (32 hex digits) found in none of `parts`.
std::string NewMultipartBoundary(const std::vector<absl::string_view>& parts);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_MULTIPART_H_
