// The nested-rows kernel instantiated for each compiled step list (nested_steps.h).
#include <cstddef>
#include <cstdint>
#include <utility>

#include "morphology_nested.cuh"

namespace cuimg::internal::nested {
namespace {

template <typename T, bool kDilate, int kIndex>
absl::Status LaunchEntry(const NestedParams<T>& p, cudaStream_t stream) {
  constexpr CompiledNestedSteps kEntry = kCompiledNestedSteps[kIndex];
  return LaunchKernel < T, kDilate, kEntry.radius, kEntry.role == NestedRole::kFold ? 2 : 1,
         kEntry.role == NestedRole::kWritePoints, CompiledSteps < kIndex >> (p, stream);
}

template <typename T, bool kDilate, std::size_t... kIndex>
absl::Status LaunchIndex(const NestedParams<T>& p, int index, cudaStream_t stream,
                         std::index_sequence<kIndex...>) {
  using Launcher = absl::Status (*)(const NestedParams<T>&, cudaStream_t);
  static constexpr Launcher kLaunchers[] = {&LaunchEntry<T, kDilate, static_cast<int>(kIndex)>...};
  return kLaunchers[index](p, stream);
}

}  // namespace

template <typename T>
absl::Status LaunchCompiled(const NestedParams<T>& p, int index, bool dilate, cudaStream_t stream) {
  if (index < 0 || index >= kCompiledNestedStepCount) {
    return absl::InternalError("nested-rows pass: no such compiled step list");
  }
  constexpr auto kAll = std::make_index_sequence<kCompiledNestedStepCount>();
  return dilate ? LaunchIndex<T, true>(p, index, stream, kAll)
                : LaunchIndex<T, false>(p, index, stream, kAll);
}

template absl::Status LaunchCompiled<std::uint8_t>(const NestedParams<std::uint8_t>&, int, bool,
                                                   cudaStream_t);
template absl::Status LaunchCompiled<std::uint16_t>(const NestedParams<std::uint16_t>&, int, bool,
                                                    cudaStream_t);
template absl::Status LaunchCompiled<std::int16_t>(const NestedParams<std::int16_t>&, int, bool,
                                                   cudaStream_t);
template absl::Status LaunchCompiled<float>(const NestedParams<float>&, int, bool, cudaStream_t);

}  // namespace cuimg::internal::nested
