// A small blocking HTTP(S) client over libcurl (libcurl4-openssl-dev) for DICOMweb: one request
// at a time, bounded response size, no redirects (a redirect could carry the credentials to
// another host), http and https only.
#ifndef CUIMG_CLIENT_IO_HTTP_CLIENT_H_
#define CUIMG_CLIENT_IO_HTTP_CLIENT_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cuimg {

struct HttpOptions {
  // Sent as "Authorization: Bearer TOKEN" when set.
  std::string bearer_token;
  // HTTP basic authentication when `user` is set.
  std::string user;
  std::string password;
  // PEM CA bundle an https server's certificate must chain to (empty: the system's roots).
  std::string ca_file;
  // Whole-request deadline in seconds (0: none).
  double timeout_seconds = 300;
  // A response body longer than this stops the transfer (RESOURCE_EXHAUSTED).
  std::size_t max_response_bytes = std::size_t{1} << 30;
};

struct HttpResponse {
  long status = 0;
  std::string content_type;
  std::string body;
};

// OK when `url` is http(s) (curl's parser), and when `credentials` are to be sent, https or plain
// http to loopback (they would cross the network in clear); INVALID_ARGUMENT naming the URL
// otherwise.
absl::Status CheckHttpUrl(const std::string& url, bool credentials);

// Sends `method` (GET or POST) to `url` with the given Accept header (and, for a body, its
// Content-Type). Any HTTP status is returned as a response; the status is an error only when no
// response came: INVALID_ARGUMENT for a URL CheckHttpUrl refuses; UNAVAILABLE for a
// connection, TLS or timeout failure (curl's message, naming the URL); RESOURCE_EXHAUSTED for a
// body over max_response_bytes.
absl::StatusOr<HttpResponse> HttpRequest(const std::string& method, const std::string& url,
                                         const std::string& accept, const HttpOptions& options,
                                         absl::string_view body = {},
                                         const std::string& content_type = "");

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_HTTP_CLIENT_H_
