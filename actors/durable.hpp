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

/// Calls `k(std::optional<api_error>)` once every seq in `marks` is
/// durable: the ones `durable` covers at once, the others one wait at the
/// writer each, in turn (rare: a commit that ended a moment ago, or a
/// quorum still out).
template <class Self, class K>
void wait_durable(Self* self, writer_actor writer,
                  std::shared_ptr<const durable_marks> durable,
                  std::vector<storage::slot_seq> marks, K k) {
  std::erase_if(marks, [&](auto& m) { return durable && durable->covers(m); });
  if (marks.empty()) {
    k(std::optional<api_error>{});
    return;
  }
  auto next = marks.back();
  marks.pop_back();
  auto shared = std::make_shared<K>(std::move(k));
  self->request(writer, caf::infinite, durable_atom::value, next.slot, next.seq)
      .then(
          [self, writer, durable, marks = std::move(marks),
           shared](write_result& r) mutable {
            if (r.failure)
              (*shared)(std::move(r.failure));
            else
              wait_durable(self, writer, std::move(durable), std::move(marks),
                           std::move(*shared));
          },
          [shared](caf::error& err) {
            (*shared)(std::optional<api_error>{unreachable(err, "writer")});
          });
}

/// Calls `k(std::optional<api_error>)` once every seq the slots `slots`
/// hold now is durable (`wait_durable`). The marks are read after the
/// answer's own read, so they are at least the seqs the answer depends on
/// (durability comes in seq order).
template <class Self, class K>
void after_durable(Self* self, const node_context& node,
                   const std::vector<storage::slot_t>& slots, K k) {
  std::vector<storage::slot_seq> marks;
  {
    auto t = node.store.read();
    if (!t) {
      k(std::optional<api_error>{t.err()});
      return;
    }
    for (auto s : slots) {
      auto m = read_mark(*t, s);
      if (!m) {
        k(std::optional<api_error>{m.err()});
        return;
      }
      marks.push_back(*m);
    }
  }
  wait_durable(self, node.writer, node.durable, std::move(marks), std::move(k));
}

template <class Self, class K>
void after_durable(Self* self, const node_context& node, storage::slot_t s,
                   K k) {
  after_durable(self, node, std::vector<storage::slot_t>{s}, std::move(k));
}

} // namespace spool::actors
