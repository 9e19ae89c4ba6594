#include "client/io/http_client.h"

#include <curl/curl.h>

#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace cuimg {
namespace {

struct Sink {
  std::string* body;
  std::size_t limit;
  bool over = false;
};

std::size_t Write(char* data, std::size_t size, std::size_t count, void* user) {
  Sink* sink = static_cast<Sink*>(user);
  const std::size_t n = size * count;
  if (sink->body->size() + n > sink->limit) {
    sink->over = true;
    return 0;  // curl stops with CURLE_WRITE_ERROR
  }
  sink->body->append(data, n);
  return n;
}

struct CurlDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
struct ListDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

}  // namespace

absl::Status CheckHttpUrl(const std::string& url, bool credentials) {
  CURLU* parsed = curl_url();
  std::string scheme, host;
  if (curl_url_set(parsed, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
    char* part = nullptr;
    if (curl_url_get(parsed, CURLUPART_SCHEME, &part, 0) == CURLUE_OK) scheme = part;
    curl_free(part);
    part = nullptr;
    if (curl_url_get(parsed, CURLUPART_HOST, &part, 0) == CURLUE_OK) host = part;
    curl_free(part);
  }
  curl_url_cleanup(parsed);
  if (scheme != "http" && scheme != "https") {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: expected an http:// or https:// URL", url));
  }
  const bool loopback = host == "localhost" || absl::StartsWith(host, "127.") || host == "[::1]";
  if (credentials && scheme == "http" && !loopback) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: credentials are sent over https only (or plain http to this machine)", url));
  }
  return absl::OkStatus();
}

absl::StatusOr<HttpResponse> HttpRequest(const std::string& method, const std::string& url,
                                         const std::string& accept, const HttpOptions& options,
                                         absl::string_view body, const std::string& content_type) {
  if (absl::Status s = CheckHttpUrl(url, !options.bearer_token.empty() || !options.user.empty());
      !s.ok()) {
    return s;
  }
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (init != CURLE_OK) return absl::InternalError("libcurl failed to initialise");
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (curl == nullptr) return absl::InternalError("libcurl: no handle");
  HttpResponse response;
  Sink sink{&response.body, options.max_response_bytes};
  std::unique_ptr<curl_slist, ListDeleter> headers;
  auto add_header = [&headers](const std::string& line) {
    headers.reset(curl_slist_append(headers.release(), line.c_str()));
  };
  add_header("Accept: " + accept);
  // curl would send "Expect: 100-continue" and wait for it on large bodies; servers need not.
  add_header("Expect:");
  if (!options.bearer_token.empty()) add_header("Authorization: Bearer " + options.bearer_token);
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, Write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  if (options.timeout_seconds > 0) {
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout_seconds * 1000));
  }
  if (!options.user.empty()) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(c, CURLOPT_USERNAME, options.user.c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, options.password.c_str());
  }
  if (!options.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options.ca_file.c_str());
  if (method == "POST") {
    add_header("Content-Type: " + content_type);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  } else if (method != "GET") {
    return absl::InvalidArgumentError(absl::StrCat("HTTP method ", method, ": GET or POST only"));
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  const CURLcode code = curl_easy_perform(c);
  if (sink.over) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s %s: the response is larger than %d bytes", method, url, options.max_response_bytes));
  }
  if (code != CURLE_OK) {
    return absl::UnavailableError(
        absl::StrFormat("%s %s: %s", method, url, curl_easy_strerror(code)));
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  char* type = nullptr;
  if (curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &type) == CURLE_OK && type != nullptr) {
    response.content_type = type;
  }
  return response;
}

}  // namespace cuimg
