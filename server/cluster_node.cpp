#include "server/cluster_node.hpp"

#include <caf/logger.hpp>
#include <caf/send.hpp>

#include <algorithm>
#include <fstream>
#include <future>
#include <sstream>

#include "actors/atoms.hpp"
#include "server/security.hpp"

namespace spool::server {

/// The host's serving notices on their way to the broker (the committer's
/// thread writes, `attach` reads): each slot's latest (the epoch it serves
/// in, 0: not served) until the broker exists, then sent as they come, in
/// order.
struct cluster_node::relay {
  std::mutex mtx;
  std::optional<actors::broker_actor> broker;
  std::vector<cluster::epoch_t> served;

  void note(slot_t s, cluster::epoch_t epoch) {
    std::lock_guard lock{mtx};
    if (broker) {
      caf::anon_send(*broker, actors::slot_atom::value, std::uint16_t{s},
                     std::uint64_t{epoch});
      return;
    }
    if (s < served.size())
      served[s] = epoch;
  }
  void detach() {
    std::lock_guard lock{mtx};
    broker.reset();
    served.clear(); // nothing more is kept either
  }
  void attach(actors::broker_actor b) {
    std::lock_guard lock{mtx};
    broker = b;
    for (std::size_t s = 0; s < served.size(); ++s)
      if (served[s] != 0)
        caf::anon_send(b, actors::slot_atom::value,
                       static_cast<std::uint16_t>(s), std::uint64_t{served[s]});
  }
};

expected<std::string> read_secret(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return make_error(errc::invalid_argument, "cluster-secret-file ", path,
                      ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  auto secret = text.str();
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r'))
    secret.pop_back();
  if (secret.empty())
    return make_error(errc::invalid_argument, "cluster-secret-file ", path,
                      " is empty: write the cluster's secret in it");
  return secret;
}

cluster_node::cluster_node(std::shared_ptr<actors::committer> commits,
                           std::shared_ptr<actors::durable_marks> marks,
                           std::shared_ptr<relay> to_broker) :
    commits_(std::move(commits)),
    marks_(std::move(marks)),
    relay_(std::move(to_broker)) {
}

expected<std::unique_ptr<cluster_node>>
cluster_node::start(storage::store& st, const config::cluster_settings& c,
                    std::function<void(const std::string&)> log) {
  auto secret = read_secret(c.secret_file);
  if (!secret)
    return std::move(secret).err();
  auto tls = peer_tls(c);
  if (!tls)
    return std::move(tls).err();
  replication_options o;
  o.tls_server = tls->server;
  o.tls_client = tls->client;
  std::optional<cluster::node_id> self;
  for (std::uint32_t i = 0; i < c.peers.size(); ++i) {
    auto& p = c.peers[i];
    o.nodes[cluster::node_id{i}] = {p.host, p.port};
    o.names.push_back(p.name);
    if (p.name == c.node_id)
      self = cluster::node_id{i};
  }
  if (!self)
    return make_error(errc::invalid_argument, "cluster: node-id ", c.node_id,
                      " is not among the nodes of peers");
  o.self = *self;
  o.replication_factor = static_cast<std::uint32_t>(c.replication_factor);
  o.cluster_id = c.cluster_id;
  o.secret = std::move(*secret);
  o.log = std::move(log);
  // Nothing is durable before a slot serves: its mark starts at its commit
  // point then, not at the local log's end (a follower's tail may not be
  // committed).
  auto marks = std::make_shared<actors::durable_marks>(st.slot_count());
  o.marks = marks;
  auto to_broker = std::make_shared<relay>();
  to_broker->served.assign(st.slot_count(), 0);
  o.serving
      = [to_broker](slot_t s, cluster::epoch_t e) { to_broker->note(s, e); };
  auto commits = actors::thread_committer(st.db());
  auto node = std::make_unique<cluster_node>(commits, marks, to_broker);
  auto repl
      = replication::start(st.db(), st.slot_count(), commits, std::move(o));
  if (!repl)
    return std::move(repl).err();
  node->repl_ = std::move(*repl);
  if (tls->server)
    node->peer_not_after_ = tls->server->not_after();
  return node;
}

std::string cluster_node::reload_tls(const config::cluster_settings& c) {
  auto tls = peer_tls(c);
  if (!tls)
    return tls.err().message;
  if (tls->server)
    peer_not_after_ = tls->server->not_after();
  repl_->set_tls(std::move(tls->server), std::move(tls->client));
  return "";
}

cluster_node::~cluster_node() {
  stop();
}

std::shared_ptr<actors::durability_policy> cluster_node::durability() const {
  return repl_->durability();
}

std::shared_ptr<const core::slot_directory> cluster_node::directory() const {
  return repl_->directory();
}

void cluster_node::attach(actors::broker_actor broker) {
  relay_->attach(std::move(broker));
}

void cluster_node::connect(core::client_addresses self) {
  repl_->connect(std::move(self));
}

void cluster_node::promote(
    node::promote_request req,
    std::function<void(expected<node::promote_reply>)> k) {
  auto dir = directory();
  auto slots = dir->slots();
  auto& names = dir->names().names;
  std::optional<slot_t> slot;
  if (req.slot) {
    if (*req.slot < 0 || *req.slot >= std::int64_t{slots})
      return k(make_error(errc::invalid_argument, "promote: slot ", *req.slot,
                          " does not exist (this cluster has ", slots,
                          " slots: 0 to ", slots - 1, ")"));
    slot = static_cast<slot_t>(*req.slot);
  }
  std::optional<cluster::node_id> to;
  if (req.to) {
    auto it = std::find(names.begin(), names.end(), *req.to);
    if (it == names.end()) {
      std::string known;
      for (auto& n : names)
        known += (known.empty() ? "" : ", ") + n;
      return k(make_error(errc::invalid_argument, "promote: no node is named ",
                          *req.to, " (the nodes are ", known, ")"));
    }
    to = cluster::node_id{static_cast<std::uint32_t>(it - names.begin())};
  }
  repl_->promote(slot, to,
                 [dir, one = slot.has_value(),
                  k = std::move(k)](std::vector<core::promote_outcome> outs) {
                   node::promote_reply r;
                   for (auto& o : outs) {
                     node::promoted_slot p;
                     p.slot = o.slot;
                     p.epoch = o.epoch;
                     if (o.leader)
                       p.leader = dir->names().name(*o.leader);
                     if (o.failure) {
                       p.failure = o.failure;
                       p.failure->message = "slot " + std::to_string(o.slot)
                                            + ": " + o.failure->message;
                     }
                     r.slots.push_back(std::move(p));
                   }
                   if (one && r.slots.size() == 1 && r.slots[0].failure)
                     return k(*r.slots[0].failure);
                   k(std::move(r));
                 });
}

std::vector<slot_t> cluster_node::served_slots() const {
  std::vector<slot_t> out;
  auto dir = directory();
  for (std::uint32_t s = 0; s < dir->slots(); ++s)
    if (dir->get(static_cast<slot_t>(s)).serving)
      out.push_back(static_cast<slot_t>(s));
  return out;
}

void cluster_node::slot_replicas(
    std::function<void(expected<std::vector<node::slot_replica>>)> k) {
  repl_->report([dir = directory(),
                 k = std::move(k)](std::vector<core::slot_report> reports) {
    std::vector<node::slot_replica> out;
    out.reserve(reports.size());
    for (auto& r : reports) {
      node::slot_replica s;
      s.slot = r.slot;
      s.leader = r.view.role == cluster::role::leader;
      s.serving = r.view.serving;
      s.damaged = r.view.damaged;
      s.epoch = r.view.epoch;
      s.commit = r.view.commit;
      s.last = r.view.last.seq;
      for (auto& f : r.followers)
        s.followers.push_back({dir->names().name(f.node), f.entries, f.bytes});
      out.push_back(std::move(s));
    }
    k(std::move(out));
  });
}

replication::handoff_report
cluster_node::hand_off(std::chrono::milliseconds budget) {
  return repl_->hand_off(budget);
}

void cluster_node::stop() {
  if (repl_)
    repl_->stop();
  relay_->detach();
}

void cluster_node::leave_actor_system() {
  std::promise<void> done;
  commits_->run([&done] {
    caf::logger::set_current_actor_system(nullptr);
    done.set_value();
  });
  done.get_future().wait();
}

} // namespace spool::server
