// ReconstructionPlan::EmulateOnHost: the clamp and the bricks of reconstruction.cu and
// reconstruction_queue.cu on the host, each brick through the same ProcessTile
// (reconstruction_tile.h) with a warp emulated as 32 lanes in arrays, one brick at a time in
// worklist or queue order, so CPU tests check the kernels' own code.
#include <cstdint>
#include <deque>
#include <numeric>
#include <set>
#include <vector>

#include "cuimg/common/status_macros.h"
#include "cuimg/reference/label_reference.h"
#include "segmentation/reconstruction_plan.h"
#include "segmentation/reconstruction_tile.h"

namespace cuimg {
namespace {

template <typename T>
struct Lanes {
  T v[seg::kBrickWidth];
};

// DeviceWarp's operations over 32 lanes at once; shuffles from outside the warp return the lane's
// own value, as __shfl_up_sync / __shfl_down_sync do.
template <typename K>
struct HostWarp {
  static constexpr int kLanes = seg::kBrickWidth;
  using Key = K;
  using V = Lanes<K>;
  using U = Lanes<std::uint32_t>;
  using B = Lanes<bool>;

  template <typename X, typename Fn>
  static Lanes<X> Map(Fn fn) {
    Lanes<X> out;
    for (int i = 0; i < kLanes; ++i) out.v[i] = fn(i);
    return out;
  }
  static V Splat(K k) {
    return Map<K>([&](int) { return k; });
  }
  static U SplatU(std::uint32_t u) {
    return Map<std::uint32_t>([&](int) { return u; });
  }
  static B SplatB(bool b) {
    return Map<bool>([&](int) { return b; });
  }
  static B LaneIs(int lane) {
    return Map<bool>([&](int i) { return i == lane; });
  }
  static B LaneBelow(std::int64_t n) {
    return Map<bool>([&](int i) { return i < n; });
  }
  template <typename F>
  static B LaneWhere(F fn) {
    return Map<bool>([&](int i) { return fn(i); });
  }
  static B And(const B& a, bool b) {
    return Map<bool>([&](int i) { return a.v[i] && b; });
  }
  static B And2(const B& a, const B& b) {
    return Map<bool>([&](int i) { return a.v[i] && b.v[i]; });
  }
  static B Or(const B& a, const B& b) {
    return Map<bool>([&](int i) { return a.v[i] || b.v[i]; });
  }
  static U OrU(const U& a, const U& b) {
    return Map<std::uint32_t>([&](int i) { return a.v[i] | b.v[i]; });
  }
  static B AnyBits(const U& u, std::uint32_t mask) {
    return Map<bool>([&](int i) { return (u.v[i] & mask) != 0; });
  }
  static B TestBit(const U& u, int j) {
    return Map<bool>([&](int i) { return ((u.v[i] >> j) & 1u) != 0; });
  }
  static V Max(const V& a, const V& b) {
    return Map<K>([&](int i) { return a.v[i] < b.v[i] ? b.v[i] : a.v[i]; });
  }
  static V Min(const V& a, const V& b) {
    return Map<K>([&](int i) { return b.v[i] < a.v[i] ? b.v[i] : a.v[i]; });
  }
  static B Greater(const V& a, const V& b) {
    return Map<bool>([&](int i) { return b.v[i] < a.v[i]; });
  }
  static V Select(const B& c, const V& a, const V& b) {
    return Map<K>([&](int i) { return c.v[i] ? a.v[i] : b.v[i]; });
  }
  static U SelectU(const B& c, std::uint32_t a, std::uint32_t b) {
    return Map<std::uint32_t>([&](int i) { return c.v[i] ? a : b; });
  }
  static V ShflUp(const V& v, int d) {
    return Map<K>([&](int i) { return i >= d ? v.v[i - d] : v.v[i]; });
  }
  static V ShflDown(const V& v, int d) {
    return Map<K>([&](int i) { return i + d < kLanes ? v.v[i + d] : v.v[i]; });
  }
  static bool Any(const B& b) {
    for (bool x : b.v) {
      if (x) return true;
    }
    return false;
  }
  static std::uint32_t ReduceOr(const U& u) {
    std::uint32_t out = 0;
    for (std::uint32_t x : u.v) out |= x;
    return out;
  }
  template <typename T>
  static V Load(const T* p, std::int64_t base, const B& in, bool flip, const V& fallback) {
    return Map<K>([&](int i) {
      return in.v[i] ? seg::KeyTraits<T>::ToKey(p[base + i], flip) : fallback.v[i];
    });
  }
  template <typename T, typename F>
  static V LoadEach(const T* p, F index, const B& in, bool flip, const V& fallback) {
    return Map<K>([&](int i) {
      return in.v[i] ? seg::KeyTraits<T>::ToKey(p[index(i)], flip) : fallback.v[i];
    });
  }
  static std::uint32_t Broadcast(const U& u, int lane) { return u.v[lane]; }
  template <typename T>
  static void Store(T* p, std::int64_t base, const V& k, const B& in, bool flip) {
    for (int i = 0; i < kLanes; ++i) {
      if (in.v[i]) p[base + i] = seg::KeyTraits<T>::FromKey(k.v[i], flip);
    }
  }
  static V LoadRow(const K* s, int j) {
    return Map<K>([&](int i) { return s[j * seg::kTilePitch + i]; });
  }
  static void StoreRow(K* s, int j, const V& v, const B& where) {
    for (int i = 0; i < kLanes; ++i) {
      if (where.v[i]) s[j * seg::kTilePitch + i] = v.v[i];
    }
  }
  static V LoadCol(const K* s, int x) {
    return Map<K>([&](int i) { return s[i * seg::kTilePitch + x]; });
  }
  static void StoreCol(K* s, int x, const V& v, const B& where) {
    for (int i = 0; i < kLanes; ++i) {
      if (where.v[i]) s[i * seg::kTilePitch + x] = v.v[i];
    }
  }
  static void Sync() {}
};

template <typename T, bool kVolume, bool kFace>
void EmulateRounds(const seg::BrickArgs<T>& a, std::int64_t bricks, std::int64_t stride,
                   ReconstructionStats* stats) {
  using K = typename seg::KeyTraits<T>::K;
  std::vector<K> s(seg::kTileKeys), g(seg::kTileKeys);  // a warp's tiles (ProcessTile)
  std::vector<std::uint32_t> list;
  for (std::int64_t i = 0; i < bricks; ++i) list.push_back(seg::FirstRunBrick(i, bricks, stride));
  std::vector<std::uint32_t> next;
  std::vector<std::uint32_t> stamp(list.size(), 0);
  std::uint32_t round = 0;
  for (; !list.empty(); ++round) {
    if (stats != nullptr) {
      ++stats->rounds;
      stats->bricks += static_cast<std::int64_t>(list.size());
    }
    next.clear();
    std::int64_t round_iterations = 0;
    for (std::uint32_t brick : list) {
      int iterations = 0;
      const std::uint32_t marks = seg::ProcessTile<HostWarp<K>, T, kVolume, kFace>(
          a, brick, round == 0, iterations, s.data(), g.data());
      round_iterations += iterations;
      seg::ForEachMarkedBrick(a, brick, marks, [&](std::int64_t nb) {
        if (stamp[nb] < round + 1) {
          stamp[nb] = round + 1;
          next.push_back(static_cast<std::uint32_t>(nb));
        }
      });
    }
    if (stats != nullptr) {
      stats->iterations += round_iterations;
      if (stats->profile) {
        stats->per_round.push_back(
            ReconstructionRound{static_cast<int>(list.size()), round_iterations, 0.0f});
      }
    }
    list.swap(next);
  }
  // The device ends with one launched round that finds its list empty.
  if (stats != nullptr) stats->launched_rounds = static_cast<int>(round) + 1;
}

// reconstruction_queue.cu's queue, one brick at a time in queue order: a marked brick goes to
// the back unless it is queued already.
template <typename T, bool kVolume, bool kFace>
void EmulateQueue(const seg::BrickArgs<T>& a, std::int64_t bricks, std::int64_t stride,
                  ReconstructionStats* stats) {
  using K = typename seg::KeyTraits<T>::K;
  std::vector<K> s(seg::kTileKeys), g(seg::kTileKeys);
  std::deque<std::uint32_t> queue;
  for (std::int64_t i = 0; i < bricks; ++i) queue.push_back(seg::FirstRunBrick(i, bricks, stride));
  std::vector<bool> queued(queue.size(), true), ran(queue.size(), false);
  while (!queue.empty()) {
    const std::uint32_t brick = queue.front();
    queue.pop_front();
    queued[brick] = false;
    int iterations = 0;
    const std::uint32_t marks = seg::ProcessTile<HostWarp<K>, T, kVolume, kFace>(
        a, brick, !ran[brick], iterations, s.data(), g.data());
    ran[brick] = true;
    seg::ForEachMarkedBrick(a, brick, marks, [&](std::int64_t nb) {
      if (!queued[nb]) {
        queued[nb] = true;
        queue.push_back(static_cast<std::uint32_t>(nb));
      }
    });
    if (stats != nullptr) {
      stats->bricks += 1;
      stats->iterations += iterations;
    }
  }
  if (stats != nullptr) stats->rounds = stats->launched_rounds = 1;
}

}  // namespace

absl::Status ReconstructionPlan::EmulateOnHost(const void* mask, void* r,
                                               ReconstructionStats* stats) const {
  const Impl& p = *impl_;
  if (stats != nullptr) {
    const bool profile = stats->profile;
    *stats = ReconstructionStats{};
    stats->profile = profile;
  }
  return VisitAnyPixelType(p.type, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    const T* g = static_cast<const T*>(mask);
    T* out = static_cast<T*>(r);
    for (std::int64_t i = 0; i < p.extent.Pixels(); ++i) {
      out[i] =
          p.dilate ? seg::StartValue<true>(out[i], g[i]) : seg::StartValue<false>(out[i], g[i]);
    }
    if (p.two_levels) {
      // The device's route decision on the host: the values of the mask and the clamped marker.
      std::set<T> values;
      bool grey = false;
      for (std::int64_t i = 0; i < p.extent.Pixels() && !grey; ++i) {
        for (const T v : {g[i], out[i]}) {
          if (seg::IsNaN(v)) grey = true;
          values.insert(v);
        }
        grey = grey || values.size() > 2;
      }
      if (!grey && values.size() == 1) {
        if (stats != nullptr) stats->two_levels = true;
        return absl::OkStatus();
      }
      if (!grey) {
        T seed;
        const SeededFillSpec spec =
            seg::TwoLevelFill(p.dilate, *values.begin(), *values.rbegin(), p.connectivity, &seed);
        Image indicator(PixelType::kU8, p.extent, 1);
        for (std::int64_t i = 0; i < p.extent.Pixels(); ++i) {
          indicator.As<std::uint8_t>()[i] = out[i] == seed;
        }
        const ImageView mask_view{p.type, p.extent, 1, const_cast<T*>(g)};
        const ImageView marker_view = indicator.view();
        if (stats != nullptr) stats->two_levels = true;
        return FillUnseededComponentsReference(mask_view, &marker_view,
                                               ImageView{p.type, p.extent, 1, out}, spec);
      }
    }
    const seg::BrickArgs<T> a = seg::ArgsOf(p, g, out);
    seg::VisitBrickKind(p, [&](auto volume, auto face) {
      if (p.queue) {
        EmulateQueue<T, decltype(volume)::value, decltype(face)::value>(a, p.bricks, p.first_stride,
                                                                        stats);
      } else {
        EmulateRounds<T, decltype(volume)::value, decltype(face)::value>(a, p.bricks,
                                                                         p.first_stride, stats);
      }
    });
    return absl::OkStatus();
  });
}

}  // namespace cuimg
