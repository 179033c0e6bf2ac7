// Reading the API's requests: what each body or query becomes, and the
// exact 400 of every malformed one (api.md's texts).

#include <catch2/catch.hpp>

#include "protocol/api/requests.hpp"

using namespace spool;
using namespace spool::api;

namespace {

template <class T>
std::string error_of(const expected<T>& r) {
  REQUIRE_FALSE(r);
  return r.err().message;
}

template <class T>
errc code_of(const expected<T>& r) {
  REQUIRE_FALSE(r);
  return r.err().code;
}

call query(const std::string& q) {
  return call{{}, {}, *http::query_params::parse(q), nullptr, std::nullopt, {}};
}

} // namespace

TEST_CASE("a push body: items with their fields, payloads kept as their JSON "
          "text",
          "[unit][protocol][requests]") {
  std::string body
      = R"({"items":[{"queue":"q","payload":{"a": [1, 2]},"transactionId":"t","traceId":"tr","headers":{"k":"v"},"producerSub":"ignored"},{"queue":"r","partition":"p","payload":"text"},{"queue":"s"},{"queue":"t","payload":12.5e3 }]})";
  auto items = read_push_body(body);
  REQUIRE(items);
  REQUIRE(items->size() == 4);
  auto& a = (*items)[0];
  CHECK(a.queue == "q");
  CHECK(a.partition == "Default");
  CHECK(a.payload == R"({"a": [1, 2]})");
  CHECK(a.transaction_id == "t");
  CHECK(a.trace_id == "tr");
  CHECK(a.headers == std::vector<node::header>{{"k", "v"}});
  CHECK(a.producer_sub.empty()); // a client-supplied producerSub is ignored
  CHECK((*items)[1].partition == "p");
  CHECK((*items)[1].payload == "\"text\"");
  CHECK((*items)[2].payload == "null");
  CHECK((*items)[3].payload == "12.5e3");
}

TEST_CASE("a malformed push body is a 400 naming the item and field",
          "[unit][protocol][requests][bad-input]") {
  struct bad_case {
    std::string body;
    std::string error;
  };
  std::vector<bad_case> cases = {
      {"", "Empty request body"},
      {"[]", "Request body must be a JSON object"},
      {"{}", "items array is required"},
      {R"({"items":{}})", "items must be an array"},
      {R"({"items":[1]})", "items[0] must be an object"},
      {R"({"items":[{"queue":"a"},{"partition":"x"}]})",
       "items[1].queue is required"},
      {R"({"items":[{"queue":3}]})", "items[0].queue must be a string"},
      {R"({"items":[{"queue":"q","partition":[]}]})",
       "items[0].partition must be a string"},
      {R"({"items":[{"queue":"q","transactionId":7}]})",
       "items[0].transactionId must be a string"},
      {R"({"items":[{"queue":"q","headers":{"k":1}}]})",
       "items[0].headers.k must be a string"},
      {R"({"items":[{"queue":"q","headers":"x"}]})",
       "items[0].headers must be an object"},
  };
  for (auto& c : cases) {
    INFO(c.body);
    auto body = c.body;
    auto r = read_push_body(body);
    CHECK(error_of(r) == c.error);
  }
  for (std::string garbage :
       {R"({"items":[)", R"({"items":[{"queue":"q","payload":tru}]})",
        "{\"items\":[{\"queue\":\"\xff\"}]}", R"({"items":[]} trailing)"}) {
    INFO(garbage);
    auto r = read_push_body(garbage);
    CHECK_THAT(error_of(r), Catch::StartsWith("Invalid JSON: "));
    CHECK(code_of(r) == errc::bad_request);
  }
}

TEST_CASE("a pop query: defaults, parameters, and an empty parameter as "
          "absent",
          "[unit][protocol][requests]") {
  auto r = read_pop_query(query(""), true);
  REQUIRE(r);
  CHECK(r->batch == 1);
  CHECK_FALSE(r->wait);
  CHECK_FALSE(r->group);
  r = read_pop_query(
      query("batch=50&partitions=3&wait=true&timeout=1500&consumerGroup=g&"
            "autoAck=1&subscriptionMode=new&subscriptionFrom=now"),
      true);
  REQUIRE(r);
  CHECK(r->batch == 50);
  CHECK(r->partitions == 3);
  CHECK(r->wait);
  CHECK(r->timeout == milliseconds{1500});
  CHECK(r->group == "g");
  CHECK(r->auto_ack);
  CHECK(r->subscription_mode == "new");
  CHECK(r->subscription_from == "now");
  auto empty = read_pop_query(query("consumerGroup=&subscriptionMode="), true);
  REQUIRE(empty);
  CHECK_FALSE(empty->group);
  CHECK(empty->subscription_mode.empty());
  auto part = read_pop_query(query("partitions=7"), false);
  REQUIRE(part);
  CHECK(part->partitions == 1); // the partition route claims one
  CHECK(error_of(read_pop_query(query("batch=ten"), true))
        == "batch must be an integer");
  CHECK(error_of(read_pop_query(query("batch=-1"), true))
        == "batch must be a non-negative integer");
  CHECK(error_of(read_pop_query(query("batch=99999999999999999999999"), true))
        == "batch must be an integer");
  CHECK(error_of(read_pop_query(query("wait=maybe"), true))
        == "wait must be true or false");
}

TEST_CASE("ack bodies: Queen's required fields and texts, statuses, the "
          "body-level group",
          "[unit][protocol][requests]") {
  std::string one
      = R"({"transactionId":"t","partitionId":"p","status":"success","leaseId":"","consumerGroup":"","delayMs":5})";
  auto r = read_ack_body(one);
  REQUIRE(r);
  REQUIRE(r->items.size() == 1);
  CHECK(r->items[0].status == ack_status::completed);
  CHECK_FALSE(r->items[0].lease_id); // empty: not checked (Queen)
  CHECK_FALSE(r->items[0].group);    // empty: queue mode
  CHECK(r->items[0].delay == milliseconds{5});
  std::string missing_tx = R"({"partitionId":"p"})";
  CHECK(error_of(read_ack_body(missing_tx)) == "transactionId is required");
  std::string nothing = "{}"; // Queen's order: the transactionId first
  CHECK(error_of(read_ack_body(nothing)) == "transactionId is required");
  std::string missing_p = R"({"transactionId":"t"})";
  CHECK(error_of(read_ack_body(missing_p))
        == "partitionId is required to ensure message uniqueness");
  std::string bad_status
      = R"({"transactionId":"t","partitionId":"p","status":"meh"})";
  CHECK(error_of(read_ack_body(bad_status))
        == "status must be completed, success, failed, dlq or retry");
  std::string batch
      = R"({"consumerGroup":"g","acknowledgments":[{"transactionId":"a","partitionId":"p"},{"transactionId":"b","partitionId":"p","status":"failed","error":"x"}]})";
  auto b = read_ack_batch_body(batch);
  REQUIRE(b);
  CHECK(b->group == "g");
  REQUIRE(b->items.size() == 2);
  CHECK(b->items[1].status == ack_status::failed);
  CHECK(b->items[1].error == "x");
  std::string bad_item
      = R"({"acknowledgments":[{"transactionId":"a","partitionId":"p"},{"transactionId":5,"partitionId":"p"}]})";
  CHECK(error_of(read_ack_batch_body(bad_item))
        == "acknowledgments[1].transactionId must be a string");
  std::string no_list = "{}";
  CHECK(error_of(read_ack_batch_body(no_list))
        == "acknowledgments array is required");
}

TEST_CASE("transaction bodies: push ops (listed or inline) and ack ops, "
          "retry is refused",
          "[unit][protocol][requests]") {
  std::string body
      = R"({"transactionId":"x","operations":[{"type":"push","items":[{"queue":"a"},{"queue":"b"}]},{"queue":"c","type":"push","payload":1},{"type":"ack","transactionId":"t","partitionId":"p"}],"requiredLeases":[]})";
  auto r = read_txn_body(body);
  REQUIRE(r);
  CHECK(r->transaction_id == "x");
  REQUIRE(r->operations.size() == 3);
  CHECK(std::get<node::txn_push>(r->operations[0]).items.size() == 2);
  auto& inline_push = std::get<node::txn_push>(r->operations[1]);
  REQUIRE(inline_push.items.size() == 1);
  CHECK(inline_push.items[0].queue == "c");
  CHECK(inline_push.items[0].payload == "1");
  CHECK(std::get<node::txn_ack>(r->operations[2]).ack.partition_id == "p");
  std::string none = "{}";
  CHECK(error_of(read_txn_body(none)) == "operations array required");
  std::string empty = R"({"operations":[]})";
  CHECK(error_of(read_txn_body(empty)) == "operations array cannot be empty");
  std::string bad_type = R"({"operations":[{"type":"pop"}]})";
  CHECK(error_of(read_txn_body(bad_type))
        == "operations[0].type must be push or ack");
  std::string no_type = R"({"operations":[{"queue":"q"}]})";
  CHECK(error_of(read_txn_body(no_type)) == "operations[0].type is required");
  std::string retry
      = R"({"operations":[{"type":"ack","transactionId":"t","partitionId":"p","status":"retry"}]})";
  CHECK(error_of(read_txn_body(retry))
        == "operations[0].status retry is not allowed in a transaction");
}

TEST_CASE("seek bodies: toEnd wins, the per-partition empty body is toEnd, "
          "the per-queue one is refused",
          "[unit][protocol][requests][seek]") {
  std::string empty;
  CHECK(read_seek_body(empty, true)->to_end);
  CHECK(error_of(read_seek_body(empty, false)) == "Empty request body");
  std::string both = R"({"toEnd":true,"timestamp":"garbage"})";
  CHECK(read_seek_body(both, false)->to_end);
  std::string ts = R"({"timestamp":"2026-07-30T00:00:00Z"})";
  CHECK(read_seek_body(ts, false)->timestamp);
  std::string neither = R"({"toEnd":false})";
  CHECK(error_of(read_seek_body(neither, false))
        == "Must specify toEnd=true or a timestamp");
  std::string bad_ts = R"({"timestamp":"2026-07-30"})";
  CHECK(error_of(read_seek_body(bad_ts, false))
        == "Invalid timestamp: 2026-07-30");
  std::string wrong = R"({"toEnd":"yes"})";
  CHECK(error_of(read_seek_body(wrong, false)) == "toEnd must be a boolean");
  std::string offset = R"({"offset":5})";
  CHECK(read_seek_body(offset, false)->offset == 5);
  std::string garbage = "{";
  CHECK_THAT(error_of(read_seek_body(garbage, true)),
             Catch::StartsWith("Invalid JSON: "));
}

TEST_CASE("subscription, configure and extend bodies",
          "[unit][protocol][requests]") {
  std::string sub = "{}";
  CHECK(error_of(read_subscription_body(sub))
        == "Missing subscriptionTimestamp in request body");
  std::string sub_ok = R"({"subscriptionTimestamp":"1970-01-01T00:00:01Z"})";
  CHECK(*read_subscription_body(sub_ok) == 1'000'000);
  std::string cfg
      = R"({"queue":"q","namespace":"n","options":{"leaseTime":30,"retentionEnabled":false,"retryBackoffMs":[10,20],"nope":1}})";
  auto c = read_configure_body(cfg);
  REQUIRE(c);
  CHECK(c->req.queue == "q");
  CHECK(c->req.name_space == "n");
  CHECK(c->req.options.lease_time_s == 30);
  CHECK(c->req.options.retention_enabled == false);
  CHECK(c->req.options.retry_backoff_ms == std::vector<std::int64_t>{10, 20});
  CHECK(c->unknown_options == std::vector<std::string>{"nope"});
  std::string cfg_bad = R"({"queue":"q","options":{"leaseTime":"long"}})";
  CHECK(error_of(read_configure_body(cfg_bad))
        == "options.leaseTime must be an integer");
  std::string cfg_no_queue = R"({"options":{}})";
  CHECK(error_of(read_configure_body(cfg_no_queue)) == "queue is required");
  std::string ext_empty;
  CHECK(*read_extend_body(ext_empty) == milliseconds{60'000});
  std::string ext = R"({"seconds":5})";
  CHECK(*read_extend_body(ext) == milliseconds{5'000});
  std::string ext_bad = R"({"seconds":1.5})";
  CHECK(error_of(read_extend_body(ext_bad)) == "seconds must be an integer");
}

TEST_CASE("numbers beyond 64 bits are valid JSON: kept in a payload, refused "
          "as a field with the field's message",
          "[unit][protocol][requests][bad-input]") {
  std::string body
      = R"({"items":[{"queue":"q","payload":{"id":123456789012345678901234567890,"x":-1e300}}]})";
  auto items = read_push_body(body);
  REQUIRE(items);
  CHECK((*items)[0].payload
        == R"({"id":123456789012345678901234567890,"x":-1e300})");
  // Beyond a double's range is refused (RFC 8259 §6 lets a parser limit
  // it; both parsers here do).
  std::string huge = R"({"items":[{"queue":"q","payload":1e400}]})";
  CHECK(error_of(read_push_body(huge))
        == "Invalid JSON: Number too big to be stored in double. (at byte "
           "33)");
  std::string seek = R"({"offset":99999999999999999999})";
  CHECK(error_of(read_seek_body(seek, false)) == "offset must be an integer");
  std::string bad_number = R"({"items":[{"queue":"q","payload":01}]})";
  CHECK_THAT(error_of(read_push_body(bad_number)),
             Catch::StartsWith("Invalid JSON: "));
  std::string big_then_bad
      = R"({"items":[{"queue":"q","payload":[123456789012345678901234567890, 1.]}]})";
  CHECK_THAT(error_of(read_push_body(big_then_bad)),
             Catch::StartsWith("Invalid JSON: "));
  std::string deep = std::string(2000, '[') + "1" + std::string(2000, ']');
  CHECK_THAT(error_of(read_push_body(deep)),
             Catch::StartsWith("Invalid JSON: "));
}
