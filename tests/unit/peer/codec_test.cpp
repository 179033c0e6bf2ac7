// The peer link's frames: every message round-trips, and garbage is refused
// with the element that is wrong named.

#include <catch2/catch.hpp>

#include <msgpack.hpp>

#include "peer/codec.hpp"

using namespace spool;
using namespace spool::peer;
namespace cl = spool::cluster;

namespace {

const cl::node_id n1{0}, n2{1}, n3{2};

slot_message slot_msg(cl::message m) {
  return {513, {n1, n3, std::move(m)}};
}

void round_trip(const frame& f) {
  auto body = encode(f);
  auto back = decode(body);
  REQUIRE(back);
  CHECK(encode(*back) == body);
}

template <class... T>
std::string array_of(const T&... xs) {
  msgpack::sbuffer b;
  msgpack::packer<msgpack::sbuffer> pk(b);
  pk.pack_array(sizeof...(T));
  (pk.pack(xs), ...);
  return {b.data(), b.size()};
}

std::string error_of(std::string_view body) {
  auto r = decode(body);
  REQUIRE_FALSE(r);
  CHECK(r.err().code == errc::bad_request);
  return r.err().message;
}

} // namespace

TEST_CASE("every peer frame decodes to what was encoded", "[peer][codec]") {
  round_trip(hello{protocol_version, n2, "prod", std::string(16, 'x'),
                   "10.0.0.2:6632", "10.0.0.2:6690"});
  round_trip(proof{std::string(32, '\xab')});
  round_trip(slot_msg(cl::fence_req{7, std::nullopt}));
  round_trip(slot_msg(cl::fence_req{7, 6}));
  round_trip(slot_msg(cl::fence_rep{7, true, 7, std::nullopt, {3, 99}, false}));
  round_trip(slot_msg(cl::fence_rep{7, false, 9, n2, {3, 99}, true}));
  round_trip(slot_msg(cl::lead_req{7}));
  cl::append_req a{7, {6, 41}, {}, 40};
  a.entries.push_back(cl::make_entry(7, 42, cl::entry_kind::epoch_start, {}));
  a.entries.push_back(cl::make_entry(7, 43, cl::entry_kind::data,
                                     std::string("\0\1payload", 9)));
  round_trip(slot_msg(a));
  round_trip(
      slot_msg(cl::append_rep{7, cl::refusal::mismatch, 0, {5, 30}, 41}));
  round_trip(slot_msg(
      cl::snapshot_req{7, cl::make_piece(3, {7, 43}, 2, true, "rows"), 40}));
  round_trip(slot_msg(cl::snapshot_rep{7, 3, 2}));

  auto back = decode(encode(slot_msg(a)));
  REQUIRE(back);
  auto& m = std::get<slot_message>(*back);
  CHECK(m.slot == 513);
  CHECK(m.env.from == n1);
  CHECK(m.env.to == n3);
  auto& got = std::get<cl::append_req>(m.env.msg);
  CHECK(got.prev == cl::log_pos{6, 41});
  REQUIRE(got.entries.size() == 2);
  CHECK(got.entries[1] == a.entries[1]);
  CHECK(cl::checksum_ok(got.entries[1]));
}

TEST_CASE("a peer frame that is not one msgpack array of a known kind is "
          "refused, saying why",
          "[peer][codec]") {
  CHECK(error_of("") == "peer frame: it ends inside a value");
  CHECK(error_of("\xc1").find("peer frame: not msgpack") == 0);
  CHECK(error_of(array_of(1) + array_of(1))
        == "peer frame: it holds more than one value");
  CHECK(error_of("\x81\xa1k\x01")
        == "peer frame: not msgpack (map size overflow)");
  CHECK(error_of("\x05") == "peer frame: must be an array");
  CHECK(error_of(array_of(9)) == "peer frame: kind 9 is unknown");
  CHECK(error_of(array_of(std::string("x")))
            .find("frame: kind must be an unsigned")
        != std::string::npos);
  // An array that declares more elements than the body holds.
  CHECK(error_of("\xdd\xff\xff\xff\xff\x01").find("peer frame:") == 0);
}

TEST_CASE("a peer frame with an element of the wrong type, a missing one or "
          "one too many names it",
          "[peer][codec]") {
  CHECK(error_of(array_of(1, 1, 2, std::string("prod")))
        == "peer frame: frame: nonce is missing");
  CHECK(error_of(array_of(2, std::string("not bin")))
        == "peer frame: frame: mac must be bin");
  CHECK(error_of(array_of(3, 70000, 0, 1, 3, 7))
        == "peer frame: frame: slot must be an unsigned integer up to 65535");
  CHECK(error_of(array_of(3, 1, 0, 1, 3, 7, 8))
        == "peer frame: frame: frame has 7 elements, not 6");
  CHECK(error_of(array_of(3, 1, 0, 1, 42))
        == "peer frame: frame: message kind 42 is unknown");
  CHECK(error_of(array_of(3, 1, 0, 1, 5, 7, 9, 0, 0, 0, 0))
        == "peer frame: frame: refusal must be an unsigned integer up to 5");

  cl::append_req a{
      7, {6, 41}, {cl::make_entry(7, 42, cl::entry_kind::data, "p")}, 40};
  auto body = encode(slot_msg(a));
  // The entry's payload (bin 8 "p") turned into a string.
  auto at = body.find(std::string("\xc4\x01p", 3));
  REQUIRE(at != std::string::npos);
  body.replace(at, 3, "\xa1p");
  CHECK(error_of(body) == "peer frame: entries[0]: payload must be bin");
}
