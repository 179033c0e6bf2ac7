// The blocking API (client/client.hpp).

#include "client/client.hpp"

namespace spool::client {

client::client(options o) : opt_(o), conn_(std::move(o)) {
}

template <class Read>
auto client::call(std::string_view op, const fields_fn& fields, Read read,
                  std::optional<std::chrono::milliseconds> timeout)
    -> expected<decltype(read(std::declval<const object&>()))> {
  auto r = conn_.request(op, fields, timeout).get();
  if (!r)
    return r.err();
  return read((*r)->root());
}

expected<health_info> client::health() {
  return call("health", {}, &read_health);
}

expected<std::vector<node::push_result>>
client::push(std::vector<node::push_item> items) {
  auto e = encode_items(std::move(items));
  if (!e)
    return e.err();
  return call(
      "push", [&](mp::writer& w) { write_items(w, *e); }, &read_push);
}

expected<node::pop_reply> client::pop(const node::pop_request& req) {
  auto timeout = opt_.request_timeout;
  if (req.wait)
    timeout += req.timeout;
  return call(
      "pop", [&](mp::writer& w) { write_pop(w, req); }, &read_pop, timeout);
}

expected<node::ack_reply> client::ack(const node::ack_request& req) {
  return call(
      "ack", [&](mp::writer& w) { write_ack(w, req); }, &read_ack);
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
      "extend", [&](mp::writer& w) { write_extend(w, req); }, &read_extend);
}

expected<node::seek_reply> client::seek(const node::seek_request& req) {
  return call(
      "seek", [&](mp::writer& w) { write_seek(w, req); }, &read_seek);
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
      &read_configure);
}

expected<std::vector<queue_detail>>
client::queues(const std::optional<std::string>& name) {
  return call(
      "queues",
      [&](mp::writer& w) {
        if (name)
          w.kv("queue", *name);
      },
      &read_queues);
}

expected<bool> client::delete_queue(const std::string& name) {
  return call(
      "delete_queue", [&](mp::writer& w) { w.kv("queue", name); },
      &read_delete_queue);
}

expected<std::size_t> client::purge(const node::purge_request& req) {
  return call(
      "purge", [&](mp::writer& w) { write_purge(w, req); }, &read_purge);
}

expected<node::promote_reply>
client::promote(const node::promote_request& req) {
  return call(
      "promote", [&](mp::writer& w) { write_promote(w, req); }, &read_promote);
}

expected<std::vector<node::cursor_view>>
client::groups(const node::groups_request& req) {
  return call(
      "groups", [&](mp::writer& w) { write_groups(w, req); }, &read_groups);
}

expected<node::delete_group_reply>
client::delete_group(const node::delete_group_request& req) {
  return call(
      "delete_group", [&](mp::writer& w) { write_delete_group(w, req); },
      &read_delete_group);
}

expected<node::dlq_page> client::dlq(const dlq_query& q) {
  return call(
      "dlq", [&](mp::writer& w) { write_dlq_query(w, q); }, &read_dlq);
}

expected<node::dlq_count> client::dlq_requeue(const dlq_filter& f) {
  return call(
      "dlq_requeue", [&](mp::writer& w) { write_dlq_filter(w, f); },
      &read_dlq_count);
}

expected<node::dlq_count> client::dlq_delete(const dlq_filter& f) {
  return call(
      "dlq_delete", [&](mp::writer& w) { write_dlq_filter(w, f); },
      &read_dlq_count);
}

expected<node::browse_reply> client::browse(const node::browse_request& req) {
  return call(
      "browse", [&](mp::writer& w) { write_browse(w, req); }, &read_browse);
}

expected<node::txn_reply> client::transaction(const node::txn_request& req) {
  mp::writer probe; // a payload that is not JSON fails here, before sending
  if (auto ok = write_transaction(probe, req); !ok)
    return ok.err();
  return call(
      "transaction", [&](mp::writer& w) { (void)write_transaction(w, req); },
      &read_transaction);
}

} // namespace spool::client
