#pragma once

/// The slot log: every committed write batch, numbered per slot. A batch is
/// recorded in the transaction that applies it, one entry per slot it
/// touches, `(slot, seq) → (epoch, mutations, undo images)`; a batch that
/// fails is never numbered. A store that applies a slot's entries in order
/// (`apply_entry`) ends with that slot's rows byte for byte equal, and
/// `truncate` undoes a slot's tail exactly. This is what replication ships
/// (`../shared/cluster/RESEARCH.md`); one node keeps it too, so the numbers
/// are there when a follower asks.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "storage/error.hpp"
#include "storage/lmdb.hpp"
#include "storage/mutation.hpp"

namespace spool::storage {

/// A slot's log position: its epoch (the leader's term; 1 on one node),
/// the last seq numbered, the oldest entry still kept (`first_seq >
/// last_seq`: none kept) and the bytes the kept entries take.
struct slot_log_meta {
  std::uint64_t epoch = 1;
  std::uint64_t last_seq = 0;
  std::uint64_t first_seq = 1;
  std::uint64_t bytes = 0;

  friend bool operator==(const slot_log_meta&, const slot_log_meta&) = default;

  template <class F>
  friend auto fields(F& f, slot_log_meta& x) {
    return f(x.epoch, x.last_seq, x.first_seq, x.bytes);
  }
};

/// One slot's part of one committed batch.
struct log_entry {
  std::uint64_t epoch = 0;
  /// The batch's mutations of this slot, in batch order. As stored, an
  /// `append_segment` holds no bytes (they are the `segments` row it
  /// wrote); `read_entry` puts them back.
  std::vector<mutation> mutations;
  /// What the batch's writes in this slot replaced, in write order.
  std::vector<undo_image> undo;

  template <class F>
  friend auto fields(F& f, log_entry& x) {
    return f(x.epoch, x.mutations, x.undo);
  }
};

/// A batch's number in one slot.
struct slot_seq {
  slot_t slot = 0;
  std::uint64_t seq = 0;
  friend bool operator==(const slot_seq&, const slot_seq&) = default;
};

/// The slot a mutation belongs to: its queue's.
slot_t slot_of(const mutation& m);

namespace slot_log {

/// Where slot `s`'s log stands (a slot never written: seq 0, epoch 1).
expected<slot_log_meta> meta(txn& t, slot_t s);
expected<void> put_meta(txn& t, slot_t s, const slot_log_meta& m);

/// Numbers batch `b`, just applied in `t` with its writes recorded in
/// `undo` (`txn::record_undo`): one entry per slot it names, each with the
/// slot's next seq, in the same transaction. Trims each of those slots to
/// `keep`, a few entries per batch. Returns the numbers, in the order the
/// slots first appear in `b`.
expected<std::vector<slot_seq>> append(txn& t, const write_batch& b,
                                       std::vector<undo_image> undo,
                                       const log_window& keep);

/// Entry `seq` of slot `s` with its segments' bytes put back; none when it
/// is not kept.
expected<std::optional<log_entry>> read_entry(txn& t, slot_t s,
                                              std::uint64_t seq);

/// Applies entry `seq` of slot `s`, as a follower does: `seq` must be the
/// slot's next (its last seq + 1). The entry's mutations apply as on the
/// leader, and it is kept in this store's log with the undo images this
/// apply recorded (trimmed to `keep`, as the leader's).
expected<void> apply_entry(txn& t, slot_t s, std::uint64_t seq,
                           const log_entry& e, const log_window& keep);

/// Undoes slot `s`'s entries after `after_seq`, newest first, and forgets
/// them: the slot's rows are then what they were when `after_seq` was its
/// last seq. Refused when an entry to undo was trimmed.
expected<void> truncate(txn& t, slot_t s, std::uint64_t after_seq);

} // namespace slot_log

} // namespace spool::storage
