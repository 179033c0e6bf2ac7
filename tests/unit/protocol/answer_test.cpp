// Reading an answer frame's `ok` (protocol/msgpack/read.hpp), which the
// msgpack door's metrics count error answers by.

#include <catch2/catch.hpp>

#include "protocol/msgpack/read.hpp"
#include "wire/writer.hpp"

using spool::mp::answer_ok;
using spool::mp::writer;

TEST_CASE("an answer's ok is read from its top level whatever comes before "
          "it",
          "[protocol][msgpack]") {
  auto frame = [](auto fill) {
    writer w;
    w.begin_object();
    fill(w);
    w.end_object();
    return w.take_frame();
  };
  CHECK(answer_ok(frame([](writer& w) {
    w.kv("id", 7);
    w.kv("ok", true);
    w.key("items").begin_array().end_array();
  })));
  CHECK_FALSE(answer_ok(frame([](writer& w) {
    w.kv("id", 7);
    w.kv("ok", false);
    w.key("error").begin_object();
    w.kv("code", "not_found");
    w.end_object();
  })));
  // A nested `ok`, or a value "ok", is not the answer's.
  CHECK_FALSE(answer_ok(frame([](writer& w) {
    w.key("detail").begin_object();
    w.kv("ok", true);
    w.end_object();
    w.kv("note", "ok");
    w.kv("ok", false);
  })));
  CHECK(answer_ok(frame([](writer& w) {
    w.key("list").begin_array();
    w.begin_object();
    w.kv("ok", false);
    w.end_object();
    w.end_array();
    w.kv("ok", true);
  })));
  // No ok, or not a frame: not an ok answer.
  CHECK_FALSE(answer_ok(frame([](writer& w) { w.kv("id", 1); })));
  CHECK_FALSE(answer_ok(""));
  CHECK_FALSE(answer_ok(std::string(4, '\0')));
}
