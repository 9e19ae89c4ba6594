// Text that came from a client (handles, model names, keys) on its way into a log line or an
// error message: control bytes could forge log lines and a megabyte value would make a megabyte
// line, or a status message too large for the client to receive. One escaping rule for both.
#ifndef CUIMG_SERVER_UNTRUSTED_TEXT_H_
#define CUIMG_SERVER_UNTRUSTED_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace cuimg {

// Longest client value echoed in an error message: the longest valid handle.
inline constexpr std::size_t kMaxEchoedValueBytes = 128;

// Appends `text` to `out` with only printable ASCII left as is: `\` and `quote` (the character
// that delimits the text where it goes) become `\\` and `\<quote>`; newline, carriage return and
// tab `\n`, `\r`, `\t`; every other byte below 0x20 or above 0x7e `\xNN` (non-ASCII too: some
// viewers break lines at U+2028). At most the first `max_bytes` bytes of `text` are kept; a longer
// text ends in `...[N bytes]`, N its full length.
void AppendEscaped(absl::string_view text, std::size_t max_bytes, char quote, std::string* out);

// A client-supplied value for an error message: 'value', escaped as above and cut to
// kMaxEchoedValueBytes, so a message naming it stays short and on one line.
std::string QuoteClientValue(absl::string_view value);

}  // namespace cuimg

#endif  // CUIMG_SERVER_UNTRUSTED_TEXT_H_
