#include "client/load/load_context.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace cuimg {
namespace {

constexpr char kDefaultMetricsPort[] = "9464";  // cuimg-server --metrics_address's default

// Splits host:port ("[::1]:9464" for IPv6); false without a port.
bool SplitHostPort(const std::string& address, std::string* host, std::string* port) {
  const std::size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  return !host->empty() && !port->empty();
}

// Closes the socket however the read ends.
class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

// The body of an HTTP/1.0 GET (the connection closes at its end, so no chunking).
absl::StatusOr<std::string> HttpGet(const std::string& endpoint, const std::string& path,
                                    double timeout_s) {
  std::string host, port;
  if (!SplitHostPort(endpoint, &host, &port)) {
    return absl::InvalidArgumentError(absl::StrCat(endpoint, ": expected host:port"));
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(absl::StrCat(endpoint, ": ", gai_strerror(rc)));
  }
  std::string error = "no address";
  std::string response;
  bool connected = false;
  for (addrinfo* a = found; a != nullptr && !connected; a = a->ai_next) {
    Socket s(socket(a->ai_family, a->ai_socktype, a->ai_protocol));
    if (s.fd() < 0) continue;
    // Linux applies the send timeout to connect() as well.
    timeval tv{static_cast<time_t>(timeout_s),
               static_cast<suseconds_t>((timeout_s - static_cast<time_t>(timeout_s)) * 1e6)};
    setsockopt(s.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(s.fd(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (connect(s.fd(), a->ai_addr, a->ai_addrlen) != 0) {
      error = std::strerror(errno);
      continue;
    }
    connected = true;
    const std::string request =
        absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: ", endpoint, "\r\n\r\n");
    if (send(s.fd(), request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
      error = std::strerror(errno);
      connected = false;
      continue;
    }
    char buffer[16384];
    for (;;) {
      const ssize_t n = recv(s.fd(), buffer, sizeof(buffer), 0);
      if (n > 0) {
        response.append(buffer, static_cast<std::size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        break;  // end, or the timeout: what came is what there is
      }
    }
  }
  freeaddrinfo(found);
  if (!connected) return absl::UnavailableError(absl::StrCat(endpoint, ": ", error));
  const std::size_t body = response.find("\r\n\r\n");
  if (!absl::StartsWith(response, "HTTP/1.") || body == std::string::npos ||
      response.find(" 200 ") > body) {
    return absl::UnavailableError(absl::StrCat(endpoint, ": not an HTTP 200 answer"));
  }
  return response.substr(body + 4);
}

// Prometheus text format labels: key="value",... with \\, \" and \n escapes.
std::map<std::string, std::string> ParseLabels(absl::string_view text) {
  std::map<std::string, std::string> labels;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t eq = text.find('=', i);
    if (eq == absl::string_view::npos || eq + 1 >= text.size() || text[eq + 1] != '"') break;
    const std::string key(absl::StripAsciiWhitespace(text.substr(i, eq - i)));
    std::string value;
    std::size_t j = eq + 2;
    for (; j < text.size() && text[j] != '"'; ++j) {
      if (text[j] == '\\' && j + 1 < text.size()) {
        ++j;
        value += text[j] == 'n' ? '\n' : text[j];
      } else {
        value += text[j];
      }
    }
    labels[key] = value;
    i = text.find(',', j);
    if (i == absl::string_view::npos) break;
    ++i;
  }
  return labels;
}

}  // namespace

std::string MetricsEndpoint(const std::string& flag, const std::string& target) {
  if (flag == "none") return "";
  if (!flag.empty()) return flag;
  const std::string whole = target.substr(0, target.find(','));
  absl::string_view first = whole;
  if (absl::StartsWith(first, "unix:")) return "";
  absl::ConsumePrefix(&first, "dns:///");
  absl::ConsumePrefix(&first, "ipv4:");
  absl::ConsumePrefix(&first, "ipv6:");
  std::string host, port;
  if (!SplitHostPort(std::string(first), &host, &port)) return "";
  const bool ipv6 = host.find(':') != std::string::npos;
  return absl::StrCat(ipv6 ? "[" : "", host, ipv6 ? "]" : "", ":", kDefaultMetricsPort);
}

absl::StatusOr<std::map<std::string, std::string>> ServerBuildInfo(const std::string& endpoint,
                                                                   double timeout_s) {
  absl::StatusOr<std::string> body = HttpGet(endpoint, "/metrics", timeout_s);
  if (!body.ok()) return body.status();
  for (absl::string_view line : absl::StrSplit(*body, '\n')) {
    if (!absl::ConsumePrefix(&line, "cuimg_build_info{")) continue;
    const std::size_t end = line.rfind('}');
    if (end == absl::string_view::npos) break;
    return ParseLabels(line.substr(0, end));
  }
  return absl::NotFoundError(absl::StrCat(endpoint, ": no cuimg_build_info metric"));
}

nlohmann::ordered_json LoadContext(std::time_t started, const std::string& client_build,
                                   const std::string& metrics_endpoint,
                                   const absl::StatusOr<std::map<std::string, std::string>>& build,
                                   const LoadSummary& summary) {
  nlohmann::ordered_json context;
  std::tm utc{};
  gmtime_r(&started, &utc);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &utc);
  context["date_utc"] = date;
  char host[256] = {};
  context["client_host"] = gethostname(host, sizeof(host) - 1) == 0 ? host : "unknown";
  context["client"] =
      absl::StrJoin(absl::StrSplit(client_build, '\n', absl::SkipWhitespace()), ", ");
  nlohmann::ordered_json server = {
      {"metrics", metrics_endpoint.empty() ? "none" : metrics_endpoint},
      {"version", "unknown"},
      {"commit", "unknown"},
      {"backend", "unknown"}};
  if (build.ok()) {
    for (const auto& [key, value] : *build) server[key] = value;
    if (!build->count("commit")) server["note"] = "the server does not export its commit";
  } else if (metrics_endpoint.empty()) {
    server["note"] = "no metrics endpoint to read (--server_metrics=HOST:PORT names one)";
  } else {
    server["note"] = std::string(build.status().message());
  }
  context["server"] = server;
  context["devices"] = nlohmann::ordered_json::array();
  for (const auto& [device, calls] : summary.devices) context["devices"].push_back(device);
  return context;
}

}  // namespace cuimg
