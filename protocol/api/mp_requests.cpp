// Reading the msgpack ops named in protocol/api/mp_requests.hpp.

#include "protocol/api/mp_requests.hpp"

#include "protocol/api/requests.hpp"
#include "wire/rfc3339.hpp"

namespace spool::mp {

namespace {

template <class T>
using field = expected<std::optional<T>>;

/// A string field; absent, nil or "" is none (api.md: an empty value is
/// absent), or `<key> is required` when `required`.
field<std::string> str(const object& req, std::string_view key,
                       bool required = false) {
  auto v = find(req, key);
  if (v && !format::is_null(*v)) {
    auto s = format::as_string(*v, key);
    if (!s)
      return s.err();
    if (!s->empty())
      return std::optional<std::string>{std::string{*s}};
  }
  if (required)
    return make_error(errc::invalid_argument, key, " is required");
  return std::optional<std::string>{};
}

field<std::uint64_t> uint(const object& req, std::string_view key) {
  auto v = find(req, key);
  if (!v || format::is_null(*v))
    return std::optional<std::uint64_t>{};
  auto n = format::as_uint(*v, key);
  if (!n)
    return n.err();
  return std::optional<std::uint64_t>{*n};
}

field<std::int64_t> integer(const object& req, std::string_view key) {
  auto v = find(req, key);
  if (!v || format::is_null(*v))
    return std::optional<std::int64_t>{};
  auto n = format::as_int(*v, key);
  if (!n)
    return n.err();
  return std::optional<std::int64_t>{*n};
}

field<bool> boolean(const object& req, std::string_view key) {
  auto v = find(req, key);
  if (!v || format::is_null(*v))
    return std::optional<bool>{};
  auto b = format::as_bool(*v, key);
  if (!b)
    return b.err();
  return std::optional<bool>{*b};
}

/// A present field's value into `out` (a missing one leaves it).
template <class T, class U>
expected<void> take(field<T> v, U& out) {
  if (!v)
    return v.err();
  if (*v)
    out = std::move(**v);
  return {};
}

/// A page's `limit` (1..max, else `limit must be 1..<max>`).
expected<void> read_limit(const object& req, std::size_t max,
                          std::size_t& limit) {
  auto l = uint(req, "limit");
  if (!l)
    return l.err();
  if (*l) {
    if (**l < 1 || **l > max)
      return make_error(errc::invalid_argument, "limit must be 1..", max);
    limit = static_cast<std::size_t>(**l);
  }
  return {};
}

} // namespace

expected<hello_request> read_hello(const object& req) {
  auto v = uint(req, "version");
  if (!v)
    return v.err();
  if (!*v)
    return make_error(errc::invalid_argument, "version is required");
  auto token = str(req, "token");
  if (!token)
    return token.err();
  return hello_request{**v, std::move(*token)};
}

expected<bool> read_compact(const object& req) {
  auto b = boolean(req, "compact");
  if (!b)
    return b.err();
  return b->value_or(false);
}

expected<node::pop_request> read_pop(const object& req) {
  node::pop_request p;
  auto queue = str(req, "queue");
  if (!queue)
    return queue.err();
  auto ns = str(req, "namespace");
  if (!ns)
    return ns.err();
  if (!*queue && !*ns)
    return make_error(errc::invalid_argument, "queue or namespace is required");
  if (*queue) {
    p.queue = **queue;
    SPOOL_TRY(take(str(req, "partition"), p.partition));
  } else {
    p.name_space = *ns;
    SPOOL_TRY(take(str(req, "task"), p.task));
  }
  SPOOL_TRY(take(uint(req, "batch"), p.batch));
  SPOOL_TRY(take(uint(req, "partitions"), p.partitions));
  if (p.partition) // one named partition is one claim (as HTTP's route)
    p.partitions = 1;
  SPOOL_TRY(take(boolean(req, "wait"), p.wait));
  auto timeout = uint(req, "timeout");
  if (!timeout)
    return timeout.err();
  if (*timeout) {
    if (**timeout > std::uint64_t{1} << 40)
      return make_error(errc::invalid_argument, "timeout is out of range");
    p.timeout = milliseconds{static_cast<std::int64_t>(**timeout)};
  }
  SPOOL_TRY(take(boolean(req, "autoAck"), p.auto_ack));
  SPOOL_TRY(take(uint(req, "maxBytes"), p.max_bytes));
  auto group = str(req, "consumerGroup");
  if (!group)
    return group.err();
  p.group = *group; // none: queue mode
  SPOOL_TRY(take(str(req, "subscriptionMode"), p.subscription_mode));
  SPOOL_TRY(take(str(req, "subscriptionFrom"), p.subscription_from));
  return p;
}

expected<node::extend_request> read_extend(const object& req) {
  node::extend_request e;
  SPOOL_TRY(take(str(req, "leaseId", true), e.lease_id));
  auto by = api::read_extend_body(req);
  if (!by)
    return by.err();
  e.by = *by;
  return e;
}

expected<node::seek_request> read_seek(const object& req) {
  node::seek_request s;
  SPOOL_TRY(take(str(req, "consumerGroup", true), s.group));
  SPOOL_TRY(take(str(req, "queue", true), s.queue));
  SPOOL_TRY(take(str(req, "partition"), s.partition));
  SPOOL_TRY(take(boolean(req, "dryRun"), s.dry_run));
  auto t = api::read_seek_body(req);
  if (!t)
    return t.err();
  s.target = *t;
  return s;
}

expected<node::subscription_request> read_subscription(const object& req) {
  node::subscription_request s;
  SPOOL_TRY(take(str(req, "consumerGroup", true), s.group));
  auto ts = api::read_subscription_body(req);
  if (!ts)
    return ts.err();
  s.timestamp = *ts;
  return s;
}

expected<std::optional<std::string>> read_queue_name(const object& req,
                                                     bool required) {
  return str(req, "queue", required);
}

expected<node::purge_request> read_purge(const object& req) {
  node::purge_request p;
  SPOOL_TRY(take(str(req, "queue", true), p.queue));
  SPOOL_TRY(take(str(req, "partition"), p.partition));
  SPOOL_TRY(take(integer(req, "below"), p.below));
  return p;
}

expected<node::promote_request> read_promote(const object& req) {
  node::promote_request p;
  SPOOL_TRY(take(integer(req, "slot"), p.slot));
  SPOOL_TRY(take(boolean(req, "all"), p.all));
  SPOOL_TRY(take(str(req, "to"), p.to));
  return p;
}

expected<node::browse_request> read_browse(const object& req) {
  node::browse_request b;
  SPOOL_TRY(take(str(req, "queue", true), b.queue));
  SPOOL_TRY(take(str(req, "partition"), b.partition));
  SPOOL_TRY(take(integer(req, "fromOffset"), b.from));
  SPOOL_TRY(read_limit(req, 10'000, b.limit));
  SPOOL_TRY(take(uint(req, "maxBytes"), b.max_bytes));
  return b;
}

expected<node::groups_request> read_groups(const object& req) {
  node::groups_request g;
  SPOOL_TRY(take(str(req, "consumerGroup"), g.group));
  SPOOL_TRY(take(str(req, "queue"), g.queue));
  SPOOL_TRY(take(str(req, "partition"), g.partition));
  if (g.partition && !g.queue)
    return make_error(errc::invalid_argument, "partition needs queue");
  return g;
}

expected<node::delete_group_request> read_delete_group(const object& req) {
  node::delete_group_request d;
  SPOOL_TRY(take(str(req, "consumerGroup", true), d.group));
  SPOOL_TRY(take(str(req, "queue"), d.queue));
  SPOOL_TRY(take(boolean(req, "deleteMetadata"), d.delete_metadata));
  return d;
}

expected<dlq_query> read_dlq_query(const object& req) {
  dlq_query q;
  auto f = api::read_dlq_filter_body(req);
  if (!f)
    return f.err();
  q.filter = std::move(*f);
  SPOOL_TRY(read_limit(req, 10'000, q.limit));
  SPOOL_TRY(take(uint(req, "offset"), q.offset));
  SPOOL_TRY(take(uint(req, "after"), q.after));
  return q;
}

expected<dlq_filter> read_dlq_delete(const object& req) {
  auto f = api::read_dlq_filter_body(req);
  if (!f)
    return f.err();
  // a delete of every queue's dead letters is not an accident
  if (f->ids.empty() && !f->queue)
    return make_error(errc::invalid_argument, "ids or queue is required");
  return f;
}

} // namespace spool::mp
