#include <catch2/catch.hpp>

#include "vocab/delivery.hpp"
#include "vocab/errors.hpp"

using namespace spool;

TEST_CASE("every API error has the status and code of api.md's table",
          "[vocab][errors]") {
  struct row {
    errc code;
    int http;
    std::string_view msgpack;
    bool retry_after;
  };
  const row table[] = {
      {errc::bad_request, 400, "bad_request", false},
      {errc::invalid_argument, 400, "invalid_argument", false},
      {errc::too_large, 413, "too_large", false},
      {errc::not_found, 404, "not_found", false},
      {errc::unknown_op, 404, "unknown_op", false},
      {errc::tx_aborted, 200, "tx_aborted", false},
      {errc::queue_full, 429, "queue_full", true},
      {errc::unavailable, 503, "unavailable", true},
      {errc::storage_full, 507, "storage_full", false},
      {errc::internal, 500, "internal", false},
      {errc::not_leader, 421, "not_leader", false},
      {errc::cross_slot, 409, "cross_slot", false},
      {errc::unauthenticated, 401, "unauthenticated", false},
      {errc::forbidden, 403, "forbidden", false},
  };
  CHECK(std::size(table) == static_cast<std::size_t>(last_errc));
  for (auto& r : table) {
    INFO(r.msgpack);
    auto w = wire_of(r.code);
    CHECK(w.http_status == r.http);
    CHECK(w.msgpack_code == r.msgpack);
    CHECK(w.retry_after == r.retry_after);
    CHECK(to_string(r.code) == r.msgpack);
  }
}

TEST_CASE("an unknown error number travels as internal", "[vocab][errors]") {
  auto w = wire_of(static_cast<errc>(200));
  CHECK(w.http_status == 500);
  CHECK(w.msgpack_code == "internal");
}

TEST_CASE("per-item ack and extend errors read as api.md says",
          "[vocab][errors]") {
  CHECK(std::string{to_string(ack_error::invalid_lease)}
        == "Invalid or expired lease");
  CHECK(std::string{to_string(ack_error::not_in_lease)}
        == "Message not in lease");
  CHECK(std::string{to_string(ack_error::not_found)} == "Message not found");
  CHECK(std::string{to_string(extend_error::not_found)} == "Lease not found");
  CHECK(std::string{to_string(extend_error::expired)}
        == "Lease already expired");
}

TEST_CASE("a monotonic deadline reads as the wall time it falls on",
          "[vocab][time]") {
  mono_time now{std::chrono::seconds{100}};
  CHECK(wall_of(now + milliseconds{1500}, now, 1'000'000) == 2'500'000);
  CHECK(wall_of(now - milliseconds{1}, now, 1'000'000) == 999'000);
}
