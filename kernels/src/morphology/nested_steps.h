// The column-step lists compiled into the nested-rows kernel (morphology_nested_compiled.cu).
// A pass whose steps are known at compile time unrolls every step loop; with steps read at run
// time each step costs about twice its own work in loop control and register moves (512x512x300
// u8, 9x9 disk: 141.9 -> 125.8 us on an H200). The list holds the common elements: OpenCV's odd
// disks up to 15x15 and the sections of balls of radius 2 to 4. Any other nested element runs
// with run-time steps, exactly the same result.
#ifndef CUIMG_KERNELS_SRC_NESTED_STEPS_H_
#define CUIMG_KERNELS_SRC_NESTED_STEPS_H_

namespace cuimg::internal {

inline constexpr int kNestedMaxRadius = 7;  // rows -7..7: the nested-rows kernel's register ring
inline constexpr int kNestedMaxHalfWidth =
    16;  // columns -16..16: its halo within a 128-column strip

// What a pass does with its section's result: write it (the dz = 0 pass), write it with the
// point slices folded in, or fold it into the output (the pairs at +-dz).
enum class NestedRole { kWrite, kWritePoints, kFold };

struct CompiledNestedSteps {
  NestedRole role;
  int radius;
  // As the kernel takes them: [0] the column steps after the last rows join, [k] (k >= 1) those
  // before rows +-k join; half_width[k] = sum of steps[0] and steps[k + 1 ..].
  int steps[kNestedMaxRadius + 1];
};

inline constexpr CompiledNestedSteps kCompiledNestedSteps[] = {
    {NestedRole::kWrite, 1, {0, 1}},                    // 3x3 disk (a cross)
    {NestedRole::kWrite, 2, {0, 0, 2}},                 // 5x5 disk
    {NestedRole::kWrite, 3, {0, 0, 1, 2}},              // 7x7 disk
    {NestedRole::kWrite, 4, {0, 0, 1, 0, 3}},           // 9x9 disk
    {NestedRole::kWrite, 5, {0, 0, 0, 1, 1, 3}},        // 11x11 disk
    {NestedRole::kWrite, 6, {0, 0, 0, 1, 1, 1, 3}},     // 13x13 disk
    {NestedRole::kWrite, 7, {0, 0, 0, 1, 0, 1, 1, 4}},  // 15x15 disk
    {NestedRole::kWritePoints, 2, {0, 1, 1}},           // ball r2: centre section, poles
    {NestedRole::kFold, 1, {1, 0}},                     //   dz 1
    {NestedRole::kWritePoints, 3, {0, 1, 0, 2}},        // ball r3
    {NestedRole::kFold, 2, {2, 0, 0}},                  //   dz 1
    {NestedRole::kFold, 2, {1, 0, 1}},                  //   dz 2 (and ball r4 dz 3)
    {NestedRole::kWritePoints, 4, {0, 1, 0, 1, 2}},     // ball r4
    {NestedRole::kFold, 3, {2, 0, 0, 1}},               //   dz 1
    {NestedRole::kFold, 3, {1, 0, 1, 1}},               //   dz 2
};
inline constexpr int kCompiledNestedStepCount =
    static_cast<int>(sizeof(kCompiledNestedSteps) / sizeof(kCompiledNestedSteps[0]));

}  // namespace cuimg::internal

#endif  // CUIMG_KERNELS_SRC_NESTED_STEPS_H_
