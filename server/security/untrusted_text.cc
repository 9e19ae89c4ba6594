#include "server/security/untrusted_text.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace cuimg {

void AppendEscaped(absl::string_view text, std::size_t max_bytes, char quote, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  const absl::string_view kept = text.substr(0, std::min(text.size(), max_bytes));
  for (const char c : kept) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\\' || c == quote) {
      out->push_back('\\');
      out->push_back(c);
      continue;
    }
    switch (c) {
      case '\n':
        out->append("\\n");
        continue;
      case '\r':
        out->append("\\r");
        continue;
      case '\t':
        out->append("\\t");
        continue;
      default:
        break;
    }
    if (byte < 0x20 || byte > 0x7e) {
      out->append("\\x");
      out->push_back(kHex[byte >> 4]);
      out->push_back(kHex[byte & 0xf]);
    } else {
      out->push_back(c);
    }
  }
  if (kept.size() < text.size()) absl::StrAppend(out, "...[", text.size(), " bytes]");
}

std::string QuoteClientValue(absl::string_view value) {
  std::string out = "'";
  AppendEscaped(value, kMaxEchoedValueBytes, '\'', &out);
  out.push_back('\'');
  return out;
}

}  // namespace cuimg
