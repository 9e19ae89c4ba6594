#include "server/observability/log.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/security/untrusted_text.h"

namespace cuimg {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_mu;

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      break;
  }
  return "error";
}

bool IsBareValueByte(char c) { return c > ' ' && c <= '~' && c != '"' && c != '=' && c != '\\'; }

}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }

bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(); }

void LogLine(LogLevel level, absl::string_view message) {
  std::string line = absl::StrCat(
      "ts=", absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::Now(), absl::UTCTimeZone()),
      " level=", LevelName(level), " ");
  // Quotes and backslashes are the caller's logfmt; only bytes that could end or disguise the
  // line are escaped here.
  const absl::string_view kept = message.substr(0, kMaxLogLineBytes);
  for (const char c : kept) {
    if (c >= ' ' && c <= '~') {
      line.push_back(c);
    } else {
      AppendEscaped(absl::string_view(&c, 1), 1, '"', &line);
    }
  }
  if (kept.size() < message.size()) absl::StrAppend(&line, " ...[", message.size(), " bytes]");
  line.push_back('\n');
  std::lock_guard<std::mutex> lock(g_mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

std::string FormatLogFields(std::initializer_list<LogField> fields) {
  std::string out;
  for (const LogField& field : fields) {
    if (!out.empty()) out.push_back(' ');
    absl::StrAppend(&out, field.key, "=");
    const bool bare = !field.value.empty() && field.value.size() <= kMaxLogValueBytes &&
                      std::all_of(field.value.begin(), field.value.end(), IsBareValueByte);
    if (bare) {
      out.append(field.value);
    } else {
      out.push_back('"');
      AppendEscaped(field.value, kMaxLogValueBytes, '"', &out);
      out.push_back('"');
    }
  }
  return out;
}

void LogEvent(LogLevel level, absl::string_view event, std::initializer_list<LogField> fields) {
  if (!LogEnabled(level)) return;
  std::string line = FormatLogFields({LogField("event", event)});
  if (fields.size() > 0) absl::StrAppend(&line, " ", FormatLogFields(fields));
  LogLine(level, line);
}

}  // namespace cuimg
