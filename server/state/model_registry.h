// The detector models the server loaded from its model directory at start-up (models/README.md).
// Immutable once loaded, so requests read it without locks.
#ifndef CUIMG_SERVER_MODEL_REGISTRY_H_
#define CUIMG_SERVER_MODEL_REGISTRY_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cuimg/kernels/hog_types.h"

namespace cuimg {

// The model a request gets when it names none.
inline constexpr char kDefaultDetectorModel[] = "opencv_people_64x128";

class ModelRegistry {
 public:
  ModelRegistry() = default;

  // Every "*.hogsvm" file of `dir`, named after its file. NOT_FOUND when `dir` is not a readable
  // directory; a file that does not parse fails the whole load with its path and line
  // ("dir/x.hogsvm: line 3: ..."), so a bad model is noticed at start-up, not by a request.
  static absl::StatusOr<ModelRegistry> LoadDirectory(const std::string& dir);

  // Adds a model (ReadHogModelFile's, or one built in memory) under its name; INVALID_ARGUMENT
  // when ValidateHogModel refuses it, ALREADY_EXISTS when the name is taken.
  absl::Status Add(HogModel model);

  // Null when no model has that name.
  const HogModel* Find(absl::string_view name) const;
  // Every model, by name.
  std::vector<const HogModel*> List() const;
  std::size_t size() const { return models_.size(); }
  // Comma-separated names, for messages.
  std::string Names() const;

 private:
  std::map<std::string, HogModel, std::less<>> models_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_MODEL_REGISTRY_H_
