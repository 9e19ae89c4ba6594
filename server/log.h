// Minimal structured logging to stderr: one line per event, "key=value" fields. (Debian's abseil
// 20220623 predates absl/log.) Never pass pixel data or patient fields.
#ifndef CUIMG_SERVER_LOG_H_
#define CUIMG_SERVER_LOG_H_

#include "absl/strings/string_view.h"

#include "absl/strings/str_cat.h"

namespace cuimg {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

// Lines below this level are dropped. Set once at start-up (main), before threads start.
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
void LogLine(LogLevel level, absl::string_view message);

template <typename... Args>
void Log(LogLevel level, const Args&... args) {
  if (LogEnabled(level)) LogLine(level, absl::StrCat(args...));
}

}  // namespace cuimg

#endif  // CUIMG_SERVER_LOG_H_
