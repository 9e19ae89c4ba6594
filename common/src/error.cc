#include "cuimg/common/error.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace cuimg {
namespace {

// Payload type URLs: private to this file; nothing outside reads payloads directly.
constexpr char kReasonPayload[] = "type.cuimg.io/cuimg.ErrorReason";
constexpr char kFieldPayload[] = "type.cuimg.io/cuimg.ErrorField";

std::string PayloadText(const absl::Status& status, absl::string_view type_url) {
  const auto payload = status.GetPayload(type_url);
  return payload.has_value() ? std::string(*payload) : std::string();
}

}  // namespace

absl::string_view ErrorReasonName(ErrorReason reason) {
  switch (reason) {
#define CUIMG_ERROR_REASON_NAME_(name, text) \
  case ErrorReason::k##name:                 \
    return text;
    CUIMG_ERROR_REASONS(CUIMG_ERROR_REASON_NAME_)
#undef CUIMG_ERROR_REASON_NAME_
  }
  return "INTERNAL_ERROR";
}

absl::Status MakeError(absl::StatusCode code, ErrorReason reason, absl::string_view field,
                       absl::string_view detail) {
  absl::Status status(code,
                      field.empty() ? std::string(detail) : absl::StrCat(field, ": ", detail));
  status.SetPayload(kReasonPayload, absl::Cord(ErrorReasonName(reason)));
  if (!field.empty()) status.SetPayload(kFieldPayload, absl::Cord(field));
  return status;
}

absl::Status InvalidFieldError(ErrorReason reason, absl::string_view field,
                               absl::string_view detail) {
  return MakeError(absl::StatusCode::kInvalidArgument, reason, field, detail);
}

std::string ErrorReasonOf(const absl::Status& status) {
  return PayloadText(status, kReasonPayload);
}

std::string ErrorFieldOf(const absl::Status& status) { return PayloadText(status, kFieldPayload); }

absl::Status WithFieldPrefix(const absl::Status& status, absl::string_view prefix) {
  if (status.ok() || prefix.empty()) return status;
  absl::Status out(status.code(), absl::StrCat(prefix, status.message()));
  status.ForEachPayload([&out](absl::string_view type_url, const absl::Cord& payload) {
    out.SetPayload(type_url, payload);
  });
  const std::string field = ErrorFieldOf(status);
  if (!field.empty()) out.SetPayload(kFieldPayload, absl::Cord(absl::StrCat(prefix, field)));
  return out;
}

absl::Status AtField(const absl::Status& status, absl::string_view field) {
  if (status.ok() || field.empty() || !ErrorFieldOf(status).empty()) return status;
  absl::Status out(status.code(), absl::StrCat(field, ": ", status.message()));
  status.ForEachPayload([&out](absl::string_view type_url, const absl::Cord& payload) {
    out.SetPayload(type_url, payload);
  });
  out.SetPayload(kFieldPayload, absl::Cord(field));
  return out;
}

absl::Status WithCode(const absl::Status& status, absl::StatusCode code) {
  if (status.ok() || code == absl::StatusCode::kOk) return status;
  absl::Status out(code, status.message());
  status.ForEachPayload([&out](absl::string_view type_url, const absl::Cord& payload) {
    out.SetPayload(type_url, payload);
  });
  return out;
}

absl::Status WithDefaultReason(absl::Status status, ErrorReason reason) {
  if (status.ok() || status.GetPayload(kReasonPayload).has_value()) return status;
  status.SetPayload(kReasonPayload, absl::Cord(ErrorReasonName(reason)));
  return status;
}

absl::Status WithMessageSuffix(const absl::Status& status, absl::string_view text) {
  if (status.ok()) return status;
  absl::Status out(status.code(), absl::StrCat(status.message(), text));
  status.ForEachPayload([&out](absl::string_view type_url, const absl::Cord& payload) {
    out.SetPayload(type_url, payload);
  });
  return out;
}

}  // namespace cuimg
