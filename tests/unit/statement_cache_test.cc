// StatementCache: a statement given back is the one taken next for the same SQL, reset and without its bindings.
#include <gtest/gtest.h>

#include "src/sqlite/statement.h"
#include "tests/support/test_db.h"

namespace nsystrace {
namespace {

TEST(StatementCache, ReusesAStatementResetAndUnbound) {
  testdb::Db db;
  StatementCache cache;
  const std::string sql = "SELECT ?1 + 1 UNION ALL SELECT 7";
  Statement a = cache.take(db.get(), sql);
  a.bind(1, int64_t{41});
  ASSERT_TRUE(a.step());
  EXPECT_EQ(a.int64(0), 42);  // given back in the middle of its rows
  sqlite3_stmt* raw = a.get();
  cache.give_back(std::move(a));
  Statement b = cache.take(db.get(), sql);
  EXPECT_EQ(b.get(), raw);
  ASSERT_TRUE(b.step());
  EXPECT_TRUE(b.is_null(0));  // ?1 unbound: NULL + 1
  Statement c = cache.take(db.get(), sql);  // the kept one is in use: a new one
  EXPECT_NE(c.get(), raw);
  Statement other = cache.take(db.get(), "SELECT 2");
  ASSERT_TRUE(other.step());
  EXPECT_EQ(other.int64(0), 2);
  cache.give_back(Statement());  // nothing to keep
}

}  // namespace
}  // namespace nsystrace
