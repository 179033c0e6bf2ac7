#include <catch2/catch.hpp>

#include "storage/error.hpp"

using namespace spool;

TEST_CASE("a storage error reads as the API error it means to a client",
          "[storage][errors]") {
  using storage::ec;
  struct row {
    ec code;
    errc api;
  };
  const row table[] = {
      {ec::storage_full, errc::storage_full},
      {ec::shutting_down, errc::unavailable},
      {ec::unknown_queue, errc::not_found},
      {ec::unknown_partition, errc::not_found},
      {ec::frame_too_large, errc::too_large},
      {ec::invalid_argument, errc::invalid_argument},
      {ec::offset_out_of_range, errc::invalid_argument},
      {ec::lmdb_error, errc::internal},
      {ec::corrupt_segment, errc::internal},
      {ec::corrupt_record, errc::internal},
      {ec::conflict, errc::internal},
      {ec::compression_error, errc::internal},
      {ec::io_error, errc::internal},
  };
  for (auto& r : table) {
    INFO(storage::to_string(r.code));
    api_error e = storage::make_error(r.code, "partition 3/7: detail");
    CHECK(e.code == r.api);
    // The detail stays; an internal error also names the storage code.
    CHECK(e.message.find("partition 3/7: detail") != std::string::npos);
    if (r.api == errc::internal)
      CHECK(e.message.find(storage::to_string(r.code)) == 0);
  }
}

TEST_CASE("a storage failure returns through an API expected",
          "[storage][errors]") {
  auto read = []() -> storage::expected<int> {
    return storage::make_error(storage::ec::unknown_queue, "Queue not found");
  };
  auto serve = [&]() -> expected<int> {
    auto r = read();
    if (!r)
      return std::move(r).err();
    return *r;
  };
  auto r = serve();
  REQUIRE_FALSE(r);
  CHECK(r.err() == api_error{errc::not_found, "Queue not found"});
}
