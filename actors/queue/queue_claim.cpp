// Claim in the append (docs/operations.md, "Long poll"): a push to a
// partition a pop is parked for serves that pop in its own commit. Before
// the push's batch is written, the first parked pop of every chain the
// push can serve is staged by its cursor on the sealed frames (in memory:
// they are not stored yet); each staged lease and delivery count joins the
// push's batch, and the pop is answered once that batch is durable, at the
// same time as the push. A failed write fails the push and aborts every
// stage (the pops park again, as they were). A pop the cursor declines
// (busy, nothing for it, more to write than a lease) parks again at once
// and reruns at the push's wake as before.

#include "actors/queue/queue_state.hpp"
#include "core/push/claim_frames.hpp"

namespace spool::actors::queue_detail {

namespace {

/// One parked pop staged on the push.
struct claim_slot {
  queue_pop_request req;
  std::function<void(std::optional<queue_pop_reply>)> k;
  std::size_t part = 0; ///< index in `push_run::names`
  claim_reply staged;
};

} // namespace

void write_push(queue_ptr self, std::shared_ptr<push_run> run, submission sub,
                std::function<void(std::optional<api_error>)> done) {
  auto& st = self->state;
  std::vector<std::string> grown;
  std::vector<std::size_t> grown_at;
  for (std::size_t k = 0; k < run->copies.size(); ++k) {
    auto& s = run->seals[k];
    if (s.part && !run->copies[k].empty()) {
      grown.push_back(run->names[k]);
      grown_at.push_back(k);
    }
  }
  auto slots = std::make_shared<std::vector<claim_slot>>();
  if (!grown.empty())
    st.parked.claim(
        grown, [](const queue_pop_request&) { return true; },
        [&](const queue_pop_request& req, auto k) {
          claim_slot slot{req, std::move(k), grown_at.front(), {}};
          if (req.partition) // its topic is one of `grown`
            for (std::size_t i = 0; i < grown.size(); ++i)
              if (grown[i] == *req.partition)
                slot.part = grown_at[i];
          slots->push_back(std::move(slot));
        });
  auto& writer = st.cfg.node.writer;
  if (slots->empty())
    return propose_then(self, writer, st.cfg.node.term, std::move(sub),
                        std::move(done));
  auto shared = std::make_shared<submission>(std::move(sub));
  gather<claim_reply>(
      slots->size(),
      [self, run, slots](std::size_t i) {
        auto& slot = (*slots)[i];
        auto& entry = self->state.partitions.at(run->names[slot.part]);
        return self->request(
            live(self, entry), caf::infinite, claim_atom::value,
            run->seals[slot.part].part->first,
            share_of(slot.req, slot.req.batch, slot.req.max_bytes),
            core::sealed_frames(run->seals[slot.part].sealed,
                                run->copies[slot.part], slot.req.batch,
                                entry.rec.uuid));
      },
      [self, run, slots, shared,
       done = std::move(done)](std::vector<fanned<claim_reply>> replies) {
        std::vector<std::size_t> staged;
        for (std::size_t i = 0; i < replies.size(); ++i) {
          auto& slot = (*slots)[i];
          if (!replies[i].reply || replies[i].reply->parts.empty()) {
            slot.k(std::nullopt); // parks again; the push's wake reruns it
            continue;
          }
          slot.staged = std::move(*replies[i].reply);
          for (auto& m : slot.staged.batch.mutations)
            shared->batch.mutations.push_back(std::move(m));
          for (auto& p : slot.staged.parts)
            shared->parts.push_back(p);
          staged.push_back(i);
        }
        propose_then(self, self->state.cfg.node.writer,
                     self->state.cfg.node.term, std::move(*shared),
                     [self, run, slots, staged = std::move(staged),
                      done](std::optional<api_error> failure) {
                       // The writer settled every claim (its cursor and
                       // its partition) before this answer.
                       for (auto i : staged) {
                         auto& slot = (*slots)[i];
                         if (failure) {
                           slot.k(std::nullopt);
                           continue;
                         }
                         if (auto& m = self->state.cfg.node.metrics)
                           m->partition_pops += 1;
                         queue_pop_reply out;
                         out.claimed.push_back(
                             note_claim(self, slot.req, run->names[slot.part],
                                        std::move(slot.staged.reply)));
                         slot.k(std::move(out));
                       }
                       done(std::move(failure));
                     });
      });
}

} // namespace spool::actors::queue_detail
