// The error contract a refusal keeps (cuimg/common/error.h, proto/cuimg/v1/error_reason.proto):
// a reason from the documented list, set where the error was raised, and a field that is a path
// in the request message, which the message starts with. For the bad-request corpus test and the
// request validation fuzzer.
#ifndef CUIMG_TESTS_TESTING_ERROR_CONTRACT_H_
#define CUIMG_TESTS_TESTING_ERROR_CONTRACT_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "cuimg/common/error.h"
#include "cuimg/v1/error_reason.pb.h"

namespace cuimg::testing {

// "" when `path` names a field of `request`: names joined by '.', each a field of the message
// reached so far, or, as the last name, one of its oneofs; an index "[i]" only on a repeated
// field and below its size in `request` (a message that is not set has none), and required to go
// on through a repeated field. Else why not.
inline std::string FieldPathError(const google::protobuf::Message& request,
                                  absl::string_view path) {
  if (path.empty()) return "empty path";
  const google::protobuf::Message* message = &request;
  const std::vector<absl::string_view> names = absl::StrSplit(path, '.');
  for (std::size_t i = 0; i < names.size(); ++i) {
    absl::string_view name = names[i];
    const bool last = i + 1 == names.size();
    int index = -1;
    if (const std::size_t open = name.find('['); open != absl::string_view::npos) {
      if (!absl::EndsWith(name, "]") ||
          !absl::SimpleAtoi(name.substr(open + 1, name.size() - open - 2), &index) || index < 0) {
        return absl::StrCat("'", name, "' has no valid index");
      }
      name = name.substr(0, open);
    }
    const google::protobuf::Descriptor* type = message->GetDescriptor();
    const google::protobuf::FieldDescriptor* field = type->FindFieldByName(std::string(name));
    if (field == nullptr) {
      if (last && index < 0 && type->FindOneofByName(std::string(name)) != nullptr) return "";
      return absl::StrCat(type->full_name(), " has no field '", name, "'");
    }
    const google::protobuf::Reflection* reflection = message->GetReflection();
    if (index >= 0) {
      if (!field->is_repeated()) return absl::StrCat("'", name, "' is not repeated");
      if (index >= reflection->FieldSize(*message, field)) {
        return absl::StrCat("'", name, "' has ", reflection->FieldSize(*message, field),
                            " elements, no [", index, "]");
      }
    } else if (field->is_repeated() && !last) {
      return absl::StrCat("'", name, "' is repeated: the path needs an index");
    }
    if (last) return "";
    if (field->message_type() == nullptr) return absl::StrCat("'", name, "' is not a message");
    message = index >= 0 ? &reflection->GetRepeatedMessage(*message, field, index)
                         : &reflection->GetMessage(*message, field);
  }
  return "";
}

// True when `reason` is one of error_reason.proto's names.
inline bool IsDocumentedReason(absl::string_view reason) {
  return !reason.empty() && reason != "UNSPECIFIED" &&
         v1::ErrorReason_descriptor()->FindValueByName(absl::StrCat("ERROR_REASON_", reason)) !=
             nullptr;
}

// "" when the reason and field of an error keep the contract for a refusal of `request`:
// `reason` documented, `field` a path of `request` (or empty when `field_required` is false), and
// `message` starting with "<field>: ". Else what is wrong.
inline std::string ErrorContractError(absl::string_view reason, absl::string_view field,
                                      absl::string_view message,
                                      const google::protobuf::Message& request,
                                      bool field_required) {
  if (!IsDocumentedReason(reason)) return absl::StrCat("reason '", reason, "' is not documented");
  if (field.empty()) return field_required ? "no field" : "";
  if (std::string why = FieldPathError(request, field); !why.empty()) {
    return absl::StrCat("field '", field, "': ", why);
  }
  if (!absl::StartsWith(message, absl::StrCat(field, ": "))) {
    return absl::StrCat("the message does not start with the field '", field, "'");
  }
  return "";
}

// As above for a status raised on the server (its payloads: a reason must have been set where
// it was raised, never chosen by its code at conversion).
inline std::string ErrorContractError(const absl::Status& status,
                                      const google::protobuf::Message& request,
                                      bool field_required) {
  if (status.ok()) return "OK is no refusal";
  return ErrorContractError(ErrorReasonOf(status), ErrorFieldOf(status), status.message(), request,
                            field_required);
}

}  // namespace cuimg::testing

#endif  // CUIMG_TESTS_TESTING_ERROR_CONTRACT_H_
