#include "src/readers/chrome_colors.h"

#include <cstring>

namespace nsystrace {
namespace {

struct NamedColor {
  const char* name;
  int r, g, b;
};

// catapult/tracing/tracing/base/color_scheme.html: generalColorScheme.
const NamedColor kColors[] = {
    {"thread_state_uninterruptible", 182, 125, 143}, {"thread_state_iowait", 255, 140, 0},
    {"thread_state_running", 126, 200, 148},         {"thread_state_runnable", 133, 160, 210},
    {"thread_state_sleeping", 240, 240, 240},        {"thread_state_unknown", 199, 155, 125},
    {"background_memory_dump", 0, 180, 180},         {"light_memory_dump", 0, 0, 180},
    {"detailed_memory_dump", 180, 0, 180},           {"vsync_highlight_color", 0, 0, 255},
    {"generic_work", 125, 125, 125},                 {"good", 0, 125, 0},
    {"bad", 180, 125, 0},                            {"terrible", 180, 0, 0},
    {"black", 0, 0, 0},                              {"grey", 221, 221, 221},
    {"white", 255, 255, 255},                        {"yellow", 255, 255, 0},
    {"olive", 100, 100, 0},                          {"rail_response", 67, 135, 253},
    {"rail_animation", 244, 74, 63},                 {"rail_idle", 238, 142, 0},
    {"rail_load", 13, 168, 97},                      {"startup", 230, 230, 0},
    {"heap_dump_stack_frame", 128, 128, 128},        {"heap_dump_object_type", 0, 0, 255},
    {"heap_dump_child_node_arrow", 204, 102, 0},     {"cq_build_running", 255, 255, 119},
    {"cq_build_passed", 153, 238, 102},              {"cq_build_failed", 238, 136, 136},
    {"cq_build_abandoned", 187, 187, 187},           {"cq_build_attempt_runnig", 222, 222, 75},
    {"cq_build_attempt_passed", 103, 218, 35},       {"cq_build_attempt_failed", 197, 81, 81},
};

}  // namespace

const char* nearest_chrome_color(uint32_t argb) {
  int r = (argb >> 16) & 0xFF, g = (argb >> 8) & 0xFF, b = argb & 0xFF;
  const char* best = kColors[0].name;
  long best_distance = -1;
  for (const auto& c : kColors) {
    long d = (long)(c.r - r) * (c.r - r) + (long)(c.g - g) * (c.g - g) + (long)(c.b - b) * (c.b - b);
    if (best_distance < 0 || d < best_distance) {
      best_distance = d;
      best = c.name;
    }
  }
  return best;
}

bool is_chrome_color(const char* name, size_t size) {
  for (const auto& c : kColors)
    if (std::strlen(c.name) == size && std::memcmp(c.name, name, size) == 0) return true;
  return false;
}

}  // namespace nsystrace
