// Input limits on names and texts (actors/limits): every boundary (0, max,
// max+1), invalid UTF-8, control characters, reserved prefixes.

#include <catch2/catch.hpp>

#include "core/limits/names.hpp"

using namespace spool;
using namespace spool::core;

namespace {

bool ok(name_kind k, const std::string& n) {
  return static_cast<bool>(check_name(k, n));
}

const name_kind all_kinds[]
    = {name_kind::queue, name_kind::partition, name_kind::group,
       name_kind::name_space, name_kind::task};

} // namespace

TEST_CASE("a name is 1..255 bytes", "[limits][names]") {
  for (auto k : all_kinds) {
    CHECK_FALSE(ok(k, ""));
    CHECK(ok(k, "a"));
    CHECK(ok(k, std::string(255, 'a')));
    CHECK_FALSE(ok(k, std::string(256, 'a')));
    CHECK_FALSE(ok(k, std::string(500, 'a')));
  }
  auto err = check_name(name_kind::group, std::string(256, 'g'));
  REQUIRE_FALSE(err);
  CHECK(err.err().message == "consumerGroup must be 1..255 bytes, got 256");
  // Bytes, not characters: 85 three-byte characters fit, 86 do not.
  std::string cjk;
  for (int i = 0; i < 85; ++i)
    cjk += "\xe6\x97\xa5"; // 日
  CHECK(ok(name_kind::queue, cjk));
  CHECK_FALSE(ok(name_kind::queue, cjk + "\xe6\x97\xa5"));
}

TEST_CASE("a name must be valid UTF-8", "[limits][names][utf8]") {
  CHECK(ok(name_kind::queue, "caf\xc3\xa9"));            // café
  CHECK(ok(name_kind::queue, "\xf0\x9f\x93\xa6"));       // an emoji
  CHECK_FALSE(ok(name_kind::queue, "\xff"));             // never valid
  CHECK_FALSE(ok(name_kind::queue, "a\xc3"));            // truncated
  CHECK_FALSE(ok(name_kind::queue, "\xc0\xaf"));         // overlong '/'
  CHECK_FALSE(ok(name_kind::queue, "\xe0\x80\xaf"));     // overlong '/'
  CHECK_FALSE(ok(name_kind::queue, "\xed\xa0\x80"));     // a surrogate
  CHECK_FALSE(ok(name_kind::queue, "\xf4\x90\x80\x80")); // above U+10FFFF
  CHECK(check_name(name_kind::queue, "\xff").err().message
        == "queue must be valid UTF-8");
}

TEST_CASE("a name has no control characters and no slash", "[limits][names]") {
  for (auto k : all_kinds) {
    CHECK_FALSE(ok(k, std::string("a\0b", 3)));
    CHECK_FALSE(ok(k, "a\nb"));
    CHECK_FALSE(ok(k, "a\x7f"));
    CHECK_FALSE(ok(k, "a\xc2\x85")); // U+0085, a C1 control
    CHECK_FALSE(ok(k, "a/b"));
    CHECK(ok(k, "a b.c-d_e:f"));
  }
}

TEST_CASE("names starting with __ are reserved except the queue-mode group",
          "[limits][names][reserved]") {
  for (auto k : all_kinds) {
    CHECK_FALSE(ok(k, "__x"));
    CHECK(ok(k, "_x"));
    CHECK(ok(k, "x__"));
  }
  CHECK(ok(name_kind::group, "__QUEUE_MODE__"));
  CHECK_FALSE(ok(name_kind::queue, "__QUEUE_MODE__"));
  CHECK_FALSE(ok(name_kind::partition, "__QUEUE_MODE__"));
  CHECK(check_name(name_kind::partition, "__p").err().message
        == "partition must not start with __ (reserved)");
}

TEST_CASE("a frame's ids and header keys are bounded UTF-8 texts",
          "[limits][frame]") {
  spool::storage::frame f;
  CHECK(check_frame_texts(f));
  f.transaction_id = std::string(255, 't');
  f.trace_id = std::string(255, 'r');
  f.headers = {{std::string(255, 'k'), "v"}};
  CHECK(check_frame_texts(f));
  auto bad = f;
  bad.transaction_id = "\xff";
  CHECK(check_frame_texts(bad).err().message
        == "transactionId must be valid UTF-8");
  bad = f;
  bad.trace_id = "a\x01";
  CHECK_FALSE(check_frame_texts(bad));
  bad = f;
  bad.headers = {{std::string(256, 'k'), "v"}};
  CHECK(check_frame_texts(bad).err().message
        == "headers key must be at most 255 bytes, got 256");
  bad = f;
  bad.headers = {{"", "v"}};
  CHECK_FALSE(check_frame_texts(bad));
  bad = f;
  bad.headers = {{"k", "\xc3"}};
  CHECK(check_frame_texts(bad).err().message
        == "headers.k must be valid UTF-8");
}
