// Message flow.
//
// push: items grouped by queue; queues met for the first time are created in
//   one durable write, then every queue prepares its part (partitions
//   created, frames sealed); the broker writes all parts as ONE batch and
//   settles each queue with the outcome, answering in input order. A push
//   for a single queue goes to it directly (it commits its own batch).
// pop / ack: routed to the queue by name.
// txn: run by `run_transaction` (broker_txn.cpp) over a `txn_host` view of
//   this broker.

#include "actors/broker/broker_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include "actors/broker/broker_txn.hpp"
#include "actors/queue/queue_actor.hpp"
#include "storage/segment.hpp"

namespace spool::actors {

namespace {

struct broker_state {
  static inline const char* name = "spool.broker";
  broker_config cfg;
  std::map<std::string, queue_actor> queues;
  std::shared_ptr<txn_host> txn;
};

using broker_ptr = broker_actor::stateful_pointer<broker_state>;

storage::error unreachable(const caf::error& err) {
  return storage::make_error(storage::ec::io_error,
                             "actor unreachable: ", caf::to_string(err));
}

storage::expected<void>
add_queue(broker_ptr self, const storage::queue_record& rec,
          std::vector<storage::partition_record> partitions) {
  auto& st = self->state;
  queue_config qc;
  qc.node = st.cfg.node;
  qc.record = rec;
  qc.partitions = std::move(partitions);
  qc.max_parked = st.cfg.max_parked;
  auto q = spawn_queue(self->system(), std::move(qc));
  if (!q)
    return std::move(q).err();
  self->link_to(*q);
  st.queues.emplace(rec.name, *q);
  return {};
}

/// A push spanning queues, gathered by the broker.
struct multi_push {
  std::vector<std::string> queues;
  std::vector<std::vector<std::size_t>> items; ///< input indices per queue
  std::vector<std::vector<push_item>> parts;
  std::vector<push_token> tokens;
  std::vector<storage::write_batch> batches;
  std::vector<queue_push_reply> replies;
  std::optional<storage::error> failure;
  std::size_t waiting = 0;
  std::size_t item_count = 0;
  caf::typed_response_promise<queue_push_reply> rp;
};

void answer(std::shared_ptr<multi_push> run) {
  if (run->failure) {
    run->rp.deliver(queue_push_reply{{}, 0, run->failure});
    return;
  }
  queue_push_reply reply;
  reply.results.resize(run->item_count);
  for (std::size_t k = 0; k < run->queues.size(); ++k) {
    auto& part = run->replies[k];
    if (part.failure) {
      run->rp.deliver(queue_push_reply{{}, 0, part.failure});
      return;
    }
    reply.created_at = std::max(reply.created_at, part.created_at);
    for (std::size_t j = 0; j < run->items[k].size(); ++j)
      reply.results[run->items[k][j]] = std::move(part.results[j]);
  }
  run->rp.deliver(std::move(reply));
}

/// Settles every prepared part with `failure` (none: durable).
void settle(broker_ptr self, std::shared_ptr<multi_push> run,
            std::optional<storage::error> failure) {
  if (failure && !run->failure)
    run->failure = failure;
  run->replies.resize(run->queues.size());
  run->waiting = 0;
  for (std::size_t k = 0; k < run->queues.size(); ++k)
    if (run->tokens[k])
      ++run->waiting;
  if (run->waiting == 0)
    return answer(run);
  for (std::size_t k = 0; k < run->queues.size(); ++k) {
    if (!run->tokens[k])
      continue;
    self->request(self->state.queues.at(run->queues[k]), caf::infinite,
                  settle_atom::value, run->tokens[k], failure)
        .then(
            [run, k](queue_push_reply& r) {
              run->replies[k] = std::move(r);
              if (--run->waiting == 0)
                answer(run);
            },
            [run](caf::error& err) {
              if (!run->failure)
                run->failure = unreachable(err);
              if (--run->waiting == 0)
                answer(run);
            });
  }
}

void commit(broker_ptr self, std::shared_ptr<multi_push> run) {
  if (run->failure)
    return settle(self, run, run->failure);
  storage::write_batch batch;
  for (auto& b : run->batches)
    for (auto& m : b.mutations)
      batch.mutations.push_back(std::move(m));
  if (batch.mutations.empty())
    return settle(self, run, std::nullopt);
  self->request(self->state.cfg.node.writer, caf::infinite, write_atom::value,
                std::move(batch))
      .then([self, run](write_result& r) { settle(self, run, r.failure); },
            [self, run](caf::error& err) {
              settle(self, run, unreachable(err));
            });
}

void prepare_all(broker_ptr self, std::shared_ptr<multi_push> run) {
  auto n = run->queues.size();
  if (n == 1) { // one queue commits its own batch
    self->request(self->state.queues.at(run->queues[0]), caf::infinite,
                  push_atom::value, std::move(run->parts[0]))
        .then(
            [run](queue_push_reply& r) mutable {
              run->replies = {std::move(r)};
              answer(run);
            },
            [run](caf::error& err) {
              run->failure = unreachable(err);
              answer(run);
            });
    return;
  }
  run->tokens.resize(n);
  run->batches.resize(n);
  run->waiting = n;
  for (std::size_t k = 0; k < n; ++k)
    self->request(self->state.queues.at(run->queues[k]), caf::infinite,
                  seal_atom::value, std::move(run->parts[k]))
        .then(
            [self, run, k](prepared_push& p) {
              if (p.failure && !run->failure)
                run->failure = p.failure;
              run->tokens[k] = p.token;
              run->batches[k] = std::move(p.batch);
              if (--run->waiting == 0)
                commit(self, run);
            },
            [self, run](caf::error& err) {
              if (!run->failure)
                run->failure = unreachable(err);
              if (--run->waiting == 0)
                commit(self, run);
            });
}

caf::typed_response_promise<queue_push_reply>
on_push(broker_ptr self, std::vector<broker_push_item>& items) {
  auto& st = self->state;
  auto run = std::make_shared<multi_push>();
  run->rp = self->make_response_promise<queue_push_reply>();
  run->item_count = items.size();
  if (items.empty()) {
    run->rp.deliver(queue_push_reply{});
    return run->rp;
  }
  std::unordered_map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto& q = items[i].queue;
    if (auto ok = check_partition_name(q); !ok) {
      run->rp.deliver(queue_push_reply{
          {},
          0,
          storage::make_error(storage::ec::invalid_argument, "items[", i,
                              "].queue ", ok.err().message)});
      return run->rp;
    }
    // Everything is validated before a queue is created: a bad item leaves
    // no trace.
    auto bad = [&](storage::error err) {
      run->rp.deliver(queue_push_reply{{}, 0, std::move(err)});
      return run->rp;
    };
    if (auto ok = check_partition_name(items[i].item.partition); !ok)
      return bad(storage::make_error(storage::ec::invalid_argument, "items[", i,
                                     "].partition ", ok.err().message));
    if (auto ok = storage::check_frame(items[i].item.frame, st.cfg.node.frames);
        !ok)
      return bad(storage::make_error(ok.err().code, "items[", i,
                                     "]: ", ok.err().message));
    auto [it, fresh] = index.try_emplace(q, run->queues.size());
    if (fresh) {
      run->queues.push_back(q);
      run->items.emplace_back();
      run->parts.emplace_back();
    }
    run->items[it->second].push_back(i);
    run->parts[it->second].push_back(std::move(items[i].item));
  }
  storage::write_batch create;
  std::vector<storage::queue_record> fresh;
  for (auto& name : run->queues) {
    if (st.queues.contains(name))
      continue;
    storage::queue_record rec;
    rec.id = st.cfg.node.store->next_queue_id();
    rec.name = name;
    std::tie(rec.name_space, rec.task) = namespace_and_task(name);
    rec.created_at = st.cfg.node.wall();
    fresh.push_back(rec);
    create.mutations.emplace_back(storage::mut::create_queue{rec});
  }
  if (fresh.empty()) {
    prepare_all(self, run);
    return run->rp;
  }
  self->request(st.cfg.node.writer, caf::infinite, write_atom::value,
                std::move(create))
      .then(
          [self, run, fresh](write_result& r) {
            if (!r.ok()) {
              run->rp.deliver(queue_push_reply{{}, 0, r.failure});
              return;
            }
            for (auto& rec : fresh)
              if (!self->state.queues.contains(rec.name))
                if (auto ok = add_queue(self, rec, {}); !ok) {
                  run->rp.deliver(queue_push_reply{{}, 0, ok.err()});
                  return;
                }
            prepare_all(self, run);
          },
          [run](caf::error& err) {
            run->rp.deliver(queue_push_reply{{}, 0, unreachable(err)});
          });
  return run->rp;
}

// -- transactions -------------------------------------------------------------

/// Creates the queues of `names` that do not exist yet in one durable write.
void create_queues(broker_ptr self, std::vector<std::string> names,
                   std::function<void(std::optional<storage::error>)> done) {
  auto& st = self->state;
  storage::write_batch create;
  std::vector<storage::queue_record> fresh;
  for (auto& name : names) {
    if (st.queues.contains(name))
      continue;
    storage::queue_record rec;
    rec.id = st.cfg.node.store->next_queue_id();
    rec.name = name;
    std::tie(rec.name_space, rec.task) = namespace_and_task(name);
    rec.created_at = st.cfg.node.wall();
    fresh.push_back(rec);
    create.mutations.emplace_back(storage::mut::create_queue{rec});
  }
  if (fresh.empty())
    return done(std::nullopt);
  self->request(st.cfg.node.writer, caf::infinite, write_atom::value,
                std::move(create))
      .then(
          [self, fresh, done](write_result& r) {
            if (!r.ok())
              return done(r.failure);
            for (auto& rec : fresh)
              if (!self->state.queues.contains(rec.name))
                if (auto ok = add_queue(self, rec, {}); !ok)
                  return done(ok.err());
            done(std::nullopt);
          },
          [done](caf::error& err) { done(unreachable(err)); });
}

std::shared_ptr<txn_host> make_txn_host(broker_ptr self) {
  auto host = std::make_shared<txn_host>();
  host->self = self;
  host->node = self->state.cfg.node;
  host->retention = self->state.cfg.txn_retention;
  host->find_queue
      = [self](const std::string& name) -> std::optional<queue_actor> {
    auto& qs = self->state.queues;
    if (auto it = qs.find(name); it != qs.end())
      return it->second;
    return std::nullopt;
  };
  host->create_queues = [self](auto names, auto done) {
    create_queues(self, std::move(names), std::move(done));
  };
  return host;
}

broker_actor::behavior_type broker(broker_ptr self, broker_config cfg,
                                   storage::catalog cat) {
  self->state.cfg = std::move(cfg);
  self->state.txn = make_txn_host(self);
  for (auto& q : cat.queues) {
    std::vector<storage::partition_record> parts;
    for (auto& p : cat.partitions)
      if (p.queue == q.id)
        parts.push_back(p);
    if (auto ok = add_queue(self, q, std::move(parts)); !ok)
      self->quit(caf::make_error(caf::sec::runtime_error,
                                 storage::to_string(ok.err())));
  }
  return {
      [self](push_atom, std::vector<broker_push_item>& items) {
        return on_push(self, items);
      },
      [self](pop_atom, const std::string& queue,
             queue_pop_request& req) -> caf::delegated<queue_pop_reply> {
        auto it = self->state.queues.find(queue);
        if (it == self->state.queues.end()) {
          auto rp = self->make_response_promise<queue_pop_reply>();
          queue_pop_reply empty;
          empty.reason = core::empty_reason::no_partition;
          rp.deliver(std::move(empty));
          return {};
        }
        return self->delegate(it->second, pop_atom::value, std::move(req));
      },
      [self](ack_atom, const std::string& queue, const std::string& partition,
             const std::string& group, std::vector<core::ack_request>& reqs)
          -> caf::delegated<std::vector<ack_reply>> {
        auto it = self->state.queues.find(queue);
        if (it == self->state.queues.end()) {
          auto rp = self->make_response_promise<std::vector<ack_reply>>();
          rp.deliver(std::vector<ack_reply>(
              reqs.size(),
              ack_reply{core::ack_error::not_found, false, false, {}}));
          return {};
        }
        return self->delegate(it->second, ack_atom::value, partition, group,
                              std::move(reqs));
      },
      [self](list_atom) {
        std::vector<std::string> names;
        for (auto& [name, _] : self->state.queues)
          names.push_back(name);
        return names;
      },
      [self](txn_atom, core::txn_request& req) {
        return run_transaction(self->state.txn, std::move(req));
      },
  };
}

} // namespace

std::pair<std::string, std::string> namespace_and_task(const std::string& q) {
  auto first = q.find('.');
  if (first == std::string::npos)
    return {};
  auto second = q.find('.', first + 1);
  return {q.substr(0, first), q.substr(first + 1, second == std::string::npos
                                                      ? std::string::npos
                                                      : second - first - 1)};
}

storage::expected<void> broker_config::validate() const {
  return node.validate("broker");
}

storage::expected<broker_actor> spawn_broker(caf::actor_system& sys,
                                             broker_config cfg) {
  SPOOL_TRY(cfg.validate());
  auto cat = cfg.node.store->load_catalog();
  if (!cat)
    return std::move(cat).err();
  return sys.spawn(broker, std::move(cfg), std::move(*cat));
}

} // namespace spool::actors
