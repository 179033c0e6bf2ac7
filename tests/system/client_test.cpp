// The C++ client library (client/) against the real spoold: typed calls
// over the msgpack door, many requests in flight on one connection,
// timeouts, and reconnecting after the server restarts.

#include <catch2/catch.hpp>

#include <atomic>
#include <set>

#include "client/client.hpp"
#include "system/http_fixture.hpp"

namespace spool::test {

namespace {

client::options to(std::uint16_t port) {
  client::options o;
  o.port = port;
  o.request_timeout = 10s;
  return o;
}

node::push_item item(const std::string& queue, std::string payload,
                     bool binary = false) {
  node::push_item it;
  it.queue = queue;
  it.payload = std::move(payload);
  it.binary = binary;
  return it;
}

} // namespace

TEST_CASE("client typed calls round trip over the msgpack door",
          "[system][client]") {
  spoold_server srv;
  client::client c{to(srv.mp_port())};
  REQUIRE(c.health());
  CHECK(c.health()->status == "healthy");
  node::configure_request conf;
  conf.queue = "orders";
  conf.options.lease_time_s = 7;
  auto q = c.configure(conf);
  REQUIRE(q);
  CHECK(q->created);
  CHECK(q->options.lease_time_s == 7);
  auto pushed = c.push({item("orders", R"({"id":1})"),
                        item("orders", std::string{"\0\1\2", 3}, true)});
  REQUIRE(pushed);
  REQUIRE(pushed->size() == 2);
  CHECK((*pushed)[1].offset == 1);
  auto bad = c.push({item("orders", "{not json")});
  REQUIRE(!bad);
  CHECK(bad.err().code == errc::invalid_argument);

  node::pop_request p;
  p.queue = "orders";
  p.group = "billing";
  p.batch = 10;
  auto got = c.pop(p);
  REQUIRE(got);
  REQUIRE(got->messages.size() == 2);
  CHECK(got->messages[0].payload == R"({"id":1})");
  CHECK(!got->messages[0].binary);
  CHECK(got->messages[1].payload == std::string("\0\1\2", 3));
  CHECK(got->messages[1].binary);
  CHECK(got->messages[0].created_at > 0);
  // The client asks for the compact shape: each message still carries its
  // partition's fields.
  for (auto& m : got->messages) {
    CHECK(m.queue == "orders");
    CHECK(m.partition == "Default");
    CHECK(m.partition_id.size() == 36);
    CHECK(m.lease_id.size() == 36);
    CHECK(m.lease_epoch == 1);
    CHECK(m.delivery_count == 1);
  }
  CHECK(got->messages[1].offset == 1);
  CHECK(c.async().supports("cumulative_ack")); // said by hello
  CHECK_FALSE(c.async().supports("no_such_feature"));
  auto acked = c.ack_all(*got); // one cumulative item: one partition
  REQUIRE(acked);
  REQUIRE(acked->items.size() == 1);
  CHECK(acked->items[0].success);
  CHECK(acked->items[0].lease_released);
  CHECK(acked->items[0].partition == "Default");

  node::groups_request g;
  g.group = "billing";
  auto views = c.groups(g);
  REQUIRE(views);
  REQUIRE(views->size() == 1);
  CHECK((*views)[0].committed == 1);
  CHECK((*views)[0].lag == 0);

  node::seek_request s;
  s.group = "billing";
  s.queue = "orders";
  s.target.to_start = true;
  s.dry_run = true;
  auto sought = c.seek(s);
  REQUIRE(sought);
  REQUIRE(sought->positions.size() == 1);
  CHECK(sought->positions[0].before == 1);
  CHECK(sought->positions[0].after == -1);

  auto qs = c.queues("orders");
  REQUIRE(qs);
  REQUIRE(qs->size() == 1);
  CHECK(qs->front().partitions.at(0).last_offset == 1);
  auto missing = c.queues("nope");
  REQUIRE(!missing);
  CHECK(missing.err().code == errc::not_found);

  node::browse_request b;
  b.queue = "orders";
  auto browsed = c.browse(b);
  REQUIRE(browsed);
  CHECK(browsed->messages.size() == 2);
  CHECK(browsed->next == 2);
  REQUIRE(c.delete_queue("orders"));
}

TEST_CASE("client ack_all of a pop across two partitions sends one "
          "cumulative item per partition lease",
          "[system][client][upto]") {
  spoold_server srv;
  client::client c{to(srv.mp_port())};
  std::vector<node::push_item> items;
  for (int i = 0; i < 6; ++i) {
    auto it = item("multi", R"({"n":1})");
    it.partition = i % 2 ? "odd" : "even";
    items.push_back(std::move(it));
  }
  REQUIRE(c.push(std::move(items)));
  node::pop_request p;
  p.queue = "multi";
  p.group = "g";
  p.batch = 10;
  p.partitions = 2;
  auto got = c.pop(p);
  REQUIRE(got);
  REQUIRE(got->messages.size() == 6);
  auto req = c.ack_request_for(*got);
  REQUIRE(req.items.size() == 2);
  for (auto& a : req.items) {
    CHECK(a.up_to == std::optional<std::int64_t>{2});
    CHECK(a.lease_id);
    CHECK_FALSE(a.transaction_id);
  }
  auto acked = c.ack_all(*got);
  REQUIRE(acked);
  REQUIRE(acked->items.size() == 2);
  for (auto& r : acked->items) {
    CHECK(r.success);
    CHECK(r.lease_released);
  }
  node::groups_request g;
  g.group = "g";
  auto views = c.groups(g);
  REQUIRE(views);
  REQUIRE(views->size() == 2);
  for (auto& v : *views)
    CHECK(v.committed == 2);
  // Per message, as for a server without cumulative_ack: the same acks.
  auto each = client::ack_each(*got);
  CHECK(each.items.size() == 6);
  CHECK(each.items[0].transaction_id == got->messages[0].transaction_id);
}

TEST_CASE("client pipelines thousands of requests on one connection and "
          "matches each answer to its request",
          "[system][client]") {
  spoold_server srv;
  client::client c{to(srv.mp_port())};
  constexpr int n = 3000;
  std::atomic<int> done{0};
  std::atomic<int> failed{0};
  std::mutex mx;
  std::set<std::int64_t> offsets;
  std::promise<void> all;
  for (int i = 0; i < n; ++i) {
    auto e = client::encode_items({item("q", std::to_string(i))});
    REQUIRE(e);
    c.async().request(
        "push", [e = *e](mp::writer& w) { client::write_items(w, e); },
        [&](expected<client::reply_ptr> r) {
          if (!r) {
            ++failed;
          } else {
            auto items = client::read_push((*r)->root());
            std::lock_guard lock{mx};
            offsets.insert(items.at(0).offset);
          }
          if (++done == n)
            all.set_value();
        });
  }
  REQUIRE(all.get_future().wait_for(60s) == std::future_status::ready);
  CHECK(failed == 0);
  CHECK(offsets.size() == static_cast<std::size_t>(n));
  CHECK(*offsets.rbegin() == n - 1);
  CHECK(c.async().connects() == 1);
}

TEST_CASE("client timeouts answer unavailable and leave the connection "
          "usable",
          "[system][client]") {
  spoold_server srv;
  client::client c{to(srv.mp_port())};
  REQUIRE(c.health());
  node::pop_request p;
  p.queue = "q";
  p.wait = true;
  p.timeout = 5000ms;
  auto f = c.async().request(
      "pop", [&](mp::writer& w) { client::write_pop(w, p); }, 200ms);
  auto r = f.get();
  REQUIRE(!r);
  CHECK(r.err().code == errc::unavailable);
  CHECK(r.err().message == "timed out after 200 ms");
  CHECK(c.health());
  // Nothing listening: the request waits for a connection until its
  // deadline.
  client::options o = to(free_port());
  o.request_timeout = 300ms;
  client::client nowhere{o};
  auto h = nowhere.health();
  REQUIRE(!h);
  CHECK(h.err().code == errc::unavailable);
}

TEST_CASE("a client connection destroyed in its own completion closes, "
          "its other open requests complete as closed, unsent",
          "[system][client]") {
  // Two in flight: the third request waits in the client's queue.
  spoold_server srv{{"--msgpack-max-in-flight", "2"}};
  // Before the connection: a failed check destroys it first.
  std::promise<expected<client::reply_ptr>> parked;
  std::promise<expected<client::reply_ptr>> queued;
  std::promise<void> destroyed;
  auto conn = std::make_unique<client::connection>(to(srv.mp_port()));
  node::pop_request p;
  p.queue = "q";
  p.wait = true;
  p.timeout = 5000ms;
  conn->request(
      "pop", [&](mp::writer& w) { client::write_pop(w, p); },
      [&](expected<client::reply_ptr> r) { parked.set_value(std::move(r)); });
  conn->request(
      "health", [](mp::writer&) {},
      [&](expected<client::reply_ptr> r) {
        CHECK(r);
        conn.reset(); // on the io thread: no join of itself
        destroyed.set_value();
      });
  auto e = client::encode_items({item("late", "1")});
  REQUIRE(e);
  conn->request(
      "push", [&](mp::writer& w) { client::write_items(w, *e); },
      [&](expected<client::reply_ptr> r) { queued.set_value(std::move(r)); });
  auto d = destroyed.get_future();
  REQUIRE(d.wait_for(10s) == std::future_status::ready);
  auto q = queued.get_future();
  REQUIRE(q.wait_for(10s) == std::future_status::ready);
  auto push = q.get();
  REQUIRE(!push);
  CHECK(push.err().message == "client closed");
  auto r = parked.get_future();
  REQUIRE(r.wait_for(10s) == std::future_status::ready);
  auto got = r.get();
  REQUIRE(!got);
  CHECK(got.err().message == "client closed");
  CHECK(conn == nullptr);
  // The queued push was never sent. Once the server has seen the close (the
  // open connections are down to the one asking), it has read all the
  // connection sent; a push of ours to the same queue after that is
  // behind anything it read, so it is the queue's only message.
  REQUIRE(srv.metric_becomes("spool_http_open_connections", 1));
  client::client other{to(srv.mp_port())};
  REQUIRE(other.push({item("late", "2")}));
  node::browse_request b;
  b.queue = "late";
  auto all = other.browse(b);
  REQUIRE(all);
  REQUIRE(all->messages.size() == 1);
  CHECK(all->messages.front().payload == "2");
}

TEST_CASE("client refuses a request over the server's maxFrameBytes by "
          "itself, the connection and the requests beside it go on",
          "[system][client]") {
  spoold_server srv{{"--msgpack-max-frame-bytes", "4096"}};
  client::client c{to(srv.mp_port())};
  REQUIRE(c.health());
  auto big = c.push({item("q", std::string(10'000, 'x'), true)});
  REQUIRE(!big);
  CHECK(big.err().code == errc::too_large);
  CHECK(c.push({item("q", "1")}));
  CHECK(c.async().connects() == 1);
}

TEST_CASE("client reconnects after the server restarts and loses nothing "
          "acknowledged",
          "[system][client]") {
  auto port = free_port();
  spoold_server srv{{"--msgpack-port", std::to_string(port)}};
  client::options o = to(port);
  o.backoff_min = 20ms;
  o.backoff_max = 200ms;
  client::client c{o};
  REQUIRE(c.push({item("q", "1")}));
  srv.kill9();
  // In flight or sent now: refused while the server is away.
  auto away = c.push({item("q", "2")});
  CHECK(!away);
  srv.start(); // the same data folder, the same port
  expected<std::vector<node::push_result>> back
      = make_error(errc::unavailable, "not tried");
  for (int i = 0; i < 100 && !back; ++i) {
    back = c.push({item("q", "3")});
    if (!back)
      std::this_thread::sleep_for(50ms);
  }
  REQUIRE(back);
  CHECK(c.async().connects() >= 2);
  node::browse_request b;
  b.queue = "q";
  auto all = c.browse(b);
  REQUIRE(all);
  REQUIRE(all->messages.size() >= 2);
  CHECK(all->messages.front().payload == "1");
  CHECK(all->messages.back().payload == "3");
}

} // namespace spool::test
