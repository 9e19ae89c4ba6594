// Minimal structured logging to stderr: one logfmt line per event. (Debian's abseil 20220623
// predates absl/log.) Never pass pixel data or patient fields.
//
// A line never spans two lines and never grows without bound, whatever a client sends: LogEvent
// escapes, quotes and truncates every value (untrusted_text.h), and LogLine escapes any control
// byte that still reaches it.
#ifndef CUIMG_SERVER_LOG_H_
#define CUIMG_SERVER_LOG_H_

#include <cstddef>
#include <initializer_list>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace cuimg {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

// Longest value written for one field; longer ones end in "...[N bytes]". Status messages are
// the longest values the server writes itself (a few hundred bytes).
inline constexpr std::size_t kMaxLogValueBytes = 512;
// Longest message LogLine writes (the start-up line is about 1 KiB).
inline constexpr std::size_t kMaxLogLineBytes = 8192;

// Lines below this level are dropped. Set once at start-up (main), before threads start.
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
// Writes "ts=... level=... " + message. Bytes outside printable ASCII are escaped (\n, \xNN, as
// untrusted_text.h) and a message over kMaxLogLineBytes is cut: a defence for callers of Log;
// LogEvent's lines pass unchanged.
void LogLine(LogLevel level, absl::string_view message);

// key=value for LogEvent. The key is the server's own (letters, digits, '_'); the value may be
// anything, a client's bytes included.
struct LogField {
  LogField(absl::string_view key, const absl::AlphaNum& value) : key(key), value(value.Piece()) {}
  absl::string_view key;
  std::string value;
};

// "k1=v1 k2=v2 ...": each value escaped and cut to kMaxLogValueBytes (untrusted_text.h), and
// double-quoted when it is empty or holds anything but printable ASCII other than space, '"',
// '=' and '\'. Always valid logfmt.
std::string FormatLogFields(std::initializer_list<LogField> fields);

// One line "event=<event> <fields>". The way to log any value the server did not choose itself.
void LogEvent(LogLevel level, absl::string_view event, std::initializer_list<LogField> fields);

// A line from pieces the caller has already formatted as logfmt, for values the server chose
// itself (numbers, flag values); anything from a request goes through LogEvent.
template <typename... Args>
void Log(LogLevel level, const Args&... args) {
  if (LogEnabled(level)) LogLine(level, absl::StrCat(args...));
}

}  // namespace cuimg

#endif  // CUIMG_SERVER_LOG_H_
