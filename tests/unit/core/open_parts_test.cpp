// The writer's open parts (core/writer/open_parts.hpp): a part staged by
// one actor for a batch another submits is settled exactly once; a batch
// carrying a part that is no longer open is refused whole; giving parts up
// spares those already submitted.

#include <catch2/catch.hpp>

#include <vector>

#include "core/writer/open_parts.hpp"

using spool::core::part_id;
using spool::core::part_key;

namespace {

/// Holders named by their id, as the writer names them by address.
using open_parts = spool::core::open_parts<std::uint64_t>;

part_id seal(std::uint64_t holder, std::int64_t first) {
  return part_id{holder, part_key{7, holder, "", first}};
}

} // namespace

TEST_CASE("a submission takes its parts only when every one is open",
          "[unit][core][open_parts]") {
  open_parts parts;
  parts.hold(seal(1, 0), 1);
  parts.hold(seal(2, 5), 2);
  CHECK_FALSE(parts.submit({seal(1, 0), seal(3, 0)})); // 3 never held
  // The refused submission took nothing: both can still be submitted.
  CHECK(parts.submit({seal(1, 0), seal(2, 5)}));
  CHECK(parts.size() == 2);
}

TEST_CASE("a part is submitted once, and named once per submission",
          "[unit][core][open_parts]") {
  open_parts parts;
  parts.hold(seal(1, 0), 1);
  parts.hold(seal(2, 0), 2);
  CHECK_FALSE(parts.submit({seal(1, 0), seal(1, 0)}));
  CHECK(parts.submit({seal(1, 0)}));
  CHECK_FALSE(parts.submit({seal(1, 0), seal(2, 0)}));
  // The second refusal left part 2 free.
  CHECK(parts.submit({seal(2, 0)}));
}

TEST_CASE("a part is settled exactly once", "[unit][core][open_parts]") {
  open_parts parts;
  parts.hold(seal(1, 0), 1);
  parts.hold(seal(1, 3), 1); // a second seal of the same holder
  CHECK(parts.submit({seal(1, 0), seal(1, 3)}));
  auto first = parts.close({seal(1, 0), seal(1, 3)});
  CHECK(first.size() == 2);
  CHECK(parts.close({seal(1, 0)}).empty());
  CHECK(parts.size() == 0);
}

TEST_CASE("a repeated hold changes nothing", "[unit][core][open_parts]") {
  open_parts parts;
  parts.hold(seal(1, 0), 1);
  CHECK(parts.submit({seal(1, 0)}));
  parts.hold(seal(1, 0), 1); // still the submitted one
  CHECK(parts.size() == 1);
  CHECK_FALSE(parts.submit({seal(1, 0)}));
}

TEST_CASE("giving parts up closes only those not submitted",
          "[unit][core][open_parts]") {
  open_parts parts;
  parts.hold(seal(1, 0), 1);
  parts.hold(seal(2, 0), 2);
  CHECK(parts.submit({seal(1, 0)}));
  auto dropped = parts.drop({seal(1, 0), seal(2, 0), seal(3, 0)});
  REQUIRE(dropped.size() == 1);
  CHECK(dropped.front().id == seal(2, 0));
  // The submitted part is still settled by its batch.
  CHECK(parts.close({seal(1, 0)}).size() == 1);
}
