#include "client/commands/dicomweb_staging.h"

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "client/connection.h"

namespace cuimg {
namespace {

// A mkdtemp folder (mode 0700: the instances hold patient data), removed with its contents.
class ScratchFolder {
 public:
  static absl::StatusOr<ScratchFolder> Create() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/cuimg-dicomweb-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      return absl::InternalError(absl::StrFormat("%s: cannot create a temporary folder", pattern));
    }
    return ScratchFolder(pattern);
  }
  ScratchFolder(ScratchFolder&& other) noexcept : path_(std::move(other.path_)) {
    other.path_.clear();
  }
  ScratchFolder& operator=(ScratchFolder&&) = delete;
  ~ScratchFolder() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  explicit ScratchFolder(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

absl::StatusOr<std::string> ReadSecret(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrFormat("--%s: cannot read %s", flag, path));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string trimmed(absl::StripAsciiWhitespace(text));
  if (trimmed.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat("--%s: %s is empty", flag, path));
  }
  return trimmed;
}

// A DICOMweb exchange that failed: like a failed RPC, exit 1.
int Fail(const absl::Status& status) {
  std::fprintf(stderr, "error: %s\n", std::string(status.message()).c_str());
  return kExitRpcError;
}

int UsageError(const absl::Status& status) {
  std::fprintf(stderr, "usage: %s\n", std::string(status.message()).c_str());
  return kExitUsage;
}

}  // namespace

absl::StatusOr<DicomwebOptions> LoadDicomwebOptions(const DicomwebFlags& flags) {
  DicomwebOptions options;
  options.max_instances = flags.max_instances;
  options.max_bytes = flags.max_bytes;
  options.http.ca_file = flags.ca_file;
  options.http.timeout_seconds = flags.timeout_seconds;
  if (!flags.token_file.empty() && !flags.user.empty()) {
    return absl::InvalidArgumentError("--dicomweb_token_file and --dicomweb_user: pick one");
  }
  if (!flags.token_file.empty()) {
    absl::StatusOr<std::string> token = ReadSecret(flags.token_file, "dicomweb_token_file");
    if (!token.ok()) return token.status();
    options.http.bearer_token = *token;
  }
  if (!flags.user.empty()) {
    options.http.user = flags.user;
    if (!flags.password_file.empty()) {
      absl::StatusOr<std::string> password =
          ReadSecret(flags.password_file, "dicomweb_password_file");
      if (!password.ok()) return password.status();
      options.http.password = *password;
    } else if (const char* env = std::getenv("CUIMG_DICOMWEB_PASSWORD"); env != nullptr && *env) {
      options.http.password = env;
    } else {
      return absl::InvalidArgumentError(
          "--dicomweb_user: needs --dicomweb_password_file or CUIMG_DICOMWEB_PASSWORD");
    }
  }
  return options;
}

int RunThroughDicomweb(const DicomwebFlags& flags, const std::string& input,
                       const std::string& output,
                       const std::function<int(const std::string&, const std::string&)>& run) {
  const bool web_in = IsDicomwebUrl(input);
  const bool web_out = IsDicomwebUrl(output);
  if (!web_in && !web_out) return run(input, output);
  absl::StatusOr<DicomwebOptions> options = LoadDicomwebOptions(flags);
  if (!options.ok()) return UsageError(options.status());
  // Both URLs are checked before anything is fetched.
  std::optional<DicomwebSeriesUrl> series;
  std::string service;
  if (web_in) {
    absl::StatusOr<DicomwebSeriesUrl> parsed = ParseDicomwebSeriesUrl(input);
    if (!parsed.ok()) return UsageError(parsed.status());
    series = *parsed;
  }
  if (web_out) {
    absl::StatusOr<std::string> parsed = ParseDicomwebServiceUrl(output);
    if (!parsed.ok()) return UsageError(parsed.status());
    service = *parsed;
  }
  const bool credentials = !options->http.bearer_token.empty() || !options->http.user.empty();
  for (const std::string& base : {series ? series->base : std::string(), service}) {
    if (base.empty()) continue;
    if (absl::Status s = CheckHttpUrl(base, credentials); !s.ok()) return UsageError(s);
  }
  absl::StatusOr<ScratchFolder> scratch = ScratchFolder::Create();
  if (!scratch.ok()) return Fail(scratch.status());
  std::string input_path = input;
  std::string output_path = output;
  if (web_in) {
    input_path = scratch->path() + "/source";
    if (std::error_code error; !std::filesystem::create_directory(input_path, error)) {
      return Fail(absl::InternalError(absl::StrFormat("%s: %s", input_path, error.message())));
    }
    absl::StatusOr<std::size_t> count = RetrieveDicomwebSeries(*series, *options, input_path);
    if (!count.ok()) return Fail(count.status());
  }
  if (web_out) output_path = scratch->path() + "/series";
  if (const int code = run(input_path, output_path); code != kExitOk || !web_out) return code;
  absl::StatusOr<StowResult> stored = StoreDicomwebSeries(service, *options, output_path);
  if (!stored.ok()) return Fail(stored.status());
  std::fprintf(stderr, "stored %zu instances with STOW-RS%s%s\n", stored->stored,
               stored->series_url.empty() ? "" : ": ", stored->series_url.c_str());
  return kExitOk;
}

}  // namespace cuimg
