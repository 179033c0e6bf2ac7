#pragma once

/// The parts the writer holds open (issue 35, "one proposal type"): a part
/// is the rows one actor (its holder) staged for a batch another actor (its
/// coordinator) submits, e.g. a partition's seal inside a queue's push. The
/// holder keeps what happens once the batch's outcome is known; the writer
/// settles every part of a batch, exactly once, before it answers the
/// coordinator, so anything the coordinator does after the answer comes
/// after every holder applied the outcome. No CAF: actors are named by
/// their ids.
///
/// A part is open from its hold until it is settled. A submission takes
/// only open parts, each once: a batch carrying one given up or submitted
/// before (a coordinator's bug) is refused whole, so nothing of it is
/// stored.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace spool::core {

/// The outcome a holder applies: the batch is durable, was not stored, or
/// may be stored (the writer stopped before it knew).
enum class part_outcome : std::uint8_t { durable, failed, unknown };

/// What a part writes and its key among its holder's open parts: the rows
/// of one queue (of one partition, 0: queue-wide; of one consumer group,
/// empty: none), and the first offset of a seal, or the kind of a group's
/// stage (`stage_part`, `seek_part`, `sub_part`, `delete_part`). A holder
/// has at most one open part per key.
struct part_key {
  /// `first` of a group's stage: a transaction's acks or a claim; a seek.
  static constexpr std::int64_t stage_part = -1;
  static constexpr std::int64_t seek_part = -2;
  /// A queue's record of a group rewritten by a subscription update.
  static constexpr std::int64_t sub_part = -3;
  /// A group's cursor stopped on a partition for the group's deletion.
  static constexpr std::int64_t delete_part = -4;
  std::uint64_t queue = 0;
  std::uint64_t partition = 0;
  std::string group;
  std::int64_t first = stage_part;
  friend bool operator==(const part_key&, const part_key&) = default;
};

/// One part, by its holder's id and key.
struct part_id {
  std::uint64_t holder = 0;
  part_key key;
  friend bool operator==(const part_id&, const part_id&) = default;
};

struct part_id_hash {
  std::size_t operator()(const part_id& p) const noexcept;
};

/// `Handle` names a holder to settle it (an actor address in the writer).
template <class Handle>
class open_parts {
public:
  /// A closed part and the holder to settle.
  struct closed {
    part_id id;
    Handle holder;
  };

  /// Part `p` is staged by `holder`. A repeat of an open part changes
  /// nothing.
  void hold(part_id p, Handle holder) {
    parts_.try_emplace(p, entry{std::move(holder), false});
  }

  /// Takes `ps` for a submission: true if every one is open and none is
  /// submitted already (they are marked submitted); false changes nothing.
  bool submit(const std::vector<part_id>& ps) {
    std::vector<entry*> taken;
    taken.reserve(ps.size());
    for (auto& p : ps) {
      auto it = parts_.find(p);
      // Not open, submitted before, or named twice in this submission.
      if (it == parts_.end() || it->second.submitted) {
        for (auto* e : taken)
          e->submitted = false;
        return false;
      }
      it->second.submitted = true;
      taken.push_back(&it->second);
    }
    return true;
  }

  /// Closes `ps`: those open before are returned, to be settled (a part
  /// is settled once, whoever asks twice).
  std::vector<closed> close(const std::vector<part_id>& ps) {
    std::vector<closed> out;
    for (auto& p : ps)
      if (auto it = parts_.find(p); it != parts_.end()) {
        out.push_back({p, std::move(it->second.holder)});
        parts_.erase(it);
      }
    return out;
  }

  /// Closes those of `ps` that are open and not submitted (a coordinator
  /// gave them up, or its submission was refused) and returns them.
  std::vector<closed> drop(const std::vector<part_id>& ps) {
    std::vector<closed> out;
    for (auto& p : ps)
      if (auto it = parts_.find(p);
          it != parts_.end() && !it->second.submitted) {
        out.push_back({p, std::move(it->second.holder)});
        parts_.erase(it);
      }
    return out;
  }

  std::size_t size() const noexcept {
    return parts_.size();
  }

private:
  struct entry {
    Handle holder;
    bool submitted = false;
  };
  std::unordered_map<part_id, entry, part_id_hash> parts_;
};

} // namespace spool::core
