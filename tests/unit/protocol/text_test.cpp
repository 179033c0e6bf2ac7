// URL decoding, RFC 3339 timestamps, the JSON writer's guarantees, and the
// message id.

#include <catch2/catch.hpp>
#include <date/date.h>

#include "protocol/api/encode.hpp"
#include "protocol/http/url.hpp"
#include "protocol/json/write.hpp"
#include "vocab/message_id.hpp"
#include "wire/rfc3339.hpp"
#include "wire/spelling.hpp"

using namespace spool;

TEST_CASE("path segments and queries are percent-decoded, a bad escape is "
          "refused",
          "[unit][protocol][url]") {
  CHECK(http::percent_decode("a%20b%2Fc") == "a b/c");
  CHECK(http::percent_decode("a+b") == "a+b");
  CHECK(http::percent_decode("a+b", true) == "a b");
  CHECK_FALSE(http::percent_decode("a%2"));
  CHECK_FALSE(http::percent_decode("a%zz"));
  auto q = http::query_params::parse("batch=10&consumerGroup=&x=%C3%BC&flag");
  REQUIRE(q);
  CHECK(q->get("batch") == "10");
  CHECK(q->get("consumerGroup") == "");
  CHECK(q->get("x") == "\xC3\xBC");
  CHECK(q->get("flag") == "");
  CHECK_FALSE(q->get("group")); // exact keys, not Queen's substring match
  CHECK_FALSE(q->get("atch"));
  std::string bad;
  CHECK_FALSE(http::query_params::parse("a=%4", &bad));
  CHECK(bad == "a=%4");
}

TEST_CASE("RFC 3339 timestamps: Z and offsets, fractions truncated to µs, "
          "everything else refused",
          "[unit][protocol][time]") {
  using timefmt::parse_rfc3339;
  CHECK(parse_rfc3339("1970-01-01T00:00:00Z") == 0);
  CHECK(parse_rfc3339("1970-01-01T00:00:01.5Z") == 1'500'000);
  CHECK(parse_rfc3339("1970-01-01T00:00:00.1234567891Z") == 123'456);
  CHECK(parse_rfc3339("1970-01-01T01:00:00+01:00") == 0);
  CHECK(parse_rfc3339("1969-12-31T23:00:00-01:00") == 0);
  CHECK(parse_rfc3339("2026-07-30t00:00:00z")
        == parse_rfc3339("2026-07-30T00:00:00Z"));
  for (auto bad :
       {"", "yesterday", "2026-07-30", "2026-7-30T00:00:00Z",
        "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-07-30T25:00:00Z",
        "2026-07-30T00:00:00", "2026-07-30T00:00:00+0100",
        "2026-07-30T00:00:00.Z", "2026-07-30T00:00:00Zjunk"}) {
    INFO(bad);
    CHECK_FALSE(parse_rfc3339(bad));
  }
  // (the fuzz target found it) an offset that leaves the four-digit years
  CHECK_FALSE(parse_rfc3339("0000-01-01T00:00:00.504+02:00"));
  CHECK_FALSE(parse_rfc3339("9999-12-31T23:30:00-01:00"));
  CHECK(parse_rfc3339("0000-01-01T00:00:00Z"));
  CHECK(timefmt::format_micros(1'500'000) == "1970-01-01T00:00:01.500000Z");
  CHECK(timefmt::format_millis(1'500'999) == "1970-01-01T00:00:01.500Z");
  auto t = parse_rfc3339("2026-12-02T06:16:59.514257Z");
  REQUIRE(t);
  CHECK(timefmt::format_micros(*t) == "2026-12-02T06:16:59.514257Z");
  // The hand-written formatter says what date::format says, before 1970,
  // at day and year boundaries, in leap years, at the last year.
  for (micros v :
       {micros{0}, micros{-1}, micros{-86'400'000'000},
        micros{951'782'400'000'000} - 1, micros{951'868'799'999'999},
        micros{1'704'067'199'999'999}, micros{253'402'300'799'999'999},
        micros{-62'167'219'200'000'000}, *t}) {
    INFO(v);
    date::sys_time<std::chrono::microseconds> tp{std::chrono::microseconds{v}};
    CHECK(timefmt::format_micros(v) == date::format("%FT%TZ", tp));
    CHECK(
        timefmt::format_millis(v)
        == date::format("%FT%TZ", date::floor<std::chrono::milliseconds>(tp)));
    CHECK(parse_rfc3339(timefmt::format_micros(v)) == v);
  }
}

TEST_CASE("the run formatter of createdAt says what format_micros says, "
          "within a second, across seconds, before 1970 and past 9999",
          "[unit][protocol]") {
  timefmt::micros_formatter f;
  for (micros v :
       {micros{1'500'000}, micros{1'500'001}, micros{1'999'999},
        micros{2'000'000}, micros{2'000'000}, micros{-1}, micros{-999'999},
        micros{-1'000'000}, micros{-1'000'001}, micros{0},
        micros{253'402'300'799'999'999}, micros{253'402'300'800'000'000},
        micros{253'402'300'800'000'001}, micros{1'500'000},
        micros{-62'167'219'200'000'001}}) {
    INFO(v);
    CHECK(f(v) == timefmt::format_micros(v));
  }
}

TEST_CASE("the JSON writer escapes, keeps raw payloads, and never writes "
          "invalid UTF-8",
          "[unit][protocol][json]") {
  json::writer w;
  w.begin_object()
      .kv("s", "a\"b\\c\n")
      .key("raw")
      .raw(R"({"x":[1,2]})")
      .kv("bad", std::string_view{"\xff"
                                  "ok"})
      .kv("n", -5)
      .end_object();
  CHECK(w.take()
        == "{\"s\":\"a\\\"b\\\\c\\n\",\"raw\":{\"x\":[1,2]},\"bad\":"
           "\"\xEF\xBF\xBD"
           "ok\",\"n\":-5}");
  CHECK(json::error_body("Queue q is full")
        == R"({"error":"Queue q is full"})");
}

TEST_CASE("a message id is a UUID of its partition and offset, the same for "
          "a duplicate",
          "[unit][protocol]") {
  auto a = api::message_id("3c05f23d-77d8-4012-b705-abb073088881", 7);
  CHECK(a.size() == 36);
  CHECK(a[14] == '8'); // version 8
  CHECK(a == api::message_id("3c05f23d-77d8-4012-b705-abb073088881", 7));
  CHECK(a != api::message_id("3c05f23d-77d8-4012-b705-abb073088881", 8));
  CHECK(a != api::message_id("50e058bf-1329-4951-b93c-0ffcb0ff221a", 7));
  // 8-4-4-4-12 lowercase hex; the last 64 bits are the variant and offset.
  for (std::size_t i : {8u, 13u, 18u, 23u})
    CHECK(a[i] == '-');
  CHECK(a.substr(19) == "8000-000000000007");
  CHECK(api::message_id("p", 0x1234'5678'9abcLL).substr(19)
        == "8000-123456789abc");
  for (char c : a)
    CHECK((c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')));
  // In two steps, as a pop's answer makes them: the same text.
  char two[36];
  format_message_uuid(two, message_uuid_high("p"), 0x1234'5678'9abcLL);
  CHECK(std::string(two, 36) == api::message_id("p", 0x1234'5678'9abcLL));
}

TEST_CASE("a mistyped word gets the command or key it was meant to be, and a "
          "word far from every candidate gets none",
          "[unit][protocol][spelling]") {
  constexpr std::string_view keys[]
      = {"batch", "consumerGroup", "wait", "subscriptionMode", "autoAck"};
  CHECK(wire::closest("consumer_group", keys) == "consumerGroup");
  CHECK(wire::closest("CONSUMERGROUP", keys) == "consumerGroup");
  CHECK(wire::closest("consumerGrop", keys) == "consumerGroup");
  CHECK(wire::closest("bach", keys) == "batch");
  CHECK(wire::closest("auto-ack", keys) == "autoAck");
  CHECK(wire::closest("wiat", keys) == "wait"); // two letters swapped
  CHECK_FALSE(wire::closest("group", keys));
  CHECK_FALSE(wire::closest("zzzz", keys));
  CHECK_FALSE(wire::closest("", keys));
  constexpr std::string_view commands[] = {"push", "pop", "queues", "groups"};
  CHECK(wire::closest("pusj", commands) == "push");
  CHECK(wire::closest("queue", commands) == "queues");
  CHECK_FALSE(wire::closest("list", commands));
}

TEST_CASE("the warning of unknown query keys names each once with what was "
          "meant, stays a safe header value, and is empty when every key is "
          "known",
          "[unit][protocol][url]") {
  constexpr std::string_view keys[] = {"batch", "consumerGroup", "wait"};
  auto warn = [&](std::string_view query) {
    auto q = http::query_params::parse(query);
    REQUIRE(q);
    return http::unknown_keys_warning(*q, keys);
  };
  CHECK(warn("batch=2&consumerGroup=g&wait=true").empty());
  CHECK(warn("").empty());
  CHECK(warn("consumer_group=x&batch=1")
        == "unknown query key consumer_group (did you mean consumerGroup?)");
  CHECK(warn("zz=1&zz=2&bach=3")
        == "unknown query key zz; unknown query key bach (did you mean "
           "batch?)");
  // CR, LF, a space, non-ASCII and '%' are escaped: no header injection.
  CHECK(warn("a%0D%0AX-Evil:%201%C3%BC=1")
        == "unknown query key a%0D%0AX-Evil:%201%C3%BC");
  CHECK(warn("q1&q2&q3&q4&q5&q6&q7")
        == "unknown query key q1; unknown query key q2; unknown query key "
           "q3; unknown query key q4; unknown query key q5; and 2 more");
  CHECK(warn("a%22b%5Cc=1") == "unknown query key a%22b%5Cc"); // log-safe
  // Bounded: 20,000 distinct keys name five and count the rest.
  std::string many;
  for (int i = 0; i < 20'000; ++i)
    many += "k" + std::to_string(i) + "=1&";
  CHECK_THAT(warn(many), Catch::EndsWith("unknown query key k4; and 19995 "
                                         "more"));
  auto long_key = warn(std::string(100, 'k') + "=1");
  CHECK(long_key == "unknown query key " + std::string(64, 'k') + "...");
  std::span<const std::string_view> none{};
  auto q = http::query_params::parse("x=1");
  REQUIRE(q);
  CHECK(http::unknown_keys_warning(*q, none) == "unknown query key x");
}
