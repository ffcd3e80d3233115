// Progress lines: done/total, percent, the time left; silence for quick phases unless the user asked.
#include <gtest/gtest.h>

#include "src/util/progress.h"

namespace nsystrace {
namespace {

TEST(Progress, LinesSayDoneTotalPercentAndTimeLeft) {
  Progress p(true, "writing t.pftrace", "events", 1000);
  // 250 of 1000 in 5 s: 25%, so 15 s left at the same pace.
  EXPECT_EQ(p.line(250, 5.0, "3 MB of protobuf", false),
            "nsystrace: writing t.pftrace: [#####...............] 250 of 1000 events (25%), 5.0 s, about 15 s left, "
            "3 MB of protobuf\n");
  EXPECT_EQ(p.line(1000, 20.0, "", true), "nsystrace: writing t.pftrace: done, 1000 events in 20.0 s\n");
  // A total that was an estimate (more rows than it said) never shows 100% or a negative time left before the end.
  EXPECT_EQ(p.line(1500, 10.0, "", false),
            "nsystrace: writing t.pftrace: [###################.] 1500 of 1000 events (99%), 10.0 s, about 0 s left\n");
  Progress unknown(true, "scan", "rows", 0);
  EXPECT_EQ(unknown.line(42, 2.5, "", false), "nsystrace: scan: 42 rows, 2.5 s\n");
}

TEST(Progress, QuickPhasesAreSilentUnlessAskedFor) {
  std::vector<std::string> lines;
  auto sink = [&](const std::string& l, bool) { lines.push_back(l); };
  Progress quick(true, "phase", "rows", 10, sink);
  for (uint64_t i = 1; i <= 5000; ++i) quick.update(i);
  quick.finish(5000);
  EXPECT_TRUE(lines.empty());  // well under 2 s
  Progress asked(true, "phase", "rows", 10, sink);
  asked.always_report_end();
  asked.finish(10);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("nsystrace: phase: done, 10 rows in ", 0), 0u) << lines[0];
  Progress off(false, "phase", "rows", 10, sink);
  off.always_report_end();
  off.finish(10);
  EXPECT_EQ(lines.size(), 1u);
}

}  // namespace
}  // namespace nsystrace
