#include "server/state/model_registry.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cuimg/kernels/hog_model_file.h"

namespace cuimg {

absl::StatusOr<ModelRegistry> ModelRegistry::LoadDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    return absl::NotFoundError(absl::StrCat("models_dir: '", dir, "' is not a directory"));
  }
  std::vector<std::string> paths;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string path = entry.path().string();
    if (absl::EndsWith(path, kHogModelExtension)) paths.push_back(path);
  }
  if (error) {
    return absl::NotFoundError(
        absl::StrCat("models_dir: '", dir, "' cannot be listed: ", error.message()));
  }
  std::sort(paths.begin(), paths.end());
  ModelRegistry registry;
  for (const std::string& path : paths) {
    absl::StatusOr<HogModel> model = ReadHogModelFile(path);
    if (!model.ok()) return model.status();
    if (absl::Status added = registry.Add(*std::move(model)); !added.ok()) {
      return absl::Status(added.code(), absl::StrCat(path, ": ", added.message()));
    }
  }
  return registry;
}

absl::Status ModelRegistry::Add(HogModel model) {
  if (absl::Status valid = ValidateHogModel(model); !valid.ok()) return valid;
  std::string name = model.name;
  if (!models_.emplace(name, std::move(model)).second) {
    return absl::AlreadyExistsError(absl::StrCat("model '", name, "' is loaded already"));
  }
  return absl::OkStatus();
}

const HogModel* ModelRegistry::Find(absl::string_view name) const {
  const auto it = models_.find(name);
  return it == models_.end() ? nullptr : &it->second;
}

std::vector<const HogModel*> ModelRegistry::List() const {
  std::vector<const HogModel*> out;
  for (const auto& [name, model] : models_) out.push_back(&model);
  return out;
}

std::string ModelRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, model] : models_) names.push_back(name);
  return names.empty() ? std::string("none") : absl::StrJoin(names, ", ");
}

}  // namespace cuimg
