// libFuzzer target: the JSON bodies of push, ack, ack/batch, transaction,
// seek, subscription, configure, extend, DLQ requeue and traces, read as the
// routes read them. Each reader answers a value or an API error with a message;
// nothing may crash, and errors are the 400-class ones.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz/check.hpp"
#include "protocol/api/requests.hpp"
#include "protocol/json/write.hpp"

namespace {

template <class T>
void check(const spool::expected<T>& r) {
  // The message goes into an answer: it must make valid JSON.
  spool::fuzz::check(r,
                     [](const std::string& m) { spool::json::error_body(m); });
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  std::string input{reinterpret_cast<const char*>(data), size};
  auto fresh = [&] {
    std::string s = input; // each reader gets its own copy (they pad it)
    return s;
  };
  using namespace spool::api;
  {
    auto b = fresh();
    auto r = read_push_body(b);
    check(r);
    if (r) // payloads go back into answers as raw JSON
      for (auto& it : *r) {
        spool::json::writer w;
        w.begin_array().raw(it.payload).end_array();
      }
  }
  {
    auto b = fresh();
    check(read_ack_body(b));
  }
  {
    auto b = fresh();
    check(read_ack_batch_body(b));
  }
  {
    auto b = fresh();
    check(read_txn_body(b));
  }
  {
    auto b = fresh();
    check(read_seek_body(b, true));
  }
  {
    auto b = fresh();
    check(read_seek_body(b, false));
  }
  {
    auto b = fresh();
    check(read_subscription_body(b));
  }
  {
    auto b = fresh();
    check(read_configure_body(b));
  }
  {
    auto b = fresh();
    check(read_extend_body(b));
  }
  {
    auto b = fresh();
    check(read_dlq_filter_body(b));
  }
  {
    auto b = fresh();
    auto r = read_trace_body(b);
    check(r);
    if (r) { // data goes back into answers as raw JSON
      spool::json::writer w;
      w.begin_array().raw(r->data).end_array();
    }
  }
  return 0;
}
