#pragma once

/// Answers that write nothing (a duplicate push, a transaction's stored
/// answer, the DLQ list) read rows a batch may have committed locally before
/// it is durable. Such an answer is released only once what its slot held
/// when it read is durable (docs/architecture.md, "Answers wait for
/// durability"). On one node that is at once but for a commit that ended a
/// moment ago; in a cluster it is the quorum.

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "actors/node_context.hpp"
#include "actors/write.hpp"
#include "core/writer/durable_marks.hpp"

namespace spool::actors {

/// Calls `k(std::optional<api_error>)` once every seq the slots `slots`
/// hold now is durable: at once when `node.durable` covers them, else when
/// the writer says so. The marks are read after the answer's own read, so
/// they are at least the seqs the answer depends on (durability comes in
/// seq order).
template <class Self, class K>
void after_durable(Self* self, const node_context& node,
                   std::vector<storage::slot_t> slots, K k) {
  std::vector<storage::slot_seq> waiting;
  if (auto t = node.store.read()) {
    for (auto s : slots) {
      auto m = read_mark(*t, s);
      if (!m) {
        k(std::optional<api_error>{m.err()});
        return;
      }
      if (!node.durable || !node.durable->covers(*m))
        waiting.push_back(*m);
    }
  } else {
    k(std::optional<api_error>{t.err()});
    return;
  }
  if (waiting.empty()) {
    k(std::optional<api_error>{});
    return;
  }
  // Rare (a commit that ended a moment ago, or a quorum still out): one
  // wait per slot, in turn.
  auto shared = std::make_shared<K>(std::move(k));
  auto next = waiting.back();
  waiting.pop_back();
  std::vector<storage::slot_t> rest;
  for (auto& m : waiting)
    rest.push_back(m.slot);
  self->request(node.writer, caf::infinite, durable_atom::value, next.slot,
                next.seq)
      .then(
          [self, &node, shared, rest](write_result& r) {
            if (r.failure)
              (*shared)(std::move(r.failure));
            else if (rest.empty())
              (*shared)(std::optional<api_error>{});
            else
              after_durable(self, node, rest, std::move(*shared));
          },
          [shared](caf::error& err) {
            (*shared)(std::optional<api_error>{unreachable(err, "writer")});
          });
}

template <class Self, class K>
void after_durable(Self* self, const node_context& node, storage::slot_t s,
                   K k) {
  after_durable(self, node, std::vector<storage::slot_t>{s}, std::move(k));
}

} // namespace spool::actors
