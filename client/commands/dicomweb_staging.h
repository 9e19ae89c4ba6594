// Runs a file-to-file subcommand with DICOMweb at either end: a series URL input is retrieved
// into a private temporary folder first, and a service URL output is written to one and stored
// with STOW-RS after, so the subcommand only ever sees folders of DICOM files.
#ifndef CUIMG_CLIENT_DICOMWEB_STAGING_H_
#define CUIMG_CLIENT_DICOMWEB_STAGING_H_

#include <functional>
#include <string>

#include "client/io/dicomweb.h"

namespace cuimg {

// Where the DICOMweb options come from: the token and password are read from files (never flags,
// which show in process listings).
struct DicomwebFlags {
  std::string token_file;     // bearer token
  std::string user;           // basic authentication, with the password from:
  std::string password_file;  // a file, else the CUIMG_DICOMWEB_PASSWORD environment variable
  std::string ca_file;
  double timeout_seconds = 300;
  std::size_t max_instances = 4096;
  std::uint64_t max_bytes = std::uint64_t{3} << 30;
};

// DicomwebOptions from `flags`: INVALID_ARGUMENT naming the flag for an unreadable or empty
// token/password file, both a token and a user, or a user without a password.
absl::StatusOr<DicomwebOptions> LoadDicomwebOptions(const DicomwebFlags& flags);

// Calls run(input_path, output_path) and returns its exit code. When `input` is a DICOMweb
// series URL, input_path is a fresh private folder holding its instances; when `output` is a
// DICOMweb service URL, output_path is a folder's new subfolder, "series", whose files are stored
// by STOW-RS when `run` returns 0 (a line on stderr names the stored series). Other paths pass
// through unchanged. The folders are removed on return. Exit codes: kExitUsage for a bad URL or
// flag, kExitRpcError for a DICOMweb failure (the message on stderr).
int RunThroughDicomweb(const DicomwebFlags& flags, const std::string& input,
                       const std::string& output,
                       const std::function<int(const std::string&, const std::string&)>& run);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_DICOMWEB_STAGING_H_
