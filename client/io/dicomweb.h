// DICOMweb (PS3.18) for the CLI: a series is found with QIDO-RS, its instances fetched with
// WADO-RS into a folder, and a folder of instances stored with STOW-RS. The folder is where the
// DICOM series reader and writer (dicom_series.h) take over, so DICOMweb adds no DICOM parsing.
//
// cuimg names DICOMweb resources by URL, prefixed so they cannot be mistaken for paths:
//   dicomweb+https://host/dicom-web/studies/STUDY_UID/series/SERIES_UID   a series (input)
//   dicomweb+https://host/dicom-web                                       a service (output)
#ifndef CUIMG_CLIENT_IO_DICOMWEB_H_
#define CUIMG_CLIENT_IO_DICOMWEB_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "client/io/http_client.h"

namespace cuimg {

inline constexpr char kDicomwebPrefix[] = "dicomweb+";

// Whether `path` names a DICOMweb resource (starts with kDicomwebPrefix).
bool IsDicomwebUrl(const std::string& path);

struct DicomwebSeriesUrl {
  std::string base;  // http(s)://host/dicom-web, without a trailing '/'
  std::string study_uid;
  std::string series_uid;
};

// Parses a series URL (above). INVALID_ARGUMENT naming the part that is wrong: the prefix, the
// scheme, a query or fragment, the path's /studies/UID/series/UID ending, a UID that is not
// 1 to 64 digits and dots.
absl::StatusOr<DicomwebSeriesUrl> ParseDicomwebSeriesUrl(const std::string& url);

// Parses a service URL: the base that STOW-RS posts to at {base}/studies. INVALID_ARGUMENT for a
// missing prefix or scheme, a query or fragment, or a path naming a study or series.
absl::StatusOr<std::string> ParseDicomwebServiceUrl(const std::string& url);

struct DicomwebOptions {
  HttpOptions http;
  // Untrusted servers: at most this many instances per series and bytes per series, read or
  // written (RESOURCE_EXHAUSTED beyond).
  std::size_t max_instances = 4096;
  std::uint64_t max_bytes = std::uint64_t{3} << 30;
};

// Lists the series' instances (QIDO-RS GET {base}/studies/S/series/R/instances, DICOM JSON) and
// retrieves each (WADO-RS GET .../instances/SOP, multipart/related; type="application/dicom";
// transfer-syntax=*: as the server stores it, decoded by the DICOM reader) into `directory`
// (which must exist) as instance_NNNNN.dcm. A server that refuses transfer-syntax=* (HTTP 400,
// 406 or 415) is asked for its default syntax instead, for that instance and the rest. Returns
// the number of instances. NOT_FOUND when the series has none; UNAUTHENTICATED/PERMISSION_DENIED
// for 401/403; UNAVAILABLE for other HTTP failures; each names the URL, the HTTP status and what
// the server said (ArchiveReason); INVALID_ARGUMENT for a malformed answer (JSON, multipart, not
// exactly one application/dicom part per instance); RESOURCE_EXHAUSTED past max_instances or
// max_bytes.
absl::StatusOr<std::size_t> RetrieveDicomwebSeries(const DicomwebSeriesUrl& series,
                                                   const DicomwebOptions& options,
                                                   const std::string& directory);

// What an archive's error answer says, safe to print: the "Details" or "Message" string of a JSON
// body (Orthanc's and other archives' error objects), else the body's first line; printable ASCII
// only, at most 200 characters; "" when it says nothing readable.
std::string ArchiveReason(const HttpResponse& response);

struct StowResult {
  std::size_t stored = 0;
  // The stored series' WADO-RS URL (from the response's RetrieveURL), when the server gave one.
  std::string series_url;
};

// Stores every regular file in `directory` (DICOM files, e.g. the writer's slice_NNNN.dcm) with
// one STOW-RS POST {base}/studies. OK only when the server reports every instance stored: a
// failed instance (FailedSOPSequence, HTTP 202/409) is an error quoting its FailureReason;
// UNAUTHENTICATED/PERMISSION_DENIED for 401/403, UNAVAILABLE for other HTTP failures;
// RESOURCE_EXHAUSTED past max_instances or max_bytes, before anything is sent.
absl::StatusOr<StowResult> StoreDicomwebSeries(const std::string& base,
                                               const DicomwebOptions& options,
                                               const std::string& directory);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_DICOMWEB_H_
