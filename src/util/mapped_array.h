// A growable array of trivially copyable values in an anonymous mapping resized with mremap(): growing never
// copies and never holds the old and the new storage at once, so an array of N bytes costs N bytes of memory at
// its peak (a std::vector costs up to 3N while it reallocates), and truncate() gives memory back in place.
#pragma once
#include <sys/mman.h>

#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace nsystrace {

constexpr size_t kPageSize = 4096;
inline size_t whole_pages(size_t bytes) { return (bytes + kPageSize - 1) / kPageSize * kPageSize; }

// Makes an anonymous mapping of `bytes` (whole pages), or resizes `mapping` (old_bytes long) to it with mremap():
// the pages move, nothing is copied. Throws std::bad_alloc when the system has no memory.
inline void* resize_mapping(void* mapping, size_t old_bytes, size_t bytes) {
  void* p = mapping == nullptr ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                               : mremap(mapping, old_bytes, bytes, MREMAP_MAYMOVE);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

template <class T>
class MappedArray {
  static_assert(std::is_trivially_copyable_v<T>, "MappedArray moves its values as bytes");

 public:
  MappedArray() = default;
  ~MappedArray() {
    if (data_ != nullptr) munmap(data_, bytes_);
  }
  MappedArray(const MappedArray&) = delete;
  MappedArray& operator=(const MappedArray&) = delete;
  MappedArray(MappedArray&& other) noexcept { swap(other); }
  MappedArray& operator=(MappedArray&& other) noexcept {
    MappedArray gone(std::move(*this));
    swap(other);
    return *this;
  }
  void swap(MappedArray& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(bytes_, other.bytes_);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T& back() const { return data_[size_ - 1]; }

  // Room for n values in all, when the final size is known: no growth steps.
  void reserve(size_t n) {
    if (n > capacity()) remap(n * sizeof(T));
  }
  // Keeps the first n values and gives the memory past them back to the system, in place.
  void truncate(size_t n) {
    if (n >= size_) return;
    size_ = n;
    if (n == 0) {
      MappedArray gone(std::move(*this));
      return;
    }
    remap(n * sizeof(T));
  }
  void push_back(const T& v) {
    if (size_ == capacity()) grow();
    data_[size_++] = v;
  }
  // Inserts v before position i (0 <= i <= size()), moving the values after it.
  void insert(size_t i, const T& v) {
    if (size_ == capacity()) grow();
    std::memmove(data_ + i + 1, data_ + i, (size_ - i) * sizeof(T));
    data_[i] = v;
    ++size_;
  }

 private:
  size_t capacity() const { return bytes_ / sizeof(T); }
  void grow() { remap(bytes_ == 0 ? 16 * kPageSize : bytes_ / 2 * 3); }
  // Makes the mapping at least `bytes` long (whole pages), keeping the values that fit.
  void remap(size_t bytes) {
    bytes = whole_pages(bytes);
    data_ = static_cast<T*>(resize_mapping(data_, bytes_, bytes));
    bytes_ = bytes;
  }
  T* data_ = nullptr;
  size_t size_ = 0, bytes_ = 0;
};

}  // namespace nsystrace
