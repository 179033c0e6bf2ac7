#pragma once

/// The gateway as a request's token sees it (docs/security.md, "Tokens
/// restricted to queues and groups"). A token with a `queues` claim uses
/// only the queues whose names start with one of its prefixes; one with a
/// `groups` claim consumes, seeks and settles only as the groups it names
/// (queue mode counts as the group `__QUEUE_MODE__`, Queen's name for it).
///
/// Both doors reach the node only through this: a route or op names what
/// it does with the gateway's own calls, and each call applies the rule
/// that fits it:
/// - a queue or group the request names outside the claim: 403
///   `Insufficient permissions: ...` before anything reaches the node (the
///   client named it: the answer says nothing of whether it exists);
/// - a partition uuid or lease id whose queue is outside the claim: the
///   answer of an unknown one (`Message not found`, `Lease not found`);
/// - a listing: only what the claims cover (a namespace pop serves only
///   the queues they cover);
/// - what spans every queue or group (a DLQ or group operation that names
///   none, trace names, the node's counters, cluster operations): 403
///   for a token whose claim would need it narrowed.
/// A token without either claim (or auth off) passes straight through.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "auth/principal.hpp"
#include "gateway/gateway.hpp"
#include "protocol/api/access.hpp"
#include "protocol/api/queue_directory.hpp"

namespace spool::api {

/// Who asks, for the audit line of a refusal.
struct scope_context {
  auth::principal who;
  const security* sec = nullptr;
  std::string from;
  std::string door; ///< "http", "msgpack"
  std::string what; ///< "POST /api/v1/push", "op push"
};

class scoped_gateway {
public:
  template <class T>
  using done = gateway::done<T>;

  /// Reaches no node: for a `call` read outside one (the request readers'
  /// tests); none of its calls may be made.
  scoped_gateway() = default;
  /// `ctx` none: nothing restricts the requests (auth off, or a token
  /// without either claim).
  scoped_gateway(gateway& gw, std::shared_ptr<queue_directory> dir,
                 std::shared_ptr<const scope_context> ctx = nullptr) :
      gw_(&gw), dir_(std::move(dir)), ctx_(std::move(ctx)) {
  }

  /// A claim restricts what this request may touch.
  bool restricted() const noexcept {
    return ctx_ != nullptr;
  }
  /// The gateway for what spans the whole node (counters, metrics, cluster
  /// operations), or 403 for a restricted token.
  expected<gateway*> whole() const;

  std::string new_token() const {
    return gw_->new_token();
  }
  void cancel(const std::string& token) const {
    gw_->cancel(token);
  }
  /// The pop's own lease (its answer could not be written): not scoped.
  void release(const std::string& lease_id, done<bool> k) const {
    gw_->release(lease_id, std::move(k));
  }
  std::optional<std::vector<slot_t>> served_slots() const {
    return gw_->served_slots();
  }

  void push(node::push_request req, done<node::push_reply> k) const;
  void pop(node::pop_request req, done<node::pop_reply> k) const;
  void ack(node::ack_request req, done<node::ack_reply> k) const;
  void extend(node::extend_request req, done<node::extend_reply> k) const;
  void seek(node::seek_request req, done<node::seek_reply> k) const;
  void update_subscription(node::subscription_request req,
                           done<node::subscription_reply> k) const;
  void configure(node::configure_request req,
                 done<node::configure_reply> k) const;
  void queues(std::optional<std::string> name,
              done<std::vector<node::queue_info>> k) const;
  void delete_queue(const std::string& name, done<bool> k) const;
  void purge(node::purge_request req, done<std::size_t> k) const;
  void browse(node::browse_request req, done<node::browse_reply> k) const;
  void find(node::find_request req, done<node::message> k) const;
  void groups(node::groups_request req,
              done<std::vector<node::cursor_view>> k) const;
  void delete_group(node::delete_group_request req,
                    done<node::delete_group_reply> k) const;
  void dlq_list(dlq_query q, done<node::dlq_page> k) const;
  void dlq_requeue(dlq_filter f, done<node::dlq_count> k) const;
  void dlq_delete(dlq_filter f, done<node::dlq_count> k) const;
  void transaction(node::txn_request req, done<node::txn_reply> k) const;
  void add_trace(node::trace_request req, done<std::string> k) const;
  void traces(node::find_request req, done<std::vector<node::trace>> k) const;
  void traces_named(node::trace_name_query q, done<node::trace_page> k) const;
  void trace_names(node::trace_names_query q,
                   done<node::trace_names_page> k) const;

private:
  /// 403 for a queue or group the claims leave out (audited); none when
  /// they cover it. `group` none: queue mode.
  std::optional<api_error> refuse_queue(std::string_view queue) const;
  std::optional<api_error>
  refuse_group(const std::optional<std::string>& group) const;
  /// 403 for a request over every queue (`queues`) or group (`groups`)
  /// when that claim is set.
  std::optional<api_error> refuse_spanning(bool queues, bool groups,
                                           std::string_view why) const;
  /// What acts on a whole queue (configure, purge, delete): the queue
  /// covered, and no groups claim (every group's messages and cursors).
  std::optional<api_error> refuse_whole_queue(std::string_view queue) const;
  /// A DLQ filter must name a queue (and a group) the claims cover.
  std::optional<api_error> refuse_dlq(const dlq_filter& f) const;
  void audit(std::string_view outcome) const;
  /// Each id's queue (partition uuids, lease ids) is covered: `then`
  /// gets a flag per id once the directory knows the queues (or the
  /// listing's error). An id naming no queue, or of a slot another node
  /// serves and not known here, counts as covered: the node refuses it as
  /// it is (there, the leader's address), touching nothing.
  using covered_fn = std::function<void(expected<std::vector<bool>>)>;
  void resolve(const std::vector<std::string_view>& ids, covered_fn then) const;
  /// `req` (naming a partition by uuid) goes to the node through
  /// `call(gateway, req, k)` when the claims cover its queue; else
  /// `Partition not found`, as the node answers an unknown uuid.
  template <class Req, class T, class Call>
  void by_partition(Req req, done<T> k, Call call) const;
  /// This node serves the slot of queue id `queue`.
  bool served_here(std::uint64_t queue) const;
  /// extend for a token with a groups claim: the lease's group, from its
  /// queue's cursors, must be covered.
  void extend_as_group(std::uint64_t queue, node::extend_request req,
                       done<node::extend_reply> k) const;

  gateway* gw_ = nullptr;
  /// Held while a request's completions may still learn (none when
  /// unrestricted: nothing is resolved then).
  std::shared_ptr<queue_directory> dir_;
  std::shared_ptr<const scope_context> ctx_;
};

/// The scoped gateway for `who` (none, or no claim: unrestricted).
scoped_gateway
scope_for(gateway& gw, const std::shared_ptr<queue_directory>& dir,
          const security& sec, const std::optional<auth::principal>& who,
          std::string_view from, std::string_view door, std::string_view what);

} // namespace spool::api
