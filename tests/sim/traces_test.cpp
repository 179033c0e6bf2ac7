// Message traces through the broker (docs/traces.md): attached only to a
// stored message, read back by message, gone with their message, and a
// failed write stores nothing.

#include "sim/broker_sim.hpp"
#include "sim/write_gate.hpp"
#include "storage/traces.hpp"

using namespace spool;
using namespace spool::test;
using namespace std::chrono_literals;
using storage::offset;

namespace {

struct trace_fixture : broker_sim {
  /// Pushes (txid, payload) pairs to (queue, partition): its uuid.
  std::string push_ids(const std::string& queue, const std::string& partition,
                       std::vector<std::string> txids) {
    std::vector<actors::broker_push_item> v;
    for (auto& id : txids)
      v.push_back({queue, {partition, msg("{\"id\":\"" + id + "\"}", id)}});
    auto r = request<actors::queue_push_reply>(broker, actors::push_atom::value,
                                               v);
    REQUIRE(r);
    REQUIRE_FALSE(r->failure);
    return r->target_of(0).partition_uuid;
  }

  actors::trace_put_reply put(const std::string& uuid, const std::string& txid,
                              std::string data,
                              std::vector<std::string> names = {}) {
    actors::trace_put_request req;
    req.partition_uuid = uuid;
    req.transaction_id = txid;
    req.rec.data = std::move(data);
    req.rec.event_type = "info";
    req.rec.consumer_group = "__QUEUE_MODE__";
    req.rec.names = std::move(names);
    auto r = request<actors::trace_put_reply>(broker, actors::trace_atom::value,
                                              req);
    REQUIRE(r);
    return *r;
  }

  actors::trace_list_reply list(const std::string& uuid,
                                const std::string& txid) {
    auto r = request<actors::trace_list_reply>(
        broker, actors::trace_atom::value, actors::find_request{uuid, txid});
    REQUIRE(r);
    return *r;
  }

  /// Every stored trace row of queue `q` (both tables).
  std::size_t trace_rows(const std::string& queue) {
    auto t = store.store->db().read();
    REQUIRE(t);
    std::size_t n = 0;
    auto prefix = storage::keys::queue(queue_id(queue));
    for (auto dbi : {t->db().traces, t->db().trace_names})
      REQUIRE(t->scan_prefix(dbi, prefix, [&](auto, auto) {
        ++n;
        return true;
      }));
    return n;
  }
};

std::vector<std::string> data_of(const actors::trace_list_reply& r) {
  std::vector<std::string> out;
  for (auto& t : r.traces)
    out.push_back(t.data);
  return out;
}

} // namespace

TEST_CASE("a trace attaches to a stored message and reads back with its "
          "message, oldest first",
          "[sim][traces]") {
  trace_fixture fx;
  auto uuid = fx.push_ids("q", "p", {"t0", "t1"});
  auto a = fx.put(uuid, "t0", "{\"step\":1}", {"order-7", "x", "order-7"});
  REQUIRE_FALSE(a.failure);
  CHECK(a.id.size() == 36);
  fx.advance(1ms);
  auto b = fx.put(uuid, "t0", "\"two\"");
  REQUIRE_FALSE(b.failure);
  CHECK(b.id != a.id);
  REQUIRE_FALSE(fx.put(uuid, "t1", "3").failure);
  auto l = fx.list(uuid, "t0");
  REQUIRE_FALSE(l.failure);
  CHECK(data_of(l) == std::vector<std::string>{"{\"step\":1}", "\"two\""});
  CHECK(l.traces[0].id == a.id);
  CHECK(l.traces[0].transaction_id == "t0");
  CHECK(l.traces[0].names == std::vector<std::string>{"order-7", "x"});
  CHECK(l.traces[0].created_at < l.traces[1].created_at);
  CHECK(data_of(fx.list(uuid, "t1")) == std::vector<std::string>{"3"});
  // Unknown message or partition: no traces, no error (as Queen).
  auto none = fx.list(uuid, "t9");
  CHECK_FALSE(none.failure);
  CHECK(none.traces.empty());
  auto nowhere = fx.list("00000000-0000-0000-0000-000000000000", "t0");
  CHECK_FALSE(nowhere.failure);
  CHECK(nowhere.traces.empty());
  // Kept across a restart.
  fx.start();
  CHECK(fx.list(uuid, "t0").traces.size() == 2);
}

TEST_CASE("a trace for a message not stored is refused with not_found and "
          "stores nothing",
          "[sim][traces]") {
  trace_fixture fx;
  auto uuid = fx.push_ids("q", "p", {"t0"});
  auto unknown = fx.put(uuid, "t9", "1");
  REQUIRE(unknown.failure);
  CHECK(unknown.failure->code == errc::not_found);
  auto nowhere = fx.put("00000000-0000-0000-0000-000000000000", "t0", "1");
  REQUIRE(nowhere.failure);
  CHECK(nowhere.failure->code == errc::not_found);
  // Refused by its limits before anything is looked up.
  auto big = fx.put(uuid, "t0", std::string(64 * 1024 + 1, '1'));
  REQUIRE(big.failure);
  CHECK(big.failure->code == errc::too_large);
  auto blank = fx.put(uuid, "t0", "1", {""});
  REQUIRE(blank.failure);
  CHECK(blank.failure->code == errc::invalid_argument);
  CHECK(fx.trace_rows("q") == 0);
}

TEST_CASE("a failed trace write answers its error and stores nothing, the "
          "retry stores it",
          "[sim][traces][failure]") {
  trace_fixture fx;
  auto uuid = fx.push_ids("q", "p", {"t0"});
  fx.gate_st->inject(fail_batches_with<storage::mut::put_trace>(1));
  auto failed = fx.put(uuid, "t0", "1", {"n"});
  REQUIRE(failed.failure);
  CHECK(failed.failure->code == errc::internal);
  CHECK(failed.id.empty());
  CHECK(fx.list(uuid, "t0").traces.empty());
  CHECK(fx.trace_rows("q") == 0);
  auto again = fx.put(uuid, "t0", "1", {"n"});
  REQUIRE_FALSE(again.failure);
  CHECK(fx.list(uuid, "t0").traces.size() == 1);
  CHECK(fx.trace_rows("q") == 2); // the trace and its name entry
}

TEST_CASE("traces go with their messages: a purge and the queue's deletion "
          "remove them, and a purged message takes no new one",
          "[sim][traces]") {
  trace_fixture fx;
  auto uuid = fx.push_ids("q", "p", {"t0"});
  fx.push_ids("q", "p", {"t1"}); // a second segment
  REQUIRE_FALSE(fx.put(uuid, "t0", "1", {"n"}).failure);
  REQUIRE_FALSE(fx.put(uuid, "t1", "2", {"n"}).failure);
  CHECK(fx.trace_rows("q") == 4);
  auto purged = fx.request<actors::purge_reply>(
      fx.broker, actors::purge_atom::value, std::string{"q"},
      actors::purge_request{std::string{"p"}, offset{1}});
  REQUIRE(purged);
  REQUIRE_FALSE(purged->failure);
  fx.run();
  CHECK(fx.list(uuid, "t0").traces.empty());
  CHECK(fx.list(uuid, "t1").traces.size() == 1);
  CHECK(fx.trace_rows("q") == 2);
  auto late = fx.put(uuid, "t0", "3");
  REQUIRE(late.failure);
  CHECK(late.failure->code == errc::not_found);
  auto id = fx.queue_id("q");
  auto del = fx.request<actors::delete_queue_reply>(
      fx.broker, actors::delete_atom::value, std::string{"q"});
  REQUIRE(del);
  REQUIRE_FALSE(del->failure);
  fx.advance(1s);
  auto t = fx.store.store->db().read();
  REQUIRE(t);
  CHECK(rows_under(*t, id) == 0);
}

TEST_CASE("a message holds at most 100 traces, the next is refused and "
          "stores nothing",
          "[sim][traces]") {
  trace_fixture fx;
  auto uuid = fx.push_ids("q", "p", {"t0"});
  for (std::size_t i = 0; i < storage::traces::max_per_message; ++i)
    REQUIRE_FALSE(fx.put(uuid, "t0", std::to_string(i)).failure);
  auto over = fx.put(uuid, "t0", "x", {"n"});
  REQUIRE(over.failure);
  CHECK(over.failure->code == errc::invalid_argument);
  CHECK(over.failure->message
        == "the message holds 100 traces, the most a message holds");
  CHECK(fx.list(uuid, "t0").traces.size() == 100);
  CHECK(fx.trace_rows("q") == 100);
}
