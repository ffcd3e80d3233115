// libFuzzer target: whatever bytes a name holds, the JSON writer produces one valid JSON string, and the validator
// used for user-supplied args never crashes. Timestamps of any int64 are valid JSON numbers.
#include <cstdint>
#include <cstring>
#include <string>

#include "src/writers/json_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string out;
  nsystrace::append_json_string(out, input);
  if (!nsystrace::is_valid_json(out)) __builtin_trap();
  (void)nsystrace::is_valid_json(input);  // arbitrary bytes: must not crash
  if (size >= 8) {
    int64_t ns;
    std::memcpy(&ns, data, 8);
    std::string ts;
    nsystrace::append_ns_as_us(ts, ns);
    if (!nsystrace::is_valid_json(ts)) __builtin_trap();
  }
  return 0;
}
