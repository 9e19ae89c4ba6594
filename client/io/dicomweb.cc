#include "client/io/dicomweb.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/io/multipart.h"

namespace cuimg {
namespace {

constexpr char kDicomJson[] = "application/dicom+json";
constexpr char kOneDicomPart[] = "multipart/related; type=\"application/dicom\"";
// PS3.18 8.7.3.5: "*" asks for each instance as the server stores it, which the DICOM reader
// decodes (client/io/dicom_pixels.h); a server that cannot transcode its stored syntax to the
// default explicit VR little endian (Orthanc 1.10 with JPEG 2000: HTTP 500) still answers.
constexpr char kStoredSyntax[] = "multipart/related; type=\"application/dicom\"; transfer-syntax=*";
// A server that does not take transfer-syntax=* answers one of these (PS3.18 8.7.3: 406 Not
// Acceptable; Orthanc answers 400 for a syntax it does not know): cuimg then asks for its default.
bool RefusesStoredSyntax(long status) { return status == 400 || status == 406 || status == 415; }

bool IsUid(absl::string_view uid) {
  if (uid.empty() || uid.size() > 64) return false;
  return std::all_of(uid.begin(), uid.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '.';
  });
}

// The URL after the prefix, checked for scheme, query and fragment; trailing '/' dropped.
absl::StatusOr<std::string> StripPrefix(const std::string& url) {
  if (!IsDicomwebUrl(url)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: expected %shttp(s)://...", url, kDicomwebPrefix));
  }
  std::string rest = url.substr(sizeof(kDicomwebPrefix) - 1);
  if (!absl::StartsWith(rest, "http://") && !absl::StartsWith(rest, "https://")) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: the scheme after %s must be http or https", url, kDicomwebPrefix));
  }
  if (rest.find_first_of("?#") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: a DICOMweb URL takes no query or fragment", url));
  }
  while (absl::EndsWith(rest, "/")) rest.pop_back();
  return rest;
}

// A DICOM JSON attribute's first string value ("" when absent or not a string).
std::string FirstString(const nlohmann::json& object, const char* tag) {
  if (!object.is_object()) return "";
  auto it = object.find(tag);
  if (it == object.end() || !it->is_object()) return "";
  auto value = it->find("Value");
  if (value == it->end() || !value->is_array() || value->empty() || !(*value)[0].is_string()) {
    return "";
  }
  return (*value)[0].get<std::string>();
}

// A DICOM JSON sequence's items (empty when absent).
std::vector<nlohmann::json> Items(const nlohmann::json& object, const char* tag) {
  std::vector<nlohmann::json> items;
  if (!object.is_object()) return items;
  auto it = object.find(tag);
  if (it == object.end() || !it->is_object()) return items;
  auto value = it->find("Value");
  if (value == it->end() || !value->is_array()) return items;
  for (const nlohmann::json& item : *value) items.push_back(item);
  return items;
}

}  // namespace

std::string ArchiveReason(const HttpResponse& response) {
  std::string reason;
  const nlohmann::json j =
      nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    for (const char* key : {"Details", "Message", "message", "error", "HttpError"}) {
      auto it = j.find(key);
      if (it != j.end() && it->is_string() && !it->get<std::string>().empty()) {
        reason = it->get<std::string>();
        break;
      }
    }
  } else if (j.is_discarded()) {  // not JSON: text or HTML
    reason =
        response.body.substr(0, std::min<std::size_t>(response.body.find_first_of("\r\n"), 1024));
  }
  // Untrusted text: printable ASCII only, runs of anything else become one space.
  std::string out;
  for (const char c : reason) {
    const bool printable = c >= 0x20 && c < 0x7f;
    if (printable) {
      out += c;
    } else if (!out.empty() && out.back() != ' ') {
      out += ' ';
    }
    if (out.size() >= 200) break;
  }
  return std::string(absl::StripAsciiWhitespace(out));
}

namespace {

// The status for an HTTP answer that is not `expected`: the status and what the archive said.
absl::Status HttpError(const std::string& what, const std::string& url, const HttpResponse& r) {
  const std::string reason = ArchiveReason(r);
  const std::string message =
      absl::StrFormat("%s %s: HTTP %d%s", what, url, static_cast<int>(r.status),
                      reason.empty() ? "" : absl::StrCat(" (the server says: ", reason, ")"));
  if (r.status == 401) return absl::UnauthenticatedError(message + " (check the credentials)");
  if (r.status == 403) return absl::PermissionDeniedError(message);
  if (r.status == 404) return absl::NotFoundError(message);
  return absl::UnavailableError(message);
}

}  // namespace

bool IsDicomwebUrl(const std::string& path) { return absl::StartsWith(path, kDicomwebPrefix); }

absl::StatusOr<DicomwebSeriesUrl> ParseDicomwebSeriesUrl(const std::string& url) {
  absl::StatusOr<std::string> rest = StripPrefix(url);
  if (!rest.ok()) return rest.status();
  const std::size_t studies = rest->rfind("/studies/");
  const std::size_t host_end = rest->find('/', rest->find("//") + 2);
  if (studies == std::string::npos || studies < host_end) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: a series URL ends in /studies/STUDY_UID/series/SERIES_UID", url));
  }
  std::vector<std::string> tail = absl::StrSplit(rest->substr(studies + 1), '/');
  if (tail.size() != 4 || tail[2] != "series") {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: a series URL ends in /studies/STUDY_UID/series/SERIES_UID", url));
  }
  if (!IsUid(tail[1])) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: the study UID must be 1 to 64 digits and dots", url));
  }
  if (!IsUid(tail[3])) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: the series UID must be 1 to 64 digits and dots", url));
  }
  return DicomwebSeriesUrl{rest->substr(0, studies), tail[1], tail[3]};
}

absl::StatusOr<std::string> ParseDicomwebServiceUrl(const std::string& url) {
  absl::StatusOr<std::string> rest = StripPrefix(url);
  if (!rest.ok()) return rest.status();
  if (absl::StrContains(*rest, "/studies/") || absl::EndsWith(*rest, "/studies")) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: an output is the DICOMweb service URL (e.g. %shttp://host:8042/dicom-web), without "
        "/studies: the derived series goes into its source's study",
        url, kDicomwebPrefix));
  }
  return *rest;
}

absl::StatusOr<std::size_t> RetrieveDicomwebSeries(const DicomwebSeriesUrl& series,
                                                   const DicomwebOptions& options,
                                                   const std::string& directory) {
  const std::string series_path =
      absl::StrCat(series.base, "/studies/", series.study_uid, "/series/", series.series_uid);
  const std::string qido = series_path + "/instances";
  HttpOptions http = options.http;
  http.max_response_bytes = std::min<std::uint64_t>(options.max_bytes, 64u << 20);
  absl::StatusOr<HttpResponse> listing = HttpRequest("GET", qido, kDicomJson, http);
  if (!listing.ok()) return listing.status();
  // QIDO-RS answers 204 No Content for an empty result.
  if (listing->status == 204 || listing->status == 404) {
    return absl::NotFoundError(absl::StrFormat("QIDO-RS %s: no instances in this series", qido));
  }
  if (listing->status != 200) return HttpError("QIDO-RS", qido, *listing);
  const nlohmann::json j =
      nlohmann::json::parse(listing->body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("QIDO-RS %s: the answer is not a DICOM JSON array", qido));
  }
  if (j.empty()) {
    return absl::NotFoundError(absl::StrFormat("QIDO-RS %s: no instances in this series", qido));
  }
  if (j.size() > options.max_instances) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("QIDO-RS %s: %d instances, more than the limit of %d", qido, j.size(),
                        options.max_instances));
  }
  std::vector<std::string> sops;
  for (const nlohmann::json& instance : j) {
    std::string sop = FirstString(instance, "00080018");
    if (!IsUid(sop)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "QIDO-RS %s: instance %d has no valid SOPInstanceUID (00080018)", qido, sops.size() + 1));
    }
    sops.push_back(std::move(sop));
  }
  std::uint64_t total = 0;
  const char* accept = kStoredSyntax;
  for (std::size_t i = 0; i < sops.size(); ++i) {
    const std::string wado = absl::StrCat(series_path, "/instances/", sops[i]);
    http.max_response_bytes = options.max_bytes - total;
    absl::StatusOr<HttpResponse> r = HttpRequest("GET", wado, accept, http);
    if (r.ok() && accept == kStoredSyntax && RefusesStoredSyntax(r->status)) {
      accept = kOneDicomPart;  // for this instance and the rest of the series
      r = HttpRequest("GET", wado, accept, http);
    }
    if (!r.ok()) {
      if (absl::IsResourceExhausted(r.status())) {
        return absl::ResourceExhaustedError(
            absl::StrFormat("WADO-RS %s: the series is larger than the limit of %d bytes", wado,
                            options.max_bytes));
      }
      return r.status();
    }
    if (r->status != 200) return HttpError("WADO-RS", wado, *r);
    total += r->body.size();
    absl::StatusOr<std::string> boundary = MultipartBoundary(r->content_type);
    if (!boundary.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("WADO-RS %s: %s", wado, boundary.status().message()));
    }
    absl::StatusOr<std::vector<MultipartPart>> parts = SplitMultipart(r->body, *boundary, 1);
    if (!parts.ok()) {
      return absl::Status(parts.status().code(),
                          absl::StrFormat("WADO-RS %s: %s", wado, parts.status().message()));
    }
    if (parts->size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("WADO-RS %s: expected one part, got %d", wado, parts->size()));
    }
    const std::string type = absl::AsciiStrToLower(MultipartHeader((*parts)[0], "Content-Type"));
    if (!type.empty() && !absl::StartsWith(type, "application/dicom")) {
      return absl::InvalidArgumentError(
          absl::StrFormat("WADO-RS %s: the part is not application/dicom", wado));
    }
    const std::string path = absl::StrFormat("%s/instance_%05d.dcm", directory, i);
    std::ofstream out(path, std::ios::binary);
    out.write((*parts)[0].body.data(), static_cast<std::streamsize>((*parts)[0].body.size()));
    if (!out.flush()) {
      return absl::InternalError(absl::StrFormat("%s: cannot write", path));
    }
  }
  return sops.size();
}

absl::StatusOr<StowResult> StoreDicomwebSeries(const std::string& base,
                                               const DicomwebOptions& options,
                                               const std::string& directory) {
  std::vector<std::filesystem::path> paths;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    if (entry.is_regular_file()) paths.push_back(entry.path());
  }
  if (error) return absl::InternalError(absl::StrFormat("%s: %s", directory, error.message()));
  std::sort(paths.begin(), paths.end());
  if (paths.empty()) return absl::InvalidArgumentError(directory + ": no files to store");
  if (paths.size() > options.max_instances) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "STOW-RS: %d instances, more than the limit of %d", paths.size(), options.max_instances));
  }
  std::vector<std::string> files;
  std::uint64_t total = 0;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) return absl::InternalError(path.string() + ": cannot read");
    total += data.size();
    if (total > options.max_bytes) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "STOW-RS: the series is larger than the limit of %d bytes", options.max_bytes));
    }
    files.push_back(std::move(data));
  }
  const std::vector<absl::string_view> views(files.begin(), files.end());
  const std::string boundary = NewMultipartBoundary(views);
  const std::string body = JoinMultipart(views, boundary, "application/dicom");
  files.clear();
  const std::string url = base + "/studies";
  HttpOptions http = options.http;
  http.max_response_bytes = 64u << 20;
  absl::StatusOr<HttpResponse> r = HttpRequest(
      "POST", url, kDicomJson, http, body, absl::StrCat(kOneDicomPart, "; boundary=", boundary));
  if (!r.ok()) return r.status();
  if (r->status != 200 && r->status != 202 && r->status != 409) {
    return HttpError("STOW-RS", url, *r);
  }
  const nlohmann::json j = nlohmann::json::parse(r->body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "STOW-RS %s: HTTP %d without a DICOM JSON answer", url, static_cast<int>(r->status)));
  }
  const std::vector<nlohmann::json> failed = Items(j, "00081198");
  const std::vector<nlohmann::json> stored = Items(j, "00081199");
  if (!failed.empty() || r->status != 200) {
    std::string reason;
    if (!failed.empty() && failed[0].is_object()) {
      auto it = failed[0].find("00081197");
      if (it != failed[0].end() && it->is_object() && it->contains("Value") &&
          (*it)["Value"].is_array() && !(*it)["Value"].empty()) {
        reason = (*it)["Value"][0].dump();
      }
    }
    return absl::UnavailableError(absl::StrFormat(
        "STOW-RS %s: HTTP %d, %d of %d instances failed%s", url, static_cast<int>(r->status),
        failed.size(), paths.size(), reason.empty() ? "" : " (FailureReason " + reason + ")"));
  }
  if (stored.size() != paths.size()) {
    return absl::UnavailableError(
        absl::StrFormat("STOW-RS %s: the server acknowledged %d of %d instances", url,
                        stored.size(), paths.size()));
  }
  StowResult result;
  result.stored = stored.size();
  const std::string instance_url = FirstString(stored[0], "00081190");
  if (const std::size_t at = instance_url.rfind("/instances/"); at != std::string::npos) {
    result.series_url = instance_url.substr(0, at);
  }
  return result;
}

}  // namespace cuimg
