// The blocking API (client/client.hpp).

#include "client/client.hpp"

#include "vocab/host_port.hpp"

namespace spool::client {

namespace {

/// Routes learned past this many are all forgotten (they are relearned).
constexpr std::size_t max_routes = 100'000;

std::string queue_route(std::string_view q) {
  return q.empty() ? std::string{} : "q:" + std::string{q};
}
std::string partition_route(std::string_view p) {
  return p.empty() ? std::string{} : "p:" + std::string{p};
}
std::string lease_route(std::string_view l) {
  return l.empty() ? std::string{} : "l:" + std::string{l};
}

/// "host:port" (an IPv6 host in brackets) as options to connect with.
std::optional<options> options_at(options o, const std::string& address) {
  host_port hp;
  if (!read_host_port("leader", address, hp).empty())
    return std::nullopt;
  o.host = std::move(hp.host);
  o.port = hp.port;
  return o;
}

} // namespace

client::client(options o) : opt_(o), conn_(std::move(o)) {
}

template <class Read>
auto client::call(std::string_view op, const fields_fn& fields, Read read,
                  std::optional<std::chrono::milliseconds> timeout,
                  std::string_view route, std::string* via)
    -> expected<decltype(read(std::declval<const object&>()))> {
  auto at = led(route);
  for (int hop = 0;; ++hop) {
    auto& c = to(at);
    auto r = c.request(op, fields, timeout).get();
    if (r) {
      if (via != nullptr)
        *via = at;
      return read((*r)->root());
    }
    auto& e = r.err();
    // A leader this client cannot reach (dead until the operator
    // promotes another): the refusal, which names it, is the answer.
    if (e.code == errc::not_leader && e.leader && hop < opt_.max_redirects
        && options_at(opt_, e.leader->msgpack)
        && reachable(e.leader->msgpack)) {
      at = e.leader->msgpack;
      learn(route, at);
      continue;
    }
    // A node it was led to is gone: start at the first node next time.
    if (!at.empty() && e.code == errc::unavailable && !c.connected())
      forget(at);
    return e;
  }
}

connection& client::to(const std::string& address) {
  if (address.empty() || address == show_host_port(opt_.host, opt_.port))
    return conn_;
  std::lock_guard lock{mx_};
  auto& c = others_[address];
  if (!c) { // options_at checked it before it was learned
    auto o = *options_at(opt_, address);
    o.fail_unconnected = true; // a dial refused fails at once
    c = std::make_unique<connection>(o);
  }
  return *c;
}

bool client::reachable(const std::string& address) {
  auto& c = to(address);
  if (c.connected())
    return true;
  auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock{mx_};
    auto it = unreachable_.find(address);
    if (it != unreachable_.end() && now < it->second)
      return false;
  }
  // Up within the connect timeout, or not for a while.
  auto probe = c.request("health", {}, opt_.connect_timeout).get();
  if (probe || probe.err().code != errc::unavailable || c.connected())
    return true;
  std::lock_guard lock{mx_};
  unreachable_[address] = now + opt_.backoff_max;
  return false;
}

std::string client::led(std::string_view route) const {
  if (route.empty())
    return {};
  std::lock_guard lock{mx_};
  auto it = routes_.find(std::string{route});
  return it == routes_.end() ? std::string{} : it->second;
}

void client::learn(std::string_view route, const std::string& address) {
  if (route.empty())
    return;
  std::lock_guard lock{mx_};
  if (address.empty()) {
    routes_.erase(std::string{route});
    return;
  }
  if (routes_.size() >= max_routes)
    routes_.clear();
  routes_[std::string{route}] = address;
}

void client::forget(const std::string& address) {
  std::lock_guard lock{mx_};
  std::erase_if(routes_, [&](const auto& kv) { return kv.second == address; });
}

std::vector<std::string> client::followed() const {
  std::lock_guard lock{mx_};
  std::vector<std::string> out;
  for (auto& [a, c] : others_)
    out.push_back(a);
  return out;
}

expected<health_info> client::health() {
  return call("health", {}, &read_health);
}

expected<std::vector<node::push_result>>
client::push(std::vector<node::push_item> items) {
  auto e = encode_items(std::move(items));
  if (!e)
    return e.err();
  auto route = queue_route(e->items.empty() ? "" : e->items.front().queue);
  return call(
      "push", [&](mp::writer& w) { write_items(w, *e); }, &read_push, {},
      route);
}

expected<node::pop_reply> client::pop(const node::pop_request& req) {
  auto timeout = opt_.request_timeout;
  if (req.wait)
    timeout += req.timeout;
  std::string via;
  auto r = call(
      "pop", [&](mp::writer& w) { write_pop(w, req); }, &read_pop, timeout,
      queue_route(req.queue), &via);
  if (r) // its acks and extends go where it was answered
    for (auto& m : r->messages) {
      learn(partition_route(m.partition_id), via);
      learn(lease_route(m.lease_id), via);
    }
  return r;
}

expected<node::ack_reply> client::ack(const node::ack_request& req) {
  return call(
      "ack", [&](mp::writer& w) { write_ack(w, req); }, &read_ack, {},
      partition_route(req.items.empty() ? "" : req.items.front().partition_id));
}

node::ack_request client::ack_request_for(const node::pop_reply& popped) const {
  return conn_.supports("cumulative_ack") ? ack_of(popped) : ack_each(popped);
}

expected<node::ack_reply> client::ack_all(const node::pop_reply& popped) {
  auto req = ack_request_for(popped);
  if (req.items.empty())
    return node::ack_reply{};
  return ack(req);
}

expected<node::extend_reply> client::extend(const node::extend_request& req) {
  return call(
      "extend", [&](mp::writer& w) { write_extend(w, req); }, &read_extend, {},
      lease_route(req.lease_id));
}

expected<node::seek_reply> client::seek(const node::seek_request& req) {
  return call(
      "seek", [&](mp::writer& w) { write_seek(w, req); }, &read_seek, {},
      queue_route(req.queue));
}

expected<std::size_t>
client::subscription(const node::subscription_request& req) {
  return call(
      "subscription", [&](mp::writer& w) { write_subscription(w, req); },
      &read_subscription);
}

expected<queue_detail> client::configure(const node::configure_request& req) {
  return call(
      "configure", [&](mp::writer& w) { write_configure(w, req); },
      &read_configure, {}, queue_route(req.queue));
}

expected<std::vector<queue_detail>>
client::queues(const std::optional<std::string>& name) {
  return call(
      "queues",
      [&](mp::writer& w) {
        if (name)
          w.kv("queue", *name);
      },
      &read_queues, {}, queue_route(name.value_or("")));
}

expected<bool> client::delete_queue(const std::string& name) {
  return call(
      "delete_queue", [&](mp::writer& w) { w.kv("queue", name); },
      &read_delete_queue, {}, queue_route(name));
}

expected<std::size_t> client::purge(const node::purge_request& req) {
  return call(
      "purge", [&](mp::writer& w) { write_purge(w, req); }, &read_purge, {},
      queue_route(req.queue));
}

expected<node::promote_reply>
client::promote(const node::promote_request& req) {
  return call(
      "promote", [&](mp::writer& w) { write_promote(w, req); }, &read_promote);
}

expected<std::vector<node::cursor_view>>
client::groups(const node::groups_request& req) {
  return call(
      "groups", [&](mp::writer& w) { write_groups(w, req); }, &read_groups, {},
      queue_route(req.queue.value_or("")));
}

expected<node::delete_group_reply>
client::delete_group(const node::delete_group_request& req) {
  return call(
      "delete_group", [&](mp::writer& w) { write_delete_group(w, req); },
      &read_delete_group, {}, queue_route(req.queue.value_or("")));
}

expected<node::dlq_page> client::dlq(const dlq_query& q) {
  return call(
      "dlq", [&](mp::writer& w) { write_dlq_query(w, q); }, &read_dlq, {},
      queue_route(q.filter.queue.value_or("")));
}

expected<node::dlq_count> client::dlq_requeue(const dlq_filter& f) {
  return call(
      "dlq_requeue", [&](mp::writer& w) { write_dlq_filter(w, f); },
      &read_dlq_count, {}, queue_route(f.queue.value_or("")));
}

expected<node::dlq_count> client::dlq_delete(const dlq_filter& f) {
  return call(
      "dlq_delete", [&](mp::writer& w) { write_dlq_filter(w, f); },
      &read_dlq_count, {}, queue_route(f.queue.value_or("")));
}

expected<node::browse_reply> client::browse(const node::browse_request& req) {
  return call(
      "browse", [&](mp::writer& w) { write_browse(w, req); }, &read_browse, {},
      queue_route(req.queue));
}

expected<node::txn_reply> client::transaction(const node::txn_request& req) {
  mp::writer probe; // a payload that is not JSON fails here, before sending
  if (auto ok = write_transaction(probe, req); !ok)
    return ok.err();
  std::string route;
  if (!req.operations.empty()) {
    if (auto* p = std::get_if<node::txn_push>(&req.operations.front()))
      route = queue_route(p->items.empty() ? "" : p->items.front().queue);
    else if (auto* a = std::get_if<node::txn_ack>(&req.operations.front()))
      route = partition_route(a->ack.partition_id);
  }
  return call(
      "transaction", [&](mp::writer& w) { (void)write_transaction(w, req); },
      &read_transaction, {}, route);
}

} // namespace spool::client
