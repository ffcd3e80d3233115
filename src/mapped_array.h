// A growable array of trivially copyable values in an anonymous mapping grown with mremap(): growing never
// copies and never holds the old and the new storage at once, so an array of N bytes costs N bytes of memory at
// its peak (a std::vector costs up to 3N while it reallocates).
#pragma once
#include <sys/mman.h>

#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>

namespace nsystrace {

template <class T>
class MappedArray {
  static_assert(std::is_trivially_copyable_v<T>, "MappedArray moves its values as bytes");

 public:
  MappedArray() = default;
  ~MappedArray() {
    if (data_ != nullptr) munmap(data_, capacity_ * sizeof(T));
  }
  MappedArray(const MappedArray&) = delete;
  MappedArray& operator=(const MappedArray&) = delete;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T& back() const { return data_[size_ - 1]; }

  void push_back(const T& v) {
    if (size_ == capacity_) grow();
    data_[size_++] = v;
  }
  // Inserts v before position i (0 <= i <= size()), moving the values after it.
  void insert(size_t i, const T& v) {
    if (size_ == capacity_) grow();
    std::memmove(data_ + i + 1, data_ + i, (size_ - i) * sizeof(T));
    data_[i] = v;
    ++size_;
  }

 private:
  void grow() {
    constexpr size_t kPage = 4096;
    size_t bytes = capacity_ == 0 ? 16 * kPage : capacity_ * sizeof(T) / 2 * 3;
    bytes = (bytes + kPage - 1) / kPage * kPage;
    void* p = data_ == nullptr ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                               : mremap(data_, capacity_ * sizeof(T), bytes, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<T*>(p);
    capacity_ = bytes / sizeof(T);
  }
  T* data_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
};

}  // namespace nsystrace
