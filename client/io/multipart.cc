#include "client/io/multipart.h"

#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace cuimg {
namespace {

// RFC 2046's bchars: digits, letters and '()+_,-./:=? and space (not last).
bool IsBoundaryChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         absl::string_view("'()+_,-./:=? ").find(c) != absl::string_view::npos;
}

}  // namespace

absl::StatusOr<std::string> MultipartBoundary(absl::string_view content_type) {
  std::vector<absl::string_view> fields = absl::StrSplit(content_type, ';');
  const std::string media = absl::AsciiStrToLower(absl::StripAsciiWhitespace(fields[0]));
  if (!absl::StartsWith(media, "multipart/")) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Content-Type: expected multipart/related, got \"%s\"",
                        absl::CHexEscape(media.substr(0, 64))));
  }
  for (std::size_t i = 1; i < fields.size(); ++i) {
    absl::string_view field = absl::StripAsciiWhitespace(fields[i]);
    const std::size_t eq = field.find('=');
    if (eq == absl::string_view::npos) continue;
    if (absl::AsciiStrToLower(absl::StripAsciiWhitespace(field.substr(0, eq))) != "boundary") {
      continue;
    }
    absl::string_view value = absl::StripAsciiWhitespace(field.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    if (value.empty() || value.size() > 70 || value.back() == ' ') {
      return absl::InvalidArgumentError(
          "Content-Type: the boundary parameter must have 1 to 70 "
          "characters, not ending in a space");
    }
    for (char c : value) {
      if (!IsBoundaryChar(c)) {
        return absl::InvalidArgumentError(
            "Content-Type: the boundary parameter holds a character RFC 2046 does not allow");
      }
    }
    return std::string(value);
  }
  return absl::InvalidArgumentError("Content-Type: multipart without a boundary parameter");
}

std::string MultipartHeader(const MultipartPart& part, absl::string_view name) {
  for (absl::string_view line : absl::StrSplit(part.headers, "\r\n")) {
    const std::size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    if (absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(line.substr(0, colon)), name)) {
      return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    }
  }
  return "";
}

absl::StatusOr<std::vector<MultipartPart>> SplitMultipart(absl::string_view body,
                                                          absl::string_view boundary,
                                                          std::size_t max_parts) {
  if (boundary.empty()) return absl::InvalidArgumentError("multipart: empty boundary");
  const std::string dash = absl::StrCat("--", boundary);
  const std::string delimiter = absl::StrCat("\r\n", dash);
  // The first boundary may open the body; later ones (and a first after a preamble) follow CRLF.
  std::size_t at;
  if (absl::StartsWith(body, dash)) {
    at = dash.size();
  } else {
    at = body.find(delimiter);
    if (at == absl::string_view::npos) {
      return absl::InvalidArgumentError("multipart: the body holds no boundary line");
    }
    at += delimiter.size();
  }
  std::vector<MultipartPart> parts;
  while (true) {
    // After a boundary: "--" closes the body; else transport padding, then CRLF.
    if (body.substr(at, 2) == "--") return parts;
    while (at < body.size() && (body[at] == ' ' || body[at] == '\t')) ++at;
    if (body.substr(at, 2) != "\r\n") {
      return absl::InvalidArgumentError(absl::StrFormat(
          "multipart: part %d: the boundary line does not end in CRLF", parts.size() + 1));
    }
    at += 2;
    if (parts.size() == max_parts) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("multipart: more than %d parts", max_parts));
    }
    MultipartPart part;
    if (body.substr(at, 2) == "\r\n") {  // no headers
      at += 2;
    } else {
      const std::size_t end = body.find("\r\n\r\n", at);
      if (end == absl::string_view::npos) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "multipart: part %d: its headers do not end with a blank line", parts.size() + 1));
      }
      part.headers = body.substr(at, end - at);
      at = end + 4;
    }
    const std::size_t next = body.find(delimiter, at);
    if (next == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "multipart: part %d: no boundary after it (truncated body?)", parts.size() + 1));
    }
    part.body = body.substr(at, next - at);
    parts.push_back(part);
    at = next + delimiter.size();
  }
}

std::string JoinMultipart(const std::vector<absl::string_view>& parts, absl::string_view boundary,
                          absl::string_view part_type) {
  std::string out;
  for (absl::string_view part : parts) {
    absl::StrAppend(&out, "--", boundary, "\r\nContent-Type: ", part_type, "\r\n\r\n", part,
                    "\r\n");
  }
  absl::StrAppend(&out, "--", boundary, "--\r\n");
  return out;
}

std::string NewMultipartBoundary(const std::vector<absl::string_view>& parts) {
  std::random_device seed;
  std::mt19937_64 random(seed());
  while (true) {
    const std::string boundary = absl::StrFormat("%016x%016x", random(), random());
    bool clash = false;
    for (absl::string_view part : parts) clash = clash || absl::StrContains(part, boundary);
    if (!clash) return boundary;
  }
}

}  // namespace cuimg
