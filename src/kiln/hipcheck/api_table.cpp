#include "kiln/hipcheck/api_table.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace kiln::hipcheck {

std::string_view library_name(Library library) {
  switch (library) {
    case Library::runtime:
      return "CUDA Runtime";
    case Library::driver:
      return "CUDA Driver";
    case Library::device:
      return "CUDA device functions";
    case Library::rtc:
      return "NVRTC";
    case Library::cublas:
      return "cuBLAS";
    case Library::cudnn:
      return "cuDNN";
    case Library::cufft:
      return "cuFFT";
    case Library::curand:
      return "cuRAND";
    case Library::cusolver:
      return "cuSOLVER";
    case Library::cusparse:
      return "cuSPARSE";
    case Library::cub:
      return "CUB";
    case Library::cucomplex:
      return "cuComplex";
    case Library::npp:
      return "NPP";
    case Library::nvjpeg:
      return "nvJPEG";
    case Library::wmma:
      return "WMMA (mma.h)";
    case Library::libcudacxx:
      return "libcu++";
    case Library::cudla:
      return "cuDLA";
    case Library::nvsci:
      return "NvSci";
    case Library::nvvm:
      return "libNVVM";
    case Library::nvml:
      return "NVML";
    case Library::nvtx:
      return "NVTX";
    case Library::cooperative_groups:
      return "cooperative groups";
  }
  return "CUDA";
}

std::uint64_t ApiTable::hash(std::string_view name) {
  // Runs once per identifier of every scanned file, so it reads at most 16 bytes: the first 8
  // and the last 8 (overlapping for short names), mixed with the length. Names that share both
  // ends and the length collide, which only costs a string compare.
  std::uint64_t head = 0, tail = 0;
  std::size_t n = name.size();
  const unsigned char* p = reinterpret_cast<const unsigned char*>(name.data());
  if (n >= 8) {
    std::memcpy(&head, p, 8);
    std::memcpy(&tail, p + n - 8, 8);
  } else if (n >= 4) {
    std::uint32_t a, b;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, p + n - 4, 4);
    head = a | (static_cast<std::uint64_t>(b) << 32);
  } else if (n > 0) {
    head = p[0] | (static_cast<std::uint64_t>(p[n / 2]) << 8) |
           (static_cast<std::uint64_t>(p[n - 1]) << 16);
  }
  std::uint64_t h = (head ^ (tail * 0x9E3779B97F4A7C15ull) ^ n) * 0xBF58476D1CE4E5B9ull;
  h ^= h >> 31;
  h *= 0x94D049BB133111EBull;
  return h ^ (h >> 29);
}

const ApiTable& ApiTable::instance() {
  static const ApiTable table({k_api_entries, k_api_entry_count});
  return table;
}

const ApiTable& ApiTable::kiln() {
  static const ApiTable table({k_kiln_entries, k_kiln_entry_count});
  return table;
}

ApiTable::ApiTable(std::span<const ApiEntry> rows) : rows_(rows) {
  std::size_t capacity = 2;
  while (capacity < rows.size() * 2) capacity <<= 1;
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  for (const ApiEntry& entry : rows) {
    std::string_view name = entry.cuda_name;
    max_length_ = std::max(max_length_, name.size());
    unsigned pair =
        (static_cast<unsigned char>(name[0]) << 8) | static_cast<unsigned char>(name[1]);
    first_two_[pair >> 6] |= 1ull << (pair & 63);
    std::uint64_t h = hash(name);
    std::size_t at = h & mask_;
    while (slots_[at].entry) at = (at + 1) & mask_;
    slots_[at] = Slot{h, &entry};
  }
}

const ApiEntry* ApiTable::lookup(std::string_view name) const {
  if (name.size() > max_length_ || name.size() < 2) return nullptr;
  unsigned pair = (static_cast<unsigned char>(name[0]) << 8) | static_cast<unsigned char>(name[1]);
  if (!(first_two_[pair >> 6] & (1ull << (pair & 63)))) return nullptr;
  std::uint64_t h = hash(name);
  for (std::size_t at = h & mask_; slots_[at].entry; at = (at + 1) & mask_) {
    if (slots_[at].hash == h && name == slots_[at].entry->cuda_name) return slots_[at].entry;
  }
  return nullptr;
}

}  // namespace kiln::hipcheck
